#include "agent/pricing/params.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

namespace ripple::pricing {

std::string validate(const Params& p) {
  auto positive_int = [](const char* key, int v) -> std::string {
    return v >= 1 ? std::string() : fmt::format("{} must be >= 1 (got {})", key, v);
  };
  for (auto [key, v] : {std::pair{"intercept_window", p.intercept_window},
                        std::pair{"slope_window", p.slope_window},
                        std::pair{"margin_window", p.margin_window},
                        std::pair{"warmup_window", p.warmup_window},
                        std::pair{"reduced_every", p.reduced_every},
                        std::pair{"certify_passes", p.certify_passes}}) {
    if (auto e = positive_int(key, v); !e.empty()) return e;
  }
  if (p.margin_start < 0) return fmt::format("margin_start must be >= 0 (got {})", p.margin_start);
  if (!(p.slope_hold_z >= 0)) return fmt::format("slope_hold_z must be >= 0 (got {})", p.slope_hold_z);
  if (!(p.drift_z >= 0)) return fmt::format("drift_z must be >= 0 (got {})", p.drift_z);
  if (!(p.prior_slope_ns_per_byte > 0 && p.prior_slope_ns_per_byte <= kMaxSlopeNsPerByte))
    return fmt::format("prior_slope must be in (0, {}] ns/byte, 10^6 ms/GB (got {} ns/byte)", kMaxSlopeNsPerByte,
                       p.prior_slope_ns_per_byte);
  // The level moves in integer parts per million: a smaller step rounds to none.
  if (!(p.eta >= 1e-6 && p.eta < 1)) return fmt::format("eta must be in [1e-6, 1) (got {})", p.eta);
  if (!(p.vlm_head_fraction >= 0 && p.vlm_head_fraction < 1))
    return fmt::format("vlm_head_fraction must be in [0, 1) (got {})", p.vlm_head_fraction);
  if (p.contract_window <= 0)
    return fmt::format("contract_window must be > 0 (got {} ns)", p.contract_window);
  if (!(p.min_window_target >= 1e-6 && p.min_window_target < 1))
    return fmt::format("min_window_target must be in [1e-6, 1) (got {})", p.min_window_target);
  if (!(p.default_miss_tolerance > 0 && p.default_miss_tolerance < 0.5))
    return fmt::format("miss_tolerance must be in (0, 0.5) (got {})", p.default_miss_tolerance);
  if (!(p.unestimable_slope_share > 0 && p.unestimable_slope_share <= 1))
    return fmt::format("unestimable_slope_share must be in (0, 1] (got {})",
                       p.unestimable_slope_share);
  if (!(p.peak_rate_bytes_per_ns > 0) || !std::isfinite(p.peak_rate_bytes_per_ns))
    return fmt::format("peak_rate must be > 0 (got {} bytes/ns)", p.peak_rate_bytes_per_ns);
  if (!(p.rate_limit > 0 && p.rate_limit < 1))
    return fmt::format("rate_limit must be in (0, 1) (got {})", p.rate_limit);
  if (!(p.high_uncertainty > 0)) return fmt::format("high_uncertainty must be > 0 (got {})", p.high_uncertainty);
  if (!(p.reduced_cut >= 0 && p.reduced_cut < 1))
    return fmt::format("reduced_cut must be in [0, 1) (got {})", p.reduced_cut);
  if (p.probe_unit_bytes < 1) return fmt::format("probe_unit must be >= 1 byte (got {})", p.probe_unit_bytes);
  if (p.fit_min_bytes < 0) return fmt::format("fit_min must be >= 0 bytes (got {})", p.fit_min_bytes);
  if (p.pacing_floor_bytes < 0 && p.pacing_floor_bytes != kFloorIsProbeUnit)
    return fmt::format("pacing_floor must be >= 0 bytes (got {})", p.pacing_floor_bytes);
  if (p.min_pacing_duration < 1)
    return fmt::format("min_pacing_duration must be >= 1 ns (got {})", p.min_pacing_duration);
  if (!(p.idle_periods >= 0 && p.idle_periods <= kMaxIdlePeriods))
    return fmt::format("idle_periods must be in [0, {}] (got {})", kMaxIdlePeriods, p.idle_periods);
  if (p.slope_candidate_jobs < 1)
    return fmt::format("slope_candidate_jobs must be >= 1 (got {})", p.slope_candidate_jobs);
  if (p.grant_horizon < 0) return fmt::format("grant_horizon must be >= 0 (got {} ns)", p.grant_horizon);
  if (p.chunk_bytes != 0 && (p.chunk_bytes < kMinFixedChunk || p.chunk_bytes > kMaxFixedChunk ||
                             !std::has_single_bit(static_cast<std::uint64_t>(p.chunk_bytes))))
    return fmt::format("chunk_bytes must be 0 (suggested) or a power of two from 1 MiB to 1 GiB (got {})",
                       p.chunk_bytes);
  return {};
}

std::string validate(const TaskSpec& s) {
  const std::string who = s.name.empty() ? std::string("task") : fmt::format("task '{}'", s.name);
  if (s.period <= 0 || s.period > kMaxPeriod)
    return fmt::format("{}: period must be in (0, {}] ns (got {})", who, kMaxPeriod, s.period);
  if (s.deadline <= 0) return fmt::format("{}: deadline must be > 0 (got {} ns)", who, s.deadline);
  if (s.deadline > s.period)
    return fmt::format("{}: deadline {} ns is larger than the period {} ns", who, s.deadline, s.period);
  if (!(s.miss_tolerance > 0 && s.miss_tolerance < 0.5))
    return fmt::format("{}: miss_tolerance must be in (0, 0.5) (got {})", who, s.miss_tolerance);
  for (Nanos d : s.solo_profile)
    if (d <= 0) return fmt::format("{}: solo profile durations must be > 0 (got {} ns)", who, d);
  if (s.solo_p99 < 0) return fmt::format("{}: solo_p99 must be >= 0 (got {} ns)", who, s.solo_p99);
  if (s.prior_slope_ns_per_byte && !(*s.prior_slope_ns_per_byte > 0 && *s.prior_slope_ns_per_byte <= kMaxSlopeNsPerByte))
    return fmt::format("{}: prior_slope must be in (0, {}] ns/byte, 10^6 ms/GB (got {} ns/byte)", who,
                       kMaxSlopeNsPerByte, *s.prior_slope_ns_per_byte);
  return {};
}

double inverse_normal_cdf(double p) {
  // Acklam's algorithm (relative error 1.15e-9), refined by one Halley step on erfc.
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00, 2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  if (!(p > 0 && p < 1)) return std::nan("");
  constexpr double kLow = 0.02425;
  double x;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p <= 1 - kLow) {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  } else {
    const double q = std::sqrt(-2 * std::log1p(-p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}

int contract_jobs(Nanos contract_window, Nanos period) {
  const Nanos n = period > 0 ? contract_window / period : 1;
  return n < 1 ? 1 : static_cast<int>(n);
}

double window_target(double eps, int n, double min_target) {
  const double z = inverse_normal_cdf(1 - eps);
  const double t = eps - z * std::sqrt(eps * (1 - eps) / n);
  return t > min_target ? t : min_target;
}

std::int64_t to_ppm(double fraction) {
  return static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(kPpm)));
}

Phase phase_of(Nanos release, Nanos vlm_epoch, Nanos vlm_period, double head_fraction) {
  if (vlm_period <= 0) return Phase::kRest;
  Nanos into = (release - vlm_epoch) % vlm_period;
  if (into < 0) into += vlm_period;
  return static_cast<double>(into) < head_fraction * static_cast<double>(vlm_period)
             ? Phase::kVlmHead
             : Phase::kRest;
}

}  // namespace ripple::pricing
