// The `ripple` policy: budgeted admission of paper §4.1-4.3.
//
// At a scheduling point, for the engines with a free slot in EDF order (deadline-bound
// engines by the due time of their next unit, then best-effort ones, least recently
// served first), grant the longest contiguous run of the engine's next units whose
// volume fits the global budget B(t) (Eq. 4), whose predicted duration stays within
// the horizon H (at least one unit), and whose crossings into the next releases the
// crossing bound allows (App. C). A best-effort grant runs before a waiting
// deadline-bound request's next due time only if it ends by then and leaves budget
// for that request's next unit (§4.1). When nothing fits, the wake-up is the time the
// budget accrues to the smallest next unit (scheduling point 4).
#pragma once

#include "agent/policy/base.h"

namespace ripple::policy {

class RipplePolicy final : public Policy {
 public:
  std::string_view name() const override { return "ripple"; }
  bool pipelines() const override { return true; }
  bool models_shared_link() const override { return true; }
  Pick pick(const Context& ctx) override;
};

}  // namespace ripple::policy
