#include "agent/policy/sigamma.h"

namespace ripple::policy {

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

}  // namespace ripple::policy
