// The engine sessions: each decoded protocol message of an engine connection translated
// into admission calls (Hello -> add_engine, Work -> announce, Start/Done/Discard -> the
// grant's life, a closed session -> remove_engine), with the identity and access rules
// of Documentation/agent.md ("Engine identity and access") applied to the Hello. No
// sockets: replies go through an injected send, the peer's executable through an
// injected lookup, so tests/unit/agent_engine_session_test.cc drives it directly.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "agent/admission/admission.h"
#include "agent/config/config.h"
#include "agent/daemon/identity.h"
#include "agent/daemon/limits.h"
#include "ripple/protocol.h"

namespace ripple::daemon {

using admission::EngineId;
using admission::Nanos;

// A repeated warning is said at most this often (limits.h, Throttle).
inline constexpr Nanos kSayEvery = 5LL * 1'000'000'000;

// One engine connection's protocol state.
struct EngineSession {
  bool welcomed = false;
  bool refused = false;  // its Hello was refused (Bye kRefused sent): not a protocol error
  EngineId engine = 0;
  std::string name;
  ucred cred{};  // from peer_identity(): pid, uid, gid at connect time
  PeerIdentity peer;
};

// Engines gone (disconnected, their grants settled): totals, for status.
struct GoneEngines {
  std::uint64_t count = 0, grants = 0, bytes = 0, works_done = 0;
};

// One engine process across its sessions. An interposer renews its session when its
// catalog or chunk size changes, and each session is a fresh engine entry in admission
// whose counters start at zero; but the counters belong to the engine, not the socket.
// A process is its name, its pid and the pid's start time (a reused pid starts afresh).
struct EngineProcess {
  std::string name;
  pid_t pid = 0;
  std::uint64_t start_time = 0;  // /proc/PID/stat starttime; 0 where unknown
  std::uint64_t sessions = 0;    // welcomed sessions so far, open ones included
  std::uint64_t open = 0;        // of which still connected
  admission::EngineStats closed;  // summed over its closed sessions
  Nanos last_closed = 0;
};

// An engine entry's place in its process: the process's counters over every session up
// to this one, this one included (for a gone entry: as they were when it closed).
struct EngineTotals {
  pid_t pid = 0;
  std::uint64_t session = 0;  // this entry is the process's session-th session (1-based)
  admission::EngineStats stats;
};

class EngineSessions {
 public:
  using Send = std::function<bool(const engine::Message&)>;
  using ExeOf = std::function<std::optional<std::pair<dev_t, ino_t>>(pid_t)>;
  using StartOf = std::function<std::optional<std::uint64_t>(pid_t)>;

  // Engine processes remembered once none of their sessions is connected (oldest out).
  static constexpr std::size_t kProcessesKept = 64;

  // `cfg` and `adm` outlive it; `exe_of` reads a peer's executable (exe_identity),
  // `start_of` its start time (process_start_time).
  EngineSessions(const config::Config& cfg, admission::Admission& adm, ExeOf exe_of = exe_identity,
                 StartOf start_of = process_start_time);

  struct Outcome {
    std::string close;      // non-empty: close the session, for this reason
    bool point = false;     // a scheduling point: run decide()
  };
  // One message of session `id`, received at `now`; replies (Welcome, a refusal's Bye)
  // go out through `send`.
  Outcome handle(std::uint64_t id, EngineSession& s, const engine::Message& msg, Nanos now, const Send& send);
  // The session ends: a welcomed engine is removed (its outstanding grants stay charged)
  // and counted as gone. True when that is a scheduling point.
  bool close(const EngineSession& s, Nanos now);

  std::uint64_t hellos_refused() const { return hellos_refused_; }
  const Throttle& identity_refused() const { return identity_refused_; }
  const Throttle& unconfigured_refused() const { return unconfigured_refused_; }
  const Throttle& works_refused() const { return works_refused_; }
  std::uint64_t unconfigured_admitted() const { return unconfigured_admitted_; }
  std::uint64_t deadline_claims_downgraded() const { return deadline_claims_downgraded_; }
  const GoneEngines& gone() const { return gone_; }
  // The counters of engine entry `id`'s process over its sessions so far (this one
  // included), or nothing for an entry no session of this object made.
  std::optional<EngineTotals> totals(EngineId id) const;

 private:
  Outcome hello(std::uint64_t id, EngineSession& s, const engine::Hello& h, Nanos now, const Send& send);
  std::string refuse_hello(Throttle& t, std::uint64_t id, EngineSession& s, const std::string& why, Nanos now,
                           const Send& send);

  const config::Config& cfg_;
  admission::Admission& adm_;
  ExeOf exe_of_;
  std::uint64_t hellos_refused_ = 0;
  Throttle identity_refused_{kSayEvery}, unconfigured_refused_{kSayEvery}, works_refused_{kSayEvery};
  // Unconfigured engines admitted as best-effort, and those among them that declared
  // deadline-bound (agent.unconfigured_engines = "best-effort"): said once, counted.
  std::uint64_t unconfigured_admitted_ = 0, deadline_claims_downgraded_ = 0;
  bool said_unconfigured_ = false;
  GoneEngines gone_;
  struct Origin {
    std::uint64_t process;          // key of processes_
    pid_t pid;
    std::uint64_t session;          // its ordinal in the process
    admission::EngineStats before;  // the process's closed sessions when it began
  };
  void joined(EngineId id, const EngineSession& s);
  void left(EngineId id, const admission::EngineStats& stats, Nanos now);

  StartOf start_of_;
  std::map<std::uint64_t, EngineProcess> processes_;  // by a serial: the order they came
  std::uint64_t next_process_ = 0;
  std::map<EngineId, Origin> origins_;  // the entries admission still keeps
};

}  // namespace ripple::daemon
