// What the policies in agent/policy/ share: the admission framework's names (the
// interface is agent/admission/policy.h) and the common shape of the baselines of
// paper §5.1 / App. D, none of which reads a deadline. Each policy is one .h/.cc pair
// here; agent/policy/registry.h makes them by name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "agent/admission/policy.h"

namespace ripple::policy {

using admission::Bytes;
using admission::Context;
using admission::EngineKind;
using admission::EngineState;
using admission::GrantPlan;
using admission::kNever;
using admission::Nanos;
using admission::Pick;
using admission::Policy;
using admission::WaitCause;
using admission::WaitReason;

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

// A whole forward pass: every unit the engine has announced and not been granted.
inline std::uint32_t whole_pass(const EngineState& e) { return e.remaining(); }

inline std::string active_jobs_line(const Context& ctx) {
  return fmt::format("paused: {} PT job(s) active", ctx.ledger.active_jobs().size());
}

}  // namespace ripple::policy
