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

// Tests the directed link: an LLM of 80 GB/s (a quarter host-to-device: 20 + 60 GB/s)
// beside a VLM of 60 GB/s all host-to-device, each direction 60 GB/s. Host-to-device is
// shared max-min fairly: the LLM asks for less than half and gets its 20, the VLM the
// other 40 (2/3 of its rate); device-to-host carries the LLM's 60 alone. The LLM is not
// slowed, the VLM is (the H200's, results/e2e-archive.md, twenty-third session). Without the
// directions both are scaled by the shared peak; a link with one direction is refused.
TEST(SimPlatform, ADirectedLinkSharesEachDirectionMaxMinFairly) {
  Platform p;
  p.h2d_gbps = p.d2h_gbps = 60;
  ASSERT_TRUE(validate(p));
  auto s = p.engine_shares({{80, 0.25}, {60, 1.0}});
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  EXPECT_NEAR(s[1], 2.0 / 3, 1e-12);
  s = p.engine_shares({{80, 0.25}, {0, 1.0}});   // the VLM idle: the LLM alone
  EXPECT_DOUBLE_EQ(s[0], 1.0);
  s = p.engine_shares({{80, 0.25}, {80, 0.25}});  // two such LLMs: 120 GB/s device-to-host on 60
  EXPECT_DOUBLE_EQ(s[0], 0.5);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
  p.peak_gbps = 50;                               // the peak still caps the sum: 80 moved -> 50
  s = p.engine_shares({{80, 0.25}, {80, 0.25}});
  EXPECT_DOUBLE_EQ(s[0], 0.5 * 50 / 80);
  p.h2d_gbps = p.d2h_gbps = 0;
  p.peak_gbps = 100;                              // undirected: one factor, 100 / 140
  s = p.engine_shares({{80, 0.25}, {60, 1.0}});
  EXPECT_DOUBLE_EQ(s[0], p.engine_share(140));
  EXPECT_DOUBLE_EQ(s[1], p.engine_share(140));
  p.h2d_gbps = 60;
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

// Tests that the host's bursts take their duty burst_s / (burst_s + every_s) of a long
// virtual run and of the jobs released in it, and that their lengths and gaps have the
// configured means (a process whose bursts never end, or never come, fails).
TEST(SimBursts, ShareOfTimeAndOfJobsIsTheDuty) {
  const HostBursts hb{20.0, 8.0};  // every_s, burst_s: duty 8 / 28 = 0.286
  ASSERT_TRUE(hb.on());
  BurstProcess b(hb, Rng::stream(5, 400));
  const Nanos T = 20000 * pricing::kNsPerSec;  // ~700 cycles: the share's sd is ~0.011
  EXPECT_NEAR(b.share(0, T), hb.duty(), 0.04);
  double len = 0, gap = 0;
  const auto& v = b.bursts_until(T);
  ASSERT_GT(v.size(), 500u);
  for (std::size_t i = 0; i + 1 < v.size(); ++i) {
    len += static_cast<double>(v[i].second - v[i].first) / 1e9;
    gap += static_cast<double>(v[i + 1].first - v[i].second) / 1e9;
  }
  const double n = static_cast<double>(v.size() - 1);
  EXPECT_NEAR(len / n, 8.0, 0.8);
  EXPECT_NEAR(gap / n, 20.0, 2.0);
  // The jobs of a 10 Hz task: the share released in a burst is the duty too, and exactly
  // those have factor x their solo work (sigma = 0: base, or base x factor, nothing else).
  TaskModel t;
  t.period = 100 * pricing::kNsPerMs;
  t.solo.base_ms = 10;
  t.burst_factor = 1.3;
  Rng rng(1);
  int slow = 0, jobs = 0;
  for (Nanos rel = 0; rel < T; rel += t.period, ++jobs) {
    const double w = job_work(t, rng, &b, rel);
    if (b.in_burst(rel)) {
      EXPECT_NEAR(w, 13e6, 1.0);
      ++slow;
    } else {
      EXPECT_NEAR(w, 10e6, 1.0);
    }
  }
  EXPECT_NEAR(static_cast<double>(slow) / jobs, hb.duty(), 0.04);
}

// Tests that a job released in a burst has factor x the solo draw it would have had, one
// released outside has the draw itself, and that without bursts (off, or none) the draws
// are exactly SoloModel::draw's from the same stream: what every result before bursts ran.
TEST(SimBursts, JobsInABurstTakeTheFactorAndOffDrawsAsBefore) {
  TaskModel t;
  t.period = 50 * pricing::kNsPerMs;
  t.solo.base_ms = 20;
  t.solo.sigma = 0.2;
  t.solo.noise_ms = 1;
  t.burst_factor = 1.25;
  BurstProcess on(HostBursts{2.0, 1.0}, Rng::stream(9, 400));
  BurstProcess off(HostBursts{2.0, 0.0}, Rng::stream(9, 400));
  EXPECT_FALSE(off.on());
  Rng a(42), b(42), c(42), d(42);
  int in = 0, out = 0;
  for (Nanos rel = 0; rel < 200 * pricing::kNsPerSec; rel += t.period) {
    const double solo = static_cast<double>(t.solo.draw(a));
    const double w = job_work(t, b, &on, rel);
    if (on.in_burst(rel)) {
      EXPECT_DOUBLE_EQ(w, 1.25 * solo);
      ++in;
    } else {
      EXPECT_DOUBLE_EQ(w, solo);
      ++out;
    }
    EXPECT_DOUBLE_EQ(job_work(t, c, &off, rel), solo);
    EXPECT_DOUBLE_EQ(job_work(t, d, nullptr, rel), solo);
    EXPECT_FALSE(off.in_burst(rel));
  }
  EXPECT_GT(in, 500);
  EXPECT_GT(out, 1000);
  // The profile's draws are the same rule on its lattice (job j at j x period).
  Rng p1(7), p2(7);
  BurstProcess again(HostBursts{2.0, 1.0}, Rng::stream(9, 400));
  const auto prof = profile_jobs(t, 400, p1, &again);
  for (int j = 0; j < 400; ++j)
    EXPECT_DOUBLE_EQ(prof[static_cast<std::size_t>(j)] * 1e6,
                     job_work(t, p2, &on, static_cast<Nanos>(j) * t.period));
}

// Tests that a burst process is a function of its seed, whatever order it is asked in (the
// profile asks task by task, each from time 0), that another seed gives other bursts, and
// that it starts in its stationary state (in a burst at 0 in a duty's share of seeds).
TEST(SimBursts, SeededOrderFreeAndStationaryAtTheStart) {
  const HostBursts hb{10.0, 5.0};  // duty 1/3
  BurstProcess fwd(hb, Rng::stream(3, 400)), back(hb, Rng::stream(3, 400)), other(hb, Rng::stream(4, 400));
  std::vector<bool> f;
  int differ = 0;
  for (Nanos t = 0; t < 600 * pricing::kNsPerSec; t += 250 * pricing::kNsPerMs) f.push_back(fwd.in_burst(t));
  for (Nanos t = 0; t < 600 * pricing::kNsPerSec; t += 250 * pricing::kNsPerMs) differ += other.in_burst(t) != f[static_cast<std::size_t>(t / (250 * pricing::kNsPerMs))];
  for (std::size_t i = f.size(); i-- > 0;)
    EXPECT_EQ(back.in_burst(static_cast<Nanos>(i) * 250 * pricing::kNsPerMs), f[i]) << i;
  EXPECT_GT(differ, 100);
  int at0 = 0;
  const int seeds = 3000;  // sd of the share ~0.009
  for (int s = 0; s < seeds; ++s) at0 += BurstProcess(hb, Rng::stream(static_cast<std::uint64_t>(s), 400)).in_burst(0);
  EXPECT_NEAR(static_cast<double>(at0) / seeds, hb.duty(), 0.04);
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
  EXPECT_TRUE(apply_setting(*p, "agent.link_by_deadline=true"));
  EXPECT_TRUE(p->options.link_by_deadline);
  // The directed link: both directions or neither; an engine's h2d_fraction in [0, 1].
  const std::string eng = "[engine.x]\nunits = 1\nunit_mb = 1\ngbps = 1\n";
  auto d = parse_preset("engines = [\"x\"]\n[platform]\nh2d_gbps = 58\nd2h_gbps = 57\n" + eng + "h2d_fraction = 0.25\n",
                        "x", ".");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_TRUE(d->platform.directed());
  EXPECT_DOUBLE_EQ(d->platform.d2h_gbps, 57);
  EXPECT_DOUBLE_EQ(d->engines.at("x").h2d_fraction, 0.25);
  auto bad = parse_preset("engines = [\"x\"]\n[platform]\nh2d_gbps = 58\n" + eng, "x", ".");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("d2h_gbps"), std::string::npos) << bad.error().message;
  bad = parse_preset("engines = [\"x\"]\n" + eng + "h2d_fraction = 1.5\n", "x", ".");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("h2d_fraction"), std::string::npos) << bad.error().message;
  bad = parse_preset("engines = [\"x\"]\n" + eng + "h2d_fraction = \"half\"\n", "x", ".");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "engine.x.h2d_fraction must be a number");
  bad = parse_preset("engines = [\"x\"]\n[platform]\nh2d_gbps = \"fast\"\nd2h_gbps = 58\n" + eng, "x", ".");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "platform.h2d_gbps must be a number");
}

