// ripple-sim engines: GPU inference engines as unit sequences, and the engine side of
// the grant protocol (agent/protocol/client.cc's acquire(), in virtual time).
//
// An engine has a unit catalog (bytes and solo GPU time of each unit) and a pass: the
// units of one forward pass in order. A best-effort engine (the LLM) runs passes back to
// back, one token each, announcing the next pass when the last one ends (as the stand-in
// engine tests/integration/agent_engine.cc does). A deadline-bound engine (the VLM) runs
// one pass (a frame) every period with a deadline; a late frame delays the next release
// to its end (the stand-in sleeps until the next period only if it is not past).
//
// Units execute one after the other, each at its nominal byte rate (bytes / duration)
// scaled by the platform's bandwidth share; a grant is its units in a row.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "agent/admission/types.h"
#include "ripple/status.h"

namespace ripple::sim {

using admission::Bytes;
using admission::Nanos;

struct EngineModel {
  std::string name;
  admission::EngineKind kind = admission::EngineKind::kBestEffort;
  std::vector<admission::UnitSpec> catalog;  // what the engine's hello announces
  std::vector<std::uint32_t> pass;           // one forward pass, as catalog indices
  Nanos period = 0, deadline = 0;            // deadline-bound: frame period and deadline
  Nanos grant_overhead = 0;                  // per grant, announced (hello), added to its GPU time
  // Per grant, added to its GPU time but not announced: what a grant boundary costs an
  // engine beyond its units (a sync that loses copy overlap; h200-offload).
  Nanos hidden_overhead = 0;
  // Per grant, its units' GPU time is multiplied by one lognormal draw of mean 1 and this
  // sigma (0: exactly as profiled): grants that end before or after the agent's prediction,
  // as the GPU's did (late ends, results/e2e.md §0).
  double time_sigma = 0;
  // The host issues ahead of the GPU, as the interposer does with a successor in its cache:
  // once a grant runs, the engine takes the grant for the position after it as soon as it
  // is delivered and sends its Start at once; the GPU runs it after the one before, and
  // its Done reports the time from that Start (an event pair recorded at the host's issue
  // spans the wait behind the grant before). false: a Start follows the grant before's end.
  bool issue_ahead = false;
  Nanos first_release = 0;                   // deadline-bound: first frame's release
  // The share of its bytes that go host-to-device (the rest device-to-host), on a platform
  // whose link has two directions (Platform::directed).
  double h2d_fraction = 1.0;

  Bytes pass_bytes() const;
  Nanos pass_ns() const;                     // solo GPU time of one pass (no overheads)
  double gbps() const;                       // nominal byte rate while it runs, GB/s
  admission::EngineSpec spec() const;
};

Status validate(const EngineModel& m);

// A pass of `units` equal units of `unit_bytes`, each `unit_ns` long (given directly).
EngineModel uniform_engine(std::string name, admission::EngineKind kind, std::uint32_t units, Bytes unit_bytes,
                           Nanos unit_ns);

// Sub-layer grants: `m` as the interposer announces it with chunk size `chunk` bytes
// (cuhooks/chunker.h, the same planner): every unit larger than `chunk` becomes its
// sub-units (chunk bytes each, the last one the rest; durations in proportion), in order
// in the pass. chunk 0: `m` unchanged.
EngineModel chunked_engine(const EngineModel& m, Bytes chunk);

// From a ripple-profile JSON ("ripple-unit-catalog/1": recorded with gpu_ns, or a model
// catalog from `ripple-profile model`, whose units have bytes but no time): every unit in
// order is the pass. Units without a recorded time take bytes / rate_gbps; units with
// 0 bytes are given 1 byte (the protocol wants bytes > 0) and, unrecorded, 1 us.
Result<EngineModel> engine_from_profile_json(const std::string& json_text, const std::string& origin,
                                             std::string name, admission::EngineKind kind, double rate_gbps);
Result<EngineModel> engine_from_profile(const std::string& path, std::string name, admission::EngineKind kind,
                                        double rate_gbps);

// What the agent delivers: include/ripple/protocol.h's GrantMsg, the fields the engine reads.
struct GrantMsg {
  admission::GrantId id = 0;
  std::uint64_t work = 0;
  std::uint32_t first = 0, count = 0;
  Nanos start_by = admission::kNever;
  Nanos not_before = 0;
};

// The engine's grant cache and the pipelining check of paper §4.3 (Client::acquire):
// a delivered grant is used only if it is for the engine's position (work, first) and
// start_by has not passed; one delivered ahead for a CPU release is held until
// not_before; anything else is handed back (discarded).
class GrantCache {
 public:
  void deliver(const GrantMsg& g) { cache_.push_back(g); }
  struct Acquired {
    std::optional<GrantMsg> grant;         // usable now
    Nanos hold_until = 0;                  // > 0: a usable grant waits for its release
    std::vector<admission::GrantId> discarded;  // to hand back, in order
  };
  Acquired acquire(std::uint64_t work, std::uint32_t first, Nanos now);
  std::size_t size() const { return cache_.size(); }
  std::uint64_t discarded() const { return discarded_; }

 private:
  std::deque<GrantMsg> cache_;
  std::uint64_t discarded_ = 0;
};

}  // namespace ripple::sim
