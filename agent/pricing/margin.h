// The residual margin q (Eq. 5, App. C): adaptive conformal inference over the last
// W_q = 200 residuals, with an empirical warm-up before 50 samples.
//
//   q_ij = e_(m),  m = ceil((1 - alpha_ij)(n_ij + 1))                         (Eq. 5)
//   alpha_i,j+1 = alpha_ij + eta (eps'_i - err_ij),  eta = 0.01
//
// Rank endpoints: m > n is an unbounded margin (the caller uses q = D_i), or with
// Params::margin_clip the largest retained residual (ours, params.h); alpha >= 1 uses the
// smallest residual. alpha is kept in integer parts per million. One level
// serves both VLM phases; before the adaptive margin starts (fewer than 50 observed
// residuals) the warm-up margin is the larger of the job's phase quantile and the
// pooled quantile at level 1 - eps', each over up to the last 50 residuals, solo-profile
// residuals included in the pooled one.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "agent/pricing/params.h"
#include "agent/pricing/sorted_window.h"

namespace ripple::pricing {

class ConformalMargin {
 public:
  ConformalMargin(const Params& params, double window_target);

  // q for a job released in `phase` (ns); nullopt = unbounded.
  std::optional<double> margin(Phase phase) const;
  // Larger margin of the two phases (for a release whose phase is not known yet).
  std::optional<double> worst_margin() const;

  // Level update (Eq. 5) after a job: err = 1 if it exceeded its saved pricing line.
  // With Params::margin_antiwindup an err lowers the level no further than level_floor().
  void update_level(bool err);
  // Params::slope_candidates (ours): a second level, moved by Eq. 5 only on the jobs this
  // line priced and never above the first after its own step. margin_priced() reads the
  // rank at the lower of the two, so the jobs a selection gives this line keep Eq. 5's
  // long-run coverage among themselves (the level's sum argument holds on any
  // subsequence; a step cut short from above only lowers the errors' bound).
  void update_priced_level(bool err);
  std::optional<double> margin_priced(Phase phase) const;
  std::int64_t priced_alpha_ppm() const { return priced_alpha_ppm_; }
  // The lowest level whose rank is within the retained residuals: ceil(1e6 / (n + 1)) ppm.
  std::int64_t level_floor_ppm() const;
  // A residual e_ij = CT - a_hat - kappa_hat C, computed before the job enters the fit.
  void add_residual(double residual_ns, Phase phase);
  // A solo-profile residual: seeds the pooled warm-up quantile only.
  void seed(double residual_ns);

  bool adaptive() const { return observed_ >= margin_start_; }
  std::int64_t observed() const { return observed_; }
  std::int64_t alpha_ppm() const { return alpha_ppm_; }
  std::int64_t target_ppm() const { return target_ppm_; }
  std::size_t retained() const { return window_.size(); }

  // Eq. 5's rank on a sorted window; nullopt when m exceeds the sample count, unless
  // `clip`: then the largest sample.
  static std::optional<double> conformal_rank(const SortedWindow& w, std::int64_t alpha_ppm,
                                              bool clip = false);
  // Empirical (type 1) quantile at level 1 - target: rank ceil((1 - target) n), in [1, n].
  static std::optional<double> empirical_quantile(const SortedWindow& w, std::int64_t target_ppm);

 private:
  std::int64_t eta_ppm_;
  std::int64_t target_ppm_;
  std::int64_t alpha_ppm_;
  std::int64_t priced_alpha_ppm_;
  std::int64_t margin_start_;
  bool clip_;
  bool antiwindup_;
  std::int64_t observed_ = 0;
  SortedWindow window_;                        // last W_q observed residuals
  SortedWindow warm_pooled_;                   // last 50, seeds included
  std::array<SortedWindow, kPhaseCount> warm_phase_;  // last 50 per phase
};

}  // namespace ripple::pricing
