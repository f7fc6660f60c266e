// ripple-agent: the daemon that closes the loop (DESIGN.md §3-4). A thin adapter
// around the pure libraries: the tracer's ring buffer, the engine sessions and the
// control socket feed one liburing event loop on one (optionally pinned) core; every
// scheduling point runs Admission::decide() and the grants go out at once.
//
//   job events  tracer ring fd   -> Admission::on_release / on_complete
//   engines     engine socket    -> hello/work/start/done/discard/bye
//   control     control socket   -> status | top | explain  (JSON)
//   timers      wait timeout     -> budget accrual (decide's wake_at), ring drain
//   SIGTERM     signalfd         -> Bye(shutdown) to every engine, BPF detached
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/admission/admission.h"
#include "agent/common/status.h"
#include "agent/config/config.h"
#include "agent/engine/protocol.h"
#include "agent/pricing/ledger.h"
#include "agent/tracer/tracer.h"

namespace ripple::daemon {

using admission::Nanos;

// A sample store for latency percentiles (last kCapacity samples).
class Samples {
 public:
  static constexpr std::size_t kCapacity = 1 << 16;
  void add(Nanos v);
  std::size_t count() const { return total_; }
  // Nearest-rank percentile over the retained samples; 0 when empty.
  Nanos percentile(double p) const;

 private:
  std::vector<Nanos> v_;
  std::size_t next_ = 0, total_ = 0;
};

// Per protected task, what status shows besides the estimator's own state.
struct TaskStats {
  std::uint64_t releases = 0, jobs = 0, misses = 0, unfinished = 0;
  // The current contract window (L = 100 s, App. C) and the one before it.
  std::int64_t window = -1;
  std::uint64_t window_jobs = 0, window_misses = 0, prev_window_jobs = 0, prev_window_misses = 0;
  pricing::Bytes last_allowance = 0;
  Nanos last_response = 0;
};

class Agent {
 public:
  // Builds everything from `cfg`: policy, ledger, admission, tracer (if any task is
  // configured), sockets. `cfg` was validated by config::load.
  static Result<std::unique_ptr<Agent>> create(config::Config cfg);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs the loop until SIGTERM/SIGINT (or stop()). Returns when the engines have been
  // told and the BPF programs detached.
  Status run();
  // Asks the loop to stop (from a signal handler: the loop also watches a signalfd).
  void stop();
  // Calls fn(now) from the event loop, first at its start and then about every `period`
  // (the systemd watchdog, the metrics file): a stalled loop stops calling it. Before run().
  void every(Nanos period, std::function<void(Nanos now)> fn);

  // Reports (the control socket answers with these).
  nlohmann::json status_json(Nanos now) const;
  nlohmann::json explain_json(Nanos now) const;

 private:
  struct Session;
  struct Impl;
  explicit Agent(config::Config cfg);

  config::Config cfg_;
  std::unique_ptr<Impl> impl_;
};

// ripple::monotonic_ns as the daemon's signed Nanos.
Nanos monotonic_now();

}  // namespace ripple::daemon
