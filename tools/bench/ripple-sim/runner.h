// ripple-sim runner: one simulated run. It wires the models (platform, tasks, engines)
// to the agent's own pure libraries — pricing::Ledger, admission::Admission and the
// policy from policy::make_policy — and makes the calls agent/daemon/agent.cc makes, in
// the same order, on a virtual clock:
//
//   job started          -> (tracer delay) Admission::on_release(task, seq, start time, lag):
//                           at its release, or after its predecessor's end (lag > 0)
//   job completed        -> (tracer delay) Admission::on_complete(task, seq, completion time)
//   engine joins         -> Admission::add_engine (its hello)
//   engine message       -> (report delay) announce / on_start / on_done / on_discard
//   after each of these  -> a scheduling point: (decision delay) decide(now), then
//                           on_sent(now) for every grant; the engine has it after the
//                           delivery delay; decide()'s wake_at is the next time-driven point
//
// The engine side follows agent/protocol/client.cc (GrantCache); the GPU executes one unit
// at a time at its byte rate; CPU jobs progress at the platform's rate for the engines'
// current combined byte rate. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/admission/admission.h"
#include "agent/pricing/params.h"
#include "tools/bench/ripple-sim/engines.h"
#include "tools/bench/ripple-sim/platform.h"
#include "tools/bench/ripple-sim/tasks.h"

namespace ripple::sim {

// The grant protocol's latencies (virtual ns).
struct Delays {
  Nanos tracer = 20 * 1000;    // a job's release/completion -> the agent reads the event
  Nanos decision = 20 * 1000;  // a scheduling point -> decide() runs and the grants go out
  Nanos delivery = 50 * 1000;  // a grant sent -> the engine has it
  Nanos start = 10 * 1000;     // the engine takes a usable grant -> the GPU starts it
  Nanos report = 30 * 1000;    // an engine message (work, start, done, discard) -> the agent
};

struct RunTask {
  TaskModel model;
  Nanos deadline = 0;
  double miss_tolerance = 0.02;
  std::vector<Nanos> solo_profile;                 // TaskSpec::solo_profile (the agent's profile = file)
  std::optional<double> prior_slope_ms_per_gb;     // TaskSpec::prior_slope_ns_per_byte
};

struct RunConfig {
  Platform platform;
  std::vector<RunTask> tasks;
  std::vector<EngineModel> engines;
  std::string policy = "ripple";
  pricing::Params params;
  admission::Options options;
  Delays delays;
  // Clustered host noise (tasks.h), one process for all tasks from the run's seed (its own
  // stream: the solo draws are the same with and without it); each task's factor is its
  // TaskModel::burst_factor. Default: off.
  HostBursts bursts;
  Nanos prep = 20 * pricing::kNsPerSec, score = 30 * pricing::kNsPerSec;
  std::uint64_t seed = 1;
  bool keep_responses = false;  // keep (release, response) of every scored job
  // The admission trace of the whole run (agent/admission/trace.h), as JSON lines on
  // virtual time, the format of agent.trace_file; empty: none.
  std::string trace_path;
};

struct TaskResult {
  std::string name;
  std::uint64_t jobs = 0, misses = 0;  // released in the scored window
  std::vector<double> responses_ms;    // scored jobs (unfinished ones as +inf)
  std::vector<std::pair<Nanos, double>> responses;  // (release, response ms), keep_responses
  std::uint64_t jobs_all = 0, misses_all = 0;      // the whole run
  // Admission::budget_wait_by_task at the window's start and end.
  Nanos budget_wait0 = 0, budget_wait1 = 0;
};

struct EngineResult {
  std::string name;
  admission::EngineKind kind = admission::EngineKind::kBestEffort;
  std::uint64_t passes = 0;          // passes (tokens, frames) that ended in the scored window
  std::uint64_t frames_judged = 0;   // deadline-bound: frames whose deadline is in the window
  std::uint64_t frames_late = 0;
  admission::EngineStats s0, s1;     // the agent's counters at the window's start and end
  Bytes pass_bytes = 0;
};

struct RunResult {
  double scored_s = 0;
  double burst_share = 0;  // the share of the scored window the host spent in bursts
  std::vector<TaskResult> tasks;
  std::vector<EngineResult> engines;
  std::uint64_t events = 0, decides = 0, grants = 0, protocol_errors = 0;
  std::string first_error;
};

Result<RunResult> run(const RunConfig& cfg);

}  // namespace ripple::sim
