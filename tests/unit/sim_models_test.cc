// ripple-sim's models: platform, tasks, engines (grant cache), event queue, presets.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "tools/bench/ripple-sim/engines.h"
#include "tools/bench/ripple-sim/event_queue.h"
#include "tools/bench/ripple-sim/platform.h"
#include "tools/bench/ripple-sim/preset.h"
#include "tools/bench/ripple-sim/rng.h"
#include "tools/bench/ripple-sim/tasks.h"

namespace ripple::sim {
namespace {

// The source tree: up from the test binary (build/tests/unit/sim_test) or the cwd.
std::string src(const std::string& rel) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path p : {fs::read_symlink("/proc/self/exe", ec).parent_path(), fs::current_path()})
    for (; !p.empty() && p != p.root_path(); p = p.parent_path())
      if (fs::exists(p / "tools/bench/ripple-sim/presets")) return (p / rel).string();
  return rel;
}

TEST(SimPlatform, LinearIsThePlantsFixedPoint) {
  Platform p;
  // kappa 750 ms/GB at 1 GB/s: progress at 1/4, so a job takes 4x its solo work, the
  // plant's T = W / (1 - kappa r).
  EXPECT_DOUBLE_EQ(p.progress_rate(750, 1.0), 0.25);
  EXPECT_DOUBLE_EQ(p.progress_rate(750, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(p.progress_rate(0, 5.0), 1.0);
  // kappa beta >= 1 would never finish: floored.
  EXPECT_DOUBLE_EQ(p.progress_rate(750, 2.0), p.min_rate);
}

TEST(SimPlatform, SaturatingMatchesLinearForSmallTrafficAndBoundsTheStall) {
  Platform p;
  p.model = SlowdownModel::kSaturating;
  p.max_stall = 0.6;
  EXPECT_NEAR(p.progress_rate(2.0, 1.0), 1.0 - 0.002, 1e-5);  // kappa beta = 0.002
  EXPECT_GT(p.progress_rate(5.0, 1000.0), 0.4 - 1e-9);         // never below 1 - s
  EXPECT_LT(p.progress_rate(5.0, 1000.0), 0.41);
}

TEST(SimPlatform, EnginesShareThePeak) {
  Platform p;
  p.peak_gbps = 273;
  EXPECT_DOUBLE_EQ(p.engine_share(200), 1.0);
  EXPECT_DOUBLE_EQ(p.engine_share(546), 0.5);
  p.peak_gbps = 0;
  EXPECT_FALSE(validate(p));
}

TEST(SimRng, DeterministicAndLomaxHasItsMean) {
  Rng a(7), b(7), c(8);
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  Rng r(1);
  double sum = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += r.lomax(1.0, 3.0);
  EXPECT_NEAR(sum / n, 0.5, 0.02);  // scale / (alpha - 1)
}

TEST(SimTasks, SoloCdfMatchesDraws) {
  SoloModel s;
  s.base_ms = 10;
  s.noise_ms = 1;
  s.alpha = 3;
  Rng r(3);
  int below = 0;
  const int n = 50000;
  for (int i = 0; i < n; ++i) below += static_cast<double>(s.draw(r)) / 1e6 <= 11.0;
  EXPECT_NEAR(static_cast<double>(below) / n, s.cdf(11.0), 0.01);
  EXPECT_DOUBLE_EQ(s.cdf(9.0), 0.0);
  s.sigma = 0.1;
  EXPECT_LT(s.cdf(11.0), 0);  // no closed form
}

TEST(SimTasks, ParsesTheBenchMix) {
  auto m = parse_mix(R"(name = "R"
[[task]]
name = "a"
binary = "x"
period_ms = 100
deadline_ms = 0
[[task]]
name = "b"
period_ms = 20
deadline_ms = 20
)", "mix", 0.5);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->name, "R");
  ASSERT_EQ(m->tasks.size(), 2u);
  EXPECT_DOUBLE_EQ(m->tasks[0].period_ms, 50);
  EXPECT_DOUBLE_EQ(m->tasks[1].deadline_ms, 10);
  EXPECT_FALSE(parse_mix("name = \"x\"", "mix"));
}

TEST(SimTasks, PercentileIsNearestRank) {
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99), 10);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 50), 5);
}

