// Unit tests of setting the pricing parameters from a TOML table.
#include <gtest/gtest.h>

#include "agent/pricing/config.h"

namespace ripple::pricing {
namespace {

toml::table parse(std::string_view text) { return toml::parse(text); }

// Tests that the defaults are the paper's values.
TEST(PricingConfig, DefaultsAreThePapersValues) {
  const Params p;
  EXPECT_EQ(p.intercept_window, 50);
  EXPECT_EQ(p.slope_window, 200);
  EXPECT_EQ(p.eta, 0.01);
  EXPECT_EQ(p.margin_window, 200);
  EXPECT_EQ(p.margin_start, 50);
  EXPECT_TRUE(p.margin_clip);  // ours, not the paper's: chosen by GPU A/B runs (estimator.md)
  EXPECT_TRUE(p.margin_antiwindup);  // ours, on since the GPU A/B (estimator.md)
  EXPECT_FALSE(p.slope_release);     // ours, off since the GPU A/B (estimator.md, "The held slope's release")
  EXPECT_TRUE(p.slope_instrument);   // ours, on since the GPU A/B (estimator.md, "The instrumented slope")
  EXPECT_TRUE(p.slope_candidates);   // ours, on since the GPU A/B (estimator.md, "Lines at fixed slopes")
  EXPECT_EQ(p.slope_candidate_jobs, 50);
  EXPECT_TRUE(p.late_starts);        // ours (estimator.md, "Late starts")
  EXPECT_FALSE(p.untouched_level);   // ours, off since the GPU A/B (estimator.md, "Untouched jobs")
  EXPECT_EQ(p.contract_window, 100 * kNsPerSec);
  EXPECT_EQ(p.unestimable_slope_share, 0.85);
  EXPECT_EQ(p.rate_limit, 0.25);
  EXPECT_EQ(p.reduced_every, 8);
  EXPECT_EQ(p.reduced_cut, 0.40);
  EXPECT_EQ(p.probe_unit_bytes, 385'978'880);
  EXPECT_EQ(p.pacing_floor_bytes, kFloorIsProbeUnit);  // f = U
  EXPECT_EQ(p.pacing_floor(), 385'978'880);
  EXPECT_EQ(p.certify_passes, 50);
  EXPECT_EQ(p.grant_horizon, 18 * kNsPerMs);
  EXPECT_EQ(validate(p), "");
}

// Tests that every kind of key converts its units.
TEST(PricingConfig, AppliesKeysWithUnits) {
  Params p;
  const auto t = parse(R"(
    intercept_window = 100
    eta = 0.02
    prior_slope_ms_per_gb = 4
    peak_rate_gbps = 220
    grant_horizon_ms = 12
    contract_window_s = 50
    probe_unit_bytes = 1000000
    certification = false
    margin_antiwindup = false
    slope_release = true
    slope_instrument = false
    slope_candidates = false
    slope_candidate_jobs = 10
    late_starts = false
    untouched_level = true
  )");
  ASSERT_EQ(apply_config(t, p), "");
  EXPECT_EQ(p.intercept_window, 100);
  EXPECT_DOUBLE_EQ(p.eta, 0.02);
  EXPECT_DOUBLE_EQ(p.prior_slope_ns_per_byte, 4e-3);  // 4 ms/GB = 4e6 ns / 1e9 B
  EXPECT_DOUBLE_EQ(p.peak_rate_bytes_per_ns, 220);    // 1 GB/s = 1 byte/ns
  EXPECT_EQ(p.grant_horizon, 12 * kNsPerMs);
  EXPECT_EQ(p.contract_window, 50 * kNsPerSec);
  EXPECT_EQ(p.probe_unit_bytes, 1'000'000);
  EXPECT_FALSE(p.certification);
  EXPECT_FALSE(p.margin_antiwindup);
  EXPECT_TRUE(p.slope_release);
  EXPECT_FALSE(p.slope_instrument);
  EXPECT_FALSE(p.slope_candidates);
  EXPECT_EQ(p.slope_candidate_jobs, 10);
  EXPECT_FALSE(p.late_starts);
  EXPECT_TRUE(p.untouched_level);
}

// Tests that an unknown key is named, with its line, and nothing is applied.
TEST(PricingConfig, UnknownKeyNamedWithLine) {
  Params p;
  const auto t = parse("eta = 0.05\n\nslope_windw = 10\n");
  const std::string e = apply_config(t, p);
  EXPECT_EQ(e, "unknown pricing key 'slope_windw' (line 3)");
  EXPECT_EQ(p.eta, 0.01);  // unchanged on error
}

// Tests that a wrong type and an out-of-range value are named.
TEST(PricingConfig, WrongTypeAndRangeNamed) {
  Params p;
  EXPECT_EQ(apply_config(parse("margin_window = 1.5"), p),
            "pricing key 'margin_window' (line 1) must be an integer");
  EXPECT_EQ(apply_config(parse("certification = 1"), p),
            "pricing key 'certification' (line 1) must be true or false");
  EXPECT_EQ(apply_config(parse("eta = 'fast'"), p), "pricing key 'eta' (line 1) must be a number");
  EXPECT_EQ(apply_config(parse("eta = 1.5"), p),
            "pricing key 'eta' (line 1): eta must be in [1e-6, 1) (got 1.5)");
  // Values whose math is not finite or that round to nothing (the level moves in ppm).
  EXPECT_EQ(apply_config(parse("eta = 4e-7"), p),
            "pricing key 'eta' (line 1): eta must be in [1e-6, 1) (got 4e-07)");
  EXPECT_EQ(apply_config(parse("min_window_target = 1e-7"), p),
            "pricing key 'min_window_target' (line 1): min_window_target must be in [1e-6, 1) (got 1e-07)");
  EXPECT_EQ(apply_config(parse("prior_slope_ms_per_gb = 1e13"), p),
            "pricing key 'prior_slope_ms_per_gb' (line 1): prior_slope must be in (0, 1000] ns/byte, 10^6 ms/GB "
            "(got 10000000000 ns/byte)");
  EXPECT_EQ(apply_config(parse("prior_slope_ms_per_gb = 1e6"), p), "");
  EXPECT_EQ(apply_config(parse("slope_window = 0"), p),
            "pricing key 'slope_window' (line 1): slope_window must be >= 1 (got 0)");
  EXPECT_EQ(apply_config(parse("slope_candidate_jobs = 0"), p),
            "pricing key 'slope_candidate_jobs' (line 1): slope_candidate_jobs must be >= 1 (got 0)");
}

// Tests that idle_periods is bounded (the ledger converts idle_periods x period to integer
// ns, which 1e300 periods overflowed, undefined: on x86 the task was idle at once) and the
// key named.
TEST(PricingConfig, IdlePeriodsBounded) {
  Params p;
  ASSERT_EQ(apply_config(parse("idle_periods = 10000"), p), "");
  EXPECT_EQ(p.idle_periods, 1e4);
  EXPECT_EQ(apply_config(parse("idle_periods = 1e300"), p),
            "pricing key 'idle_periods' (line 1): idle_periods must be in [0, 10000] (got 1e+300)");
  EXPECT_EQ(apply_config(parse("idle_periods = -1"), p),
            "pricing key 'idle_periods' (line 1): idle_periods must be in [0, 10000] (got -1)");
  EXPECT_EQ(apply_config(parse("idle_periods = nan"), p),
            "pricing key 'idle_periods' (line 1): idle_periods must be in [0, 10000] (got nan)");
  EXPECT_EQ(p.idle_periods, 1e4) << "a refused value leaves the parameters as they were";
}

// Tests the task contract checks, among them a deadline larger than the period.
// Tests that chunk_bytes takes 0 (the agent's suggestion) or a power of two from 1 MiB to
// 1 GiB, and names the key and the range otherwise.
TEST(PricingConfig, ChunkBytesIsZeroOrAPowerOfTwo) {
  Params p;
  EXPECT_EQ(p.chunk_bytes, 0);
  ASSERT_EQ(apply_config(parse("chunk_bytes = 67108864"), p), "");
  EXPECT_EQ(p.chunk_bytes, 64 << 20);
  const std::string why = "chunk_bytes must be 0 (suggested) or a power of two from 1 MiB to 1 GiB";
  EXPECT_EQ(apply_config(parse("chunk_bytes = 50000000"), p),
            "pricing key 'chunk_bytes' (line 1): " + why + " (got 50000000)");
  EXPECT_EQ(apply_config(parse("chunk_bytes = 524288"), p),
            "pricing key 'chunk_bytes' (line 1): " + why + " (got 524288)");
  EXPECT_EQ(apply_config(parse("chunk_bytes = 2147483648"), p),
            "pricing key 'chunk_bytes' (line 1): " + why + " (got 2147483648)");
  EXPECT_EQ(p.chunk_bytes, 64 << 20) << "a refused value leaves the parameters as they were";
}

TEST(PricingConfig, TaskSpecValidation) {
  TaskSpec t;
  t.name = "sgm";
  t.period = 100 * kNsPerMs;
  t.deadline = 120 * kNsPerMs;
  EXPECT_EQ(validate(t), "task 'sgm': deadline 120000000 ns is larger than the period 100000000 ns");
  t.deadline = 80 * kNsPerMs;
  EXPECT_EQ(validate(t), "");
  t.miss_tolerance = 0.7;
  EXPECT_EQ(validate(t), "task 'sgm': miss_tolerance must be in (0, 0.5) (got 0.7)");
}

}  // namespace
}  // namespace ripple::pricing
