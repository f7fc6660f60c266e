// ripple-sim's runner and sweep: determinism, the grant protocol against the real
// Admission, and the validation against the plant (a TEST DOUBLE with a known kappa):
// the verdicts the plant gives, and the analytic fixed point of an unmanaged task.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "agent/policy/registry.h"
#include "tools/bench/ripple-sim/report.h"
#include "tools/bench/ripple-sim/runner.h"
#include "tools/bench/ripple-sim/sweep.h"

namespace ripple::sim {
namespace {

using admission::kNsPerMs;
using pricing::kNsPerSec;

std::string src(const std::string& rel) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path p : {fs::read_symlink("/proc/self/exe", ec).parent_path(), fs::current_path()})
    for (; !p.empty() && p != p.root_path(); p = p.parent_path())
      if (fs::exists(p / "tools/bench/ripple-sim/presets")) return (p / rel).string();
  return rel;
}

// A sweep of a shipped preset over a mix of tools/workloads/mixes (e.g. "robotic1"); the
// rest is SweepOptions' defaults. A preset that does not load fails the test.
SweepOptions preset_sweep(const std::string& preset, const std::string& mix) {
  SweepOptions o;
  auto p = load_preset(preset, src("tools/bench/ripple-sim/presets"));
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  if (p) o.preset = *p;
  o.mix_path = src("tools/workloads/mixes/" + mix + ".toml");
  return o;
}

// Runs a sweep of one k and returns its points by policy; a sweep that fails or reports
// protocol errors fails the test.
std::map<std::string, nlohmann::ordered_json> points_by_policy(const SweepOptions& o) {
  std::map<std::string, nlohmann::ordered_json> at;
  auto r = sweep(o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r) return at;
  EXPECT_EQ(r->protocol_errors, 0u);
  for (const auto& pt : r->summary["points"]) at[pt["policy"]] = pt;
  return at;
}

// One plant-like task (50 ms period, 10 ms solo + Lomax noise, kappa 750 ms/GB) beside
// the plant's 1 GB/s LLM stand-in.
RunConfig plant_like(const std::string& policy, double deadline_ms) {
  RunConfig c;
  c.platform.peak_gbps = 1000;
  c.params.peak_rate_bytes_per_ns = 1.0;
  RunTask t;
  t.model.name = "kdnn";
  t.model.period = 50 * kNsPerMs;
  t.model.kappa_ms_per_gb = 750;
  t.model.solo.base_ms = 10;
  t.model.solo.noise_ms = 1;
  t.model.solo.alpha = 3;
  t.deadline = static_cast<Nanos>(deadline_ms * 1e6);
  t.miss_tolerance = 0.02;
  Rng r(99);
  for (int i = 0; i < 400; ++i) t.solo_profile.push_back(t.model.solo.draw(r));
  t.prior_slope_ms_per_gb = 1.25 * 750;
  c.tasks.push_back(t);
  c.engines.push_back(uniform_engine("llm", admission::EngineKind::kBestEffort, 16, 4'000'000, 4 * kNsPerMs));
  c.policy = policy;
  c.prep = 10 * kNsPerSec;
  c.score = 60 * kNsPerSec;
  return c;
}

TEST(SimRunner, SameSeedSameRunOtherSeedOtherRun) {
  RunConfig c = plant_like("ripple", 30);
  auto a = run(c), b = run(c);
  c.seed = 2;
  auto d = run(c);
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(a->tasks[0].responses_ms, b->tasks[0].responses_ms);
  EXPECT_EQ(a->engines[0].passes, b->engines[0].passes);
  EXPECT_EQ(a->events, b->events);
  EXPECT_NE(a->tasks[0].responses_ms, d->tasks[0].responses_ms);
}

TEST(SimRunner, EveryPolicyRunsWithoutProtocolErrors) {
  for (const char* pol : {"ripple", "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2", "sigamma", "sereno",
                          "sereno-ui-first", "pace-0.5"}) {
    RunConfig c = plant_like(pol, 30);
    c.engines.push_back(uniform_engine("vlm", admission::EngineKind::kDeadlineBound, 8, 4'000'000, 16 * kNsPerMs));
    c.engines.back().period = c.engines.back().deadline = kNsPerSec;
    c.score = 20 * kNsPerSec;
    auto r = run(c);
    ASSERT_TRUE(r) << pol << ": " << r.error().message;
    EXPECT_EQ(r->protocol_errors, 0u) << pol << ": " << r->first_error;
    EXPECT_GT(r->tasks[0].jobs, 350u) << pol;
    EXPECT_GT(r->engines[0].passes, 0u) << pol;
    EXPECT_GT(r->engines[1].frames_judged, 15u) << pol;
  }
}

