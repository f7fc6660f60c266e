// ripple-sim calibrate's pure part: reading ripple-bench's outputs, the slope fit, and the
// preset it writes (tools/bench/ripple-sim/calibrate.h).
#include "tools/bench/ripple-sim/calibrate.h"

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tools/bench/ripple-sim/preset.h"
#include "tools/bench/ripple-sim/rng.h"

namespace ripple::sim {
namespace {

// A bench output of one task whose jobs take exactly solo / (1 - kappa beta) at each rate.
struct Fixture {
  std::string results, responses;
};
Fixture make_outputs(double kappa_ms_per_gb, const std::vector<double>& betas, double solo_ms = 20.0) {
  std::string pts, csv = "policy,k,run,task,release_ns,response_ms,deadline_ms\n";
  for (std::size_t i = 0; i < betas.size(); ++i) {
    const std::string pol = fmt::format("pace-{:g}", betas[i]);
    pts += fmt::format("{}{{\"policy\": \"{}\", \"k\": 2, \"runs\": 1, \"llm_gbps\": {}, \"tasks\": {{}}, "
                       "\"llm_grants\": {{\"grants\": 100}}, \"gaps\": {{\"other\": 0.01}}}}",
                       i ? "," : "", pol, betas[i]);
    const double t = solo_ms / (1.0 - kappa_ms_per_gb * 1e-3 * betas[i]);
    for (int j = 0; j < 101; ++j) csv += fmt::format("{},2,0,costmap,{},{},40\n", pol, j, t * (0.9 + 0.002 * j));
  }
  // A non-pace point is ignored.
  pts += std::string(pts.empty() ? "" : ",") + "{\"policy\": \"unmanaged\", \"k\": 2, \"llm_gbps\": 99, \"tasks\": {}}";
  Fixture f;
  f.results = fmt::format("{{\"backend\": \"plant\", \"mix\": \"M\", \"score_s\": 10, \"tasks\": [\"costmap\"], "
                          "\"profile\": {{\"costmap\": {{\"jobs\": 200, \"p50_ms\": {}, \"p99_ms\": {}}}}}, "
                          "\"points\": [{}]}}",
                          solo_ms, solo_ms * 1.2, pts);
  f.responses = csv;
  return f;
}

// Tests that the fit recovers the slope of jobs that follow the linear model exactly.
TEST(SimCalibrate, RecoversTheLinearSlope) {
  const Fixture f = make_outputs(750.0, {0.2, 0.4, 0.6});
  auto d = read_bench_outputs(f.results, f.responses);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_EQ(d->points.size(), 3u);
  EXPECT_DOUBLE_EQ(d->points[1].beta_gbps, 0.4);
  EXPECT_NEAR(d->points[0].other_ms_per_grant, 0.01 * 10 * 1e3 / 100, 1e-9);
  auto fit = fit_task(*d, "costmap");
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_NEAR(fit->kappa_ms_per_gb, 750.0, 750.0 * 0.002);  // p50 of the 0.9..1.1 spread is 1.0
  EXPECT_NEAR(fit->sigma, std::log(1.2) / 2.3263478740408408, 1e-9);
  EXPECT_DOUBLE_EQ(fit->base_ms, 20.0);
  EXPECT_LT(fit->rms, 0.01);
}

// Tests that with a reference point (calibrate's pace at 1/1000) the slope comes from trimmed
// means against it, so one preempted job (1 s) does not move it.
TEST(SimCalibrate, ReferencePointUsesTrimmedMeans) {
  const double kappa = 500.0, solo = 10.0;
  std::string pts, csv = "policy,k,run,task,release_ns,response_ms,deadline_ms\n";
  for (double beta : {0.0004, 0.4, 0.8}) {
    const std::string pol = fmt::format("pace-{:g}", beta);
    pts += fmt::format("{}{{\"policy\": \"{}\", \"k\": 2, \"runs\": 1, \"llm_gbps\": {}, \"tasks\": {{}}}}",
                       pts.empty() ? "" : ",", pol, beta);
    const double stretch = 1.0 / (1.0 - kappa * 1e-3 * beta);
    for (int j = 0; j < 200; ++j)
      csv += fmt::format("{},2,0,costmap,{},{},40\n", pol, j, j == 7 ? 1000.0 : solo * (0.8 + 0.002 * j) * stretch);
  }
  // The profile's p50 (7 ms) is not the reference's level (~10 ms): the reference point wins.
  const std::string results = fmt::format(
      "{{\"backend\": \"plant\", \"score_s\": 10, \"tasks\": [\"costmap\"], \"profile\": {{\"costmap\": "
      "{{\"jobs\": 200, \"p50_ms\": 7, \"p99_ms\": 12}}}}, \"points\": [{}]}}",
      pts);
  auto d = read_bench_outputs(results, csv);
  ASSERT_TRUE(d) << d.error().message;
  auto fit = fit_task(*d, "costmap");
  ASSERT_TRUE(fit) << fit.error().message;
  EXPECT_TRUE(fit->reference);
  ASSERT_EQ(fit->point_kappa.size(), 2u);  // the reference is not a fit point
  EXPECT_NEAR(fit->kappa_ms_per_gb, kappa, 0.01 * kappa);
  EXPECT_DOUBLE_EQ(fit->base_ms, 7.0);     // the solo model stays the profile's
}

// Tests that a slowdown that spreads per job (each job's log-stretch lognormal around its mean) is
// read back as slowdown_sigma from the responses' spread beyond the reference's, and a
// slowdown that does not spread reads ~0.
TEST(SimCalibrate, ReadsThePerJobSpreadOfTheSlope) {
  for (double s_true : {0.0, 0.3}) {
    const double kappa = 5.0;  // ms/GB
    std::string pts, csv = "policy,k,run,task,release_ns,response_ms,deadline_ms\n";
    Rng rng = Rng::stream(7, 1);
    for (double beta : {0.05, 50.0, 100.0}) {
      const std::string pol = fmt::format("pace-{:g}", beta);
      pts += fmt::format("{}{{\"policy\": \"{}\", \"k\": 2, \"runs\": 1, \"llm_gbps\": {}, \"tasks\": {{}}}}",
                         pts.empty() ? "" : ",", pol, beta);
      for (int j = 0; j < 4000; ++j) {
        const double w = 20.0 * std::exp(0.1 * rng.normal());
        const double m = std::exp(s_true * rng.normal() - s_true * s_true / 2);
        csv += fmt::format("{},2,0,costmap,{},{},40\n", pol, j, w * std::pow(1 - kappa * 1e-3 * beta, -m));
      }
    }
    const std::string results = fmt::format(
        "{{\"backend\": \"gpu\", \"score_s\": 30, \"tasks\": [\"costmap\"], \"profile\": {{\"costmap\": "
        "{{\"jobs\": 200, \"p50_ms\": 20, \"p99_ms\": 25}}}}, \"points\": [{}]}}",
        pts);
    auto d = read_bench_outputs(results, csv);
    ASSERT_TRUE(d) << d.error().message;
    auto fit = fit_task(*d, "costmap");
    ASSERT_TRUE(fit) << fit.error().message;
    EXPECT_NEAR(fit->kappa_ms_per_gb, kappa, 0.1 * kappa) << "s = " << s_true;
    EXPECT_NEAR(fit->slowdown_sigma, s_true, 0.08) << "s = " << s_true;
  }
}

// Tests that the written preset keeps the base's engines and loads with the fitted tasks.
TEST(SimCalibrate, WritesAPresetThatLoads) {
  const std::string base = "# base comment\nname = \"base\"\ndescription = \"x\"\nprofile_s = 15\n"
                           "[platform]\npeak_gbps = 80\n[task.default]\nkappa_ms_per_gb = 9\n[task.costmap]\n"
                           "base_ms = 3\n[engine.llm]\nunits = 2\nunit_mb = 10\nunit_ms = 1\n";
  const Fixture f = make_outputs(4.0, {20, 40, 70});
  auto d = read_bench_outputs(f.results, f.responses);
  ASSERT_TRUE(d);
  auto fit = fit_task(*d, "costmap");
  ASSERT_TRUE(fit);
  const std::string text = render_preset("mine", "measured", "a header\nline two", base, {*fit});
  auto p = parse_preset(text, "mine.toml", ".");
  ASSERT_TRUE(p) << p.error().message << "\n" << text;
  EXPECT_EQ(p->name, "mine");
  EXPECT_DOUBLE_EQ(p->profile_s, 15);
  EXPECT_DOUBLE_EQ(p->platform.peak_gbps, 80);
  ASSERT_EQ(p->engines.count("llm"), 1u);
  ASSERT_EQ(p->tasks.count("costmap"), 1u);
  EXPECT_NEAR(p->tasks["costmap"].kappa_ms_per_gb, 4.0, 0.01);
  EXPECT_DOUBLE_EQ(p->tasks["costmap"].solo.base_ms, 20.0);
  EXPECT_DOUBLE_EQ(p->task_default.kappa_ms_per_gb, 0.0);  // the base's task tables are gone
  EXPECT_EQ(text.find("base comment"), std::string::npos);
}

// Tests that bad bench outputs are refused with the field named.
TEST(SimCalibrate, BadOutputsNameTheField) {
  Fixture f = make_outputs(4.0, {20});
  std::string r = f.results;
  r.replace(r.find("p50_ms"), 6, "p5_ms");
  auto d = read_bench_outputs(r, f.responses);
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("profile.costmap.p50_ms"), std::string::npos) << d.error().message;
  auto d2 = read_bench_outputs(f.results, "policy,k\npace-20,2,0,costmap,1,abc,40\n");
  ASSERT_FALSE(d2);
  EXPECT_NE(d2.error().message.find("responses.csv:2"), std::string::npos) << d2.error().message;
  auto d3 = read_bench_outputs(make_outputs(4.0, {}).results, "");
  ASSERT_FALSE(d3);
  EXPECT_NE(d3.error().message.find("pace-R"), std::string::npos) << d3.error().message;
}

}  // namespace
}  // namespace ripple::sim
