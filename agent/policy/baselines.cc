#include "agent/policy/baselines.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace ripple::policy {

using admission::EngineKind;
using admission::kNever;
using admission::WaitCause;
using admission::WaitReason;

namespace {

// Shared shape of the baselines: walk the engines, grant the first one `allow` lets
// through (with `count` units), record why the others wait.
template <class Allow, class Count>
Pick first_allowed(const Context& ctx, Allow allow, Count count) {
  Pick out;
  for (const EngineState& e : ctx.engines) {
    if (!e.connected) continue;
    if (!e.has_work()) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kNoWork, 0, 0, kNever, "nothing announced"});
      continue;
    }
    if (!ctx.slot(e)) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kBoundary, e.bytes_of(1), 0, e.busy_until,
                                              "waits for the grant in flight to end"});
      continue;
    }
    WaitReason why{WaitCause::kPaused, e.bytes_of(1), 0, kNever, {}};
    if (allow(e, why)) {
      out.engine = e.id;
      out.count = count(e);
      return out;
    }
    out.wake_at = std::min(out.wake_at, why.until);
    out.waits.emplace_back(e.id, std::move(why));
  }
  return out;
}

std::uint32_t whole_pass(const EngineState& e) { return e.remaining(); }

std::string active_jobs_line(const Context& ctx) {
  return fmt::format("paused: {} PT job(s) active", ctx.ledger.active_jobs().size());
}

}  // namespace

Pick UnmanagedPolicy::pick(const Context& ctx) {
  return first_allowed(ctx, [](const EngineState&, WaitReason&) { return true; }, whole_pass);
}

Pick PausePolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (!ctx.any_job_active()) return true;
        why.detail = active_jobs_line(ctx);
        return false;
      },
      whole_pass);
}

Pick SigammaPolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (!ctx.any_job_active()) return true;
        why.detail = "suppressed: " + active_jobs_line(ctx);
        return false;
      },
      [](const EngineState&) { return 1u; });
}

// --- cap-x -------------------------------------------------------------------

CapPolicy::CapPolicy(double fraction, std::string name) : fraction_(fraction), name_(std::move(name)) {}

Nanos CapPolicy::budget_of(const pricing::Estimator& task, double fraction) {
  std::vector<Nanos> solo = task.spec().solo_profile;
  double median = 0;
  if (!solo.empty()) {
    std::sort(solo.begin(), solo.end());
    median = static_cast<double>(solo[(solo.size() - 1) / 2]);
  } else if (task.fit().has_data()) {
    median = task.intercept();
  } else {
    median = static_cast<double>(task.spec().deadline);  // nothing known yet
  }
  return static_cast<Nanos>(fraction * median);
}

void CapPolicy::advance(Nanos now) {
  // Exposure accumulates while the job is active and the engines are commanded to run.
  if (running_ && now > last_)
    for (auto& [key, job] : jobs_) job.exposure += now - last_;
  last_ = std::max(last_, now);
}

void CapPolicy::on_release(admission::TaskId task, admission::JobSeq seq, Nanos now) {
  advance(now);
  jobs_[{task, seq}] = Job{};
}

void CapPolicy::on_complete(admission::TaskId task, admission::JobSeq seq, Nanos now) {
  advance(now);
  jobs_.erase({task, seq});
}

Nanos CapPolicy::exposure(admission::TaskId task, admission::JobSeq seq) const {
  auto it = jobs_.find({task, seq});
  return it == jobs_.end() ? 0 : it->second.exposure;
}

Pick CapPolicy::pick(const Context& ctx) {
  advance(ctx.now);
  const pricing::JobAccount* spent = nullptr;
  for (const auto& j : ctx.ledger.active_jobs()) {
    const Nanos cap = budget_of(*j.task, fraction_);
    if (exposure(j.key.task, j.key.seq) >= cap) {
      spent = &j;
      break;
    }
  }
  Pick out = first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (spent == nullptr) return true;
        why.detail = fmt::format("paused: job {} of {} spent its exposure cap {:.3f} ms", spent->key.seq,
                                 spent->task->spec().name,
                                 static_cast<double>(budget_of(*spent->task, fraction_)) / 1e6);
        return false;
      },
      whole_pass);
  bool running = out.engine.has_value();
  for (const EngineState& e : ctx.engines) running = running || (e.connected && e.outstanding > 0);
  running_ = running;
  return out;
}

// --- sereno ------------------------------------------------------------------

SerenoPolicy::SerenoPolicy(SerenoParams params, std::string name) : p_(params), name_(std::move(name)) {}

Nanos SerenoPolicy::resume_at(admission::EngineId engine) const {
  auto it = loops_.find(engine);
  return it == loops_.end() ? 0 : it->second.resume_at;
}

void SerenoPolicy::on_grant_done(const EngineState& e, const GrantPlan& g, Nanos measured, Nanos profiled,
                                 Nanos now) {
  if (e.spec.kind != EngineKind::kBestEffort || profiled <= 0) return;
  // The contention score compares the step time with its solo median (App. D).
  const double score = static_cast<double>(measured) / static_cast<double>(profiled) - 1.0;
  const double err = score - p_.target;
  Loop& loop = loops_[e.id];
  loop.integral = std::max(0.0, loop.integral + err);  // no wind-up below zero
  const double steps = std::clamp(p_.kp * err + p_.ki * loop.integral, 0.0, p_.max_pause_steps);
  loop.resume_at = now + static_cast<Nanos>(std::llround(steps * static_cast<double>(profiled)));
  (void)g;
}

Pick SerenoPolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState& e, WaitReason& why) {
        if (e.spec.kind != EngineKind::kBestEffort) return true;
        const Nanos resume = resume_at(e.id);
        if (resume <= ctx.now) return true;
        why.until = resume;
        why.detail = fmt::format("paused between steps by the PI controller for {:.3f} ms",
                                 static_cast<double>(resume - ctx.now) / 1e6);
        return false;
      },
      whole_pass);
}

}  // namespace ripple::policy
