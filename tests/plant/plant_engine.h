// The stand-in engine of the emulated interference plant — a TEST DOUBLE, not a model
// of a GPU (tests/plant/plant.h describes the plant and its shared memory).
//
// It "executes" units of work, each for unit_bytes / rate seconds, sleeping (not
// spinning: CI machines have two cores) and publishing the running byte total every
// `tick` so readers see progress inside a unit, as a real device's traffic would be.
#pragma once

#include "ripple/clock.h"
#include "tests/plant/plant.h"

#include <cstdint>
#include <string>

namespace ripple::plant {

struct EngineConfig {
  std::string shm_name = "ripple-plant";
  double rate_bytes_per_s = 200e9;  // GB10-like decode rate
  uint64_t unit_bytes = 420'000'000;  // about one Qwen3-8B layer
  uint64_t units = 0;                 // 0: until stopped or duration_s
  double duration_s = 0;              // 0: no time limit
  double gap_s = 0;                   // idle time between units
  bool gated = false;                 // start unit k only once units_granted > k
  double tick_s = 100e-6;             // publication interval inside a unit
};

class Engine {
 public:
  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;
  ~Engine();

  // Creates the shm object and publishes the header. False and *err on failure.
  bool open(const EngineConfig& cfg, std::string* err);
  // Runs until units are done, duration_s has passed or stop_request is set.
  void run();
  PlantShm* shm() const { return map_.get(); }

 private:
  EngineConfig cfg_;
  PlantMap map_;
};

}  // namespace ripple::plant
