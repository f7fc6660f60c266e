// ripple-plant-engine: the stand-in engine of the emulated interference plant, a TEST
// DOUBLE for machines without real CPU/GPU memory contention (tests/plant/plant.h).
#include "tests/plant/plant_engine.h"

#include <CLI/CLI.hpp>

#include <signal.h>

#include <cstdio>

namespace {
ripple::PlantShm* g_shm = nullptr;
void on_signal(int) {
  if (g_shm != nullptr) g_shm->stop_request.store(1);
}
}  // namespace

int main(int argc, char** argv) {
  using namespace ripple::plant;
  using ripple::monotonic_ns;
  EngineConfig cfg;
  double rate_gbps = cfg.rate_bytes_per_s / 1e9, unit_mb = static_cast<double>(cfg.unit_bytes) / 1e6;
  bool quiet = false;
  CLI::App app("emulated interference plant: stand-in engine (TEST DOUBLE, not a real GPU)", "ripple-plant-engine");
  app.add_option("--shm", cfg.shm_name, "shm object name (/dev/shm/NAME)")->capture_default_str();
  app.add_option("--rate-gbps", rate_gbps, "execution rate, GB/s")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--unit-mb", unit_mb, "bytes of one unit, MB")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--units", cfg.units, "units to execute (0: until stopped)");
  app.add_option("--duration-s", cfg.duration_s, "stop after this long (0: no limit)")->check(CLI::NonNegativeNumber);
  app.add_option("--gap-ms", cfg.gap_s, "idle ms between units")->check(CLI::NonNegativeNumber);
  app.add_flag("--gated", cfg.gated, "start unit k only once units_granted > k");
  app.add_flag("--quiet", quiet, "no start line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ripple-plant-engine: error: %s\n", e.what());
    return 2;
  }
  cfg.rate_bytes_per_s = rate_gbps * 1e9;
  cfg.unit_bytes = static_cast<uint64_t>(unit_mb * 1e6);
  cfg.gap_s /= 1e3;
  Engine eng;
  std::string err;
  if (!eng.open(cfg, &err)) {
    std::fprintf(stderr, "ripple-plant-engine: error: %s\n", err.c_str());
    return 1;
  }
  g_shm = eng.shm();
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (!quiet) {
    std::printf("ripple-plant-engine: %s: shm /dev/shm/%s, %.1f GB/s, units of %.1f MB%s\n", ripple::kPlantLabel,
                cfg.shm_name.c_str(), rate_gbps, unit_mb, cfg.gated ? ", gated" : "");
    std::fflush(stdout);
  }
  const int64_t t0 = monotonic_ns();
  eng.run();
  const double s = static_cast<double>(monotonic_ns() - t0) / 1e9;
  const double gb = static_cast<double>(eng.shm()->bytes_executed.load()) / 1e9;
  std::printf("ripple-plant-engine (TEST DOUBLE): executed %llu units, %.3f GB in %.2f s\n",
              static_cast<unsigned long long>(eng.shm()->units_completed.load()), gb, s);
  return 0;
}
