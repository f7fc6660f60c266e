#include "agent/policy/pause.h"

namespace ripple::policy {

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

}  // namespace ripple::policy
