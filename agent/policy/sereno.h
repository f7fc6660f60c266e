// sereno: the best-effort engine is paused between decode steps for a time set
// by a PI controller on its contention score (step time / solo median - 1)
// against a target (0.07 UI-First, 0.15 Balanced); deadline-bound
// engines run unmanaged.
#pragma once

#include <map>

#include "agent/policy/base.h"

namespace ripple::policy {

struct SerenoParams {
  double target = 0.15;       // contention target (Balanced; UI-First 0.07)
  double kp = 1.0;            // pause per unit error, in solo step times
  double ki = 0.25;           // per accumulated unit error, in solo step times
  double max_pause_steps = 20;  // pause cap, in solo step times
};

class SerenoPolicy final : public Policy {
 public:
  SerenoPolicy(SerenoParams params, std::string name);
  std::string_view name() const override { return name_; }
  Pick pick(const Context& ctx) override;
  void on_grant_done(const EngineState& e, const GrantPlan& g, Nanos measured, Nanos profiled,
                     Nanos now) override;
  // When the engine may start its next step (tests, status).
  Nanos resume_at(admission::EngineId engine) const;

 private:
  SerenoParams p_;
  std::string name_;
  struct Loop {
    double integral = 0;
    Nanos resume_at = 0;
  };
  std::map<admission::EngineId, Loop> loops_;
};

}  // namespace ripple::policy