// Unmanaged never holds the LLM back: the job of solo work W takes W / (1 - kappa beta),
// the plant's fixed point, so its DMR is P(W > D (1 - kappa beta)) from the solo CDF.
TEST(SimPlantValidation, UnmanagedDmrIsTheAnalyticFixedPoint) {
  for (double deadline : {44.0, 46.0, 50.0}) {
    RunConfig c = plant_like("unmanaged", deadline);
    // A 100 ms period: a stretched job (~44 ms) never runs into the next release, so no
    // job queues behind a late one and the fixed point alone decides.
    c.tasks[0].model.period = 100 * kNsPerMs;
    c.score = 400 * kNsPerSec;
    auto r = run(c);
    ASSERT_TRUE(r) << r.error().message;
    const auto& e = r->engines[0];
    const double beta = static_cast<double>(e.s1.bytes - e.s0.bytes) / (r->scored_s * 1e9);  // GB/s granted
    EXPECT_GT(beta, 0.99);
    const double analytic = 1.0 - c.tasks[0].model.solo.cdf(deadline * (1.0 - 0.75 * beta));
    const double dmr = static_cast<double>(r->tasks[0].misses) / static_cast<double>(r->tasks[0].jobs);
    std::printf("D = %.0f ms: simulated DMR %.4f (%llu jobs), analytic %.4f, beta %.4f GB/s\n", deadline, dmr,
                static_cast<unsigned long long>(r->tasks[0].jobs), analytic, beta);
    EXPECT_NEAR(dmr, analytic, 0.015) << "D = " << deadline << " ms, " << r->tasks[0].jobs << " jobs";
  }
}

// A grant that arrives after its lease is stale: the engine hands it back, admission
// refunds it, and the run goes on without a protocol error.
TEST(SimRunner, LateDeliveriesAreDiscardedNotErrors) {
  RunConfig c = plant_like("ripple", 30);
  c.delays.delivery = 25 * kNsPerMs;  // longer than the 20 ms lease
  c.score = 20 * kNsPerSec;
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->protocol_errors, 0u) << r->first_error;
  const auto& s = r->engines[0].s1;
  EXPECT_GT(s.stale, 0u);
}

// The plant's verdicts (Documentation/results/e2e.md §1-2, CI's bench_quick.sh): on the
// plant preset, at a tight k unmanaged misses eps while ripple meets it, every VLM frame
// is on time, and ripple keeps a fair share of unmanaged's tokens.
TEST(SimPlantValidation, PlantPresetGivesThePlantsVerdicts) {
  SweepOptions o;
  auto p = load_preset("plant", src("tools/bench/ripple-sim/presets"));
  ASSERT_TRUE(p) << p.error().message;
  o.preset = *p;
  o.mix_path = src("tools/workloads/mixes/robotic1.toml");
  o.policies = {"ripple", "unmanaged", "pause", "sigamma"};
  o.ks = {1.5, 2.0};
  o.runs = 2;
  o.prep_s = 6;
  o.score_s = 30;
  auto r = sweep(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->protocol_errors, 0u);
  std::vector<std::string> lines;
  EXPECT_TRUE(check_claim(r->summary, &lines)) << ::testing::PrintToString(lines);
  for (const auto& pt : r->summary["points"]) {
    const std::string pol = pt["policy"];
    EXPECT_EQ(pt["vlm_misses"].get<int>(), 0) << pol << " k=" << pt["k"];
    if (pol == "ripple") {
      EXPECT_TRUE(pt["feasible"].get<bool>());
    }
    if (pol == "pause") {
      EXPECT_FALSE(pt["feasible"].get<bool>()) << "k=" << pt["k"];  // e2e.md: pause misses
    }
  }
  for (const auto& [k, v] : r->summary["ratios"].items())
    EXPECT_GT(v["vs_unmanaged"].get<double>(), 0.35) << "k=" << k;  // bench_quick.sh's floor
  // The table renders and says what it is.
  const std::string t = markdown_table(r->summary);
  EXPECT_NE(t.find("SIMULATED"), std::string::npos);
  EXPECT_NE(t.find("| ripple | "), std::string::npos);
}

