// The plant's stand-in engine (TEST DOUBLE). See plant_engine.h.
#include "tests/plant/plant_engine.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ripple::plant {

namespace {
void sleep_ns(int64_t ns) {
  if (ns <= 0) return;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  nanosleep(&ts, nullptr);
}
}  // namespace

Engine::~Engine() {
  if (map_) {
    map_->stopped.store(1, std::memory_order_release);
    shm_unlink(map_.name().c_str());
  }
}

bool Engine::open(const EngineConfig& cfg, std::string* err) {
  if (!(cfg.rate_bytes_per_s > 0) || cfg.unit_bytes == 0) {
    *err = "plant engine needs a positive rate and unit size";
    return false;
  }
  cfg_ = cfg;
  map_ = PlantMap::create(cfg.shm_name, err);
  if (!map_) return false;
  PlantShm* s = map_.get();
  s->version = kPlantVersion;
  s->size = sizeof(PlantShm);
  s->engine_pid = static_cast<uint32_t>(getpid());
  s->flags = cfg.gated ? kPlantGated : 0;
  s->rate_bytes_per_s = static_cast<uint64_t>(cfg.rate_bytes_per_s);
  s->unit_bytes = cfg.unit_bytes;
  std::strncpy(s->label, kPlantLabel, sizeof(s->label) - 1);
  s->heartbeat_ns.store(monotonic_ns(), std::memory_order_relaxed);
  s->magic.store(kPlantMagic, std::memory_order_release);  // last: readers check it
  return true;
}

void Engine::run() {
  PlantShm* s = map_.get();
  const int64_t t_start = monotonic_ns();
  const int64_t t_end = cfg_.duration_s > 0 ? t_start + static_cast<int64_t>(cfg_.duration_s * 1e9) : INT64_MAX;
  const int64_t tick = std::max<int64_t>(1000, static_cast<int64_t>(cfg_.tick_s * 1e9));
  const double ns_per_byte = 1e9 / cfg_.rate_bytes_per_s;
  int64_t planned = t_start;  // when the previous unit was due to end
  auto stop = [&] { return s->stop_request.load(std::memory_order_acquire) != 0 || static_cast<int64_t>(monotonic_ns()) >= t_end; };
  for (uint64_t k = 0; cfg_.units == 0 || k < cfg_.units; ++k) {
    if (cfg_.gated) {
      while (s->units_granted.load(std::memory_order_acquire) <= k) {
        if (stop()) goto done;
        s->heartbeat_ns.store(monotonic_ns(), std::memory_order_release);
        sleep_ns(tick);
      }
    }
    if (stop()) break;
    {
      const uint64_t base = s->bytes_executed.load(std::memory_order_relaxed);
      s->running.store(1, std::memory_order_release);
      s->units_started.fetch_add(1, std::memory_order_acq_rel);
      // Back-to-back units run on the planned schedule, so sleep overshoot at a unit's
      // end does not lower the long-run rate; after a wait or a gap, from now.
      const int64_t now = monotonic_ns();
      const int64_t t0 = now - planned < tick ? std::min(now, planned) : now;
      const int64_t unit_ns = static_cast<int64_t>(static_cast<double>(cfg_.unit_bytes) * ns_per_byte);
      for (;;) {
        const int64_t el = monotonic_ns() - t0;
        const uint64_t done_bytes =
            el >= unit_ns ? cfg_.unit_bytes
                          : std::min<uint64_t>(cfg_.unit_bytes, static_cast<uint64_t>(static_cast<double>(el) / ns_per_byte));
        s->bytes_executed.store(base + done_bytes, std::memory_order_release);
        s->heartbeat_ns.store(monotonic_ns(), std::memory_order_release);
        if (el >= unit_ns) break;
        // A unit always runs to its end once started, as GPU work cannot be recalled.
        sleep_ns(std::min(tick, unit_ns - el));
      }
      planned = t0 + unit_ns;
      s->units_completed.fetch_add(1, std::memory_order_acq_rel);
      s->running.store(0, std::memory_order_release);
    }
    if (cfg_.gap_s > 0) sleep_ns(static_cast<int64_t>(cfg_.gap_s * 1e9));
  }
done:
  s->running.store(0, std::memory_order_release);
  s->stopped.store(1, std::memory_order_release);
}

}  // namespace ripple::plant
