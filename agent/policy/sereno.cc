#include "agent/policy/sereno.h"

#include <cmath>

namespace ripple::policy {

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
