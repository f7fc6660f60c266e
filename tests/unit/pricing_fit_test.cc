// Unit tests of the pricing core's statistics: Phi^-1, the window target eps', the
// forgetting least-squares fit (App. C), the instrumented slope and the sorted residual
// window.
// Expected values are computed by hand in the comments.
#include <cmath>
#include <random>
#include <tuple>

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

// Tests the instrumented slope on hand-computed numbers (no forgetting).
TEST(PricingFit, InstrumentedSlopeIsCovZyOverCovZc) {
  // (Z, C, y) = (0,0,1) (1,2,3) (2,2,6) (3,5,6): means z 1.5, c 2.25, y 4.
  // cov(z,y) = (-1.5*-3 + -.5*-1 + .5*2 + 1.5*2) = 9; cov(z,c) = (-1.5*-2.25 + -.5*-.25
  // + .5*-.25 + 1.5*2.75) = 7.5; slope 1.2. a = 4 - 1.2*2.25 = 1.3; residuals
  // -.3, -.7, 2.3, -1.3: RSS 7.56, sigma^2 = 7.56/2 = 3.78;
  // se = sqrt(3.78 * sum (z - zb)^2 = 5) / 7.5 = 0.579655.
  InstrumentedFit fit(1'000'000'000);
  for (auto [z, c, y] : {std::tuple{0, 0, 1}, {1, 2, 3}, {2, 2, 6}, {3, 5, 6}})
    fit.add(y * kMs, c * kGB, z * kGB);
  ASSERT_TRUE(fit.slope_estimable());
  EXPECT_NEAR(fit.slope() * kGB / kMs, 1.2, 1e-9);
  EXPECT_NEAR(fit.slope_se() * kGB / kMs, 0.579655, 1e-5);
}

// Tests that with the whole charge as its instrument it is the least-squares fit.
TEST(PricingFit, InstrumentedSlopeWithZEqualCIsLeastSquares) {
  InterferenceFit ls(50, 40);
  InstrumentedFit iv(40);
  std::mt19937 rng(3);
  for (int i = 0; i < 300; ++i) {
    const double c = static_cast<double>(rng() % 1000) / 250.0;
    const double y = 20 + 1.5 * c + static_cast<double>(rng() % 1000) / 200.0;
    ls.add(y * kMs, c * kGB);
    iv.add(y * kMs, c * kGB, c * kGB);
  }
  ASSERT_TRUE(iv.slope_estimable());
  EXPECT_NEAR(iv.slope(), ls.ls_slope(), 1e-9 * std::fabs(ls.ls_slope()));
  EXPECT_NEAR(iv.slope_se(), ls.ls_slope_se(), 1e-6 * ls.ls_slope_se());
}

// Tests the bias it removes (results/sim.md §20): jobs charged at a fixed rate for as long
// as they live, with a wide own spread and a true slope of 0.2 ms/GB. The charge C grows
// with the job's own length, so least squares reads the spread as slope; the bytes of the
// first 10 ms (Z) do not, and the instrumented slope finds 0.2 within its error.
TEST(PricingFit, InstrumentedSlopeIgnoresTheOwnSpread) {
  InterferenceFit ls(50, 200);
  InstrumentedFit iv(200);
  std::mt19937 rng(11);
  std::exponential_distribution<double> tail(1.0 / 8.0);  // own time past 20 ms, mean 8
  for (int i = 0; i < 2000; ++i) {
    const double rate = static_cast<double>(rng() % 100) / 1000.0;  // 0-0.1 GB per ms
    const double own = 20 + tail(rng);
    // y = own + 0.2 C, C = rate y: y = own / (1 - 0.2 rate).
    const double y = own / (1 - 0.2 * rate), c = rate * y, z = rate * 10;
    ls.add(y * kMs, c * kGB);
    iv.add(y * kMs, c * kGB, z * kGB);
  }
  ASSERT_TRUE(ls.slope_estimable());
  ASSERT_TRUE(iv.slope_estimable());
  EXPECT_GT(ls.ls_slope() * kGB / kMs, 2.0);  // the spread, read as slope: > 10x the truth
  EXPECT_NEAR(iv.slope() * kGB / kMs, 0.2, 3 * iv.slope_se() * kGB / kMs);
  EXPECT_LT(iv.slope_se() * kGB / kMs, 1.0);
}

// Tests that it needs a first stage: an instrument that does not move with the charge.
TEST(PricingFit, InstrumentedSlopeNeedsZToMoveWithC) {
  InstrumentedFit fixed(200);
  for (int k = 0; k < 20; ++k) fixed.add((10 + k) * kMs, k * kGB, 1 * kGB);
  EXPECT_FALSE(fixed.slope_estimable());  // Z constant
  InstrumentedFit against(200);
  for (int k = 0; k < 20; ++k) against.add((10 + k) * kMs, k * kGB, (20 - k) * kGB);
  EXPECT_FALSE(against.slope_estimable());  // Z falls as C rises
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