// Sub-layer grants and gap filling in closed loop (issue 12), in virtual time: the plant
// (a TEST DOUBLE with a known kappa, 750 ms/GB) with the LLM stand-in's units made whole
// "layers" of 16 MB (16 ms at 1 GB/s) against job allowances of a few MB, then announced
// as the interposer announces them with 4 MB chunks (chunked_engine: the same planner,
// cuhooks/chunker.h). Runs are deterministic (virtual time, fixed seeds): the load on a
// 2-vCPU VM cannot move the verdict. At k = 1.5, a tight point (unmanaged misses every
// job), ripple and sigamma both meet eps; ripple's granted bytes are at least sigamma's
// (the gaps between jobs are sigamma's whole throughput, and ripple fills them too, plus
// what each job's allowance admits), and chunking is what lets ripple use the allowances:
// with whole layers it moves >10 % fewer bytes. Measured when written: ripple 0.733 GB/s,
// sigamma 0.700, ripple with whole layers 0.609, unmanaged 0.998 at 100 % misses. (At
// k = 1.1 ripple is BELOW sigamma here, 0.656 against 0.700: Documentation/sim.md.)
TEST(SimPlantValidation, ChunkedRippleGrantsAtLeastSigammaAtATightPoint) {
  auto p = load_preset("plant", src("tools/bench/ripple-sim/presets"));
  ASSERT_TRUE(p) << p.error().message;
  auto sweep_with = [&](Bytes chunk, std::vector<std::string> policies) {
    SweepOptions o;
    o.preset = *p;
    o.preset.engines["llm"] =
        chunked_engine(uniform_engine("llm", admission::EngineKind::kBestEffort, 4, 16'000'000, 16 * kNsPerMs), chunk);
    o.mix_path = src("tools/workloads/mixes/robotic1.toml");
    o.policies = std::move(policies);
    o.ks = {1.5};
    o.runs = 2;
    o.prep_s = 6;
    o.score_s = 30;
    return sweep(o);
  };
  auto chunked = sweep_with(4'000'000, {"ripple", "sigamma", "unmanaged"});
  auto whole = sweep_with(0, {"ripple"});
  ASSERT_TRUE(chunked) << chunked.error().message;
  ASSERT_TRUE(whole) << whole.error().message;
  EXPECT_EQ(chunked->protocol_errors + whole->protocol_errors, 0u);
  std::map<std::string, nlohmann::ordered_json> at;
  for (const auto& pt : chunked->summary["points"]) at[pt["policy"]] = pt;
  const auto& w = whole->summary["points"][0];
  for (const auto& [pol, pt] : at)
    std::printf("%s chunked: worst DMR %.4f, %.4f GB/s, %llu grants\n", pol.c_str(), pt["worst_dmr"].get<double>(),
                pt["llm_gbps"].get<double>(), static_cast<unsigned long long>(pt["llm_grants"]["grants"].get<std::uint64_t>()));
  std::printf("ripple whole layers: worst DMR %.4f, %.4f GB/s, %llu grants\n", w["worst_dmr"].get<double>(),
              w["llm_gbps"].get<double>(), static_cast<unsigned long long>(w["llm_grants"]["grants"].get<std::uint64_t>()));
  EXPECT_FALSE(at["unmanaged"]["feasible"].get<bool>()) << "a tight point: protection is needed";
  ASSERT_TRUE(at["ripple"]["feasible"].get<bool>()) << at["ripple"].dump();
  ASSERT_TRUE(at["sigamma"]["feasible"].get<bool>()) << at["sigamma"].dump();
  ASSERT_TRUE(w["feasible"].get<bool>()) << w.dump();
  EXPECT_GE(at["ripple"]["llm_gbps"].get<double>(), at["sigamma"]["llm_gbps"].get<double>());
  EXPECT_GT(at["ripple"]["llm_gbps"].get<double>(), 1.1 * w["llm_gbps"].get<double>()) << "chunks fit the allowances";
  EXPECT_GT(at["ripple"]["llm_grants"]["grants"].get<std::uint64_t>(), w["llm_grants"]["grants"].get<std::uint64_t>());
}

