// What the daemon's unit tests share: one protected task priced from a solo profile
// (40 ms runs, deadline 70 ms, period 100 ms) in a ledger, admission with the `ripple`
// policy, and a configuration with defaults. Simulated clock; no sockets, no tracer.
#pragma once

#include <memory>

#include "agent/admission/admission.h"
#include "agent/config/config.h"
#include "agent/policy/ripple.h"

namespace ripple::daemon::testing {

inline constexpr admission::Nanos kMs = admission::kNsPerMs;

inline pricing::Params params() {
  pricing::Params p;
  p.peak_rate_bytes_per_ns = 200;
  p.prior_slope_ns_per_byte = 2.5e-3;
  p.certification = false;
  return p;
}

inline pricing::TaskSpec costmap() {
  pricing::TaskSpec t;
  t.name = "costmap";
  t.period = 100 * kMs;
  t.deadline = 70 * kMs;
  t.solo_profile.assign(10, 40 * kMs);
  return t;
}

struct DaemonFixture {
  explicit DaemonFixture(const pricing::Params& p = params()) : ledger(p) {
    ledger.add_task(costmap());
    adm = std::make_unique<admission::Admission>(ledger, std::make_unique<policy::RipplePolicy>(), cfg.agent.admission);
  }
  config::Config cfg;
  pricing::Ledger ledger;
  std::unique_ptr<admission::Admission> adm;
};

}  // namespace ripple::daemon::testing
