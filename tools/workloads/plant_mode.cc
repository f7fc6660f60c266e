// Plant mode for periodic tasks (TEST DOUBLE). See plant_mode.h.
#include "tools/workloads/plant_mode.h"

#include "tools/workloads/periodic.h"

#include <cmath>
#include <cstdio>

namespace ripple::workloads {

bool PlantMode::open(const std::string& shm_name, const PlantModeConfig& cfg, std::string* err) {
  map_ = PlantMap::open(shm_name, err);
  cfg_ = cfg;
  rng_.seed(cfg.seed);
  if (!map_) return false;
  // The stretch is a fixed point T = base / (1 - kappa * rate): at kappa * rate >= 1 a
  // job would spin for as long as the engine runs.
  const double kr = cfg.kappa_ms_per_gb * 1e-12 * static_cast<double>(map_->rate_bytes_per_s);
  if (kr >= 1.0) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "plant slope too steep: kappa x engine rate = %.2f >= 1 would stretch jobs without bound", kr);
    *err = buf;
    map_ = PlantMap();
    return false;
  }
  return true;
}

uint64_t PlantMode::bytes_now() const {
  return map_ ? map_->bytes_executed.load(std::memory_order_acquire) : 0;
}

double PlantMode::draw_noise_ns() {
  if (cfg_.noise_ms <= 0.0) return 0.0;
  // U in (0, 1]: 1 - uniform[0, 1).
  double u = 1.0 - std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  return cfg_.noise_ms * 1e6 * (std::pow(u, -1.0 / cfg_.noise_alpha) - 1.0);
}

uint64_t PlantMode::stretch(int64_t start_ns, uint64_t bytes_at_start) {
  const int64_t work_ns = monotonic_ns() - start_ns;
  const double noise_ns = draw_noise_ns();
  const double ns_per_byte = cfg_.kappa_ms_per_gb * 1e6 / 1e9;
  for (;;) {
    uint64_t b = bytes_now() - bytes_at_start;
    double target = static_cast<double>(work_ns) + noise_ns + ns_per_byte * static_cast<double>(b);
    if (static_cast<double>(monotonic_ns() - start_ns) >= target) return b;
    // Spin: the job occupies its core for the stretch, like a stalled memory-bound job.
  }
}

}  // namespace ripple::workloads
