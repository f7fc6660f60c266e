#include "agent/daemon/agent.h"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "agent/daemon/engine_session.h"
#include "agent/daemon/event_loop.h"
#include "agent/daemon/identity.h"
#include "agent/daemon/limits.h"
#include "agent/daemon/reports.h"
#include "agent/daemon/socket.h"
#include "agent/daemon/task_stats.h"
#include "agent/daemon/trace_file.h"
#include "agent/pricing/chunk.h"
#include "agent/policy/registry.h"
#include "ripple/log.h"

namespace ripple::daemon {

using admission::kNever;
using nlohmann::json;

namespace {

constexpr Nanos kJobSweep = 100LL * 1'000'000;       // held jobs checked against the kernel
constexpr Nanos kAcceptBackoff = 100LL * 1'000'000;  // accept paused this long on EMFILE/ENFILE
constexpr Nanos kPidCheck = 1LL * 1'000'000'000;     // pid-matched tasks checked for exit
constexpr int kReservedFds = 64;  // descriptors kept for the agent's own (BPF, io_uring, ...)
// Control sessions have their own few slots: engines filling agent.max_sessions must
// not lock out the monitoring that would show it.
constexpr std::size_t kControlSessions = 16;
constexpr unsigned kRingEntries = 256;

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }

// What a peer sent, for a reply or a log line: printable ASCII kept, every other byte
// as \xNN, at most `max` bytes of the input (a cut never splits a character of the output).
std::string printable(std::string_view in, std::size_t max) {
  std::string out;
  for (unsigned char c : in.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

}  // namespace

// A connection: its socket, and for an engine its protocol state (engine_session.h).
struct Agent::Session : EngineSession {
  UniqueFd fd;
  bool control = false;
  bool spoke = false;  // a control session sent a request
  Nanos opened = 0;
};

// The wiring: the libraries' state, the sockets and the loop. Each method is one kind of
// event; run() dispatches to them by tag.
struct Agent::Impl {
  Impl(const config::Config& c, Agent& a) : cfg(c), agent(a), ledger(c.pricing) {}

  const config::Config& cfg;
  Agent& agent;
  pricing::Ledger ledger;
  std::unique_ptr<admission::Admission> adm;
  std::unique_ptr<TaskStatistics> tasks;
  std::unique_ptr<EngineSessions> engines;
  std::unique_ptr<tracer::Tracer> tracer;
  std::unique_ptr<EventLoop> loop;
  UniqueFd sigfd = make_fd(-1), engine_listen = make_fd(-1), control_listen = make_fd(-1);
  UniqueFd engine_lock = make_fd(-1), control_lock = make_fd(-1);  // held for life: the paths are ours
  std::vector<std::string> owned_paths;  // unlinked at exit, and only these
  std::map<std::uint64_t, Session> sessions;
  std::map<EngineId, std::uint64_t> session_of_engine;
  std::map<uid_t, std::size_t> engine_sessions_of_uid;  // open engine sessions per peer uid
  std::uint64_t next_session = 1;
  bool stopping = false;
  bool dirty = false;           // a scheduling point happened: run decide()
  Nanos point = kNever;         // when the first scheduling point of the batch was seen
  Nanos wake_at = kNever;       // decide()'s budget-accrual time
  Nanos next_drain = 0;         // ring drain when the tracer does not wake us
  Nanos started = 0;
  Samples decision_latency;     // scheduling point -> grant sent
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(engine::kMaxMessageBytes);
  std::vector<std::uint8_t> out;
  SessionCounters counters;     // grants, protocol errors, sessions and limits (status)
  Nanos next_sweep = 0;
  std::vector<std::uint64_t> uid_refused;  // per task, as last logged
  Nanos accept_paused_until = 0;           // EMFILE/ENFILE: listeners re-armed then
  bool engine_listen_paused = false, control_listen_paused = false;
  Nanos next_hello_check = kNever;         // the earliest hello_timeout of a session
  // Pid-matched tasks: the process's start time, so a pid reused by another process
  // is not taken for the task; untraced[k] says why task k is no longer traced.
  std::vector<std::optional<std::uint64_t>> pid_start;
  std::vector<std::string> untraced;
  Nanos next_pid_check = 0;
  struct Periodic {
    Nanos period = 0, next = 0;
    std::function<void(Nanos)> fn;
  };
  std::vector<Periodic> periodic;  // every(): watchdog, metrics, trace
  std::optional<TraceFile> trace;  // agent.trace_file

  void mark_point(Nanos now) {
    dirty = true;
    if (point == kNever) point = now;
  }
  bool send_msg(Session& s, const engine::Message& msg);
  void close_session(std::uint64_t id, const std::string& why, bool tell);
  void schedule();
  void read_engine(std::uint64_t id);
  void read_control(std::uint64_t id);
  void refuse(Session& s, const std::string& why);
  void accept_all(int lfd, bool control);
  void close_silent_sessions(Nanos now);
  void check_pids();
  void drain_tracer();
  void sweep_jobs(Nanos now);
  void on_completion(const EventLoop::Completion& c);
  Nanos next_timer(bool drain_by_timer, bool pid_tasks) const;
  StatusInputs status_inputs(TracerFacts& facts) const;
};

Agent::Agent(config::Config cfg) : cfg_(std::move(cfg)), impl_(std::make_unique<Impl>(cfg_, *this)) {}

Agent::~Agent() {
  if (!impl_) return;
  if (impl_->adm) impl_->adm->set_trace({});
  impl_->trace.reset();  // writes what is buffered
  impl_->loop.reset();
  for (const std::string& p : impl_->owned_paths) ::unlink(p.c_str());  // before the locks go
}

void Agent::stop() { impl_->stopping = true; }

void Agent::every(Nanos period, std::function<void(Nanos)> fn) {
  impl_->periodic.push_back({period, 0, std::move(fn)});
}

Result<std::unique_ptr<Agent>> Agent::create(config::Config cfg) {
  std::unique_ptr<Agent> a(new Agent(std::move(cfg)));
  Impl& m = *a->impl_;
  const config::Config& c = a->cfg_;
  auto pol = policy::make_policy(c.agent.policy, &c.sereno);
  if (!pol) return pol.error();
  for (const auto& t : c.tasks) m.ledger.add_task(t.spec);
  m.untraced.resize(c.tasks.size());
  for (const auto& t : c.tasks)
    m.pid_start.push_back(t.pt.match == tracer::MatchKind::kPid ? process_start_time(t.pt.pid) : std::nullopt);
  // Sessions must run out before descriptors do: at EMFILE nothing can be accepted, not
  // even a control session to see why.
  m.counters.max_sessions_per_uid = c.agent.max_sessions_per_uid;
  int& max_sessions = m.counters.max_sessions;
  max_sessions = c.agent.max_sessions;
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(max_sessions + kReservedFds + kControlSessions) > rl.rlim_cur) {
    max_sessions = std::max(1, static_cast<int>(rl.rlim_cur) - kReservedFds - static_cast<int>(kControlSessions));
    RIPPLE_LOG_WARN("agent.max_sessions {} lowered to {}: RLIMIT_NOFILE is {} and the agent keeps {} for itself",
                    c.agent.max_sessions, max_sessions, rl.rlim_cur, kReservedFds);
  }
  m.adm = std::make_unique<admission::Admission>(m.ledger, std::move(*pol), c.agent.admission);
  m.engines = std::make_unique<EngineSessions>(c, *m.adm);
  if (!c.agent.trace_file.empty()) {
    auto tf = TraceFile::open(c.agent.trace_file);
    if (!tf) return tf.error();
    m.trace.emplace(std::move(*tf));
    m.adm->set_trace([&m](const admission::TraceRecord& r) {
      std::string_view name;
      if (r.kind == admission::TraceKind::kRelease || r.kind == admission::TraceKind::kComplete) {
        if (r.who < m.ledger.task_count()) name = m.ledger.task(r.who).spec().name;
      } else if (const admission::EngineState* e = m.adm->engine(r.who)) {
        name = e->spec.name;
      }
      m.trace->add(r, name);
    });
    a->every(pricing::kNsPerSec, [&m](Nanos) { m.trace->flush(); });
  }

  if (c.agent.core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c.agent.core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
      return make_errno_error(-errno, "agent.core: failed to pin to CPU {}: {}", c.agent.core, std::strerror(errno));
  }

  // Signals arrive through a signalfd in the loop.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  m.sigfd = make_fd(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
  if (*m.sigfd < 0) return make_errno_error(-errno, "failed to create signalfd: {}", std::strerror(errno));

  if (c.agent.engine_socket == c.agent.control_socket)
    return make_error("agent.control_socket: the same path as agent.engine_socket ({})", c.agent.engine_socket);
  auto el = listen_seqpacket(c.agent.engine_socket);
  if (!el) return make_error("agent.engine_socket: {}", el.error().message);
  m.engine_listen = std::move(el->fd);
  m.engine_lock = std::move(el->lock);
  m.owned_paths.push_back(c.agent.engine_socket);
  auto cl = listen_seqpacket(c.agent.control_socket);
  if (!cl) return make_error("agent.control_socket: {}", cl.error().message);
  m.control_listen = std::move(cl->fd);
  m.control_lock = std::move(cl->lock);
  m.owned_paths.push_back(c.agent.control_socket);

  if (!c.tasks.empty()) {
    tracer::Options topts;
    for (const auto& t : c.tasks) topts.pts.push_back(t.pt);
    topts.pin_dir = c.agent.pin_dir;
    topts.wakeup_consumer = c.agent.tracer_wakeup;
    auto tr = tracer::Tracer::create(std::move(topts), [&m](const tracer::JobEvent& ev) {
      const Nanos now = monotonic_now();
      if (m.tasks->on_event(ev, now)) m.mark_point(now);
    });
    if (!tr) return make_error("tracer: {}", tr.error().message);
    m.tracer = std::move(*tr);
  }

  auto loop = EventLoop::create(kRingEntries, c.agent.spin);
  if (!loop) return loop.error();
  m.loop = std::move(*loop);
  m.started = monotonic_now();
  m.tasks = std::make_unique<TaskStatistics>(*m.adm, c.tasks.size(), m.started);
  RIPPLE_LOG_INFO("ripple-agent: policy {}, {} task(s), engines on {}, control on {}{}", c.agent.policy,
                  c.tasks.size(), c.agent.engine_socket, c.agent.control_socket,
                  c.agent.core >= 0 ? fmt::format(", pinned to CPU {}", c.agent.core) : std::string());
  return a;
}

bool Agent::Impl::send_msg(Session& s, const engine::Message& msg) {
  if (!engine::encode(msg, out)) return false;
  return ::send(*s.fd, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(out.size());
}

void Agent::Impl::close_session(std::uint64_t id, const std::string& why, bool tell) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  Session& s = it->second;
  if (tell) send_msg(s, engine::ByeMsg{engine::ByeReason::kProtocol, why.substr(0, engine::kByeTextBytes - 1)});
  if (!s.control) {
    if (s.welcomed) {
      const Nanos now = monotonic_now();
      if (engines->close(s, now)) mark_point(now);
      session_of_engine.erase(s.engine);
      // Sessions that never said hello are said by their cause (malformed, timed out).
      RIPPLE_LOG_INFO("engine session {} ({}, pid {}) closed: {}", id, s.name, s.cred.pid, why);
    }
  }
  loop->cancel(user_data(s.control ? Tag::kControl : Tag::kEngine, id));
  --(s.control ? counters.control_sessions : counters.engine_sessions);
  if (!s.control) {
    auto u = engine_sessions_of_uid.find(s.cred.uid);
    if (u != engine_sessions_of_uid.end() && --u->second == 0) engine_sessions_of_uid.erase(u);
  }
  sessions.erase(it);
}

void Agent::Impl::schedule() {
  const Nanos now = monotonic_now();
  const Nanos from = point == kNever ? now : point;
  admission::Decision d = adm->decide(now);
  wake_at = d.wake_at;
  for (const admission::GrantPlan& g : d.grants) {
    auto sid = session_of_engine.find(g.engine);
    if (sid == session_of_engine.end()) continue;
    Session& s = sessions.at(sid->second);
    const Nanos sent = monotonic_now();
    engine::GrantMsg msg{g.id, g.work, g.first, g.count, static_cast<std::uint64_t>(g.bytes),
                         static_cast<std::uint64_t>(g.start_by), static_cast<std::uint64_t>(sent), g.successor,
                         static_cast<std::uint64_t>(g.not_before)};
    msg.chunk_bytes = static_cast<std::uint64_t>(pricing::suggest_chunk_bytes(ledger));
    if (!send_msg(s, msg)) {
      close_session(sid->second, fmt::format("failed to deliver grant: {}", std::strerror(errno)), false);
      continue;
    }
    ++counters.grants_sent;
    (void)adm->on_sent(g.engine, g.id, sent);
    decision_latency.add(monotonic_now() - from);
  }
  dirty = false;
  point = kNever;
}

void Agent::Impl::read_engine(std::uint64_t id) {
  for (;;) {
    auto it = sessions.find(id);
    if (it == sessions.end()) return;
    Session& s = it->second;
    ssize_t n = ::recv(*s.fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      close_session(id, fmt::format("receive failed: {}", std::strerror(errno)), false);
      return;
    }
    if (n == 0) {
      close_session(id, "disconnected", false);
      return;
    }
    const Nanos now = monotonic_now();
    if (static_cast<std::size_t>(n) > buf.size()) {
      ++counters.protocol_errors;
      close_session(id, fmt::format("message of {} bytes exceeds {}", n, buf.size()), true);
      return;
    }
    auto msg = engine::decode(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
    if (!msg) {
      ++counters.protocol_errors;
      RIPPLE_LOG_WARN("engine session {} ({}): malformed message: {}", id, s.name, msg.error().message);
      close_session(id, "malformed message: " + msg.error().message, true);
      return;
    }
    const bool bye = std::holds_alternative<engine::ByeMsg>(*msg);
    const auto r = engines->handle(id, s, *msg, now, [&](const engine::Message& m) { return send_msg(s, m); });
    if (s.welcomed) session_of_engine[s.engine] = id;
    if (r.point) mark_point(now);
    if (!r.close.empty()) {
      const bool told = bye || s.refused;  // a refused Hello was told why, counted and said
      if (!told) {
        ++counters.protocol_errors;
        RIPPLE_LOG_WARN("engine session {} ({}): {}", id, s.name, r.close);
      }
      close_session(id, r.close, !told);
      if (dirty) schedule();
      return;
    }
    // Decide before the next receive: one message is one scheduling point, and the
    // grant should not wait for the receive that finds the socket empty.
    if (dirty) schedule();
  }
  auto it = sessions.find(id);
  if (it != sessions.end()) loop->arm(*it->second.fd, user_data(Tag::kEngine, id));
}

void Agent::Impl::read_control(std::uint64_t id) {
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  Session& s = it->second;
  for (;;) {
    ssize_t n = ::recv(*s.fd, buf.data(), 256, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      close_session(id, "control client left", false);
      return;
    }
    const std::string cmd(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
    const Nanos now = monotonic_now();
    s.spoke = true;
    json reply;
    if (cmd == "status" || cmd == "top") reply = agent.status_json(now);
    else if (cmd == "explain") reply = agent.explain_json(now);
    else reply = json{{"error", fmt::format("unknown command '{}' (status, top, explain)", printable(cmd, 32))}};
    // Invalid UTF-8 (an engine's name is bytes the peer chose) is replaced, never thrown:
    // an exception here ended the agent, and every engine and task with it.
    const std::string text = reply.dump(-1, ' ', false, json::error_handler_t::replace);
    if (::send(*s.fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
      RIPPLE_LOG_WARN("control session {} (pid {}): reply of {} bytes to '{}' failed: {}", id, s.cred.pid,
                      text.size(), printable(cmd, 32), std::strerror(errno));
      close_session(id, "control reply failed", false);
      return;
    }
  }
  loop->arm(*s.fd, user_data(Tag::kControl, id));
}

// Refuses a connection and tells the peer why. What it sent (its Hello, a control
// request) is read first: closed with it unread, the connection is reset and the peer
// sees ECONNRESET instead of the reason.
void Agent::Impl::refuse(Session& s, const std::string& why) {
  for (int k = 0; k < 4 && ::recv(*s.fd, buf.data(), buf.size(), MSG_DONTWAIT) > 0; ++k) {
  }
  if (s.control) {
    const std::string text = json{{"error", "ripple-agent refused the connection: " + why}}.dump(
        -1, ' ', false, json::error_handler_t::replace);
    (void)::send(*s.fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } else {
    send_msg(s, engine::ByeMsg{engine::ByeReason::kRefused, why.substr(0, engine::kByeTextBytes - 1)});
  }
}

void Agent::Impl::accept_all(int lfd, bool control) {
  const Nanos now = monotonic_now();
  for (;;) {
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      // Out of descriptors (EMFILE, ENFILE) or memory: the connection stays in the
      // backlog, and a re-armed poll would fire again at once (a 100 % CPU spin).
      // Leave this listener unarmed for kAcceptBackoff.
      const int err = errno;
      if (counters.accept_failed.note(now))
        RIPPLE_LOG_WARN("cannot accept {} connections: {} ({} session(s) open, agent.max_sessions {}); "
                        "retrying every {} ms ({} more failures since last said)",
                        control ? "control" : "engine", std::strerror(err), sessions.size(), counters.max_sessions,
                        kAcceptBackoff / 1'000'000, counters.accept_failed.suppressed());
      (control ? control_listen_paused : engine_listen_paused) = true;
      accept_paused_until = now + kAcceptBackoff;
      return;
    }
    Session s;
    s.fd = make_fd(fd);
    s.control = control;
    s.opened = now;
    // A peer the kernel cannot identify is refused: a failed lookup must not read as
    // uid 0 (the zeroed ucred).
    auto peer = peer_identity(fd);
    if (!peer) {
      ++counters.sessions_refused;
      if (counters.no_credentials.note(now))
        RIPPLE_LOG_WARN("refused {} connection: cannot identify the peer: {} ({} more refused since last said)",
                        control ? "control" : "engine", peer.error().message, counters.no_credentials.suppressed());
      refuse(s, "cannot identify the peer: " + peer.error().message);
      continue;
    }
    s.peer = std::move(*peer);
    s.cred = ucred{s.peer.pid, s.peer.uid, s.peer.gid};
    // Peer credentials against the allowed uids/gids, supplementary groups included
    // (root and the agent's own uid by default).
    if (!peer_allowed(s.peer, cfg.agent, ::geteuid())) {
      ++counters.sessions_refused;
      // Said once per kSayEvery: a flood of refused connections must not become a
      // flood of log lines.
      if (counters.refused.note(now))
        RIPPLE_LOG_WARN("refused {} connection from pid {} uid {} gid {}: not in allowed_uids/allowed_gids "
                        "({} more refused since last said)",
                        control ? "control" : "engine", s.cred.pid, s.cred.uid, s.cred.gid, counters.refused.suppressed());
      refuse(s, fmt::format("uid {} gid {} is not in allowed_uids/allowed_gids", s.cred.uid, s.cred.gid));
      continue;
    }
    const std::size_t open = control ? counters.control_sessions : counters.engine_sessions;
    const std::size_t limit = control ? kControlSessions : static_cast<std::size_t>(counters.max_sessions);
    if (open >= limit) {
      if (counters.over_limit.note(now))
        RIPPLE_LOG_WARN("refused {} connection from pid {} uid {}: {} {} sessions open, the limit{} "
                        "({} more refused since last said)",
                        control ? "control" : "engine", s.cred.pid, s.cred.uid, open, control ? "control" : "engine",
                        control ? "" : " (agent.max_sessions)", counters.over_limit.suppressed());
      refuse(s, fmt::format("too many {} sessions ({})", control ? "control" : "engine", limit));
      continue;
    }
    // One uid must not fill the agent with sessions (each may queue max_queued_works
    // works): its own ones are counted from accept to close, said or not said hello.
    if (!control) {
      std::size_t& mine = engine_sessions_of_uid[s.cred.uid];  // >= 1 wherever it refuses
      const auto per_uid = static_cast<std::size_t>(counters.max_sessions_per_uid);
      if (mine >= per_uid) {
        if (counters.uid_over_limit.note(now))
          RIPPLE_LOG_WARN("refused engine connection from pid {} uid {}: uid {} holds {} engine sessions, the "
                          "limit (agent.max_sessions_per_uid) ({} more refused since last said)",
                          s.cred.pid, s.cred.uid, s.cred.uid, mine, counters.uid_over_limit.suppressed());
        refuse(s, fmt::format("too many engine sessions for uid {} ({}, agent.max_sessions_per_uid)", s.cred.uid,
                              per_uid));
        continue;
      }
      ++mine;
    }
    ++(control ? counters.control_sessions : counters.engine_sessions);
    if (control) {
      int sz = 1 << 20;
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    }
    const std::uint64_t id = next_session++;
    loop->arm(fd, user_data(control ? Tag::kControl : Tag::kEngine, id));
    sessions.emplace(id, std::move(s));
    next_hello_check = std::min(next_hello_check, now + cfg.agent.hello_timeout);
  }
  loop->arm(lfd, user_data(control ? Tag::kControlListen : Tag::kEngineListen));
}

// A session that never says hello (or, on the control socket, never asks) holds a
// descriptor and a session slot for nothing: closed after agent.hello_timeout_ms.
void Agent::Impl::close_silent_sessions(Nanos now) {
  Nanos next = kNever;
  std::vector<std::uint64_t> late;
  for (const auto& [id, s] : sessions) {
    if (s.welcomed || s.spoke) continue;
    const Nanos due = s.opened + cfg.agent.hello_timeout;
    if (due <= now) late.push_back(id);
    else next = std::min(next, due);
  }
  for (std::uint64_t id : late) {
    const Session& s = sessions.at(id);
    const std::string why =
        fmt::format("no {} within {} ms", s.control ? "request" : "hello", ms(cfg.agent.hello_timeout));
    if (counters.hello_timeouts.note(now))
      RIPPLE_LOG_WARN("{} session {} (pid {} uid {}): {}: closed ({} more since last said)",
                      s.control ? "control" : "engine", id, s.cred.pid, s.cred.uid, why, counters.hello_timeouts.suppressed());
    close_session(id, why, !s.control);
  }
  next_hello_check = next;
}

// A pid-matched task is traced by that pid only: once the process is gone (or the pid
// names another process) the task is no longer protected. Said, and shown in status.
void Agent::Impl::check_pids() {
  for (std::size_t k = 0; k < cfg.tasks.size(); ++k) {
    const tracer::PtSpec& pt = cfg.tasks[k].pt;
    if (pt.match != tracer::MatchKind::kPid || !untraced[k].empty()) continue;
    const auto start = process_start_time(pt.pid);
    if (start && start == pid_start[k]) continue;
    untraced[k] = fmt::format("pid {} {}; a pid match does not follow a restart (match by exe or comm)", pt.pid,
                              start ? "now names another process" : "has exited");
    RIPPLE_LOG_WARN("task {}: not traced any more: {}", cfg.tasks[k].spec.name, untraced[k]);
  }
}

void Agent::Impl::drain_tracer() {
  if (!tracer) return;
  if (auto r = tracer->consume(); !r) RIPPLE_LOG_WARN("tracer: {}", r.error().message);
  if (dirty) schedule();
}

// Every held job must still be open in the kernel (TaskStatistics::sweep says how a
// lost one is closed); the ring is drained first so that no event is taken for lost.
void Agent::Impl::sweep_jobs(Nanos now) {
  if (!tracer) return;
  drain_tracer();
  // Threads that matched a task by name or file but ran as another user: said once
  // per rise (a task configured for the wrong user would otherwise see no jobs).
  uid_refused.resize(tasks->size(), 0);
  for (std::uint32_t k = 0; k < tasks->size(); ++k) {
    const auto st = tracer->stats(k);
    if (!st || st->uid_refused <= uid_refused[k]) continue;
    RIPPLE_LOG_WARN("task {}: {} thread(s) matched by exe/comm but ran as another user than task.user: "
                    "not traced (set task.user if the task runs as that user)",
                    ledger.task(k).spec().name, st->uid_refused - uid_refused[k]);
    uid_refused[k] = st->uid_refused;
  }
  if (tasks->sweep(now, [this](pid_t tid, std::uint64_t seq) { return tracer->job_open(tid, seq); }))
    mark_point(now);
  if (dirty) schedule();
}


void Agent::Impl::on_completion(const EventLoop::Completion& c) {
  switch (tag_of(c.user_data)) {
    case Tag::kSignal: {
      signalfd_siginfo si{};
      while (::read(*sigfd, &si, sizeof si) == sizeof si)
        RIPPLE_LOG_INFO("ripple-agent: signal {} received, stopping", si.ssi_signo);
      stopping = true;
      break;
    }
    case Tag::kRing:
      drain_tracer();
      loop->arm(tracer->ring_fd(), user_data(Tag::kRing));
      break;
    case Tag::kEngineListen: accept_all(*engine_listen, false); break;
    case Tag::kControlListen: accept_all(*control_listen, true); break;
    case Tag::kEngine:
      if (c.res == -ECANCELED) break;
      read_engine(id_of(c.user_data));
      break;
    case Tag::kControl:
      if (c.res == -ECANCELED) break;
      read_control(id_of(c.user_data));
      break;
  }
}

// The earliest of the loop's timers: budget accrual, ring drain, job sweep, hello
// timeouts, paused listeners, pid checks, every().
Nanos Agent::Impl::next_timer(bool drain_by_timer, bool pid_tasks) const {
  Nanos next = wake_at;
  if (drain_by_timer) next = std::min(next, next_drain);
  if (tasks->holding()) next = std::min(next, next_sweep);
  next = std::min(next, next_hello_check);
  if (accept_paused_until != 0) next = std::min(next, accept_paused_until);
  if (pid_tasks) next = std::min(next, next_pid_check);
  for (const auto& p : periodic) next = std::min(next, p.next);
  return next;
}

Status Agent::run() {
  Impl& m = *impl_;
  const config::Config& c = cfg_;
  const bool pid_tasks = std::any_of(c.tasks.begin(), c.tasks.end(),
                                     [](const auto& t) { return t.pt.match == tracer::MatchKind::kPid; });
  m.loop->arm(*m.sigfd, user_data(Tag::kSignal));
  m.loop->arm(*m.engine_listen, user_data(Tag::kEngineListen));
  m.loop->arm(*m.control_listen, user_data(Tag::kControlListen));
  if (m.tracer && c.agent.tracer_wakeup) m.loop->arm(m.tracer->ring_fd(), user_data(Tag::kRing));
  const bool drain_by_timer = m.tracer && !c.agent.tracer_wakeup;

  while (!m.stopping) {
    for (const EventLoop::Completion& done : m.loop->wait(m.next_timer(drain_by_timer, pid_tasks)))
      m.on_completion(done);
    const Nanos now = monotonic_now();
    if (drain_by_timer && now >= m.next_drain) {
      m.drain_tracer();
      m.next_drain = now + c.agent.poll;
    }
    if (now >= m.next_sweep) {
      m.sweep_jobs(now);
      m.next_sweep = now + kJobSweep;
    }
    if (now >= m.next_hello_check) m.close_silent_sessions(now);
    if (m.accept_paused_until != 0 && now >= m.accept_paused_until) {
      m.accept_paused_until = 0;
      if (std::exchange(m.engine_listen_paused, false))
        m.loop->arm(*m.engine_listen, user_data(Tag::kEngineListen));
      if (std::exchange(m.control_listen_paused, false))
        m.loop->arm(*m.control_listen, user_data(Tag::kControlListen));
    }
    if (pid_tasks && now >= m.next_pid_check) {
      m.check_pids();
      m.next_pid_check = now + kPidCheck;
    }
    for (auto& p : m.periodic) {
      if (now < p.next) continue;
      p.fn(now);
      p.next = now + p.period;
    }
    if (now >= m.wake_at) m.mark_point(m.wake_at);  // scheduling point 4: the budget has accrued
    if (m.dirty) m.schedule();
  }

  // SIGTERM: tell every engine (fail-open ones run unmanaged), then detach BPF.
  std::size_t told = 0;
  for (auto& [id, s] : m.sessions) {
    if (s.control || !s.welcomed) continue;
    told += m.send_msg(s, engine::ByeMsg{engine::ByeReason::kShutdown, "ripple-agent is stopping"});
  }
  m.sessions.clear();
  m.tracer.reset();
  RIPPLE_LOG_INFO("ripple-agent: stopped; told {} engine(s), BPF detached", told);
  return Status::Ok();
}

StatusInputs Agent::Impl::status_inputs(TracerFacts& facts) const {
  facts.attached = tracer != nullptr;
  if (tracer) {
    facts.drops = tracer->drops();
    for (std::uint32_t k = 0; k < tasks->size(); ++k) {
      facts.stats.push_back(tracer->stats(k));
      facts.threads.push_back(tracer->thread_count(k));
    }
  }
  return {cfg, started, *adm, *tasks, *engines, decision_latency, facts, untraced, counters};
}

json Agent::status_json(Nanos now) const {
  TracerFacts facts;
  return daemon::status_json(impl_->status_inputs(facts), now);
}

json Agent::explain_json(Nanos now) const { return daemon::explain_json(cfg_.agent.policy, *impl_->adm, now); }

}  // namespace ripple::daemon
