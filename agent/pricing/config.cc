#include "agent/pricing/config.h"

#include <cmath>
#include <functional>
#include <string_view>

#include <fmt/format.h>

namespace ripple::pricing {

namespace {

enum class Kind { kInt, kFloat, kBool };

struct Key {
  std::string_view name;
  Kind kind;
  std::string_view unit;
  // Stores the already-typed value; returns an error for values that cannot convert.
  std::function<std::string(double, Params&)> set;
};

std::string set_int(int& field, double v) {
  if (v < 1 - 2147483648.0 || v > 2147483647.0) return "out of range";
  field = static_cast<int>(v);
  return {};
}

std::string set_nanos(Nanos& field, double v) {
  if (!std::isfinite(v) || std::fabs(v) > 9.0e18) return "out of range";
  field = static_cast<Nanos>(std::llround(v));
  return {};
}

const std::vector<Key>& keys() {
  static const std::vector<Key> k = {
      {"intercept_window", Kind::kInt, "jobs (W)",
       [](double v, Params& p) { return set_int(p.intercept_window, v); }},
      {"slope_window", Kind::kInt, "jobs (W_kappa)",
       [](double v, Params& p) { return set_int(p.slope_window, v); }},
      {"slope_hold_z", Kind::kFloat, "standard errors",
       [](double v, Params& p) { p.slope_hold_z = v; return std::string(); }},
      {"slope_candidates", Kind::kBool, "",
       [](double v, Params& p) { p.slope_candidates = v != 0; return std::string(); }},
      {"slope_candidate_jobs", Kind::kInt, "releases",
       [](double v, Params& p) { return set_int(p.slope_candidate_jobs, v); }},
      {"slope_release", Kind::kBool, "",
       [](double v, Params& p) { p.slope_release = v != 0; return std::string(); }},
      {"slope_instrument", Kind::kBool, "",
       [](double v, Params& p) { p.slope_instrument = v != 0; return std::string(); }},
      {"prior_slope_ms_per_gb", Kind::kFloat, "ms per GB",
       [](double v, Params& p) { p.prior_slope_ns_per_byte = v * 1e-3; return std::string(); }},
      {"eta", Kind::kFloat, "", [](double v, Params& p) { p.eta = v; return std::string(); }},
      {"margin_window", Kind::kInt, "residuals (W_q)",
       [](double v, Params& p) { return set_int(p.margin_window, v); }},
      {"margin_clip", Kind::kBool, "",
       [](double v, Params& p) { p.margin_clip = v != 0; return std::string(); }},
      {"margin_antiwindup", Kind::kBool, "",
       [](double v, Params& p) { p.margin_antiwindup = v != 0; return std::string(); }},
      {"late_starts", Kind::kBool, "",
       [](double v, Params& p) { p.late_starts = v != 0; return std::string(); }},
      {"untouched_level", Kind::kBool, "",
       [](double v, Params& p) { p.untouched_level = v != 0; return std::string(); }},
      {"margin_start", Kind::kInt, "residuals",
       [](double v, Params& p) { return set_int(p.margin_start, v); }},
      {"warmup_window", Kind::kInt, "residuals",
       [](double v, Params& p) { return set_int(p.warmup_window, v); }},
      {"vlm_head_fraction", Kind::kFloat, "of a VLM period",
       [](double v, Params& p) { p.vlm_head_fraction = v; return std::string(); }},
      {"contract_window_s", Kind::kFloat, "seconds (L)",
       [](double v, Params& p) { return set_nanos(p.contract_window, v * 1e9); }},
      {"min_window_target", Kind::kFloat, "",
       [](double v, Params& p) { p.min_window_target = v; return std::string(); }},
      {"miss_tolerance", Kind::kFloat, "default eps",
       [](double v, Params& p) { p.default_miss_tolerance = v; return std::string(); }},
      {"unestimable_slope_share", Kind::kFloat, "",
       [](double v, Params& p) { p.unestimable_slope_share = v; return std::string(); }},
      {"peak_rate_gbps", Kind::kFloat, "GB/s (rho)",
       [](double v, Params& p) { p.peak_rate_bytes_per_ns = v; return std::string(); }},
      {"rate_limit", Kind::kFloat, "per release",
       [](double v, Params& p) { p.rate_limit = v; return std::string(); }},
      {"high_uncertainty", Kind::kFloat, "SE / slope",
       [](double v, Params& p) { p.high_uncertainty = v; return std::string(); }},
      {"reduced_every", Kind::kInt, "jobs",
       [](double v, Params& p) { return set_int(p.reduced_every, v); }},
      {"reduced_cut", Kind::kFloat, "",
       [](double v, Params& p) { p.reduced_cut = v; return std::string(); }},
      {"probe_unit_bytes", Kind::kInt, "bytes",
       [](double v, Params& p) { return set_nanos(p.probe_unit_bytes, v); }},
      {"fit_min_bytes", Kind::kInt, "bytes",
       [](double v, Params& p) { return set_nanos(p.fit_min_bytes, v); }},
      {"pacing_floor_bytes", Kind::kInt, "bytes (f)",
       [](double v, Params& p) { return set_nanos(p.pacing_floor_bytes, v); }},
      {"min_pacing_duration_ns", Kind::kInt, "ns",
       [](double v, Params& p) { return set_nanos(p.min_pacing_duration, v); }},
      {"idle_periods", Kind::kFloat, "periods",
       [](double v, Params& p) { p.idle_periods = v; return std::string(); }},
      {"certification", Kind::kBool, "",
       [](double v, Params& p) { p.certification = v != 0; return std::string(); }},
      {"certify_passes", Kind::kInt, "consecutive passes",
       [](double v, Params& p) { return set_int(p.certify_passes, v); }},
      {"grant_horizon_ms", Kind::kFloat, "ms (H)",
       [](double v, Params& p) { return set_nanos(p.grant_horizon, v * 1e6); }},
      {"drift_z", Kind::kFloat, "standard errors",
       [](double v, Params& p) { p.drift_z = v; return std::string(); }},
      {"chunk_bytes", Kind::kInt, "bytes (0: suggested)",
       [](double v, Params& p) { return set_nanos(p.chunk_bytes, v); }},
  };
  return k;
}

std::string where(const toml::node& node) {
  const auto& src = node.source();
  if (src.begin.line == 0) return {};
  return fmt::format(" (line {})", src.begin.line);
}

}  // namespace

std::string apply_config(const toml::table& table, Params& params) {
  Params next = params;
  for (const auto& [name, node] : table) {
    const std::string_view key = name.str();
    const Key* k = nullptr;
    for (const auto& candidate : keys())
      if (candidate.name == key) k = &candidate;
    if (!k) return fmt::format("unknown pricing key '{}'{}", key, where(node));
    double v = 0;
    switch (k->kind) {
      case Kind::kInt:
        if (!node.is_integer())
          return fmt::format("pricing key '{}'{} must be an integer", key, where(node));
        v = static_cast<double>(*node.value<std::int64_t>());
        break;
      case Kind::kFloat:
        if (!node.is_number())
          return fmt::format("pricing key '{}'{} must be a number", key, where(node));
        v = *node.value<double>();
        break;
      case Kind::kBool:
        if (!node.is_boolean())
          return fmt::format("pricing key '{}'{} must be true or false", key, where(node));
        v = *node.value<bool>() ? 1 : 0;
        break;
    }
    if (auto e = k->set(v, next); !e.empty())
      return fmt::format("pricing key '{}'{}: {}", key, where(node), e);
    if (auto e = validate(next); !e.empty())
      return fmt::format("pricing key '{}'{}: {}", key, where(node), e);
  }
  params = next;
  return {};
}

std::string config_keys_help() {
  std::string out;
  for (const auto& k : keys()) out += fmt::format("  {:<26} {}\n", k.name, k.unit);
  return out;
}

}  // namespace ripple::pricing
