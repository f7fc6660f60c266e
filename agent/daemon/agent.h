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
//
// This file is the wiring. The pieces it wires are libraries of their own, each with
// its unit test: event_loop.h (io_uring), engine_session.h (protocol messages ->
// admission calls), task_stats.h (job events -> admission calls, per-task counts),
// reports.h (status, explain), socket.h (the owned listening sockets), identity.h and
// limits.h (who may connect, how much).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/config/config.h"
#include "agent/daemon/event_loop.h"
#include "ripple/status.h"

namespace ripple::daemon {

using admission::Nanos;

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

}  // namespace ripple::daemon
