#include "agent/pricing/fit.h"

#include <algorithm>
#include <cmath>

#include <Eigen/LU>

namespace ripple::pricing {

InterferenceFit::InterferenceFit(int intercept_window, int slope_window)
    : lambda_a_(1.0 - 1.0 / intercept_window), lambda_k_(1.0 - 1.0 / slope_window) {}

double InterferenceFit::intercept(double slope_ns_per_byte) const {
  return mean_response() - slope_ns_per_byte * mean_charge();
}

void InterferenceFit::add(double response_ns, double charge_bytes) {
  const double y = response_ns / kNsPerUnit, c = charge_bytes / kBytesPerUnit;
  if (count_ == 0) {
    c0_ = c;
    y0_ = y;
  }
  ++count_;

  // Intercept window: exact exponentially weighted means.
  weight_a_ = lambda_a_ * weight_a_ + 1.0;
  mean_c_ += (c - mean_c_) / weight_a_;
  mean_y_ += (y - mean_y_) / weight_a_;

  // Slope window: forget, then add phi = [1, c - c0] with target y - y0.
  const Eigen::Vector2d phi(1.0, c - c0_);
  const double yc = y - y0_;
  info_ = lambda_k_ * info_ + phi * phi.transpose();
  info2_ = (lambda_k_ * lambda_k_) * info2_ + phi * phi.transpose();
  moment_ = lambda_k_ * moment_ + phi * yc;
  yy_ = lambda_k_ * yy_ + yc * yc;
  solve();
}

void InterferenceFit::solve() {
  estimable_ = false;
  const double s0 = info_(0, 0);
  const double det = info_.determinant();
  // Relative test: the charges must vary, not just be numerically distinct.
  if (count_ < 3 || !(det > 1e-9 * info_(0, 0) * info_(1, 1))) return;
  const double n_eff = effective_samples();
  if (!(n_eff > 2.0)) return;
  const Eigen::Matrix2d inv = info_.inverse();
  const Eigen::Vector2d theta = inv * moment_;
  const double rss = std::max(0.0, yy_ - theta.dot(moment_));
  // Residual variance with n_eff - 2 degrees of freedom (reduces to RSS/(n-2) with
  // equal weights), and the sandwich covariance of the weighted estimator.
  const double sigma2 = rss / s0 * n_eff / (n_eff - 2.0);
  const Eigen::Matrix2d cov = sigma2 * (inv * info2_ * inv);
  ls_a_ = theta(0) - theta(1) * c0_;  // back from centred coordinates (y0 added on read)
  slope_ = theta(1);
  slope_se_ = std::sqrt(std::max(0.0, cov(1, 1)));
  // A zero standard error is no certainty but no scatter: a solo profile of identical
  // durations and one charged job fit exactly, and that one job's slope would be priced as
  // known (no pessimistic margin, no one-in-eight reduction).
  estimable_ = std::isfinite(slope_) && std::isfinite(slope_se_) && slope_se_ > 0;
}

InstrumentedFit::InstrumentedFit(int slope_window) : lambda_(1.0 - 1.0 / slope_window) {}

void InstrumentedFit::add(double response_ns, double charge_bytes, double instrument_bytes) {
  double y = response_ns / kNsPerUnit, c = charge_bytes / kBytesPerUnit,
         z = instrument_bytes / kBytesPerUnit;
  if (count_ == 0) {
    c0_ = c;
    y0_ = y;
    z0_ = z;
  }
  ++count_;
  y -= y0_;
  c -= c0_;
  z -= z0_;
  const double l = lambda_, l2 = lambda_ * lambda_;
  w_ = l * w_ + 1.0;
  sz_ = l * sz_ + z;
  sc_ = l * sc_ + c;
  sy_ = l * sy_ + y;
  szz_ = l * szz_ + z * z;
  szc_ = l * szc_ + z * c;
  szy_ = l * szy_ + z * y;
  scc_ = l * scc_ + c * c;
  scy_ = l * scy_ + c * y;
  syy_ = l * syy_ + y * y;
  w2_ = l2 * w2_ + 1.0;
  qz_ = l2 * qz_ + z;
  qzz_ = l2 * qzz_ + z * z;
  solve();
}

void InstrumentedFit::solve() {
  estimable_ = false;
  if (count_ < 3) return;
  const double n_eff = effective_samples();
  if (!(n_eff > 2.0)) return;
  // Weighted (co)variances about the weighted means, times w_.
  const double zb = sz_ / w_, cb = sc_ / w_, yb = sy_ / w_;
  const double vzz = szz_ - zb * sz_, vzc = szc_ - zb * sc_, vzy = szy_ - zb * sy_;
  const double vcc = scc_ - cb * sc_, vcy = scy_ - cb * sy_, vyy = syy_ - yb * sy_;
  // The first stage must be positive and not vanishing against Z's and C's own spread.
  if (!(vzc > 0) || !(vzc * vzc > 1e-9 * vzz * vcc)) return;
  const double b = vzy / vzc;
  double rss = std::max(0.0, vyy - 2.0 * b * vcy + b * b * vcc);
  // An exact line (a solo profile of identical durations and one charged job) leaves only
  // the expansion's rounding: that is no scatter, and SE = 0 is no estimate.
  if (rss <= 1e-12 * vyy) rss = 0.0;
  const double sigma2 = rss / w_ * n_eff / (n_eff - 2.0);
  const double qzz = std::max(0.0, qzz_ - 2.0 * zb * qz_ + zb * zb * w2_);  // sum w^2 (z - zb)^2
  slope_ = b;
  slope_se_ = std::sqrt(sigma2 * qzz) / vzc;
  estimable_ = std::isfinite(slope_) && std::isfinite(slope_se_) && slope_se_ > 0;
}

}  // namespace ripple::pricing
