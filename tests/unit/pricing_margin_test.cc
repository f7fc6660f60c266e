// Unit tests of the conformal margin (Eq. 5, App. C "Margin", "Rank endpoints").
#include <gtest/gtest.h>

#include "agent/pricing/margin.h"

namespace ripple::pricing {
namespace {

SortedWindow window_of(int from, int to, std::size_t capacity = 200) {
  SortedWindow w(capacity);
  for (int k = from; k <= to; ++k) w.push(k);
  return w;
}

// Tests Eq. 5's rank m = ceil((1 - alpha)(n + 1)) on 200 residuals.
TEST(PricingMargin, RankOfEquationFive) {
  // alpha = 10908 ppm: m = ceil(0.989092 * 201) = ceil(198.807) = 199 -> residual 199.
  const auto w = window_of(1, 200);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 10'908), 199.0);
  // alpha = 5 %: m = ceil(0.95 * 201) = ceil(190.95) = 191.
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 50'000), 191.0);
}

// Tests the rank endpoints: m > n is unbounded, alpha >= 1 takes the smallest residual.
TEST(PricingMargin, RankEndpoints) {
  const auto w = window_of(1, 50);
  // alpha = 10908 ppm, n = 50: m = ceil(0.989092 * 51) = ceil(50.44) = 51 > 50.
  EXPECT_FALSE(ConformalMargin::conformal_rank(w, 10'908).has_value());
  // alpha = 2 %: m = ceil(0.98 * 51) = ceil(49.98) = 50: the largest.
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 20'000), 50.0);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, kPpm), 1.0);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 3 * kPpm), 1.0);
  EXPECT_FALSE(ConformalMargin::conformal_rank(w, -5'000).has_value());
  EXPECT_FALSE(ConformalMargin::conformal_rank(SortedWindow(4), 500'000).has_value());
}

// Tests margin_clip: a rank beyond the samples takes the largest one instead of unbounded,
// and only through the adaptive margin when the option is set.
TEST(PricingMargin, ClipTakesTheLargestResidual) {
  const auto w = window_of(1, 50);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 10'908, true), 50.0);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, -5'000, true), 50.0);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 20'000, true), 50.0);
  EXPECT_EQ(ConformalMargin::conformal_rank(w, 500'000, true), 26.0);  // ceil(0.5 * 51)
  EXPECT_FALSE(ConformalMargin::conformal_rank(SortedWindow(4), 500'000, true).has_value());

  Params spec, clipped;
  spec.margin_clip = false;  // App. C's rule
  clipped.margin_clip = true;
  spec.margin_antiwindup = clipped.margin_antiwindup = false;  // App. C's level
  ConformalMargin a(spec, 0.01090766), b(clipped, 0.01090766);
  for (int k = 1; k <= 60; ++k) {
    a.add_residual(k, Phase::kRest);
    b.add_residual(k, Phase::kRest);
  }
  // n = 60, alpha = 10908 ppm: m = ceil(0.989092 * 61) = 61 > 60.
  EXPECT_FALSE(a.margin(Phase::kRest).has_value());
  EXPECT_EQ(b.margin(Phase::kRest), 60.0);
  b.update_level(true);  // alpha falls below zero: still the largest
  b.update_level(true);
  EXPECT_LT(b.alpha_ppm(), 0);
  EXPECT_EQ(b.margin(Phase::kRest), 60.0);
}

// Tests margin_antiwindup: a burst of above-line jobs lowers the level only to where the
// rank reaches the largest residual, so the margin leaves it after the same ~46 calm jobs
// whatever the burst; App. C's level stores the burst as debt (~91 jobs a job above line).
TEST(PricingMargin, AntiwindupStopsTheLevelAtTheLargestResidual) {
  Params spec, aw;
  spec.margin_antiwindup = false;  // App. C's level
  aw.margin_antiwindup = true;
  ConformalMargin a(spec, 0.01090766), b(aw, 0.01090766);
  for (int k = 1; k <= 200; ++k) {
    a.add_residual(k, Phase::kRest);
    b.add_residual(k, Phase::kRest);
  }
  EXPECT_EQ(b.level_floor_ppm(), 4'976);  // ceil(1e6 / 201)
  EXPECT_EQ(b.margin(Phase::kRest), 199.0);  // at eps': m = ceil(0.989092 * 201) = 199
  for (int j = 0; j < 3; ++j) {
    a.update_level(true);
    b.update_level(true);
  }
  EXPECT_EQ(a.alpha_ppm(), 10'908 - 3 * 9'891);
  EXPECT_EQ(b.alpha_ppm(), 4'976);
  EXPECT_EQ(a.margin(Phase::kRest), 200.0);
  EXPECT_EQ(b.margin(Phase::kRest), 200.0);  // the same margin at the floor
  auto calm_until_below_max = [](ConformalMargin& m) {
    int jobs = 0;
    while (m.margin(Phase::kRest) == 200.0 && jobs < 10'000) {
      m.update_level(false);
      ++jobs;
    }
    return jobs;
  };
  EXPECT_EQ(calm_until_below_max(b), 46);  // (9951 - 4976) / 109 -> 46
  EXPECT_EQ(calm_until_below_max(a), 264);  // (9951 + 18765) / 109 -> 264
  // A calm job raises the level as before; a job above line at the floor stays there.
  b.update_level(true);
  EXPECT_EQ(b.alpha_ppm(), 4'976);
  b.update_level(false);
  EXPECT_EQ(b.alpha_ppm(), 4'976 + 109);
}

// Tests that antiwindup leaves a level already below the floor where it is: a window still
// filling (n = 60: floor 16,394 ppm above eps') prices with its largest residual either way.
TEST(PricingMargin, AntiwindupKeepsALevelBelowTheFloor) {
  Params aw;
  aw.margin_antiwindup = true;
  ConformalMargin m(aw, 0.01090766);
  for (int k = 1; k <= 60; ++k) m.add_residual(k, Phase::kRest);
  EXPECT_EQ(m.level_floor_ppm(), 16'394);
  m.update_level(true);
  EXPECT_EQ(m.alpha_ppm(), 10'908) << "not lowered: below the floor already";
  m.update_level(false);
  EXPECT_EQ(m.alpha_ppm(), 11'017) << "not raised to the floor either";
  EXPECT_EQ(m.margin(Phase::kRest), 60.0);
}

// Tests the level update alpha += eta (eps' - err) in integer ppm.
TEST(PricingMargin, LevelUpdateInPartsPerMillion) {
  Params params;
  params.margin_antiwindup = false;  // App. C's update (the default stops at the floor)
  ConformalMargin m(params, 0.01090766);  // eps' = 10908 ppm
  EXPECT_EQ(m.alpha_ppm(), 10'908);
  m.update_level(false);  // + round(0.01 * 10908) = +109
  EXPECT_EQ(m.alpha_ppm(), 11'017);
  m.update_level(true);  // + round(0.01 * (10908 - 1e6)) = round(-9890.92) = -9891
  EXPECT_EQ(m.alpha_ppm(), 1'126);
}

// Tests that before 50 samples the margin is the empirical (1 - eps') quantile.
TEST(PricingMargin, WarmupUsesEmpiricalQuantile) {
  Params params;
  ConformalMargin m(params, 0.10);  // eps' = 10 %
  EXPECT_FALSE(m.margin(Phase::kRest).has_value());  // nothing seen: unbounded
  for (int k = 1; k <= 20; ++k) m.seed(k);
  // rank ceil(0.9 * 20) = 18 -> 18.
  EXPECT_EQ(m.margin(Phase::kRest), 18.0);
  EXPECT_FALSE(m.adaptive());
}

// Tests that the warm-up margin is the larger of the phase and pooled quantiles.
TEST(PricingMargin, WarmupTakesLargerOfPhaseAndPooled) {
  Params params;
  params.margin_start = 100;  // stay in warm-up
  ConformalMargin m(params, 0.01);
  m.add_residual(100, Phase::kVlmHead);
  for (int k = 0; k < 50; ++k) m.add_residual(1, Phase::kRest);
  // The pooled window (last 50) has lost the 100; the head window still holds it.
  EXPECT_EQ(m.margin(Phase::kRest), 1.0);
  EXPECT_EQ(m.margin(Phase::kVlmHead), 100.0);
  EXPECT_EQ(m.worst_margin(), 100.0);
}

// Tests that the adaptive margin starts after 50 observed residuals, not seeds.
TEST(PricingMargin, AdaptiveAfterFiftyObservedResiduals) {
  Params params;
  ConformalMargin m(params, 0.05);  // alpha starts at 50000 ppm
  for (int k = 0; k < 100; ++k) m.seed(1000);
  for (int k = 1; k <= 49; ++k) m.add_residual(k, Phase::kRest);
  EXPECT_FALSE(m.adaptive());
  // Warm-up: pooled last 50 = {1..49, one seed 1000}: rank ceil(0.95 * 50) = 48 -> 48;
  // the kRest window {1..49}: rank ceil(0.95 * 49) = 47 -> 47; the larger is 48.
  EXPECT_EQ(m.margin(Phase::kRest), 48.0);
  m.add_residual(50, Phase::kRest);
  ASSERT_TRUE(m.adaptive());
  // Window 1..50, alpha 5 %: m = ceil(0.95 * 51) = ceil(48.45) = 49.
  EXPECT_EQ(m.margin(Phase::kRest), 49.0);
  EXPECT_EQ(m.margin(Phase::kVlmHead), 49.0);  // one level, pooled residuals
}

// Tests that the adaptive window keeps only the last W_q residuals.
TEST(PricingMargin, AdaptiveWindowForgetsOldResiduals) {
  Params params;
  params.margin_window = 200;
  ConformalMargin m(params, 0.05);
  for (int k = 0; k < 200; ++k) m.add_residual(1000, Phase::kRest);
  for (int k = 1; k <= 200; ++k) m.add_residual(k, Phase::kRest);
  EXPECT_EQ(m.retained(), 200u);
  EXPECT_EQ(m.margin(Phase::kRest), 191.0);  // ceil(0.95 * 201) = 191 among 1..200
}

// Tests the second level of the lines at fixed slopes (update_priced_level): it moves only
// on its own steps, never above the level over all jobs after one, and the margin it prices
// with is read at the lower of the two.
TEST(PricingMargin, PricedLevelIsTheLowerAndMovesOnItsOwnJobs) {
  ConformalMargin m(Params{}, 0.01090766);
  for (int k = 1; k <= 200; ++k) m.add_residual(k, Phase::kRest);
  EXPECT_EQ(m.priced_alpha_ppm(), m.alpha_ppm());
  EXPECT_EQ(m.margin_priced(Phase::kRest), 199.0);
  m.update_priced_level(true);  // a priced job above its line: to the floor (anti-windup)
  EXPECT_EQ(m.priced_alpha_ppm(), 4'976);
  EXPECT_EQ(m.alpha_ppm(), 10'908);  // the level over all jobs did not move
  EXPECT_EQ(m.margin(Phase::kRest), 199.0);
  EXPECT_EQ(m.margin_priced(Phase::kRest), 200.0);  // read at the lower level
  for (int j = 0; j < 200; ++j) m.update_priced_level(false);  // calm priced jobs
  EXPECT_EQ(m.priced_alpha_ppm(), m.alpha_ppm());  // capped at the other level
  for (int j = 0; j < 3; ++j) m.update_level(true);  // the level over all jobs falls
  EXPECT_EQ(m.alpha_ppm(), 4'976);
  EXPECT_EQ(m.priced_alpha_ppm(), 10'908);  // left where it was
  EXPECT_EQ(m.margin_priced(Phase::kRest), 200.0);  // the lower one prices
  m.update_priced_level(false);
  EXPECT_EQ(m.priced_alpha_ppm(), 10'908);  // no step up while above the other level
}

}  // namespace
}  // namespace ripple::pricing
