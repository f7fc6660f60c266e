// A persistent fork-join pool for one robot task's job (paper §5.1: each task runs on
// several cores of its own).
//
// N threads in all: the caller (the task's main thread, which sleeps in the period wait,
// so the tracer sees the job's release and completion on it) and N - 1 workers created
// once, at start, each pinned to its own core when cores are given. run(fn) hands fn to
// every worker, runs fn(0) on the caller, and returns when every share has returned; a
// job is one or more run() calls. Workers wait on a condition variable (a futex), never
// in clock_nanosleep/nanosleep: those are the period waits the tracer counts by default.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ripple::workloads {

class WorkerPool {
 public:
  // One thread, no workers: run(fn) is fn(0) on the caller.
  WorkerPool() = default;
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts threads - 1 workers. `cores` is empty (workers keep the process's affinity) or
  // names one core per thread: cores[0] is the caller's (the caller pins itself), cores[i]
  // worker i's. Returns false and sets *err if a worker cannot be pinned; the pool then has
  // no workers. Call once, before the first run().
  bool start(int threads, const std::vector<int>& cores, std::string* err);

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(i) once for every i in [0, threads()): fn(0) on the caller, fn(i) on worker i.
  // Returns when all have returned; an exception from a share is rethrown here (the first).
  void run(const std::function<void(int)>& fn);

  // Share i of n items split into threads() contiguous parts: [first, second).
  std::pair<size_t, size_t> share(size_t n, int i) const { return split(n, i, threads()); }
  static std::pair<size_t, size_t> split(size_t n, int i, int parts);

 private:
  void worker_main(int index);
  void stop_workers();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable go_;    // workers wait here for a new generation
  std::condition_variable done_;  // the caller waits here for the shares to finish
  const std::function<void(int)>* fn_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;  // worker shares of the current generation not finished yet
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace ripple::workloads