TEST(SimEngines, ProfileJsonGivesTheUnitsAndFillsMissingTimesFromTheRate) {
  auto m = engine_from_profile_json(R"({"format": "ripple-unit-catalog/1", "model": "m", "units": [
      {"name": "embed", "bytes": 0}, {"name": "layers.0", "bytes": 1000000, "gpu_ns": 5000000},
      {"name": "lm_head", "bytes": 2000000}]})",
                                    "p", "llm", admission::EngineKind::kBestEffort, 1.0);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->catalog.size(), 3u);
  EXPECT_EQ(m->catalog[0].bytes, 1);               // 0 bytes -> 1 (the protocol wants > 0)
  EXPECT_EQ(m->catalog[1].duration, 5'000'000);    // recorded
  EXPECT_EQ(m->catalog[2].duration, 2'000'000);    // 2 MB at 1 GB/s
  EXPECT_EQ(m->pass.size(), 3u);
  EXPECT_TRUE(validate(*m));
  EXPECT_FALSE(engine_from_profile_json(R"({"units": [{"name": "x", "bytes": 5}]})", "p", "e",
                                        admission::EngineKind::kBestEffort, 0));
}

TEST(SimEngines, UniformEngineRate) {
  EngineModel m = uniform_engine("llm", admission::EngineKind::kBestEffort, 16, 4'000'000, 4'000'000);
  EXPECT_EQ(m.pass_bytes(), 64'000'000);
  EXPECT_DOUBLE_EQ(m.gbps(), 1.0);
}

// Tests that chunked_engine announces each unit larger than the chunk as the interposer
// does (chunks of C, the last one the rest; durations in proportion), keeps the pass's
// bytes and order, and leaves smaller units and chunk 0 alone; and that a preset's
// chunk_mb applies it (and refuses a size <= 0, naming the key).
TEST(SimEngines, ChunkedEngineSplitsUnitsAsTheInterposer) {
  EngineModel m = uniform_engine("llm", admission::EngineKind::kBestEffort, 3, 10'000'000, 10'000'000);
  m.catalog.push_back({"small", 1'000'000, 1'000'000});
  m.pass.push_back(1);
  EngineModel c = chunked_engine(m, 4'000'000);
  EXPECT_EQ(c.pass_bytes(), m.pass_bytes());
  EXPECT_EQ(c.pass_ns(), m.pass_ns());
  ASSERT_EQ(c.pass.size(), 3u * 3 + 1);
  EXPECT_EQ(c.catalog[c.pass[0]].bytes, 4'000'000);
  EXPECT_EQ(c.catalog[c.pass[2]].bytes, 2'000'000);
  EXPECT_EQ(c.catalog[c.pass[2]].duration, 2'000'000);
  EXPECT_EQ(c.catalog[c.pass.back()].bytes, 1'000'000) << "a unit within the chunk is not split";
  EXPECT_EQ(c.catalog.size(), 3u) << "one entry per distinct sub-unit size, as the Hello";
  EXPECT_EQ(chunked_engine(m, 0).pass, m.pass);
  auto p = parse_preset("engines = [\"llm\"]\n[engine.llm]\nunits = 2\nunit_mb = 10\ngbps = 1\nchunk_mb = 4\n", "t", ".");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->engines.at("llm").pass.size(), 6u);
  auto bad = parse_preset("engines = [\"llm\"]\n[engine.llm]\nunits = 2\nunit_mb = 10\ngbps = 1\nchunk_mb = 0\n", "t", ".");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("engine.llm: chunk_mb must be > 0"), std::string::npos) << bad.error().message;
}

// The pipelining check of Client::acquire (§4.3).
TEST(SimGrantCache, UsesTheGrantForItsPositionDiscardsStaleOnesHoldsForRelease) {
  GrantCache c;
  c.deliver({1, 5, 0, 2, 1000, 0});
  c.deliver({2, 5, 2, 1, 1000, 0});
  auto a = c.acquire(5, 0, 10);
  ASSERT_TRUE(a.grant);
  EXPECT_EQ(a.grant->id, 1u);
  // Position moved past grant 2 (say a grant covered it): 2 is stale.
  a = c.acquire(5, 3, 20);
  EXPECT_FALSE(a.grant);
  ASSERT_EQ(a.discarded.size(), 1u);
  EXPECT_EQ(a.discarded[0], 2u);
  // Lease passed: discarded.
  c.deliver({3, 5, 3, 1, 100, 0});
  a = c.acquire(5, 3, 101);
  EXPECT_FALSE(a.grant);
  EXPECT_EQ(a.discarded.size(), 1u);
  // Held for its CPU release.
  c.deliver({4, 5, 3, 1, 1000, 500});
  a = c.acquire(5, 3, 200);
  EXPECT_FALSE(a.grant);
  EXPECT_EQ(a.hold_until, 500);
  a = c.acquire(5, 3, 500);
  ASSERT_TRUE(a.grant);
  EXPECT_EQ(a.grant->id, 4u);
  EXPECT_EQ(c.discarded(), 2u);
}

