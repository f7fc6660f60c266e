// Persistent fork-join pool. See pool.h.
#include "tools/workloads/pool.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

namespace ripple::workloads {

std::pair<size_t, size_t> WorkerPool::split(size_t n, int i, int parts) {
  // The first n % parts shares get one item more; consecutive shares tile [0, n).
  const size_t p = static_cast<size_t>(parts), k = static_cast<size_t>(i);
  const size_t base = n / p, extra = n % p;
  const size_t first = k * base + (k < extra ? k : extra);
  return {first, first + base + (k < extra ? 1 : 0)};
}

bool WorkerPool::start(int threads, const std::vector<int>& cores, std::string* err) {
  if (threads <= 1) return true;
  // Each worker pins itself before it reports ready, so a pinning error is known here,
  // before the first job, and every worker's first instruction of job work runs on its core.
  std::vector<int> pin_errno(static_cast<size_t>(threads), 0);
  int ready = 0;
  for (int i = 1; i < threads; ++i) {
    const int core = cores.empty() ? -1 : cores[static_cast<size_t>(i)];
    workers_.emplace_back([this, i, core, &pin_errno, &ready] {
      int e = 0;
      if (core >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(core, &set);
        e = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        pin_errno[static_cast<size_t>(i)] = e;
        ++ready;
      }
      done_.notify_all();
      worker_main(i);
    });
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return ready == threads - 1; });
  for (int i = 1; i < threads; ++i) {
    if (pin_errno[static_cast<size_t>(i)] == 0) continue;
    *err = "cannot pin worker " + std::to_string(i) + " to core " + std::to_string(cores[static_cast<size_t>(i)]) +
           ": " + std::strerror(pin_errno[static_cast<size_t>(i)]);
    lock.unlock();
    stop_workers();
    return false;
  }
  return true;
}

WorkerPool::~WorkerPool() { stop_workers(); }

void WorkerPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  go_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  stop_ = false;
}

void WorkerPool::worker_main(int index) {
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      go_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      fn = fn_;
    }
    std::exception_ptr e;
    try {
      (*fn)(index);
    } catch (...) {
      e = std::current_exception();
    }
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (e && !error_) error_ = e;
      last = --running_ == 0;
    }
    if (last) done_.notify_one();
  }
}

void WorkerPool::run(const std::function<void(int)>& fn) {
  if (workers_.empty()) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    running_ = static_cast<int>(workers_.size());
    error_ = nullptr;
    ++generation_;
  }
  go_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::exception_ptr theirs;
  {
    // The join: no run() returns, so no next share starts, before every worker's share of
    // this one has returned.
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return running_ == 0; });
    theirs = error_;
    fn_ = nullptr;
  }
  if (mine) std::rethrow_exception(mine);
  if (theirs) std::rethrow_exception(theirs);
}

}  // namespace ripple::workloads
