// ripple-sim tasks: the protected periodic CPU tasks of a mix. Pure but for the loaders.
//
// A task releases a job every period (first release at a seeded phase in [0, period)),
// jobs run one after the other on the task's own core (a job released while the one
// before still runs starts when it ends, as tools/workloads/periodic.cc does), and a job's
// solo work is drawn from its SoloModel, times the task's burst_factor when the host is in
// a burst (HostBursts, below). The platform (platform.h) turns solo work into time under GPU
// traffic.
#pragma once

#include <string>
#include <utility>
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
  // A job released while the host is in a burst (BurstProcess) has this x its solo work.
  double burst_factor = 1.0;
};

// Clustered host noise: on the GPU machine the tasks' jobs run 10-40 % slower for some
// seconds at a time with no GPU traffic, then it passes (results/e2e.md §0). A two-state
// (quiet / burst) process in continuous time: quiet gaps and bursts alternate, each
// exponential with its mean. It is one process for the whole host — the e2e runs saw
// costmap's and sgm's misses come in the same seconds, and the closing profile found every
// task slower, as from something on the instance (a neighbour, the memory system, the
// clock), not from one task — and each task has its own factor (TaskModel::burst_factor):
// how much a task slows in a burst depends on what it does.
struct HostBursts {
  double every_s = 0;  // mean quiet gap between bursts, s (exponential)
  double burst_s = 0;  // mean burst length, s (exponential); 0: no bursts
  bool on() const { return burst_s > 0 && every_s > 0; }
  // The long-run share of the time in a burst.
  double duty() const { return on() ? burst_s / (burst_s + every_s) : 0.0; }
};
// Both means finite and >= 0, every_s > 0 where burst_s > 0; the errors name the preset keys.
Status validate(const HostBursts& b);
// A burst slows a task, never speeds it: [1, 10].
Status validate_burst_factor(double f, const std::string& where);

// One realisation of HostBursts from its own random stream, generated as far as it is
// asked about (any times, in any order: the profile asks task by task). It starts in its
// stationary state (in a burst with probability duty(); exponential lengths have no
// memory, so the rest of that first interval has the same law), so a short window is in a
// burst duty() of the time on average too. Off (default-constructed, or !on()): never in a
// burst, and it draws nothing.
class BurstProcess {
 public:
  BurstProcess() = default;
  BurstProcess(const HostBursts& b, Rng rng);
  bool on() const { return b_.on(); }
  bool in_burst(Nanos t);
  // The share of [t0, t1) spent in bursts.
  double share(Nanos t0, Nanos t1);
  // The bursts [start, end) that start at or before t, in order.
  const std::vector<std::pair<Nanos, Nanos>>& bursts_until(Nanos t);

 private:
  void extend(Nanos t);
  HostBursts b_;
  Rng rng_;
  std::vector<std::pair<Nanos, Nanos>> bursts_;
  Nanos next_start_ = 0;  // the first burst not yet in bursts_ starts here
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

// A job's solo work, ns: a draw of its SoloModel, x burst_factor when `bursts` has the host
// in a burst at its release. With no bursts (nullptr or off) exactly solo.draw(rng).
double job_work(const TaskModel& t, Rng& rng, BurstProcess* bursts, Nanos release);

// The co-run profile with the engines idle (ripple-bench's run_profile): `jobs` solo
// draws of the task (response = solo work with no GPU traffic; the warm-up tenth is the
// bench's and is not modelled), job j released at j x period, in a burst of `bursts` or
// not (the bench profiles on the same noisy host). Returns the durations, ms.
std::vector<double> profile_jobs(const TaskModel& t, int jobs, Rng& rng, BurstProcess* bursts = nullptr);

}  // namespace ripple::sim
