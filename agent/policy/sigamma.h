// sigamma: GPU work suppressed while a PT job is active, at the finest
// granularity there is (one unit: the blocking kernel preempts within a
// kernel); one unit per grant otherwise.
#pragma once

#include "agent/policy/base.h"

namespace ripple::policy {

class SigammaPolicy final : public Policy {
 public:
  std::string_view name() const override { return "sigamma"; }
  Pick pick(const Context& ctx) override;
};

}  // namespace ripple::policy
