// Plant mode for periodic tasks — part of the emulated interference plant, a TEST DOUBLE
// (tests/plant/plant.h explains it).
//
// A plant-mode job runs its real work, then spins until its job time reaches
//     base + kappa * B(start, now) + noise
// where base is the real work's time, B(start, now) the bytes the stand-in engine has
// executed since the job started (re-read while spinning, so bytes executed during the
// stretch count too, as they would on a shared bus), and noise a Lomax (Pareto II) draw
//     noise = noise_ms * (U^(-1/alpha) - 1),   U ~ Uniform(0, 1]
// with mean noise_ms / (alpha - 1) for alpha > 1 and a heavy tail (finite variance only
// for alpha > 2). With the engine running at rate r the fixed point is
//     T = (base + noise) / (1 - kappa * r),   for kappa * r < 1.
#pragma once

#include "tests/plant/plant.h"

#include <cstdint>
#include <random>
#include <string>

namespace ripple::workloads {

struct PlantModeConfig {
  double kappa_ms_per_gb = 0.0;  // extra job time per GB (1e9 bytes) the engine executed
  double noise_ms = 0.0;         // Lomax scale; 0 disables noise
  double noise_alpha = 2.5;      // Lomax shape
  uint64_t seed = 1;
};

class PlantMode {
 public:
  // Maps the engine's shm object; returns false and sets *err if it is not there.
  bool open(const std::string& shm_name, const PlantModeConfig& cfg, std::string* err);
  bool active() const { return static_cast<bool>(map_); }

  // Bytes the engine has executed so far.
  uint64_t bytes_now() const;
  // Spins until now - start_ns >= work_ns + kappa * (bytes_now() - bytes_at_start) + noise.
  // Returns the bytes the engine executed during the job.
  uint64_t stretch(int64_t start_ns, uint64_t bytes_at_start);
  double draw_noise_ns();

 private:
  PlantMap map_;
  PlantModeConfig cfg_;
  std::mt19937_64 rng_;
};

}  // namespace ripple::workloads
