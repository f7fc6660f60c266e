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
//
// A host link with two directions (h2d_gbps and d2h_gbps, both > 0; 0: not modelled): each
// engine's bytes are a share h2d_fraction host-to-device, the rest device-to-host, moved at
// once. Each direction's capacity is shared max-min fairly (water-filling: an engine that
// asks for less than an equal split gets all of it, the rest is split among the others),
// and an engine runs at the smallest share it got of its demand in either direction; then
// peak_gbps caps the sum as above. On the H200 an offloaded LLM (27 % H2D) beside a VLM
// streaming its weights (all H2D) slowed the VLM's copies 1.06-1.54x (median 1.39) and not the LLM's
// (results/e2e-archive.md, twenty-third session): one shared rate would slow both.
#pragma once

#include <string>
#include <vector>

#include "ripple/status.h"

namespace ripple::sim {

enum class SlowdownModel { kLinear, kSaturating };

struct Platform {
  std::string name = "custom";
  double peak_gbps = 273.0;            // the engines' combined byte rate is capped here
  SlowdownModel model = SlowdownModel::kLinear;
  double max_stall = 0.9;              // saturating: the largest share of progress lost
  double min_rate = 0.01;              // linear: progress never stops (kappa beta >= 1)
  double h2d_gbps = 0, d2h_gbps = 0;   // the host link's two directions (both or neither)

  bool directed() const { return h2d_gbps > 0 && d2h_gbps > 0; }

  // Progress rate of a job of a task with slope `kappa_ms_per_gb` while the engines move
  // `beta_gbps`: 1 = solo speed.
  double progress_rate(double kappa_ms_per_gb, double beta_gbps) const;
  // The factor (<= 1) each engine's nominal rate is scaled by when together they ask for
  // `demand_gbps`.
  double engine_share(double demand_gbps) const;
  // With a directed link: each running engine's factor (<= 1), given its nominal rate
  // (GB/s) and the share of its bytes that go host-to-device. Without: engine_share of the
  // sum, for each.
  struct Demand {
    double gbps = 0;
    double h2d_fraction = 1;
  };
  std::vector<double> engine_shares(const std::vector<Demand>& demands) const;
  // The solo work done in `elapsed_ns` at that rate; and the time `work_ns` takes.
  static double work_done(double elapsed_ns, double rate) { return elapsed_ns * rate; }
};

Status validate(const Platform& p);
SlowdownModel parse_slowdown(const std::string& s, bool* ok);

}  // namespace ripple::sim