// Tests that a VLM streaming its weights from host memory (issue 12: qwen3-vl-2b, 59 GB a
// 5-s frame, beside the offloaded LLM; preset h200-vlm-host) meets every frame deadline under
// ripple at k = 1.1, where the budget binds, as it does unmanaged, with the CPU tasks within
// eps and the LLM still served. Before the reservation (Documentation/agent.md) ripple was
// late on 3 of 18 frames here. Measured when written: ripple 0/18 late, worst DMR 0.67 %,
// 0.36 tokens/s (before: 3/18, 0.67 %, 0.34); unmanaged 0/18 at 20.1 % DMR.
TEST(SimVlmHost, RippleMeetsEveryFrameOfAHostStreamingVlm) {
  SweepOptions o = preset_sweep("h200-vlm-host", "robotic1");
  o.policies = {"ripple", "unmanaged"};
  o.ks = {1.1};
  o.runs = 3;
  auto at = points_by_policy(o);
  ASSERT_EQ(at.size(), 2u);
  const auto& rip = at["ripple"];
  std::printf("ripple: VLM late %llu/%llu, worst DMR %.4f, %.3f tokens/s\n",
              static_cast<unsigned long long>(rip["vlm_misses"].get<std::uint64_t>()),
              static_cast<unsigned long long>(rip["vlm_frames"].get<std::uint64_t>()), rip["worst_dmr"].get<double>(),
              rip["llm_tok_s"].get<double>());
  EXPECT_EQ(at["unmanaged"]["vlm_misses"].get<std::uint64_t>(), 0u) << "the frames fit unmanaged";
  EXPECT_FALSE(at["unmanaged"]["feasible"].get<bool>()) << "a tight point: protection is needed";
  EXPECT_GT(rip["vlm_frames"].get<std::uint64_t>(), 10u);
  EXPECT_EQ(rip["vlm_misses"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(rip["feasible"].get<bool>()) << rip.dump();
  EXPECT_GT(rip["llm_tok_s"].get<double>(), 0.3) << "best-effort work still gets the rest";
}

// Tests agent.link_by_deadline closed-loop on the host link modelled per direction
// (h200-vlm-duplex, fitted to the H200: the VLM's copies 1.4x slower beside the LLM's, the
// LLM's not slowed), at k = 1.5. With the VLM's 5-s frames the hold costs the LLM a fifth of
// its time; the link by deadlines moves >= 1.15x the hold's tokens/s (1.23x when written, with
// the fifth session's grant costs; 1.18x with results/sim.md §19's, which make the hold's many
// grants cheaper; the deadline-bound half of the rule alone gave 1.13x when written) with every
// frame on time and every CPU target met. With the VLM's deadline at
// 1.3 s (its copies alone take 1.08 s) the hold, which makes the VLM wait for the LLM's
// grants, was late on all 12 frames when written; by deadlines none is late.
TEST(SimVlmDuplex, LinkByDeadlineMovesMoreAndKeepsEveryFrame) {
  SweepOptions o = preset_sweep("h200-vlm-duplex", "robotic1");
  o.policies = {"ripple", "ripple+dl"};
  o.variants["ripple+dl"] = {"agent.link_by_deadline=true"};
  o.ks = {1.5};
  o.runs = 2;
  auto at = points_by_policy(o);
  ASSERT_EQ(at.size(), 2u);
  const auto& held = at["ripple"];
  const auto& by_deadline = at["ripple+dl"];
  std::printf("held %.3f tokens/s, by deadline %.3f; VLM late %llu / %llu\n", held["llm_tok_s"].get<double>(),
              by_deadline["llm_tok_s"].get<double>(), static_cast<unsigned long long>(held["vlm_misses"].get<std::uint64_t>()),
              static_cast<unsigned long long>(by_deadline["vlm_misses"].get<std::uint64_t>()));
  for (const auto* pt : {&held, &by_deadline}) {
    EXPECT_TRUE((*pt)["feasible"].get<bool>()) << pt->dump();
    EXPECT_GT((*pt)["vlm_frames"].get<std::uint64_t>(), 10u);
    EXPECT_EQ((*pt)["vlm_misses"].get<std::uint64_t>(), 0u);
  }
  EXPECT_GE(by_deadline["llm_tok_s"].get<double>(), 1.15 * held["llm_tok_s"].get<double>());

  o.preset.engines.at("vlm").deadline = 1300 * kNsPerMs;
  auto tight = points_by_policy(o);
  ASSERT_EQ(tight.size(), 2u);
  std::printf("VLM deadline 1.3 s: late %llu held, %llu by deadline\n",
              static_cast<unsigned long long>(tight["ripple"]["vlm_misses"].get<std::uint64_t>()),
              static_cast<unsigned long long>(tight["ripple+dl"]["vlm_misses"].get<std::uint64_t>()));
  EXPECT_GT(tight["ripple+dl"]["vlm_frames"].get<std::uint64_t>(), 10u);
  EXPECT_EQ(tight["ripple+dl"]["vlm_misses"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(tight["ripple+dl"]["feasible"].get<bool>()) << tight["ripple+dl"].dump();
  EXPECT_GE(tight["ripple+dl"]["llm_tok_s"].get<double>(), tight["ripple"]["llm_tok_s"].get<double>());
}

// Tests link_by_deadline's beside factor in h200-vlm-duplex at k = 1.1, where the LLM's
// grants run beside the VLM's most: the VLM's copies take ~1.3x as long beside the LLM's
// (the per-direction link), and predicted at solo speed 38 % of its grants ended late
// (seed 1, 3 runs, before the factor; 63 % with the factor learned but not applied).
// Predicted at its learned beside factor, fewer than a third do (13-15 %), and it still
// loses no frame.
TEST(SimVlmDuplex, LinkByDeadlinePredictsTheVlmBesideTheLlm) {
  SweepOptions o = preset_sweep("h200-vlm-duplex", "robotic1");
  o.policies = {"ripple+dl"};
  o.variants["ripple+dl"] = {"agent.link_by_deadline=true"};
  o.ks = {1.1};
  o.runs = 2;
  auto at = points_by_policy(o);
  ASSERT_EQ(at.size(), 1u);
  const auto& pt = at["ripple+dl"];
  ASSERT_TRUE(pt.contains("vlm_grants")) << pt.dump();
  const auto grants = pt["vlm_grants"]["grants"].get<std::uint64_t>();
  const auto late = pt["vlm_grants"]["late_ends"].get<std::uint64_t>();
  std::printf("VLM: %llu late ends of %llu grants\n", static_cast<unsigned long long>(late),
              static_cast<unsigned long long>(grants));
  EXPECT_GT(grants, 500u);
  EXPECT_LT(3 * late, grants);
  EXPECT_EQ(pt["vlm_misses"].get<std::uint64_t>(), 0u);
}

// Tests that a per-job spread of the slowdown (slowdown_sigma) widens the responses beside a
// constant stream while their mean stretch stays about the same.
TEST(SimRunner, SlopeSpreadWidensTheTailNotTheMean) {
  std::vector<double> p50, p99, mean;
  for (double s : {0.0, 0.4}) {
    RunConfig c = plant_like("unmanaged", 90);
    c.tasks[0].model.period = 100 * kNsPerMs;
    c.tasks[0].model.kappa_ms_per_gb = 400;  // x = 0.4 beside the 1 GB/s stand-in
    c.tasks[0].model.slowdown_sigma = s;
    c.score = 200 * kNsPerSec;
    auto r = run(c);
    ASSERT_TRUE(r) << r.error().message;
    auto v = r->tasks[0].responses_ms;
    double m = 0;
    for (double x : v) m += x;
    mean.push_back(m / static_cast<double>(v.size()));
    p50.push_back(percentile(v, 50));
    p99.push_back(percentile(v, 99));
  }
  EXPECT_GT(p99[1] / p50[1], 1.2 * p99[0] / p50[0]);
  EXPECT_NEAR(mean[1] / mean[0], 1.0, 0.10);  // 1/(1-x) is convex: a little above 1
}

// Tests an engine's time_sigma: with it each grant runs a lognormal factor of mean 1 of its
// profiled time, so grants end after the agent's prediction (late ends, > 1 ms) where
// without it none does; the passes a minute stay within 10 % (mean 1; the learned scale
// follows the draws).
TEST(SimRunner, GrantTimeSpreadMakesLateEndsNotFewerPasses) {
  std::vector<std::uint64_t> late, passes;
  for (double s : {0.0, 0.3}) {
    RunConfig c = plant_like("unmanaged", 40);
    c.engines[0].time_sigma = s;
    auto r = run(c);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->protocol_errors, 0u) << r->first_error;
    late.push_back(r->engines[0].s1.late_ends - r->engines[0].s0.late_ends);
    passes.push_back(r->engines[0].passes);
    std::printf("# time_sigma %.1f: %llu late ends, %llu passes\n", s, (unsigned long long)late.back(), (unsigned long long)passes.back());
  }
  EXPECT_EQ(late[0], 0u);
  EXPECT_GT(late[1], 10u);
  EXPECT_NEAR(static_cast<double>(passes[1]) / static_cast<double>(passes[0]), 1.0, 0.10);
}

// Tests EngineModel::issue_ahead: the engine starts its successor while the grant before
// runs (as the interposer does from its cache), so the agent sees grants queued behind
// another (started before the one before was done, their time reaching back past its
// end); without it none are. No protocol error either way, and no pass is lost.
TEST(SimRunner, IssuingAheadQueuesGrantsBehindTheOneBefore) {
  std::vector<std::uint64_t> queued, passes;
  for (bool ahead : {false, true}) {
    RunConfig c = plant_like("ripple", 40);
    c.engines[0].issue_ahead = ahead;
    auto r = run(c);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->protocol_errors, 0u) << r->first_error;
    const EngineResult& e = r->engines[0];
    queued.push_back(e.s1.queued - e.s0.queued);
    passes.push_back(e.passes);
    std::printf("# issue_ahead %d: %llu queued of %llu grants, %llu passes\n", ahead, (unsigned long long)queued.back(),
                (unsigned long long)(e.s1.grants - e.s0.grants), (unsigned long long)passes.back());
  }
  EXPECT_EQ(queued[0], 0u);
  EXPECT_GT(queued[1], 10u);
  EXPECT_GE(static_cast<double>(passes[1]), 0.9 * static_cast<double>(passes[0]));
}

// Tests that a replay (--solo-from) takes a bench run's profile as each task's solo model
// and its deadlines as k x that run's p99, reading Python's NaN as null.
TEST(SimReplay, SoloFromTakesTheRunsProfileAndDeadlines) {
  auto p = load_preset("h200-offload", src("tools/bench/ripple-sim/presets"));
  ASSERT_TRUE(p) << p.error().message;
  const std::string run = R"({"bound_tok_s": {"1.1": NaN}, "profile": {"costmap": {"jobs": 135, "p50_ms": 20.0,
      "p99_ms": 30.0}, "kdnn": {"p50_ms": 40.0, "p99_ms": 44.0}, "sgm": {"p50_ms": 15.0, "p99_ms": 15.0}}})";
  auto set = apply_bench_profile(*p, run, "run.json");
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->size(), 3u);
  EXPECT_DOUBLE_EQ(p->tasks["costmap"].solo.base_ms, 20.0);
  EXPECT_NEAR(p->tasks["costmap"].solo.sigma, std::log(1.5) / 2.3263478740408408, 1e-12);
  EXPECT_DOUBLE_EQ(p->tasks["costmap"].kappa_ms_per_gb, 4.5);  // the preset's slope stays
  SweepOptions o;
  o.preset = *p;
  o.mix_path = src("tools/workloads/mixes/robotic1-1t.toml");
  o.policies = {"unmanaged"};
  o.ks = {1.5};
  o.runs = 1;
  o.prep_s = 1;
  o.score_s = 2;
  auto r = sweep(o);
  ASSERT_TRUE(r) << r.error().message;
  const auto& dl = r->summary["points"][0]["deadlines_ms"];
  EXPECT_DOUBLE_EQ(dl["costmap"].get<double>(), 45.0);
  EXPECT_DOUBLE_EQ(dl["kdnn"].get<double>(), 66.0);
  EXPECT_FALSE(apply_bench_profile(*p, R"({"profile": {"x": {"p50_ms": 3}}})", "bad.json"));
}

