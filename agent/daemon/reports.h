// What the control socket answers (`ripplectl status | top | explain`, and the metrics
// of metrics.h, which are rendered from status): pure functions of the agent's state,
// gathered into a StatusInputs by the agent. No sockets, no tracer: what the tracer
// says comes in as TracerFacts. tests/unit/agent_reports_test.cc checks the replies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "agent/admission/admission.h"
#include "agent/daemon/engine_session.h"
#include "agent/daemon/task_stats.h"
#include "ripple/bpf/tracer.h"

namespace ripple::daemon {

// Engines listed in a status reply: a reply must fit one datagram however many engines
// have come and gone.
inline constexpr std::size_t kStatusEngines = 64;

// A sample store for latency percentiles (the last kCapacity samples).
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

// What the tracer says, per task (index = task), read by the agent for one reply.
struct TracerFacts {
  bool attached = false;
  std::uint64_t drops = 0;
  std::vector<std::optional<ripple_pt_stats>> stats;
  std::vector<std::size_t> threads;
};

// The connection-level counters of the agent: sessions, limits, refusals at accept.
struct SessionCounters {
  std::uint64_t grants_sent = 0, protocol_errors = 0;
  std::uint64_t sessions_refused = 0;  // at accept (the Hello refusals are the engines')
  std::size_t engine_sessions = 0, control_sessions = 0;
  int max_sessions = 0;  // agent.max_sessions, lowered below RLIMIT_NOFILE
  int max_sessions_per_uid = 0;  // agent.max_sessions_per_uid
  // Each hit is counted and said at most every kSayEvery.
  Throttle refused{kSayEvery}, no_credentials{kSayEvery}, over_limit{kSayEvery}, uid_over_limit{kSayEvery},
      accept_failed{kSayEvery}, hello_timeouts{kSayEvery};
};

struct StatusInputs {
  const config::Config& cfg;
  Nanos started;
  const admission::Admission& adm;
  const TaskStatistics& tasks;
  const EngineSessions& engines;
  const Samples& decision_latency;
  const TracerFacts& tracer;
  const std::vector<std::string>& untraced;  // per task: why it is no longer traced ("" if it is)
  const SessionCounters& sessions;
};

// `status` and `top`: the policy, budget, decision latency, tracer, counters, limits,
// every task and (at most kStatusEngines) engines.
nlohmann::json status_json(const StatusInputs& in, Nanos now);
// `explain`: the active jobs and their budgets, the binding job, why each engine waits.
nlohmann::json explain_json(std::string_view policy, const admission::Admission& adm, Nanos now);

}  // namespace ripple::daemon
