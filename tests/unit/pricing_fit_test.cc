// Unit tests of the pricing core's statistics: Phi^-1, the window target eps', the
// forgetting least-squares fit (App. C) and the sorted residual window.
// Expected values are computed by hand in the comments.
#include <cmath>

#include <gtest/gtest.h>

#include "agent/pricing/fit.h"
#include "agent/pricing/params.h"
#include "agent/pricing/sorted_window.h"

namespace ripple::pricing {
namespace {

constexpr double kGB = 1e9;  // bytes
constexpr double kMs = 1e6;  // ns

// Tests that Phi^-1 matches published normal quantiles to 1e-9.
TEST(PricingStats, InverseNormalCdfMatchesTables) {
  EXPECT_NEAR(inverse_normal_cdf(0.5), 0.0, 1e-12);
  EXPECT_NEAR(inverse_normal_cdf(0.975), 1.959963984540054, 1e-9);
  EXPECT_NEAR(inverse_normal_cdf(0.98), 2.053748910631823, 1e-9);
  EXPECT_NEAR(inverse_normal_cdf(0.01), -2.326347874040841, 1e-9);
  EXPECT_NEAR(inverse_normal_cdf(0.999), 3.090232306167813, 1e-9);
  EXPECT_TRUE(std::isnan(inverse_normal_cdf(1.0)));
}

// Tests that n_i = max(1, floor(L / T_i)) with L = 100 s.
TEST(PricingStats, ContractJobsIsFloorOfWindowOverPeriod) {
  EXPECT_EQ(contract_jobs(100 * kNsPerSec, 100 * kNsPerMs), 1000);
  EXPECT_EQ(contract_jobs(100 * kNsPerSec, 30 * kNsPerMs), 3333);
  EXPECT_EQ(contract_jobs(100 * kNsPerSec, 300 * kNsPerSec), 1);
}

// Tests the paper's two worked window targets: 1.09 % at n = 1000, 1.59 % at n = 5000.
TEST(PricingStats, WindowTargetMatchesPaperExamples) {
  // z = 2.0537489; sqrt(0.02 * 0.98 / 1000) = 0.00442719; 0.02 - 0.00909234 = 0.01090766
  EXPECT_NEAR(window_target(0.02, 1000, 1e-6), 0.01090766, 1e-7);
  // sqrt(0.0196 / 5000) = 0.00197990; 0.02 - 0.00406619 = 0.01593381
  EXPECT_NEAR(window_target(0.02, 5000, 1e-6), 0.01593381, 1e-7);
  // eps = 0.1 %, n = 1: 0.001 - 3.09 * 0.0316 < 0, floored at 1e-6.
  EXPECT_DOUBLE_EQ(window_target(0.001, 1, 1e-6), 1e-6);
}

// Tests that a release in the first 10 % of a VLM period is the head phase.
TEST(PricingStats, PhaseSplitsFirstTenPercentOfVlmPeriod) {
  const Nanos period = 5 * kNsPerSec, epoch = 1 * kNsPerSec;
  EXPECT_EQ(phase_of(epoch + 499 * kNsPerMs, epoch, period, 0.10), Phase::kVlmHead);
  EXPECT_EQ(phase_of(epoch + 500 * kNsPerMs, epoch, period, 0.10), Phase::kRest);
  EXPECT_EQ(phase_of(epoch + period + 1, epoch, period, 0.10), Phase::kVlmHead);
  EXPECT_EQ(phase_of(epoch - 1, epoch, period, 0.10), Phase::kRest);  // 4.999 s into the previous
  EXPECT_EQ(phase_of(123, 0, 0, 0.10), Phase::kRest);  // no deadline-bound engine
}

// Tests the weighted least-squares solution with forgetting lambda = 0.5 (window 2).
TEST(PricingFit, WeightedLeastSquaresWithForgetting) {
  // Points (C GB, y ms) = (0,1), (1,3), (2,4) get weights 0.25, 0.5, 1.
  // S0 = 1.75, Sc = 2.5, Scc = 4.5, Sy = 5.75, Scy = 9.5
  // slope = (Scy - Sc Sy / S0) / (Scc - Sc^2 / S0) = (2.25/1.75) / (1.625/1.75) = 18/13
  // intercept = (Sy - slope Sc) / S0 = 17/13
  InterferenceFit fit(50, 2);
  fit.add(1 * kMs, 0 * kGB);
  fit.add(3 * kMs, 1 * kGB);
  fit.add(4 * kMs, 2 * kGB);
  ASSERT_TRUE(fit.slope_estimable());
  EXPECT_NEAR(fit.ls_slope(), 18.0 / 13.0 * kMs / kGB, 1e-12);
  EXPECT_NEAR(fit.ls_intercept(), 17.0 / 13.0 * kMs, 1e-3);
}

// Tests that with negligible forgetting the slope SE is the textbook OLS one.
TEST(PricingFit, StandardErrorMatchesOrdinaryLeastSquares) {
  // (0,1) (1,3) (2,4) (3,4): x_bar 1.5, Sxx 5, Sxy 5 -> slope 1, intercept 1.5;
  // residuals -.5 .5 .5 -.5, RSS 1, sigma^2 = 1/(4-2), SE = sqrt(0.5/5) = 0.316228.
  InterferenceFit fit(1'000'000'000, 1'000'000'000);
  for (auto [c, y] : {std::pair{0, 1}, {1, 3}, {2, 4}, {3, 4}}) fit.add(y * kMs, c * kGB);
  ASSERT_TRUE(fit.slope_estimable());
  EXPECT_NEAR(fit.ls_slope() * kGB / kMs, 1.0, 1e-6);
  EXPECT_NEAR(fit.ls_intercept() / kMs, 1.5, 1e-6);
  EXPECT_NEAR(fit.ls_slope_se() * kGB / kMs, 0.316228, 1e-5);
}

// Tests that the intercept window keeps exponentially weighted means (lambda = 0.5).
TEST(PricingFit, InterceptWindowReanchorsAtWeightedMeanCharge) {
  // y = 10, 20 ms with weights 0.5, 1: y_bar = 25/1.5 = 16.667 ms;
  // C = 0, 3 GB: C_bar = 3/1.5 = 2 GB; a at slope 1 ms/GB = 16.667 - 2 = 14.667 ms.
  InterferenceFit fit(2, 200);
  fit.add(10 * kMs, 0);
  fit.add(20 * kMs, 3 * kGB);
  EXPECT_NEAR(fit.mean_response(), 16.666667 * kMs, 1);
  EXPECT_NEAR(fit.mean_charge(), 2 * kGB, 1);
  EXPECT_NEAR(fit.intercept(1.0 * kMs / kGB), 14.666667 * kMs, 1);
}

// Tests that the slope is not estimable without three jobs of differing charge.
TEST(PricingFit, SlopeNeedsThreeJobsWithDifferentCharges) {
  InterferenceFit fit(50, 200);
  fit.add(10 * kMs, 1 * kGB);
  fit.add(12 * kMs, 2 * kGB);
  EXPECT_FALSE(fit.slope_estimable());  // two points
  InterferenceFit flat(50, 200);
  for (int k = 0; k < 20; ++k) flat.add((10 + k % 3) * kMs, 1 * kGB);
  EXPECT_FALSE(flat.slope_estimable());  // one charge only
  EXPECT_TRUE(flat.has_data());
}

// Tests that the sorted window drops the oldest value and ranks the rest.
TEST(PricingWindow, KeepsLastValuesSorted) {
  SortedWindow w(3);
  for (double x : {5.0, 1.0, 4.0, 2.0, 3.0}) w.push(x);  // keeps 4, 2, 3
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w.rank(1), 2.0);
  EXPECT_EQ(w.rank(2), 3.0);
  EXPECT_EQ(w.rank(3), 4.0);
  w.push(4.0);  // evicts the oldest 4, adds a new 4: {2, 3, 4}
  EXPECT_EQ(w.rank(3), 4.0);
  w.push(0.5);  // evicts 2: {0.5, 3, 4}
  EXPECT_EQ(w.rank(1), 0.5);
  EXPECT_EQ(w.rank(2), 3.0);
}

}  // namespace
}  // namespace ripple::pricing
