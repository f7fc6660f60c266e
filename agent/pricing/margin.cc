#include "agent/pricing/margin.h"

#include <algorithm>

namespace ripple::pricing {

namespace {

// Integer ceil(num / den) for den > 0.
std::int64_t ceil_div(std::int64_t num, std::int64_t den) {
  return num >= 0 ? (num + den - 1) / den : -((-num) / den);
}

// round(a * b / kPpm), halves away from zero.
std::int64_t mul_ppm(std::int64_t a, std::int64_t b) {
  const std::int64_t p = a * b;
  return p >= 0 ? (p + kPpm / 2) / kPpm : -((-p + kPpm / 2) / kPpm);
}

}  // namespace

ConformalMargin::ConformalMargin(const Params& params, double window_target)
    : eta_ppm_(to_ppm(params.eta)),
      target_ppm_(to_ppm(window_target)),
      alpha_ppm_(target_ppm_),  // ACI starts at its target level
      priced_alpha_ppm_(target_ppm_),
      margin_start_(params.margin_start),
      clip_(params.margin_clip),
      antiwindup_(params.margin_antiwindup),
      window_(static_cast<std::size_t>(params.margin_window)),
      warm_pooled_(static_cast<std::size_t>(params.warmup_window)),
      warm_phase_{SortedWindow(static_cast<std::size_t>(params.warmup_window)),
                  SortedWindow(static_cast<std::size_t>(params.warmup_window))} {}

std::optional<double> ConformalMargin::conformal_rank(const SortedWindow& w,
                                                      std::int64_t alpha_ppm, bool clip) {
  const auto n = static_cast<std::int64_t>(w.size());
  if (n == 0) return std::nullopt;
  if (alpha_ppm >= kPpm) return w.rank(1);  // alpha >= 1: the smallest residual
  const std::int64_t m = ceil_div((kPpm - alpha_ppm) * (n + 1), kPpm);
  if (m > n && !clip) return std::nullopt;  // rank beyond the retained samples: unbounded
  if (m > n) return w.rank(static_cast<std::size_t>(n));
  return w.rank(static_cast<std::size_t>(std::max<std::int64_t>(m, 1)));
}

std::optional<double> ConformalMargin::empirical_quantile(const SortedWindow& w,
                                                          std::int64_t target_ppm) {
  const auto n = static_cast<std::int64_t>(w.size());
  if (n == 0) return std::nullopt;
  const std::int64_t m = std::clamp<std::int64_t>(ceil_div((kPpm - target_ppm) * n, kPpm), 1, n);
  return w.rank(static_cast<std::size_t>(m));
}

std::optional<double> ConformalMargin::margin(Phase phase) const {
  if (adaptive()) return conformal_rank(window_, alpha_ppm_, clip_);
  const auto pooled = empirical_quantile(warm_pooled_, target_ppm_);
  const auto own = empirical_quantile(warm_phase_[static_cast<int>(phase)], target_ppm_);
  if (pooled && own) return std::max(*pooled, *own);
  return pooled ? pooled : own;
}

std::optional<double> ConformalMargin::worst_margin() const {
  const auto head = margin(Phase::kVlmHead), rest = margin(Phase::kRest);
  if (!head || !rest) return std::nullopt;
  return std::max(*head, *rest);
}

std::int64_t ConformalMargin::level_floor_ppm() const {
  // m = ceil((1 - alpha)(n + 1)) <= n  <=>  alpha >= 1 / (n + 1).
  return ceil_div(kPpm, static_cast<std::int64_t>(window_.size()) + 1);
}

void ConformalMargin::update_level(bool err) {
  const std::int64_t next = alpha_ppm_ + mul_ppm(eta_ppm_, target_ppm_ - (err ? kPpm : 0));
  // Anti-windup: a step down stops at the floor; a level already below it stays.
  alpha_ppm_ = err && antiwindup_ ? std::max(next, std::min(alpha_ppm_, level_floor_ppm())) : next;
}

void ConformalMargin::update_priced_level(bool err) {
  const std::int64_t next = priced_alpha_ppm_ + mul_ppm(eta_ppm_, target_ppm_ - (err ? kPpm : 0));
  const std::int64_t stepped =
      err && antiwindup_ ? std::max(next, std::min(priced_alpha_ppm_, level_floor_ppm())) : next;
  priced_alpha_ppm_ = std::min(stepped, std::max(alpha_ppm_, priced_alpha_ppm_));  // no step above the first
}

std::optional<double> ConformalMargin::margin_priced(Phase phase) const {
  if (adaptive()) return conformal_rank(window_, std::min(alpha_ppm_, priced_alpha_ppm_), clip_);
  return margin(phase);
}

void ConformalMargin::add_residual(double residual_ns, Phase phase) {
  ++observed_;
  window_.push(residual_ns);
  warm_pooled_.push(residual_ns);
  warm_phase_[static_cast<int>(phase)].push(residual_ns);
}

void ConformalMargin::seed(double residual_ns) { warm_pooled_.push(residual_ns); }

}  // namespace ripple::pricing
