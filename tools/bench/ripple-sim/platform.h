// ripple-sim platform model: how GPU traffic slows CPU jobs, and how much the engines
// can move at once. Pure: no clock, no I/O.
//
// Slowdown (the plant's model, tests/plant/plant.h): a CPU job of task i progresses
// through its solo work at rate
//     linear:      r(beta) = 1 - kappa_i beta                  (floored at min_rate)
//     saturating:  r(beta) = 1 - s (1 - exp(-kappa_i beta / s))  s = max_stall < 1
// where beta(t) is the engines' combined byte rate (GB/s) and kappa_i the task's delay per
// GB of GPU traffic (ms/GB). With beta constant a job of solo work W takes W / r(beta):
// linear is exactly the plant's fixed point T = W / (1 - kappa r), i.e. duration = solo +
// kappa x bytes moved during the job. The saturating variant equals linear for small beta
// and never loses more than the share s of progress (a shared bus: the CPU keeps some).
//
// Bandwidth: the engines' nominal byte rates add up; above peak_gbps every engine is slowed
// by the same factor so their sum is peak_gbps (a shared memory bus).
#pragma once

#include <string>

#include "ripple/status.h"

namespace ripple::sim {

enum class SlowdownModel { kLinear, kSaturating };

struct Platform {
  std::string name = "custom";
  double peak_gbps = 273.0;            // the engines' combined byte rate is capped here
  SlowdownModel model = SlowdownModel::kLinear;
  double max_stall = 0.9;              // saturating: the largest share of progress lost
  double min_rate = 0.01;              // linear: progress never stops (kappa beta >= 1)

  // Progress rate of a job of a task with slope `kappa_ms_per_gb` while the engines move
  // `beta_gbps`: 1 = solo speed.
  double progress_rate(double kappa_ms_per_gb, double beta_gbps) const;
  // The factor (<= 1) each engine's nominal rate is scaled by when together they ask for
  // `demand_gbps`.
  double engine_share(double demand_gbps) const;
  // The solo work done in `elapsed_ns` at that rate; and the time `work_ns` takes.
  static double work_done(double elapsed_ns, double rate) { return elapsed_ns * rate; }
};

Status validate(const Platform& p);
SlowdownModel parse_slowdown(const std::string& s, bool* ok);

}  // namespace ripple::sim
