// pause: whole forward passes, none started while any PT job is active; the
// pass in flight runs on (SGLang's pause takes effect after it).
#pragma once

#include "agent/policy/base.h"

namespace ripple::policy {

class PausePolicy final : public Policy {
 public:
  std::string_view name() const override { return "pause"; }
  Pick pick(const Context& ctx) override;
};

}  // namespace ripple::policy
