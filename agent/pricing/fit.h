// The interference model CT = a + kappa * C + e (Eq. 1), fitted by least squares with
// exponential forgetting (App. C): effective windows of W = 50 jobs for the intercept
// and W_kappa = 200 for the slope.
//
// Two windows, one model. The slope comes from a recursive least-squares fit of CT on
// [1, C] with forgetting factor lambda_kappa = 1 - 1/W_kappa. It is kept in
// information form (R = sum w phi phi^T, r = sum w phi y) rather than as P = R^-1:
// algebraically the same estimator, but with no P0 = delta*I prior to bias a cold start.
// The intercept is re-anchored over the shorter window: with lambda_a = 1 - 1/W it keeps
// the exponentially weighted mean charge C_bar and mean response y_bar, and for any
// slope k the intercept is a = y_bar - k * C_bar, the weighted least-squares intercept
// for that slope. The estimator prices with the *held* slope (estimator.h), so the
// intercept is always evaluated at the slope that prices.
#pragma once

#include <cstdint>

#include <Eigen/Core>

namespace ripple::pricing {

class InterferenceFit {
 public:
  InterferenceFit(int intercept_window, int slope_window);

  // One completed job: response time (ns) and GPU bytes charged to it.
  void add(double response_ns, double charge_bytes);

  std::int64_t count() const { return count_; }
  bool has_data() const { return count_ > 0; }

  // Intercept window (W): weighted mean charge C_bar (bytes) and response (ns).
  double mean_charge() const { return mean_c_ * kBytesPerUnit; }
  double mean_response() const { return mean_y_ * kNsPerUnit; }
  // a = y_bar - slope * C_bar (ns), for a slope in ns/byte.
  double intercept(double slope_ns_per_byte) const;

  // Slope window (W_kappa). Estimable once three jobs with distinct charges give a
  // nonsingular design and more than two effective samples.
  bool slope_estimable() const { return estimable_; }
  double ls_slope() const { return slope_ * kSlopeUnit; }     // ns/byte
  double ls_slope_se() const { return slope_se_ * kSlopeUnit; }  // ns/byte
  double ls_intercept() const { return (ls_a_ + y0_) * kNsPerUnit; }
  // Kish effective sample size of the slope window's weights, (sum w)^2 / sum w^2.
  double effective_samples() const { return info2_(0, 0) > 0 ? info_(0, 0) * info_(0, 0) / info2_(0, 0) : 0.0; }

 private:
  // Internal units keep the normal equations well scaled: ms and GB.
  static constexpr double kNsPerUnit = 1e6;
  static constexpr double kBytesPerUnit = 1e9;
  static constexpr double kSlopeUnit = kNsPerUnit / kBytesPerUnit;

  void solve();

  double lambda_a_, lambda_k_;
  std::int64_t count_ = 0;
  // Intercept window.
  double weight_a_ = 0, mean_c_ = 0, mean_y_ = 0;
  // Slope window, centred on the first observation (c0_, y0_) for conditioning.
  double c0_ = 0, y0_ = 0;
  Eigen::Matrix2d info_ = Eigen::Matrix2d::Zero();   // R  = sum lambda^k phi phi^T
  Eigen::Matrix2d info2_ = Eigen::Matrix2d::Zero();  // R2 = sum lambda^2k phi phi^T
  Eigen::Vector2d moment_ = Eigen::Vector2d::Zero(); // r  = sum lambda^k phi y
  double yy_ = 0;                                    // sum lambda^k y^2
  bool estimable_ = false;
  double slope_ = 0, slope_se_ = 0, ls_a_ = 0;
};

// The same model's slope read with an instrument (ours, Params::slope_instrument): the
// bytes Z charged to a job in its first m ns (m: the shortest recent job, so every job
// lives through it; Estimator::instrument_window), against the whole charge C. A job that
// runs long for its own reasons collects more C while the engines run beside it, so the
// least-squares slope of CT on C reads the task's own spread as slope (results/sim.md
// §20); Z is fixed before that spread shows, so
//   kappa_IV = cov_w(Z, CT) / cov_w(Z, C)
// is free of it (the two-stage least-squares estimator with one instrument). With Z = C
// it is the least-squares slope. Its standard error is the IV sandwich,
//   se^2 = sigma^2 sum w^2 (Z - Z_bar)^2 / cov_w(Z, C)^2,
// sigma^2 from the weighted residuals of CT - a - kappa_IV C with n_eff - 2 degrees of
// freedom, and it grows as Z's tie to C weakens. Same forgetting as the slope window.
class InstrumentedFit {
 public:
  explicit InstrumentedFit(int slope_window);

  // One completed job: response (ns), charge C and instrument Z (bytes).
  void add(double response_ns, double charge_bytes, double instrument_bytes);

  // Estimable once three jobs give a nonsingular, positive first stage (Z moves with C)
  // and more than two effective samples.
  bool slope_estimable() const { return estimable_; }
  double slope() const { return slope_ * kSlopeUnit; }        // ns/byte
  double slope_se() const { return slope_se_ * kSlopeUnit; }  // ns/byte
  double effective_samples() const { return w2_ > 0 ? w_ * w_ / w2_ : 0.0; }

 private:
  static constexpr double kNsPerUnit = 1e6;      // ms
  static constexpr double kBytesPerUnit = 1e9;   // GB
  static constexpr double kSlopeUnit = kNsPerUnit / kBytesPerUnit;

  void solve();

  double lambda_;
  std::int64_t count_ = 0;
  double c0_ = 0, y0_ = 0, z0_ = 0;  // first observation: the sums are centred on it
  // Weighted sums (weights lambda^k) of 1, z, c, y and their products; w2_, qz_, qzz_ the
  // same with the squared weights (the sandwich).
  double w_ = 0, sz_ = 0, sc_ = 0, sy_ = 0;
  double szz_ = 0, szc_ = 0, szy_ = 0, scc_ = 0, scy_ = 0, syy_ = 0;
  double w2_ = 0, qz_ = 0, qzz_ = 0;
  bool estimable_ = false;
  double slope_ = 0, slope_se_ = 0;
};

}  // namespace ripple::pricing
