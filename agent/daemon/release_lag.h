// Late starts of periodic jobs: how long after its release a job began.
//
// The tracer (bpf/tracer.bpf.c) releases a job when its thread wakes from the period
// wait. A job whose predecessor overran finds its release time already past: the wait
// returns without sleeping (RIPPLE_EVF_NO_WAKEUP) and the job is released at the syscall
// exit, its start. Its real release, the one its deadline counts from, was earlier. A
// periodic thread's next release is its last release plus the period T_i; a sporadic
// one's is at least that (T_i is then its minimum inter-arrival time). So a no-wake-up
// release at `at` is taken as released at min(at, last + T_i), per thread, and its lag is
// the difference: never later than the real release, so the deadline it implies is never
// later than the real one. A release after a real sleep is on time (lag 0) and restarts
// the thread's chain.
//
// Pure: no clock; the caller passes the tracer's timestamps. Threads come and go; a
// thread not heard from for kForgetPeriods periods is dropped when the table grows.
#pragma once

#include <sys/types.h>

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

  // A job of thread `tid` released (started) at `at`; `no_wakeup`: its wait returned
  // without sleeping. Returns its lag (>= 0).
  Nanos on_release(pid_t tid, Nanos at, bool no_wakeup);
  // The thread is gone (its job aborted): its chain ends.
  void forget(pid_t tid) { last_.erase(tid); }
  std::size_t threads() const { return last_.size(); }

 private:
  Nanos period_;
  std::unordered_map<pid_t, Nanos> last_;  // tid -> its last job's release
};

}  // namespace ripple::daemon
