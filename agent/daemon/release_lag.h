// Late starts of periodic jobs: how long after its release a job began.
//
// The tracer (bpf/tracer.bpf.c) releases a job when its thread wakes from the period
// wait. A job whose predecessor overran finds its release time already past, and its wait
// does not really sleep: either it returns without a wake-up (RIPPLE_EVF_NO_WAKEUP), or,
// as Linux does for a clock_nanosleep to an absolute time already past, the expired timer
// wakes the thread at once, a sched_wakeup 30-50 us after it entered the wait (measured on
// the 2-vCPU VM; on-time waits there were >= 5.8 ms). So a wait shorter than
// short_wait() = min(500 us, T_i / 10) counts as one that did not sleep. Either way the
// job is released at its start. Its real release, the one its deadline counts from, was earlier. A
// periodic thread's next release is its last release plus the period T_i; a sporadic
// one's is at least that (T_i is then its minimum inter-arrival time). So a no-wake-up
// release at `at` is taken as released at min(at, last + T_i), per thread, and its lag is
// the difference: never later than the real release, so the deadline it implies is never
// later than the real one. A release after a real sleep is on time (lag 0) and restarts
// the thread's chain. A job on time whose wait happened to be short gets a lag of its
// timer's lateness at most (it woke at about last + T_i).
//
// Pure: no clock; the caller passes the tracer's timestamps. Threads come and go; a
// thread not heard from for kForgetPeriods periods is dropped when the table grows.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace ripple::daemon {

class ReleaseLag {
 public:
  using Nanos = std::int64_t;
  static constexpr Nanos kForgetPeriods = 100;
  static constexpr std::size_t kPruneAbove = 256;

  // `period` > 0: the task's T_i.
  explicit ReleaseLag(Nanos period) : period_(period) {}

  // A job of thread `tid` released at `at`; `no_wakeup`: its wait returned without a
  // wake-up. Returns its lag (>= 0).
  Nanos on_release(pid_t tid, Nanos at, bool no_wakeup);
  // A job of thread `tid` completed at `at`: the thread enters its wait then.
  void on_complete(pid_t tid, Nanos at);
  // The thread is gone (its job aborted): its chain ends.
  void forget(pid_t tid) { last_.erase(tid); }
  std::size_t threads() const { return last_.size(); }
  // A wait shorter than this did not sleep.
  Nanos short_wait() const { return std::min<Nanos>(500'000, period_ / 10); }

 private:
  struct Chain {
    Nanos release = 0;              // its last job's (dated) release
    Nanos completed = -1;           // its last completion, when it followed that release
  };
  Nanos period_;
  std::unordered_map<pid_t, Chain> last_;  // per thread
};

}  // namespace ripple::daemon
