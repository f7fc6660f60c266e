// Policies by name: the one place the daemon, the bench and the tests make them.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "agent/admission/policy.h"
#include "ripple/status.h"
#include "agent/policy/sereno.h"

namespace ripple::policy {

// "ripple" (default), "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2" (or any
// "cap-X" with 0 < X <= 1 as a fraction or decimal), "sigamma", "sereno" (Balanced),
// "sereno-ui-first", "pace-R" (R GB/s > 0 as a decimal or fraction: "pace-2",
// "pace-0.5"). The error names the policy and lists the valid ones.
Result<std::unique_ptr<admission::Policy>> make_policy(std::string_view name, const SerenoParams* sereno = nullptr);

// One line listing the names, for --help and errors.
std::string policy_names();

}  // namespace ripple::policy
