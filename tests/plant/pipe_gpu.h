// PipeGpu: the stand-in engine's pipelined "GPU" — a TEST DOUBLE, not a model of a GPU's
// execution — for agent_engine --copy-in F. It has the one property of the offloaded LLM
// on the H200 that matters to admission (Documentation/results/e2e.md at e2f8dc4, §0a, cause 3): a
// unit is a copy-in (F of its bytes) then a copy-out (the rest), each stage FIFO at the
// engine's rate, and a unit's copy-in overlaps the previous unit's copy-out only if the
// engine submitted it before that copy-out ended, i.e. only if it held the unit's grant
// in time. Alone a unit takes bytes / rate (the serial stand-in's time); back to back,
// max(F, 1 - F) x bytes / rate each.
//
// The submitting thread gives each unit its grant; when a grant's last unit leaves the
// copy-out, its completion (GPU span: first copy-in start to last copy-out end, as an
// event pair measures it) is queued for that thread to report. At most two units are in
// flight (double-buffered weights). Executed bytes go to the plant as they stream.
//
// The stream thread ticks; a tick streams the interval since the last one, and a late
// tick (the thread descheduled on a loaded machine) streams a longer interval. Inside it
// each event is placed where the fluid schedule puts it: a unit's copy-out starts no
// earlier than its copy-in ended, and a copy-in's start and a copy-out's end are stamped
// at their offsets in the interval, so spans and ends do not depend on the tick's lateness.
#pragma once

#include <time.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "ripple/clock.h"
#include "ripple/protocol.h"
#include "tests/plant/plant.h"

namespace ripple::test {

class PipeGpu {
 public:
  struct Completion {
    engine::GrantMsg grant;
    std::uint64_t span_ns;  // first copy-in start -> last copy-out end
    std::uint64_t end_ns;   // the last copy-out's end (monotonic_ns)
  };

  PipeGpu(double rate_gbps, double copy_in, double tick_us, PlantShm* shm)
      : ns_per_byte_(1.0 / rate_gbps), copy_in_(copy_in), tick_ns_(static_cast<std::uint64_t>(tick_us * 1e3)), shm_(shm) {
    thread_ = std::thread([this] { loop(); });
  }
  ~PipeGpu() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  PipeGpu(const PipeGpu&) = delete;
  PipeGpu& operator=(const PipeGpu&) = delete;

  static constexpr std::size_t kMaxInFlight = 2;

  // Waits up to `wait_ns` for room (fewer than kMaxInFlight units in flight); true when
  // the unit was submitted. `last`: the grant's last unit (its completion is queued).
  // `first`: the grant's first unit (the grant's span starts with its copy-in).
  bool submit(std::uint64_t bytes, const engine::GrantMsg& g, bool first, bool last, std::uint64_t wait_ns) {
    std::unique_lock<std::mutex> l(m_);
    if (!cv_.wait_for(l, std::chrono::nanoseconds(wait_ns), [&] { return units_.size() < kMaxInFlight; })) return false;
    Unit u;
    u.in = static_cast<double>(bytes) * copy_in_;
    u.out = static_cast<double>(bytes) - u.in;
    u.grant = g;
    u.first = first;
    u.last = last;
    units_.push_back(u);
    cv_.notify_all();
    return true;
  }
  std::optional<Completion> take_completion() {
    std::lock_guard<std::mutex> l(m_);
    if (done_.empty()) return std::nullopt;
    Completion c = done_.front();
    done_.pop_front();
    return c;
  }
  bool idle() {
    std::lock_guard<std::mutex> l(m_);
    return units_.empty();
  }
  // Waits until nothing is in flight (end of run).
  void drain() {
    std::unique_lock<std::mutex> l(m_);
    cv_.wait(l, [&] { return units_.empty(); });
  }

 private:
  struct Unit {
    double in = 0, out = 0;  // bytes left in each stage
    engine::GrantMsg grant;
    bool first = false, last = false;
    bool in_started = false;
    double in_done_at = 0;  // the tick's offset (bytes at the rate) where its copy-in ended
  };

  void loop() {
    std::unique_lock<std::mutex> l(m_);
    std::uint64_t t = monotonic_ns();
    for (;;) {
      if (units_.empty()) {
        cv_.wait(l, [&] { return stop_ || !units_.empty(); });
        t = monotonic_ns();  // idle until now: nothing streamed meanwhile
      }
      if (stop_) return;
      const std::uint64_t now = monotonic_ns();
      const double budget = static_cast<double>(now - t) / ns_per_byte_;
      const std::uint64_t from = t;  // this tick streams the bytes of [from, now]
      t = now;
      // An offset into the interval, in bytes at the rate, as a time.
      const auto at = [&](double offset) { return from + static_cast<std::uint64_t>(offset * ns_per_byte_); };
      double moved = 0;
      for (Unit& u : units_)
        if (u.in <= 0) u.in_done_at = 0;  // its copy-in ended in an earlier tick
      // Copy-in: the first unit whose copy-in is unfinished (FIFO, one at a time).
      double in_at = 0;
      for (Unit& u : units_) {
        if (!u.in_started) {
          u.in_started = true;
          if (u.first) starts_.push_back(at(in_at));  // the grant's span begins here
          if (u.in <= 0) u.in_done_at = in_at;         // no copy-in (--copy-in 0)
        }
        if (u.in <= 0) continue;
        const double d = std::min(u.in, budget - in_at);
        u.in -= d;
        in_at += d;
        moved += d;
        if (u.in > 0) break;
        u.in_done_at = in_at;
        if (in_at >= budget) break;
      }
      // Copy-out: the head unit, once its copy-in is done, from where that copy-in ended.
      double out_at = 0;
      while (!units_.empty() && units_.front().in <= 0) {
        Unit& u = units_.front();
        out_at = std::max(out_at, u.in_done_at);
        if (out_at >= budget && u.out > 0) break;
        const double d = std::min(u.out, std::max(0.0, budget - out_at));
        u.out -= d;
        out_at += d;
        moved += d;
        if (u.out > 0) break;
        if (u.last) {
          const std::uint64_t end = at(out_at);
          done_.push_back({u.grant, end - starts_.front(), end});
          starts_.pop_front();
        }
        units_.pop_front();
        cv_.notify_all();
      }
      if (shm_ != nullptr && moved > 0) {
        carry_ += moved;
        const auto whole = static_cast<std::uint64_t>(carry_);
        shm_->bytes_executed.fetch_add(whole, std::memory_order_acq_rel);
        carry_ -= static_cast<double>(whole);
      }
      l.unlock();
      const timespec ts{0, static_cast<long>(tick_ns_)};
      nanosleep(&ts, nullptr);
      l.lock();
    }
  }

  const double ns_per_byte_, copy_in_;
  const std::uint64_t tick_ns_;
  PlantShm* const shm_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Unit> units_;
  std::deque<std::uint64_t> starts_;  // span start of each begun grant, oldest first
  std::deque<Completion> done_;
  double carry_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ripple::test
