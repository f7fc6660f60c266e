#include "agent/pricing/ledger.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ripple::pricing {

namespace {

[[noreturn]] void die(const char* what, const std::string& why) {
  std::fprintf(stderr, "pricing: %s: %s\n", what, why.c_str());
  std::abort();
}

}  // namespace

Bytes JobAccount::released(Nanos now) const {
  if (full_release) return allowance;
  const Nanos elapsed = now > release ? now - release : 0;
  const double paced = rate * static_cast<double>(elapsed);
  const double floored = std::max(static_cast<double>(floor), paced);
  return floored >= static_cast<double>(allowance) ? allowance : static_cast<Bytes>(floored);
}

Ledger::Ledger(const Params& params) : params_(params) {
  if (auto e = validate(params_); !e.empty()) die("invalid parameters", e);
}

TaskId Ledger::add_task(TaskSpec spec) {
  if (auto e = validate(spec); !e.empty()) die("invalid task", e);
  tasks_.push_back(std::make_unique<Estimator>(std::move(spec), params_));
  last_release_.emplace_back();
  return static_cast<TaskId>(tasks_.size() - 1);
}

JobAccount* Ledger::find_job(TaskId task, JobSeq seq) {
  for (auto& j : jobs_)
    if (j.key.task == task && j.key.seq == seq) return &j;
  return nullptr;
}

const JobAccount* Ledger::job(TaskId task, JobSeq seq) const {
  for (const auto& j : jobs_)
    if (j.key.task == task && j.key.seq == seq) return &j;
  return nullptr;
}

Nanos Ledger::idle_after(TaskId task) const {
  const Nanos period = tasks_[task]->spec().period;
  return *last_release_[task] + period + static_cast<Nanos>(params_.idle_periods * static_cast<double>(period));
}

Nanos Ledger::next_idle(Nanos now) const {
  Nanos t = kNever;
  for (TaskId k = 0; k < tasks_.size(); ++k) {
    if (!last_release_[k]) continue;
    const Nanos at = idle_after(k) + 1;  // idle once now > idle_after
    if (at <= now) continue;
    bool active = false;
    for (const auto& j : jobs_) active = active || j.key.task == k;
    if (!active) t = std::min(t, at);
  }
  return t;
}

std::optional<Nanos> Ledger::next_release(TaskId task, Nanos now) const {
  const auto& last = last_release_[task];
  if (!last) return std::nullopt;
  const Nanos expected = *last + tasks_[task]->spec().period;
  if (now > idle_after(task)) {
    bool active = false;
    for (const auto& j : jobs_) active = active || j.key.task == task;
    if (!active) return std::nullopt;  // idle: a release that may never come is not predicted
  }
  return std::max(now, expected);
}

void Ledger::forget_release(TaskId task) {
  if (task < last_release_.size()) last_release_[task].reset();
}

Pricing Ledger::on_release(TaskId task, JobSeq seq, Nanos now, Phase phase, Nanos lag) {
  if (task >= tasks_.size()) die("on_release", "unknown task id");
  if (const JobAccount* existing = find_job(task, seq)) return existing->pricing;

  // The smallest base allowance among the other uncertified tasks (one-in-eight rule).
  Bytes smallest_other = kUnlimitedBytes;
  for (TaskId k = 0; k < tasks_.size(); ++k) {
    const Estimator& other = *tasks_[k];
    if (k != task && other.has_priced() && !other.exempt())
      smallest_other = std::min(smallest_other, other.base_allowance());
  }

  Estimator& est = *tasks_[task];
  JobAccount j;
  j.key = {task, seq};
  j.release = now;
  j.lag = params_.late_starts ? std::max<Nanos>(0, lag) : 0;
  j.pricing = est.price(phase, smallest_other, j.lag);
  j.allowance = j.pricing.allowance;
  j.floor = j.pricing.floor;
  j.full_release = j.pricing.full_release;
  j.rate = static_cast<double>(j.allowance) / static_cast<double>(j.pricing.pacing_duration);
  j.task = &est;
  // Grants in flight at the release are inherited: charged to the new job as well.
  for (auto& g : grants_) {
    j.inherited += g.bytes;
    g.inherited_by.push_back(j.key);
  }
  j.charged = j.inherited;
  j.early = j.inherited;
  j.early_until = now + est.instrument_window();
  last_release_[task] = now - j.lag;
  jobs_.push_back(std::move(j));
  return jobs_.back().pricing;
}

