// ripple-sim tasks: the protected periodic CPU tasks of a mix. Pure but for the loaders.
//
// A task releases a job every period (first release at a seeded phase in [0, period)),
// jobs run one after the other on the task's own core (a job released while the one
// before still runs starts when it ends, as tools/workloads/periodic.cc does), and a job's
// solo work is drawn from its SoloModel. The platform (platform.h) turns solo work into
// time under GPU traffic.
#pragma once

#include <string>
#include <vector>

#include "ripple/status.h"
#include "agent/pricing/types.h"
#include "tools/bench/ripple-sim/rng.h"

namespace ripple::sim {

using pricing::Nanos;

// Solo work of one job, ms:
//   base x exp(sigma N(0,1))      (sigma = 0: exactly base)
//   + Lomax(noise_ms, alpha)      (noise_ms = 0: none; the plant's noise)
// or, when `samples_ms` is set, a uniform draw from those durations (a recorded profile).
struct SoloModel {
  double base_ms = 10.0;
  double sigma = 0.0;
  double noise_ms = 0.0;
  double alpha = 3.0;
  std::vector<double> samples_ms;

  Nanos draw(Rng& rng) const;
  // P(solo <= x_ms) where it has a closed form (samples, or sigma = 0); -1 otherwise.
  double cdf(double x_ms) const;
};

struct TaskModel {
  std::string name;
  Nanos period = 0;
  Nanos fixed_deadline = 0;   // > 0: the mix fixes it; 0: k x the co-run p99
  double kappa_ms_per_gb = 0; // the platform's slope for this task
  // Per-job spread of the slowdown: a job progresses at r(beta)^m instead of r(beta), with
  // m = exp(s N(0,1) - s^2/2) (mean 1) drawn at its release, i.e. its log-stretch
  // -ln r(beta) is spread by s: how much of the traffic a job meets, and how hard, varies.
  // Bounded where the slope is not: a job never stops.
  double slowdown_sigma = 0;
  SoloModel solo;
};

// A ripple-mix TOML (tools/workloads/mixes/*.toml): its name and each [[task]]'s name,
// period_ms and deadline_ms (scaled by period_scale), in order. kappa and solo come
// from the preset.
struct MixTask {
  std::string name;
  double period_ms = 0, deadline_ms = 0;
};
struct Mix {
  std::string name;
  std::vector<MixTask> tasks;
};
Result<Mix> load_mix(const std::string& path, double period_scale = 1.0);
Result<Mix> parse_mix(const std::string& text, const std::string& origin, double period_scale = 1.0);

// Durations in ms, one per line ('#' comments), as ripple-bench's <task>.prof and the
// agent's `profile =` file.
Result<std::vector<double>> load_samples(const std::string& path);

// Nearest-rank percentile, the agent's one routine (agent/pricing/percentile.h; the bench's
// metrics.percentile is the same rule): p in [0, 100]; 0 for no values.
double percentile(std::vector<double> v, double p);

// The co-run profile with the engines idle (ripple-bench's run_profile): `jobs` solo
// draws of the task (response = solo work with no GPU traffic; the warm-up tenth is the
// bench's and is not modelled). Returns the durations, ms.
std::vector<double> profile_jobs(const TaskModel& t, int jobs, Rng& rng);

}  // namespace ripple::sim
