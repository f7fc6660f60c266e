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

}  // namespace ripple::pricing
