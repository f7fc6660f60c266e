// ripple-sim presets: a platform file (TOML) that says what the simulator cannot derive
// from the mix — the platform's bandwidth and slowdown model, each task's slope and solo
// duration, the engines' unit sequences, the protocol's delays, and the agent settings
// (the same [agent] and [pricing] keys as /etc/ripple/ripple.toml). Documentation/sim.md
// lists every key; presets/*.toml say where each number comes from.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ripple/toml.h"

#include "agent/admission/admission.h"
#include "ripple/status.h"
#include "agent/pricing/params.h"
#include "tools/bench/ripple-sim/engines.h"
#include "tools/bench/ripple-sim/platform.h"
#include "tools/bench/ripple-sim/runner.h"
#include "tools/bench/ripple-sim/tasks.h"

namespace ripple::sim {

struct TaskParams {
  double kappa_ms_per_gb = 0;
  double slowdown_sigma = 0;  // TaskModel::slowdown_sigma
  SoloModel solo;
  std::optional<double> burst_factor;  // TaskModel::burst_factor; unset: the preset's bursts.factor
  std::optional<double> prior_slope_ms_per_gb;  // explicit; else prior_slope_factor x kappa
  // A replayed bench run's co-run profile p99 (--solo-from): deadlines are k x this, as that
  // run's were, instead of k x the p99 of the simulated profile's draws.
  std::optional<double> profile_p99_ms;
};

struct Preset {
  std::string name, description, path;
  double period_scale = 1.0;      // the mix's periods x this (the plant runs 10 Hz tasks at 20 Hz)
  double profile_s = 20.0;        // the co-run profile's length (deadlines = k x its p99)
  double prior_slope_factor = 0;  // > 0: each task's prior slope = this x its kappa
  Platform platform;
  HostBursts bursts;          // [bursts]: clustered host noise, off unless burst_s > 0
  double burst_factor = 1.0;  // bursts.factor: every task's, unless its own burst_factor
  Delays delays;
  pricing::Params params;
  admission::Options options;
  TaskParams task_default;
  std::map<std::string, TaskParams> tasks;
  std::map<std::string, EngineModel> engines;   // every engine the preset defines
  std::vector<std::string> default_engines;     // the ones a run uses unless --engines says
};

// Parses a preset; relative file names in it (profile =, samples =) are taken from `dir`.
Result<Preset> parse_preset(const std::string& text, const std::string& origin, const std::string& dir);
// A path, or a name under `presets_dir` ("gb10" -> <presets_dir>/gb10.toml).
Result<Preset> load_preset(const std::string& name_or_path, const std::string& presets_dir);

// "section.key=value" (--agent-set): applied on top of the preset, e.g.
// "pricing.margin_clip=true", "agent.lease_ms=40", "bursts.burst_s=8" (the host's, for
// every policy: a --variant may not set it).
Status apply_setting(Preset& p, const std::string& kv);

// Python's json.dumps writes NaN / Infinity / -Infinity (ripple-bench's results.json does):
// JSON has no such literals, so outside strings they become null.
std::string json_from_python(const std::string& text);

// Each task's solo model from a ripple-bench results.json's co-run profile (--solo-from):
// lognormal through its p50 and p99 (base = p50, sigma = ln(p99/p50) / z99), no Lomax
// noise; and the deadlines k x that run's p99 (profile_p99_ms). Slopes stay the preset's.
// Returns the tasks it set.
Result<std::vector<std::string>> apply_bench_profile(Preset& p, const std::string& results_json,
                                                     const std::string& origin);

// The tasks of `mix` with this preset's slopes and solo models.
Result<std::vector<TaskModel>> tasks_for(const Preset& p, const Mix& mix);

}  // namespace ripple::sim