TEST(SimEventQueue, TimeThenInsertionOrder) {
  EventQueue q;
  q.post(20, 1);
  q.post(10, 2);
  q.post(10, 3);
  q.post(5, 4);
  std::vector<std::uint32_t> order;
  while (!q.empty()) order.push_back(q.pop().type);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{4, 2, 3, 1}));
}

TEST(SimPreset, ParsesAndRefusesUnknownKeys) {
  auto p = parse_preset(R"(name = "t"
engines = ["llm"]
[platform]
peak_gbps = 100
[agent]
lease_ms = 40
[pricing]
peak_rate_gbps = 2.0
[task.default]
kappa_ms_per_gb = 3
base_ms = 20
[task.kdnn]
base_ms = 30
[engine.llm]
units = 4
unit_mb = 100
gbps = 50
hidden_overhead_us = 500
time_sigma = 0.1
)", "t.toml", ".");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->options.lease, 40 * admission::kNsPerMs);
  EXPECT_DOUBLE_EQ(p->params.peak_rate_bytes_per_ns, 2.0);
  EXPECT_DOUBLE_EQ(p->tasks.at("kdnn").solo.base_ms, 30);
  EXPECT_DOUBLE_EQ(p->tasks.at("kdnn").kappa_ms_per_gb, 3);  // from default
  EXPECT_EQ(p->engines.at("llm").catalog[0].duration, 2 * admission::kNsPerMs);
  EXPECT_EQ(p->engines.at("llm").hidden_overhead, 500 * admission::kNsPerUs);
  EXPECT_DOUBLE_EQ(p->engines.at("llm").time_sigma, 0.1);
  EXPECT_FALSE(parse_preset("engines = [\"x\"]\n[engine.x]\nunits = 1\nunit_mb = 1\ngbps = 1\ntime_sigma = -1\n", "x", "."));
  EXPECT_TRUE(apply_setting(*p, "agent.end_guard_quantile=0.9"));
  EXPECT_DOUBLE_EQ(p->options.end_guard_quantile, 0.9);
  EXPECT_TRUE(apply_setting(*p, "pricing.margin_clip=false"));
  EXPECT_FALSE(p->params.margin_clip);
  EXPECT_TRUE(apply_setting(*p, "agent.horizon_ms=60"));
  EXPECT_EQ(p->options.horizon, 60 * admission::kNsPerMs);
  EXPECT_FALSE(apply_setting(*p, "agent.nope=1"));
  EXPECT_FALSE(parse_preset("[platform]\npeak = 3\n", "x", "."));
  EXPECT_FALSE(parse_preset("[engine.x]\nkind = \"best-effort\"\n", "x", "."));
}

// Every preset shipped under tools/bench/ripple-sim/presets loads, by its name.
TEST(SimPreset, ShippedPresetsLoad) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(src("tools/bench/ripple-sim/presets")))
    if (e.path().extension() == ".toml") names.push_back(e.path().stem().string());
  EXPECT_GE(names.size(), 6u) << "plant, gb10, h200-offload, h200-calibrated, h200-vlm-host, h200-harmless";
  for (const auto& name : names) {
    auto p = load_preset(name, src("tools/bench/ripple-sim/presets"));
    ASSERT_TRUE(p) << name << ": " << p.error().message;
    EXPECT_FALSE(p->default_engines.empty()) << name;
    auto mix = load_mix(src("tools/workloads/mixes/robotic1.toml"), p->period_scale);
    ASSERT_TRUE(mix) << mix.error().message;
    auto t = tasks_for(*p, *mix);
    ASSERT_TRUE(t);
    for (const auto& tm : *t) EXPECT_GT(tm.kappa_ms_per_gb, 0) << name << " " << tm.name;
  }
}

}  // namespace
}  // namespace ripple::sim
