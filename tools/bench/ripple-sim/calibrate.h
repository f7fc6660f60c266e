// ripple-sim calibrate: measure a machine and write a platform preset (Documentation/sim.md,
// "Calibrating a platform").
//
// The measurement is ripple-bench's own protocol with the `pace-R` policy (agent/policy/
// baselines.h: every engine's units granted, no faster than R GB/s summed over the
// engines), so the tasks, engines, pinning and logs are exactly the bench's:
//
//   1. the co-run profile (engines resident, idle): each task's solo p50 and p99;
//   2. one scored window per rate R: the engines move beta ~ R GB/s (measured: the agent's
//      granted bytes over the window), each task's co-run responses; and one at a rate
//      1000x below the lowest (the reference: the same protocol with ~no traffic).
//
// The fit is the platform model's (platform.h, linear): a job of solo work W beside a
// stream beta takes W / (1 - kappa beta), i.e. T = W + kappa x (bytes moved during it).
// Averaged over jobs that holds for the mean even when the traffic comes in bursts
// (E[T] = E[W] / (1 - kappa mean(beta))), so for every rate
//     y = 1 - m(reference) / m(beta) = kappa beta,
// with m the mean response between its p10 and p90 (trimmed: one preempted job on a
// shared machine must not move the slope), a line through the origin; kappa is its
// least-squares slope (ms per GB). Without a reference point (an older bench folder) m is
// the p50 and the reference the profile's p50. The solo model is lognormal through the
// profile's p50 and p99 (base = p50, sigma = ln(p99/p50) / z99).
//
// The spread of the slowdown per job (slowdown_sigma, tasks.h: a job's log-stretch
// -ln(1 - kappa beta) times a lognormal of mean 1 and spread s): the responses' log-spread
// (ln(p90/p10) / 2.563) beside traffic exceeds the reference's by the log-stretch's own,
// s x -ln(1 - x) with x = kappa beta, so each rate gives s = sqrt(spread^2 - spread_ref^2) /
// -ln(1 - x), averaged with weights x^2 (only with a reference point; else 0).
// The per-point slopes y / beta are kept beside it: if they fall with beta, the platform
// saturates and the fit says so.
//
// The pure part (reading the bench's outputs, the fit, the TOML) has no I/O but strings
// and is unit-tested; run_calibrate() drives ripple-bench.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ripple/status.h"

namespace ripple::sim {

struct CalPoint {
  double rate_gbps = 0;   // the pace asked for
  double beta_gbps = 0;   // what the engines moved in the scored window (all engines)
  std::map<std::string, double> p50_ms, p99_ms;  // per task, co-run responses
  std::map<std::string, double> tmean_ms;        // their mean between p10 and p90
  std::map<std::string, double> p10_ms, p90_ms;
  std::map<std::string, std::size_t> jobs;
  double other_ms_per_grant = 0;  // the LLM's unexplained gap time per grant (a grant's cost)
  // The share of the CPUs other processes took beside the scored window (the bench's
  // other_load, the most loaded run of the point; -1: not reported), and whether the bench
  // counted it loaded: such a window measured their preemptions too, not only the traffic.
  double other_load = -1;
  bool loaded = false;
};

struct CalTaskFit {
  std::string name;
  double solo_p50_ms = 0, solo_p99_ms = 0;
  std::size_t solo_jobs = 0;
  double base_ms = 0, sigma = 0;  // lognormal solo model
  double kappa_ms_per_gb = 0;     // least-squares slope
  double slowdown_sigma = 0;         // per-job spread of the slope (TaskModel::slowdown_sigma)
  double rms = 0;                 // rms residual of y = kappa beta
  std::vector<double> point_kappa;  // y / beta at each rate (ms/GB)
  bool reference = false;           // fitted against the reference point (trimmed means)
};

struct CalData {
  std::string backend, mix, command;
  double score_s = 0;  // the bench's scored window per point
  std::vector<std::string> tasks;
  std::map<std::string, double> solo_p50_ms, solo_p99_ms;
  std::map<std::string, std::size_t> solo_jobs;
  std::vector<CalPoint> points;
};

// Reads a ripple-bench output folder's results.json and responses.csv (given as text) whose
// policies are pace-R. Errors name the file and the field.
Result<CalData> read_bench_outputs(const std::string& results_json, const std::string& responses_csv);

// The fit of one task (needs a solo p50 and >= 1 point with beta > 0).
Result<CalTaskFit> fit_task(const CalData& d, const std::string& task);

// A preset: `base_preset_text` (a preset TOML) with its top-level name/description and every
// [task.*] table replaced by the fit. `header` is a comment block (no leading '#').
std::string render_preset(const std::string& name, const std::string& description, const std::string& header,
                          const std::string& base_preset_text, const std::vector<CalTaskFit>& fits);

struct CalibrateOptions {
  std::string backend = "gpu";        // ripple-bench --backend: gpu or plant
  std::string mix;                    // ripple-mix TOML
  std::vector<double> rates;          // GB/s, > 0
  double score_s = 30, prep_s = 3, profile_s = 20;
  std::string base_preset;            // path of the preset whose non-task sections are kept
  std::string name;                   // the new preset's name
  std::string out;                    // the TOML to write
  std::string work;                   // ripple-bench's output folder (kept)
  std::string from;                   // non-empty: fit this bench output folder, run nothing
  std::string build_dir;              // ripple-bench --build-dir
  std::vector<std::string> bench_args;  // extra ripple-bench arguments
  std::string repo_root;
  std::string command;                // for the header
};

// Runs (or reads) the measurement, fits, writes `out` and `work`/calibrate.json; progress
// and the fit on stderr. The error is one line.
Status run_calibrate(const CalibrateOptions& o);

}  // namespace ripple::sim
