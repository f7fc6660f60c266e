// The tracer's job events turned into admission calls and per-task statistics, without
// the tracer: the agent feeds it tracer::JobEvents and, for the sweep, asks the kernel
// through an injected job_open(). Status reads its counts (reports.h).
// tests/unit/agent_task_stats_test.cc drives it with hand-made events.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "agent/admission/admission.h"
#include "agent/daemon/release_lag.h"
#include "agent/tracer/tracer.h"

namespace ripple::daemon {

using admission::Nanos;

// The contract window: L = 100 s (App. C).
inline constexpr Nanos kWindow = 100LL * 1'000'000'000;

// Per protected task, what status shows besides the estimator's own state.
struct TaskStats {
  std::uint64_t releases = 0, jobs = 0, misses = 0, unfinished = 0;
  // Releases that started late (after an overrun: release_lag.h), and the largest lag.
  std::uint64_t late_starts = 0;
  // Completed jobs no GPU byte reached that left the conformal level alone
  // (pricing.untouched_level = false).
  std::uint64_t level_skips = 0;
  // Completed jobs no GPU byte was admitted into (Outcome::touched false), and those of them
  // that missed: where these alone pass the miss tolerance, the task missed whatever the
  // grants did, unless a grant ran past its predicted end into them (the host's own drift:
  // Documentation/results/e2e.md §0, twenty-seventh session). In the window too.
  std::uint64_t untouched_jobs = 0, untouched_misses = 0, window_untouched_misses = 0;
  Nanos max_lag = 0;
  // The current contract window and the one before it.
  std::int64_t window = -1;
  std::uint64_t window_jobs = 0, window_misses = 0, prev_window_jobs = 0, prev_window_misses = 0;
  pricing::Bytes last_allowance = 0;
  // The slope of the line the last released job was priced on (ns/byte): App. C's
  // max(kappa_hat, kappa^u), or a fixed-slope line's (pricing.slope_candidates, fixed_line).
  double last_priced_slope = 0;
  bool last_fixed_line = false;
  Nanos last_response = 0;
};

class TaskStatistics {
 public:
  // `tasks` protected tasks, numbered as in the ledger; windows count from `started`.
  TaskStatistics(admission::Admission& adm, std::size_t tasks, Nanos started);

  // One event from the tracer, seen at `now`. True when it is a scheduling point (every
  // event of a known task); an event of an unknown task is counted and ignored.
  bool on_event(const tracer::JobEvent& ev, Nanos now);

  // Every held job must still be open in the kernel (job_open(tid, seq)). One whose
  // thread is gone or has moved on with no event reaching us (a full ring buffer) is
  // closed as unfinished once two sweeps in a row find it so (a completion emitted
  // between the drain and the look is read by the next drain first). True when it
  // closed one (a scheduling point).
  bool sweep(Nanos now, const std::function<bool(pid_t tid, std::uint64_t seq)>& job_open);

  std::size_t size() const { return stats_.size(); }
  const TaskStats& stats(std::size_t task) const { return stats_[task]; }
  // Task k's jobs and misses in the window that contains `now` (0 once it has moved on).
  std::pair<std::uint64_t, std::uint64_t> window_counts(std::size_t task, Nanos now) const;
  // Of those misses, the ones no GPU byte was admitted into.
  std::uint64_t window_untouched_misses(std::size_t task, Nanos now) const;
  // Jobs held for the sweep.
  bool holding() const { return !job_threads_.empty(); }
  std::uint64_t events() const { return events_; }
  std::uint64_t jobs_aborted() const { return jobs_aborted_; }
  std::uint64_t jobs_reaped() const { return jobs_reaped_; }

 private:
  std::int64_t window_of(Nanos now) const { return (now - started_) / kWindow; }

  admission::Admission& adm_;
  const pricing::Ledger& ledger_;
  Nanos started_;
  std::vector<TaskStats> stats_;
  std::vector<ReleaseLag> lags_;  // per task: when its late-starting jobs were released
  // The thread of every job the ledger holds, to check that the kernel still has it open:
  // a job whose abort or completion event was lost must not stay in the ledger (B(t) = 0
  // for every engine, forever). (task, seq) -> tid and the sweeps that found it closed.
  struct JobThread {
    pid_t tid = 0;
    int closed_sweeps = 0;
  };
  std::map<std::pair<std::uint32_t, std::uint64_t>, JobThread> job_threads_;
  std::uint64_t events_ = 0, jobs_aborted_ = 0, jobs_reaped_ = 0;
};

}  // namespace ripple::daemon
