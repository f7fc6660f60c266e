// ripple-agent's configuration: one TOML file (default /etc/ripple/ripple.toml).
//
//   [agent]      core, policy, fail_mode, engine_socket, control_socket, allowed_uids,
//                allowed_gids, log_level, pin_dir, tracer_wakeup, poll_us, spin_us,
//                lease_ms, horizon_ms, gamma, pipelining, queued_durations
//   [pricing]    the pricing core's parameters (agent/pricing/config.h)
//   [sereno]     target, kp, ki, max_pause_steps (the sereno baseline's PI controller)
//   [[task]]     a protected task: name; exactly one of exe / pid / comm; mode
//                ("period-wait" | "uprobe"), wait, release_symbol, complete_symbol;
//                period_ms (or min_interarrival_ms); deadline_ms or deadline = "K x p99"
//                (K times the p99 of the solo profile); miss_tolerance (eps);
//                solo_ms = [...] or profile = "FILE" (job durations in ms, one a line);
//                prior_slope_ms_per_gb
//   [[engine]]   name, kind ("best-effort" | "deadline-bound"), period_ms, deadline_ms
//
// Every error names the file, the line, the key and the reason, and a file with any
// error is refused whole.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "agent/admission/admission.h"
#include "agent/common/status.h"
#include "agent/engine/protocol.h"
#include "agent/policy/baselines.h"
#include "agent/pricing/params.h"
#include "agent/tracer/tracer.h"

namespace ripple::config {

inline constexpr const char* kDefaultPath = "/etc/ripple/ripple.toml";
inline constexpr const char* kDefaultControlSocket = "/run/ripple/control.sock";

struct AgentSection {
  int core = -1;  // -1: leave affinity alone
  std::string policy = "ripple";
  engine::FailMode fail_mode = engine::FailMode::kOpen;
  std::string engine_socket = engine::kDefaultSocket;
  std::string control_socket = kDefaultControlSocket;
  std::vector<uid_t> allowed_uids;  // empty: root and the agent's own uid
  std::vector<gid_t> allowed_gids;
  std::string log_level = "info";
  std::string pin_dir = "/sys/fs/bpf/ripple";
  // false: the tracer does not wake the agent per event (cheaper for the PTs); the
  // loop drains the ring every poll_us instead.
  bool tracer_wakeup = false;
  admission::Nanos poll = 1 * admission::kNsPerMs;
  // After handling events the loop busy-polls its completion queue this long before
  // sleeping (0: never): an engine's next message (start, done, work) usually follows
  // within microseconds, and a sleep costs a wake-up on each. Meant for a pinned core.
  admission::Nanos spin = 0;
  admission::Options admission;
  // Prometheus node_exporter textfile (agent/daemon/metrics.h), rewritten every
  // metrics_interval; empty: off. agent.metrics_file, agent.metrics_interval_s.
  std::string metrics_file;
  admission::Nanos metrics_interval = 10'000 * admission::kNsPerMs;
};

struct TaskSection {
  tracer::PtSpec pt;
  pricing::TaskSpec spec;
};

struct EngineSection {
  std::string name;
  admission::EngineKind kind = admission::EngineKind::kBestEffort;
  admission::Nanos period = 0;
  admission::Nanos deadline = 0;
};

struct Config {
  std::string source;  // the file it came from
  AgentSection agent;
  pricing::Params pricing;
  policy::SerenoParams sereno;
  std::vector<TaskSection> tasks;
  std::vector<EngineSection> engines;

  const EngineSection* engine(std::string_view name) const;
};

// Parses `text` (named `source` in messages; relative profile paths resolve against
// `base_dir`).
Result<Config> parse(std::string_view text, const std::string& source, const std::string& base_dir = ".");
Result<Config> load(const std::string& path);

// Nearest-rank p99 of a profile (ns).
admission::Nanos profile_p99(std::vector<admission::Nanos> solo);

}  // namespace ripple::config
