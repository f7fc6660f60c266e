#include "agent/daemon/task_stats.h"

#include <algorithm>

#include "ripple/log.h"

namespace ripple::daemon {

TaskStatistics::TaskStatistics(admission::Admission& adm, std::size_t tasks, Nanos started)
    : adm_(adm), ledger_(adm.ledger()), started_(started), stats_(tasks) {
  lags_.reserve(tasks);
  for (std::size_t k = 0; k < tasks; ++k)
    lags_.emplace_back(k < ledger_.task_count() ? ledger_.task(static_cast<pricing::TaskId>(k)).spec().period : 1);
}

bool TaskStatistics::on_event(const tracer::JobEvent& ev, Nanos now) {
  ++events_;
  if (ev.pt >= stats_.size()) return false;
  TaskStats& ts = stats_[ev.pt];
  if (ev.kind == tracer::JobEventKind::kRelease) {
    ++ts.releases;
    const auto at = static_cast<Nanos>(ev.release_ns);
    const Nanos lag = lags_[ev.pt].on_release(ev.tid, at, ev.no_wakeup);
    if (lag > 0) {
      ++ts.late_starts;
      ts.max_lag = std::max(ts.max_lag, lag);
    }
    const auto p = adm_.on_release(ev.pt, ev.seq, at, std::nullopt, lag);
    ts.last_allowance = p.allowance;
    ts.last_priced_slope = p.slope_priced;
    ts.last_fixed_line = p.chosen >= 0;
    job_threads_[{ev.pt, ev.seq}] = {ev.tid, 0};
    return true;
  }
  job_threads_.erase({ev.pt, ev.seq});
  if (ev.kind == tracer::JobEventKind::kAbort) {
    // Its thread exited (or exec'd) mid-job: the job will never complete.
    ++jobs_aborted_;
    lags_[ev.pt].forget(ev.tid);
    if (adm_.on_unfinished(ev.pt, ev.seq, now)) ++ts.unfinished;
    RIPPLE_LOG_INFO("task {}: job #{} ended without completing (thread {} exited or exec'd)",
                    ledger_.task(ev.pt).spec().name, ev.seq, ev.tid);
    return true;
  }
  lags_[ev.pt].on_complete(ev.tid, static_cast<Nanos>(ev.ts_ns));
  auto done = adm_.on_complete(ev.pt, ev.seq, static_cast<Nanos>(ev.ts_ns));
  // Completions count even if the release was not seen (agent started mid-job).
  const bool missed = done ? done->outcome.missed : ev.deadline_miss;
  if (done && done->outcome.level_skipped) ++ts.level_skips;
  ++ts.jobs;
  ts.misses += missed;
  // Without its release the agent charged it nothing it knows of: not counted either way.
  const bool untouched = done && !done->outcome.touched;
  if (untouched) {
    ++ts.untouched_jobs;
    ts.untouched_misses += missed;
  }
  ts.last_response = static_cast<Nanos>(ev.response_ns);
  const std::int64_t w = window_of(now);
  if (w != ts.window) {
    ts.prev_window_jobs = w == ts.window + 1 ? ts.window_jobs : 0;
    ts.prev_window_misses = w == ts.window + 1 ? ts.window_misses : 0;
    ts.window = w;
    ts.window_jobs = ts.window_misses = ts.window_untouched_misses = 0;
  }
  ++ts.window_jobs;
  ts.window_misses += missed;
  ts.window_untouched_misses += untouched && missed;
  return true;
}

std::pair<std::uint64_t, std::uint64_t> TaskStatistics::window_counts(std::size_t task, Nanos now) const {
  const TaskStats& ts = stats_[task];
  if (ts.window != window_of(now)) return {0, 0};
  return {ts.window_jobs, ts.window_misses};
}

std::uint64_t TaskStatistics::window_untouched_misses(std::size_t task, Nanos now) const {
  const TaskStats& ts = stats_[task];
  return ts.window == window_of(now) ? ts.window_untouched_misses : 0;
}

bool TaskStatistics::sweep(Nanos now, const std::function<bool(pid_t, std::uint64_t)>& job_open) {
  bool closed = false;
  for (auto it = job_threads_.begin(); it != job_threads_.end();) {
    const auto [pt, seq] = it->first;
    if (ledger_.job(pt, seq) == nullptr) {  // closed by another path
      it = job_threads_.erase(it);
      continue;
    }
    if (job_open(it->second.tid, seq)) {
      it->second.closed_sweeps = 0;
      ++it;
      continue;
    }
    if (++it->second.closed_sweeps < 2) {
      ++it;
      continue;
    }
    ++jobs_reaped_;
    if (adm_.on_unfinished(pt, seq, now) && pt < stats_.size()) ++stats_[pt].unfinished;
    RIPPLE_LOG_WARN("task {}: job #{} is no longer open in the kernel (thread {}) and no event said so: "
                    "closed as unfinished",
                    ledger_.task(pt).spec().name, seq, it->second.tid);
    closed = true;
    it = job_threads_.erase(it);
  }
  return closed;
}

}  // namespace ripple::daemon