// Tests the [bursts] section and a task's burst_factor: read, the factor per task (its own,
// else bursts.factor), off by default, and bad input refused with a message naming the key.
TEST(SimPreset, BurstsKeysAndTheirErrors) {
  const std::string base = "[task.default]\nbase_ms = 20\n[task.kdnn]\nburst_factor = 1.1\n";
  auto p = parse_preset("[bursts]\nevery_s = 20\nburst_s = 8\nfactor = 1.3\n" + base, "t.toml", ".");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(p->bursts.on());
  EXPECT_DOUBLE_EQ(p->bursts.every_s, 20);
  EXPECT_DOUBLE_EQ(p->bursts.burst_s, 8);
  Mix mix{"m", {{"costmap", 100, 0}, {"kdnn", 100, 0}}};
  auto t = tasks_for(*p, mix);
  ASSERT_TRUE(t);
  EXPECT_DOUBLE_EQ((*t)[0].burst_factor, 1.3);
  EXPECT_DOUBLE_EQ((*t)[1].burst_factor, 1.1);
  auto none = parse_preset(base, "t.toml", ".");
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->bursts.on());
  // --bursts / --agent-set go through apply_setting.
  EXPECT_TRUE(apply_setting(*none, "bursts.every_s=30"));
  EXPECT_TRUE(apply_setting(*none, "bursts.burst_s=10"));
  EXPECT_TRUE(none->bursts.on());
  auto refused = [&](const std::string& text, const std::string& key) {
    auto r = parse_preset(text + base, "t.toml", ".");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message.find(key), std::string::npos) << r.error().message;
  };
  refused("[bursts]\nevery_s = -1\n", "bursts.every_s");
  refused("[bursts]\nburst_s = -2\nevery_s = 5\n", "bursts.burst_s");
  refused("[bursts]\nburst_s = 5\n", "bursts.every_s");  // always in a burst: not a burst
  refused("[bursts]\nevery_s = 5\nburst_s = 5\nfactor = 0.9\n", "bursts.factor");
  refused("[bursts]\nevery_s = 5\nburst_s = 5\nfactor = \"x\"\n", "bursts.factor");
  refused("[bursts]\nevery = 5\n", "bursts.every");
  auto bad_task = parse_preset("[task.sgm]\nburst_factor = 0.5\n", "t.toml", ".");
  ASSERT_FALSE(bad_task);
  EXPECT_NE(bad_task.error().message.find("task.sgm.burst_factor"), std::string::npos) << bad_task.error().message;
  auto st = apply_setting(*none, "bursts.factor=11");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("bursts.factor"), std::string::npos);
  EXPECT_FALSE(apply_setting(*none, "bursts.burst_s=-1"));
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
