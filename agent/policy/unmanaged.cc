#include "agent/policy/unmanaged.h"

namespace ripple::policy {

Pick UnmanagedPolicy::pick(const Context& ctx) {
  return first_allowed(ctx, [](const EngineState&, WaitReason&) { return true; }, whole_pass);
}

}  // namespace ripple::policy