Completion Ledger::finish(std::size_t index, Nanos now, bool completed) {
  JobAccount& j = jobs_[index];
  Estimator& est = *tasks_[j.key.task];
  Completion c;
  c.key = j.key;
  // A completion stamped before the job's start (a clock stepped back, or events from two
  // clocks) is taken as a zero-length run: a negative time would teach the fit a job of
  // -1 s and drag a_hat down for dozens of jobs.
  c.response = std::max(now, j.release) - j.release + j.lag;
  c.charged = j.charged;
  c.inherited = j.inherited;
  c.early = j.early;
  c.allowance = j.allowance;
  c.outcome = completed ? est.complete(j.pricing, c.response, j.charged, j.early) : est.unfinished(j.pricing);
  if (index + 1 != jobs_.size()) jobs_[index] = std::move(jobs_.back());
  jobs_.pop_back();
  return c;
}

std::optional<Completion> Ledger::on_complete(TaskId task, JobSeq seq, Nanos now) {
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].key.task == task && jobs_[i].key.seq == seq) return finish(i, now, true);
  return std::nullopt;
}

std::optional<Completion> Ledger::on_unfinished(TaskId task, JobSeq seq, Nanos now) {
  for (std::size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].key.task == task && jobs_[i].key.seq == seq) return finish(i, now, false);
  return std::nullopt;
}

// Whether an active job limits B(t) (Eq. 4: the minimum over the active uncertified jobs).
// A job priced uncertified keeps its limit when its task turns exempt while it runs (it
// overran into the release that completed the passes: the job most at risk); one priced
// certified limits again if its task loses the exemption before it completes.
static bool limits_budget(const JobAccount& j) { return !(j.pricing.certified && j.task->exempt()); }

Bytes Ledger::budget(Nanos now) const {
  Bytes b = kUnlimitedBytes;
  for (const auto& j : jobs_) {
    if (!limits_budget(j)) continue;
    b = std::min(b, j.budget(now));
  }
  return b == kUnlimitedBytes ? b : std::max<Bytes>(0, b);
}

const JobAccount* Ledger::binding_job(Nanos now) const {
  const JobAccount* binding = nullptr;
  for (const auto& j : jobs_) {
    if (!limits_budget(j)) continue;
    if (binding == nullptr || j.budget(now) < binding->budget(now)) binding = &j;
  }
  return binding;
}

Nanos Ledger::time_budget_reaches(Bytes bytes, Nanos now) const {
  Nanos t = now;
  for (const auto& j : jobs_) {
    if (!limits_budget(j)) continue;
    const Bytes need = bytes + j.charged;  // released(t) must reach this
    if (need > j.allowance) return kNever;
    if (j.full_release || j.floor >= need) continue;
    // rate (t - R) >= need  =>  t = R + ceil(need / rate)
    const double dt = std::ceil(static_cast<double>(need) / j.rate);
    t = std::max(t, j.release + static_cast<Nanos>(dt));
  }
  return t;
}

bool Ledger::crossing_allowed(Bytes bytes, Nanos end, Nanos now) const {
  for (TaskId k = 0; k < tasks_.size(); ++k) {
    const Estimator& est = *tasks_[k];
    if (est.exempt()) continue;
    const auto next = next_release(k, now);
    if (!next || end <= *next) continue;
    if (!est.crossing_allowed(end - *next, bytes)) return false;
  }
  return true;
}

GrantId Ledger::charge(EngineId engine, Bytes bytes, Nanos end, Nanos now) {
  Grant g;
  g.id = next_grant_++;
  g.engine = engine;
  g.bytes = bytes;
  g.end = end;
  g.charged_at = now;
  g.charged_to.reserve(jobs_.size());
  for (auto& j : jobs_) {
    j.charged += bytes;
    if (now < j.early_until) j.early += bytes;
    g.charged_to.push_back(j.key);
  }
  grants_.push_back(std::move(g));
  return grants_.back().id;
}

bool Ledger::grant_executed(GrantId id) {
  auto it = std::find_if(grants_.begin(), grants_.end(), [id](const Grant& g) { return g.id == id; });
  if (it == grants_.end()) return false;
  grants_.erase(it);
  return true;
}

bool Ledger::refund(GrantId id) {
  auto it = std::find_if(grants_.begin(), grants_.end(), [id](const Grant& g) { return g.id == id; });
  if (it == grants_.end()) return false;
  for (const JobKey& key : it->charged_to) {
    if (JobAccount* j = find_job(key.task, key.seq)) {
      j->charged -= it->bytes;
      if (it->charged_at < j->early_until) j->early -= it->bytes;
    }
  }
  for (const JobKey& key : it->inherited_by) {
    if (JobAccount* j = find_job(key.task, key.seq)) {
      j->charged -= it->bytes;
      j->inherited -= it->bytes;
      j->early -= it->bytes;
    }
  }
  grants_.erase(it);
  return true;
}

}  // namespace ripple::pricing