// Tests that --variant runs the base policy with its settings, and an undefined variant is
// refused by name.
TEST(SimReplay, VariantsRunTheBasePolicyWithTheirSettings) {
  SweepOptions o = preset_sweep("plant", "robotic1-1t");
  o.policies = {"ripple", "ripple+clip"};
  o.variants["ripple+clip"] = {"pricing.margin_clip=true"};
  o.ks = {1.5};
  o.runs = 1;
  o.prep_s = 3;
  o.score_s = 10;
  auto r = sweep(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->protocol_errors, 0u);
  ASSERT_EQ(r->summary["points"].size(), 2u);
  EXPECT_EQ(r->summary["points"][1]["policy"], "ripple+clip");
  EXPECT_EQ(r->summary["variants"]["ripple+clip"][0], "pricing.margin_clip=true");
  EXPECT_GT(r->summary["points"][1]["tasks"]["costmap"]["jobs"].get<int>(), 150);
  o.policies = {"ripple+nope"};
  auto bad = sweep(o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("ripple+nope"), std::string::npos);
}

// Tests the host's bursts in a run with no traffic: a job released in a burst takes the
// factor x its solo work (here 10 ms -> 13 ms, past a 12 ms deadline), the others their solo
// work, the slow share is the scored window's share in bursts, and that share is about the
// duty; with the factor 1 the bursts' stream changes nothing (same draws as without).
TEST(SimRunner, HostBurstsSlowTheJobsReleasedInThem) {
  RunConfig c = plant_like("unmanaged", 12);
  c.engines.clear();
  c.tasks[0].model.period = 100 * kNsPerMs;
  c.tasks[0].model.solo.noise_ms = 0;  // solo = 10 ms exactly
  c.tasks[0].model.burst_factor = 1.3;
  c.bursts = {6.0, 3.0};  // every_s, burst_s: duty 1/3
  c.score = 600 * kNsPerSec;
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message;
  const auto& v = r->tasks[0].responses_ms;
  ASSERT_GT(v.size(), 5000u);
  std::size_t slow = 0;
  for (double ms : v) {
    EXPECT_TRUE(std::abs(ms - 10.0) < 1e-3 || std::abs(ms - 13.0) < 1e-3) << ms;
    slow += ms > 11.5;
  }
  const double share = static_cast<double>(slow) / static_cast<double>(v.size());
  EXPECT_EQ(r->tasks[0].misses, slow);
  EXPECT_NEAR(share, r->burst_share, 0.02);
  EXPECT_NEAR(r->burst_share, 1.0 / 3.0, 0.08);  // ~65 cycles: sd ~0.03
  // Off: no slow job at all.
  RunConfig quiet = c;
  quiet.bursts = {};
  auto q = run(quiet);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->tasks[0].misses, 0u);
  EXPECT_DOUBLE_EQ(q->burst_share, 0.0);
  // Factor 1 with the bursts on: the run without them, job for job, with traffic too.
  RunConfig with = plant_like("ripple", 30);
  with.score = 30 * kNsPerSec;
  RunConfig unit = with;
  unit.bursts = {6.0, 3.0};
  auto a = run(with), b = run(unit);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tasks[0].responses_ms, b->tasks[0].responses_ms);
  EXPECT_EQ(a->engines[0].passes, b->engines[0].passes);
  EXPECT_GT(b->burst_share, 0.0);
}

