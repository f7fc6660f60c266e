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

// Max-min fair allocation of `cap` among `want` (water-filling).
static std::vector<double> water_fill(const std::vector<double>& want, double cap) {
  std::vector<std::size_t> order(want.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return want[a] < want[b]; });
  std::vector<double> got(want.size(), 0.0);
  double left = cap;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const double fair = left / static_cast<double>(order.size() - k);
    got[order[k]] = std::min(want[order[k]], fair);
    left -= got[order[k]];
  }
  return got;
}

std::vector<double> Platform::engine_shares(const std::vector<Demand>& demands) const {
  std::vector<double> out(demands.size(), 1.0);
  if (!directed()) {
    double sum = 0;
    for (const Demand& d : demands) sum += d.gbps;
    std::fill(out.begin(), out.end(), engine_share(sum));
    return out;
  }
  std::vector<double> h2d, d2h;
  for (const Demand& d : demands) {
    h2d.push_back(d.gbps * d.h2d_fraction);
    d2h.push_back(d.gbps * (1 - d.h2d_fraction));
  }
  const auto gh = water_fill(h2d, h2d_gbps), gd = water_fill(d2h, d2h_gbps);
  double moved = 0;
  for (std::size_t i = 0; i < demands.size(); ++i) {
    if (h2d[i] > 0) out[i] = std::min(out[i], gh[i] / h2d[i]);
    if (d2h[i] > 0) out[i] = std::min(out[i], gd[i] / d2h[i]);
    moved += demands[i].gbps * out[i];
  }
  const double cap = engine_share(moved);
  for (double& f : out) f *= cap;
  return out;
}

Status validate(const Platform& p) {
  if (!(p.peak_gbps > 0)) return make_error("platform {}: peak_gbps {} must be > 0", p.name, p.peak_gbps);
  if (!(p.h2d_gbps >= 0 && p.d2h_gbps >= 0) || (p.h2d_gbps > 0) != (p.d2h_gbps > 0))
    return make_error("platform {}: h2d_gbps {} and d2h_gbps {}: both > 0 (a directed link) or neither", p.name,
                      p.h2d_gbps, p.d2h_gbps);
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
