// ripple-agent's configuration: one TOML file (default /etc/ripple/ripple.toml).
//
//   [agent]      core, policy, fail_mode, engine_socket, control_socket, allowed_uids,
//                allowed_gids, log_level, pin_dir, tracer_wakeup, poll_us, spin_us,
//                lease_ms, expire_slack_ms, horizon_ms, gamma, end_guard_quantile, pipelining,
//                queued_durations, early_end_carries, shared_link, link_by_deadline,
//                max_sessions, max_sessions_per_uid, hello_timeout_ms, max_queued_works,
//                unconfigured_engines
//   [pricing]    the pricing core's parameters (agent/pricing/config.h)
//   [sereno]     target, kp, ki, max_pause_steps (the sereno baseline's PI controller)
//   [[task]]     a protected task: name; exactly one of exe / pid / comm; mode
//                ("period-wait" | "uprobe"), wait, release_symbol, complete_symbol;
//                period_ms (or min_interarrival_ms); deadline_ms or deadline = "K x p99"
//                (K times the p99 of the solo profile); miss_tolerance (eps);
//                solo_ms = [...] or profile = "FILE" (job durations in ms, one a line);
//                prior_slope_ms_per_gb
//   [[engine]]   name, kind ("best-effort" | "deadline-bound"), period_ms, deadline_ms;
//                uid (a user name or uid) and exe (a path): who may claim the name
//
// Every error names the file, the line, the key and the reason, and a file with any
// error is refused whole. The file must be a regular file of at most kMaxFileBytes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/admission/admission.h"
#include "ripple/status.h"
#include "ripple/protocol.h"
#include "agent/policy/sereno.h"
#include "agent/pricing/params.h"
#include "agent/tracer/spec.h"

namespace ripple::config {

inline constexpr const char* kDefaultPath = "/etc/ripple/ripple.toml";
inline constexpr const char* kDefaultControlSocket = "/run/ripple/control.sock";
inline constexpr std::size_t kMaxFileBytes = 1 << 20;
// The largest pid Linux hands out (PID_MAX_LIMIT on 64-bit).
inline constexpr std::int64_t kMaxPid = 4 * 1024 * 1024;

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
  // Engine sessions open at once (control sessions have their own few slots); more are
  // refused (told why, counted).
  // The agent lowers it below its RLIMIT_NOFILE at start.
  int max_sessions = 512;
  // Engine sessions one peer uid may hold at once; more from that uid are refused (told
  // why, counted). Each session may queue max_queued_works works of 4,096 units, so
  // without it one allowed uid could fill max_sessions of them (~2 GiB of the agent).
  int max_sessions_per_uid = 16;
  // A session that sends no Hello (engine) or no request (control) this long is closed.
  admission::Nanos hello_timeout = 5'000 * admission::kNsPerMs;
  // Works an engine may have announced and not yet been granted in full; one more is a
  // protocol error (Bye with the reason).
  int max_queued_works = 256;
  // Prometheus node_exporter textfile (agent/daemon/metrics.h), rewritten every
  // metrics_interval; empty: off. agent.metrics_file, agent.metrics_interval_s.
  std::string metrics_file;
  admission::Nanos metrics_interval = 10'000 * admission::kNsPerMs;
  // The admission trace as JSON lines (agent/daemon/trace_file.h), created at start;
  // empty: off. agent.trace_file.
  std::string trace_file;
  // An engine whose name no [[engine]] section names: admitted as best-effort whatever
  // it declares (false), or refused (true). agent.unconfigured_engines.
  bool refuse_unconfigured = false;
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
  // Who may claim this name: a peer of another uid, or running another executable
  // (compared by device and inode of /proc/PID/exe), is refused. Unset: any allowed peer.
  std::optional<uid_t> uid;
  std::string exe;
};

struct Config {
  std::string source;  // the file it came from
  AgentSection agent;
  pricing::Params pricing;
  policy::SerenoParams sereno;
  std::vector<TaskSection> tasks;
  std::vector<EngineSection> engines;
  // "FILE:LINE" of a key or table ("agent.core", "task[0]"), for checks made after parsing.
  std::map<std::string, std::string> where;

  const EngineSection* engine(std::string_view name) const;
  // Where `key` was set ("FILE:LINE: "), or the file's name when it was not.
  std::string at(const std::string& key) const;
};

// Parses `text` (named `source` in messages; relative profile paths resolve against
// `base_dir`).
Result<Config> parse(std::string_view text, const std::string& source, const std::string& base_dir = ".");
// Reads a regular file of at most kMaxFileBytes and parses it.
Result<Config> load(const std::string& path);

// What the start would refuse on this machine, checked without starting: every task's
// spec (tracer::validate_spec: the pid exists, the exe is ELF, uprobe symbols resolve),
// one executable per task, agent.core usable here, socket paths that fit and whose
// directory can be made, the two sockets apart, pin_dir on a bpffs. `--check` and the
// start both run it, so they refuse the same files with the same file:line message.
Status preflight(const Config& c);

// Whether `level` is one of debug, info, warn, error, off.
bool is_log_level(std::string_view level);

// Nearest-rank p99 of a profile (ns).
admission::Nanos profile_p99(std::vector<admission::Nanos> solo);

}  // namespace ripple::config