// Tests that a sweep's bursts reach the co-run profile (its p99, so the deadlines, grow by
// about the factor once the profile holds bursts), are the same for every policy at a run
// index (common random numbers) and are recorded in results.json; and that a variant may
// not set them.
TEST(SimSweep, BurstsReachTheProfileAndEveryPolicySeesTheSame) {
  auto p = load_preset("h200-offload", src("tools/bench/ripple-sim/presets"));
  ASSERT_TRUE(p) << p.error().message;
  SweepOptions o;
  o.preset = *p;
  o.preset.profile_s = 300;  // ~15 bursts: the p99 is a burst's
  o.mix_path = src("tools/workloads/mixes/robotic1-1t.toml");
  o.policies = {"ripple", "unmanaged"};
  o.ks = {1.5};
  o.runs = 2;
  o.prep_s = 1;
  o.score_s = 20;
  auto quiet = sweep(o);
  ASSERT_TRUE(quiet) << quiet.error().message;
  EXPECT_FALSE(quiet->summary["sim"].contains("bursts"));
  EXPECT_FALSE(quiet->summary["points"][0].contains("burst_share"));
  ASSERT_TRUE(apply_setting(o.preset, "bursts.every_s=15"));
  ASSERT_TRUE(apply_setting(o.preset, "bursts.burst_s=5"));
  ASSERT_TRUE(apply_setting(o.preset, "bursts.factor=1.3"));
  auto noisy = sweep(o);
  ASSERT_TRUE(noisy) << noisy.error().message;
  const auto& s = noisy->summary;
  ASSERT_TRUE(s["sim"].contains("bursts"));
  EXPECT_DOUBLE_EQ(s["sim"]["bursts"]["factors"]["costmap"].get<double>(), 1.3);
  EXPECT_GT(s["sim"]["bursts"]["profile_share"].get<double>(), 0.1);
  for (const char* t : {"costmap", "kdnn", "sgm"}) {
    const double q99 = quiet->summary["profile"][t]["p99_ms"].get<double>();
    const double n99 = s["profile"][t]["p99_ms"].get<double>();
    EXPECT_GT(n99, 1.2 * q99) << t;
    EXPECT_LT(n99, 1.4 * q99) << t;
    // The profile's p50 is mostly quiet jobs: it moves far less.
    EXPECT_LT(s["profile"][t]["p50_ms"].get<double>(), 1.1 * quiet->summary["profile"][t]["p50_ms"].get<double>()) << t;
  }
  ASSERT_EQ(s["points"].size(), 2u);
  EXPECT_EQ(s["points"][0]["burst_share"], s["points"][1]["burst_share"]);
  EXPECT_NE(s["points"][0]["burst_share"][0], s["points"][0]["burst_share"][1]);
  o.policies = {"ripple+b"};
  o.variants["ripple+b"] = {"bursts.burst_s=1"};
  auto bad = sweep(o);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bursts.burst_s"), std::string::npos);
}

