// Unit tests of the one percentile routine (agent/pricing/percentile.h): nearest rank,
// exact at integral p, and the same p99 for the config and the estimator.
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "agent/pricing/estimator.h"
#include "agent/pricing/percentile.h"

namespace ripple::pricing {
namespace {

// The integer form of ceil(p n / 100) for an integral p, the reference.
std::size_t exact_rank(std::size_t n, std::size_t p) {
  return std::clamp<std::size_t>((p * n + 99) / 100, 1, n);
}

// Tests that the rank is ceil(p n / 100) in [1, n], worked by hand at the edges.
TEST(PricingPercentile, NearestRankByHand) {
  EXPECT_EQ(nearest_rank(1, 99), 1u);
  EXPECT_EQ(nearest_rank(10, 99), 10u);   // 9.9 -> 10
  EXPECT_EQ(nearest_rank(100, 99), 99u);  // exactly 99: not the maximum
  EXPECT_EQ(nearest_rank(101, 99), 100u); // 99.99 -> 100
  EXPECT_EQ(nearest_rank(200, 50), 100u);
  EXPECT_EQ(nearest_rank(7, 0), 1u);      // p = 0: the minimum
  EXPECT_EQ(nearest_rank(7, 100), 7u);    // p = 100: the maximum
  EXPECT_EQ(nearest_rank(7, 250), 7u);    // clamped
}

// Tests that an integral p gives the exact integer rank for every n up to 100,000, and
// p99.9 of 1000 samples is the 999th (0.999 * 1000 in floating point is 999.0000000000001).
TEST(PricingPercentile, RankIsExact) {
  for (std::size_t n = 1; n <= 100'000; ++n)
    for (std::size_t p : {1u, 50u, 90u, 95u, 99u})
      ASSERT_EQ(nearest_rank(n, static_cast<double>(p)), exact_rank(n, p)) << "n " << n << " p " << p;
  EXPECT_EQ(nearest_rank(1000, 99.9), 999u);
  EXPECT_EQ(nearest_rank(2000, 99.9), 1998u);
}

// Tests that the sorted and unsorted forms return the same sample, and T{} when empty.
TEST(PricingPercentile, SortedAndUnsortedAgree) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {1u, 2u, 3u, 10u, 99u, 100u, 101u, 1000u}) {
    std::vector<std::int64_t> v(n);
    for (auto& x : v) x = static_cast<std::int64_t>(rng() % 1'000'000);
    std::vector<std::int64_t> s = v;
    std::sort(s.begin(), s.end());
    for (double p : {0.0, 50.0, 99.0, 99.9, 100.0}) EXPECT_EQ(percentile(v, p), percentile_sorted(s, p));
  }
  EXPECT_EQ(percentile(std::vector<double>{}, 99), 0.0);
  EXPECT_EQ(percentile_sorted(std::vector<std::int64_t>{}, 50), 0);
}

// Tests that the estimator's solo p99 is the percentile routine's p99 of its profile (the
// config's "K x p99" calls the same routine), for profiles around the 100-sample edge.
TEST(PricingPercentile, EstimatorSoloP99IsTheRoutines) {
  for (std::size_t n : {1u, 50u, 99u, 100u, 101u, 250u}) {
    TaskSpec t;
    t.name = "t";
    t.period = 100 * kNsPerMs;
    t.deadline = 90 * kNsPerMs;
    t.solo_profile.resize(n);
    std::iota(t.solo_profile.rbegin(), t.solo_profile.rend(), Nanos{1'000'000});  // descending
    Params params;
    params.peak_rate_bytes_per_ns = 200;
    params.prior_slope_ns_per_byte = 2.5e-3;
    const Estimator est(t, params);
    EXPECT_EQ(est.solo_p99(), percentile(t.solo_profile, 99)) << "n " << n;
    EXPECT_EQ(est.solo_p99(), Nanos{1'000'000} + static_cast<Nanos>(exact_rank(n, 99)) - 1) << "n " << n;
  }
}

}  // namespace
}  // namespace ripple::pricing
