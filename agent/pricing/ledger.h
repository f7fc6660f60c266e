// The byte ledger: per-job GPU-byte accounts over the active jobs of every protected
// task (paper §4.2 Eq. 3-4, App. C Eq. 6, "Charging", "The crossing bound").
//
// Driven identically by the daemon, the simulator and the tests:
//   on_release / on_complete / on_unfinished   CPU job events (from the tracer)
//   budget(now)                                B(t), Eq. 4, for admission
//   admits(bytes, end, now)                    B(t) and the crossing bound together
//   charge / grant_executed / refund           a grant's life
// Every entry point takes `now` from the caller's clock; nothing here reads a clock,
// sleeps, allocates per query, or does I/O.
#pragma once

#include <memory>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "agent/pricing/estimator.h"
#include "agent/pricing/params.h"
#include "agent/pricing/types.h"

namespace ripple::pricing {

struct JobKey {
  TaskId task = 0;
  JobSeq seq = 0;
  bool operator==(const JobKey&) const = default;
};

// One active job's account.
struct JobAccount {
  JobKey key;
  Nanos release = 0;      // R_ij: when it started (its release, unless it started late)
  Nanos lag = 0;          // how late it started: released at release - lag (Pricing::lag)
  Bytes allowance = 0;    // A_ij as issued
  Bytes floor = 0;        // f, or 0 under the tight-deadline guard
  bool full_release = false;
  double rate = 0;        // A_ij / a_hat_ij, bytes per ns (Eq. 3)
  Bytes charged = 0;      // C_ij(t), inherited grants included
  Bytes inherited = 0;    // part of `charged` from grants in flight at the release
  // The slope's instrument (Params::slope_instrument): the part of `charged` admitted
  // before early_until = release + the task's instrument_window(), inherited grants
  // included.
  Bytes early = 0;
  Nanos early_until = 0;
  const Estimator* task = nullptr;
  Pricing pricing;        // the saved release-time pricing

  // min(A, max(f, A (t - R) / a_hat)), or A when released at entry (Eq. 6).
  Bytes released(Nanos now) const;
  // B_ij(t) = released - C_ij(t); negative after inherited grants (Eq. 6).
  Bytes budget(Nanos now) const { return released(now) - charged; }
};

struct Grant {
  GrantId id = 0;
  EngineId engine = 0;
  Bytes bytes = 0;
  Nanos end = 0;  // predicted end
  Nanos charged_at = 0;  // admission
  std::vector<JobKey> charged_to;    // active jobs at admission
  std::vector<JobKey> inherited_by;  // jobs released while it was in flight
};

struct Completion {
  JobKey key;
  Nanos response = 0;  // CT_ij, from the job's release (its lag included)
  Bytes charged = 0;   // C_ij
  Bytes inherited = 0;
  Bytes early = 0;     // JobAccount::early
  Bytes allowance = 0; // A_ij
  Outcome outcome;
};

class Ledger {
 public:
  // `params` must pass validate().
  explicit Ledger(const Params& params);
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Adds a protected task; `spec` must pass validate().
  TaskId add_task(TaskSpec spec);

  // The probe size: the largest, over the bound engines, of each engine's smallest
  // nonzero decode unit (App. C). Set when engines register; the floor f follows it
  // unless set (Params::pacing_floor).
  void set_probe_unit(Bytes unit) { params_.probe_unit_bytes = unit; }

  // A job of `task` started at `now`: priced, and charged every grant in flight. It was
  // released `lag` ns earlier (> 0 when it started late, after its predecessor overran:
  // its deadline is release + D_i, and the task's next release is predicted a period
  // after its release). A repeated release of an active job returns its saved pricing
  // unchanged.
  Pricing on_release(TaskId task, JobSeq seq, Nanos now, Phase phase = Phase::kRest, Nanos lag = 0);
  // The job completed at `now`; nullopt for a job that is not active.
  std::optional<Completion> on_complete(TaskId task, JobSeq seq, Nanos now);
  // The job will never complete (dropped, its thread gone): scored as above its line.
  std::optional<Completion> on_unfinished(TaskId task, JobSeq seq, Nanos now);

  // B(t) = min over active uncertified jobs of B_ij(t), never below 0 (Eq. 4);
  // kUnlimitedBytes when no such job is active.
  Bytes budget(Nanos now) const;
  // The active job whose B_ij(t) is B(t): the smallest among those that limit it (the
  // first of equals); nullptr when none does.
  const JobAccount* binding_job(Nanos now) const;
  // The earliest time >= now at which budget() reaches `bytes` (kNever if it cannot
  // before a job completes): admission's "budget accrues" scheduling point.
  Nanos time_budget_reaches(Bytes bytes, Nanos now) const;

  // The crossing bound (App. C) for a grant of `bytes` ending at `end` against every
  // uncertified task's next release.
  bool crossing_allowed(Bytes bytes, Nanos end, Nanos now) const;
  // Both: the grant fits B(now) and every crossing it makes is allowed.
  bool admits(Bytes bytes, Nanos end, Nanos now) const {
    return bytes <= budget(now) && crossing_allowed(bytes, end, now);
  }

  // Charges a grant in full to every active job at admission (certified ones too).
  GrantId charge(EngineId engine, Bytes bytes, Nanos end, Nanos now);
  // The grant ran: it stays charged (App. C, "Charging"). False if unknown.
  bool grant_executed(GrantId id);
  // The grant came back unexecuted: refunded to the jobs still active. False if unknown.
  bool refund(GrantId id);

  const Params& params() const { return params_; }
  std::size_t task_count() const { return tasks_.size(); }
  const Estimator& task(TaskId id) const { return *tasks_[id]; }
  const std::vector<JobAccount>& active_jobs() const { return jobs_; }
  const JobAccount* job(TaskId task, JobSeq seq) const;
  const std::vector<Grant>& grants_in_flight() const { return grants_; }
  // Earliest possible next release of `task`: nullopt if it has not released yet or is
  // idle (no active job, and nothing released for Params::idle_periods periods past the
  // expected next release, or forget_release() since its last release).
  std::optional<Nanos> next_release(TaskId task, Nanos now) const;
  // The earliest time > now at which some task that has released before, and has no
  // active job, turns idle (kNever if none will): a crossing refused because of that
  // task's release relaxes then, so admission wakes up at it.
  Nanos next_idle(Nanos now) const;
  // The task is known to have stopped (its threads are gone): no release is predicted
  // until it releases again.
  void forget_release(TaskId task);

 private:
  JobAccount* find_job(TaskId task, JobSeq seq);
  // The last moment `task` (which has released) still counts as releasing.
  Nanos idle_after(TaskId task) const;
  Completion finish(std::size_t index, Nanos now, bool completed);

  Params params_;
  std::vector<std::unique_ptr<Estimator>> tasks_;
  std::vector<std::optional<Nanos>> last_release_;
  std::vector<JobAccount> jobs_;
  std::vector<Grant> grants_;
  GrantId next_grant_ = 1;
};

}  // namespace ripple::pricing