// The LLM's budget wait by cause (budget:CAUSE): the parts sum to the budget wait, and at
// k = 1.1 on the h200-harmless preset, where the allowances bind (sim.md §14), B(t) is most
// of it; unmanaged next to never waits.
TEST(SimSweep, BudgetWaitSplitsByCause) {
  SweepOptions o = preset_sweep("h200-harmless", "robotic1-1t");
  o.policies = {"ripple", "unmanaged"};
  o.ks = {1.1};
  o.runs = 2;
  o.prep_s = 6;
  o.score_s = 20;
  const auto pts = points_by_policy(o);
  ASSERT_EQ(pts.size(), 2u);
  for (const auto& [policy, pt] : pts) {
    const auto& g = pt["gaps"];
    double parts = 0;
    int causes = 0;
    for (const auto& [key, v] : g.items())
      if (key.rfind("budget:", 0) == 0) {
        parts += v.get<double>();
        ++causes;
      }
    EXPECT_EQ(causes, static_cast<int>(admission::kWaitCauses)) << policy;
    EXPECT_NEAR(parts, g["budget"].get<double>(), 1e-9) << policy;
    if (policy == "unmanaged") {
      EXPECT_LT(g["budget"].get<double>(), 0.001);
    } else {
      EXPECT_GT(g["budget"].get<double>(), 0.01);
      EXPECT_GT(g["budget:budget"].get<double>(), 0.5 * g["budget"].get<double>());
      // Some task's job bound B(t) through that wait (the VLM's waits are counted there too).
      double bound = 0;
      for (const char* t : {"costmap", "kdnn", "sgm"}) bound += g[std::string("budget@") + t].get<double>();
      EXPECT_GE(bound, 0.99 * g["budget:budget"].get<double>());
    }
  }
}

TEST(SimSweep, FluidBoundIsPeakWithoutJobsAndLowerWithThem) {
  EXPECT_DOUBLE_EQ(fluid_bound_gbps({}, 10), 10);
  FluidTask t;
  for (int i = 0; i < 100; ++i) t.jobs.emplace_back(i * 100 * kNsPerMs, i * 100 * kNsPerMs + 50 * kNsPerMs);
  t.deadline_ms = 75;
  t.kappa_ms_per_gb = 100;  // r = (1 - 50/75) / 0.1 = 3.33 GB/s while a job runs
  const double b = fluid_bound_gbps({t}, 10);
  EXPECT_GT(b, 3.33);
  EXPECT_LT(b, 10);
}

}  // namespace
}  // namespace ripple::sim
