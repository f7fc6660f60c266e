// unmanaged: every announced forward pass is granted at once, pipelined.
#pragma once

#include "agent/policy/base.h"

namespace ripple::policy {

class UnmanagedPolicy final : public Policy {
 public:
  std::string_view name() const override { return "unmanaged"; }
  bool pipelines() const override { return true; }
  Pick pick(const Context& ctx) override;
};

}  // namespace ripple::policy
