// ripple-sim sweep: every (k, policy, run) point of a mix, as ripple-bench runs them, in
// virtual time; the summary has ripple-bench's results.json fields
// (tools/bench/ripple-bench/benchlib/report.py summarize) so its report code renders it, and
// report.h writes the same markdown table. Labelled SIMULATED throughout.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ripple/status.h"
#include "tools/bench/ripple-sim/preset.h"
#include "tools/bench/ripple-sim/runner.h"

namespace ripple::sim {

struct SweepOptions {
  std::string mix_path;
  Preset preset;
  std::vector<std::string> policies = {"ripple", "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2", "sigamma", "sereno"};
  std::vector<double> ks = {1.1, 1.5, 2.0};
  std::vector<std::string> engines;  // empty: the preset's default engines
  int runs = 3;
  double eps = 0.02;
  double prep_s = 20, ripple_prep_s = -1, score_s = 30;  // ripple_prep_s < 0: prep_s
  std::uint64_t seed = 1;
  bool keep_responses = false;
  // Each run's admission trace as DIR/trace-POLICY-kK-runR.jsonl (RunConfig::trace_path).
  std::string trace_dir;
  std::string command;
  // POLICY+TAG -> SECTION.KEY=VALUE settings on top of the preset for that policy
  // (ripple-bench --variant): "ripple+clip" runs ripple with pricing.margin_clip=true.
  std::map<std::string, std::vector<std::string>> variants;
  // Called after each run: (done, total, line).
  std::function<void(int, int, const std::string&)> progress;
};

struct SweepResult {
  nlohmann::ordered_json summary;  // results.json
  double cpu_s = 0;                // process CPU time the runs took
  double virtual_s = 0;            // simulated seconds, all runs
  std::uint64_t events = 0, protocol_errors = 0;
};

Result<SweepResult> sweep(const SweepOptions& o);

// The fluid throughput bound (ripple-bench metrics.fluid_bound_gbps), GB/s: every task's
// profile jobs as (start, completion) ns, its deadline, slope and eps.
struct FluidTask {
  std::vector<std::pair<Nanos, Nanos>> jobs;
  double deadline_ms = 0, kappa_ms_per_gb = 0, eps = 0.02;
};
double fluid_bound_gbps(const std::vector<FluidTask>& tasks, double peak_gbps, double step_ms = 0.5);

}  // namespace ripple::sim
