#include "tools/bench/ripple-sim/platform.h"

#include <algorithm>
#include <cmath>

namespace ripple::sim {

double Platform::progress_rate(double kappa_ms_per_gb, double beta_gbps) const {
  const double x = kappa_ms_per_gb * 1e-3 * std::max(0.0, beta_gbps);  // kappa beta, dimensionless
  if (x <= 0) return 1.0;
  if (model == SlowdownModel::kSaturating) return 1.0 - max_stall * (1.0 - std::exp(-x / max_stall));
  return std::max(min_rate, 1.0 - x);
}

double Platform::engine_share(double demand_gbps) const {
  return demand_gbps > peak_gbps && demand_gbps > 0 ? peak_gbps / demand_gbps : 1.0;
}

Status validate(const Platform& p) {
  if (!(p.peak_gbps > 0)) return make_error("platform {}: peak_gbps {} must be > 0", p.name, p.peak_gbps);
  if (!(p.max_stall > 0 && p.max_stall < 1))
    return make_error("platform {}: max_stall {} must be in (0, 1)", p.name, p.max_stall);
  if (!(p.min_rate > 0 && p.min_rate <= 1))
    return make_error("platform {}: min_rate {} must be in (0, 1]", p.name, p.min_rate);
  return Status::Ok();
}

SlowdownModel parse_slowdown(const std::string& s, bool* ok) {
  *ok = s == "linear" || s == "saturating";
  return s == "saturating" ? SlowdownModel::kSaturating : SlowdownModel::kLinear;
}

}  // namespace ripple::sim
