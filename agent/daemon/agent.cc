#include "agent/daemon/agent.h"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "agent/common/log.h"
#include "agent/pricing/percentile.h"
#include "ripple/clock.h"
#include "agent/daemon/identity.h"
#include "agent/daemon/limits.h"
#include "agent/policy/registry.h"

namespace ripple::daemon {

using admission::EngineId;
using admission::kNever;
using nlohmann::json;

Nanos monotonic_now() { return static_cast<Nanos>(monotonic_ns()); }

void Samples::add(Nanos v) {
  if (v_.size() < kCapacity) {
    v_.push_back(v);
  } else {
    v_[next_] = v;
    next_ = (next_ + 1) % kCapacity;
  }
  ++total_;
}

Nanos Samples::percentile(double p) const { return pricing::percentile(v_, p); }

namespace {

constexpr Nanos kWindow = 100LL * 1'000'000'000;  // L = 100 s (App. C)
constexpr Nanos kJobSweep = 100LL * 1'000'000;    // held jobs checked against the kernel
constexpr Nanos kAcceptBackoff = 100LL * 1'000'000;  // accept paused this long on EMFILE/ENFILE
constexpr Nanos kSayEvery = 5LL * 1'000'000'000;     // a repeated warning, at most this often
constexpr Nanos kPidCheck = 1LL * 1'000'000'000;     // pid-matched tasks checked for exit
constexpr std::size_t kStatusEngines = 64;           // engines listed in a status reply
constexpr int kReservedFds = 64;  // descriptors kept for the agent's own (BPF, io_uring, ...)
// Control sessions have their own few slots: engines filling agent.max_sessions must
// not lock out the monitoring that would show it.
constexpr std::size_t kControlSessions = 16;

// io_uring user_data: what completed. Sessions are named by a never-reused id, so a
// late completion for a closed session is recognised and dropped.
enum class Tag : std::uint64_t { kSignal = 1, kRing = 2, kEngineListen = 3, kControlListen = 4, kEngine = 5, kControl = 6 };
std::uint64_t user_data(Tag tag, std::uint64_t id = 0) { return (static_cast<std::uint64_t>(tag) << 56) | id; }
Tag tag_of(std::uint64_t ud) { return static_cast<Tag>(ud >> 56); }
std::uint64_t id_of(std::uint64_t ud) { return ud & ((1ULL << 56) - 1); }

struct FdCloser {
  void operator()(int* fd) const {
    if (*fd >= 0) ::close(*fd);
    delete fd;
  }
};
using UniqueFd = std::unique_ptr<int, FdCloser>;
UniqueFd make_fd(int fd) { return UniqueFd(new int(fd)); }

// A listening socket this agent owns: the socket, and the lock on `<path>.lock` that
// makes it ours. One agent per socket path: a second instance finds the lock held and
// refuses to start, and never unlinks a socket it does not own (it would leave the
// running agent alive but unreachable, and its engines unmanaged).
struct OwnedSocket {
  UniqueFd fd = make_fd(-1);
  UniqueFd lock = make_fd(-1);
};

Result<OwnedSocket> listen_seqpacket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return make_error("socket path '{}' is too long", path);
  if (auto slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return make_errno_error(-errno, "failed to create {}: {}", dir, std::strerror(errno));
  }
  OwnedSocket out;
  // Owner-only: another user must not be able to hold it (and so keep the agent from
  // starting) through a read-only descriptor.
  const std::string lock_path = path + ".lock";
  out.lock = make_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (*out.lock < 0) return make_errno_error(-errno, "failed to open {}: {}", lock_path, std::strerror(errno));
  if (::flock(*out.lock, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {};
    (void)::pread(*out.lock, pid, sizeof pid - 1, 0);
    return make_error("{} belongs to a running ripple-agent (pid {}, lock {}); stop it or use another path", path,
                      pid[0] ? std::string(pid, strcspn(pid, "\n")) : std::string("?"), lock_path);
  }
  const std::string me = std::to_string(::getpid()) + "\n";
  if (::ftruncate(*out.lock, 0) != 0 || ::pwrite(*out.lock, me.data(), me.size(), 0) < 0) {
    // The pid is for the message above only; the lock is what counts.
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Something else still answering on the path (a process that does not take the lock)
  // is not ours to replace either. A killed agent's socket can accept for a moment after
  // its death (its io_uring is torn down asynchronously): look for up to a second.
  for (int tries = 0;; ++tries) {
    UniqueFd probe = make_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (*probe < 0 || ::connect(*probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) break;
    if (tries == 20) return make_error("{} is in use: another process accepts connections on it", path);
    ::usleep(50'000);
  }
  out.fd = make_fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (*out.fd < 0) return make_errno_error(-errno, "failed to create socket: {}", std::strerror(errno));
  ::unlink(path.c_str());  // a stale socket from a previous run: we hold its lock
  if (::bind(*out.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return make_errno_error(-errno, "failed to bind {}: {}", path, std::strerror(errno));
  // Access is decided per connection from SO_PEERCRED, not by file mode.
  ::chmod(path.c_str(), 0666);
  if (::listen(*out.fd, 64) != 0)
    return make_errno_error(-errno, "failed to listen on {}: {}", path, std::strerror(errno));
  return out;
}

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }
double us(Nanos ns) { return static_cast<double>(ns) / 1e3; }

}  // namespace

struct Agent::Session {
  UniqueFd fd;
  bool control = false;
  bool welcomed = false;
  bool spoke = false;  // a control session sent a request
  Nanos opened = 0;
  EngineId engine = 0;
  std::string name;
  ucred cred{};          // from peer_identity(): pid, uid, gid at connect time
  PeerIdentity peer;
  bool refused = false;  // its Hello was refused (Bye kRefused sent): not a protocol error
};

struct Agent::Impl {
  explicit Impl(const config::Config& cfg) : ledger(cfg.pricing) {}

  pricing::Ledger ledger;
  std::unique_ptr<admission::Admission> adm;
  std::unique_ptr<tracer::Tracer> tracer;
  std::vector<TaskStats> task_stats;
  io_uring ring{};
  bool ring_ok = false;
  UniqueFd sigfd = make_fd(-1), engine_listen = make_fd(-1), control_listen = make_fd(-1);
  UniqueFd engine_lock = make_fd(-1), control_lock = make_fd(-1);  // held for life: the paths are ours
  std::vector<std::string> owned_paths;  // unlinked at exit, and only these
  std::map<std::uint64_t, Session> sessions;
  std::map<EngineId, std::uint64_t> session_of_engine;
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
  std::vector<std::pair<std::uint64_t, int>> ready;  // completions of one loop turn
  Nanos spin_until = 0;         // busy-poll the completion queue until then
  std::uint64_t grants_sent = 0, sessions_refused = 0, protocol_errors = 0, events = 0;
  // The thread of every job the ledger holds, to check that the kernel still has it open:
  // a job whose abort or completion event was lost must not stay in the ledger (B(t) = 0
  // for every engine, forever). (task, seq) -> tid and the sweeps that found it closed.
  struct JobThread {
    pid_t tid = 0;
    int closed_sweeps = 0;
  };
  std::map<std::pair<std::uint32_t, std::uint64_t>, JobThread> job_threads;
  Nanos next_sweep = 0;
  std::uint64_t jobs_aborted = 0, jobs_reaped = 0;
  std::vector<std::uint64_t> uid_refused;  // per task, as last logged
  // Limits (each hit is counted, said at most every kSayEvery, shown in status).
  int max_sessions = 0;                    // agent.max_sessions, lowered below RLIMIT_NOFILE
  std::size_t engine_sessions = 0, control_sessions = 0;
  Throttle refused{kSayEvery}, over_limit{kSayEvery}, accept_failed{kSayEvery}, hello_timeouts{kSayEvery},
      works_refused{kSayEvery}, no_credentials{kSayEvery}, identity_refused{kSayEvery},
      unconfigured_refused{kSayEvery};
  // Unconfigured engines admitted as best-effort, and those among them that declared
  // deadline-bound (agent.unconfigured_engines = "best-effort"): said once, counted.
  std::uint64_t unconfigured_admitted = 0, deadline_claims_downgraded = 0;
  bool said_unconfigured = false;
  Nanos accept_paused_until = 0;           // EMFILE/ENFILE: listeners re-armed then
  bool engine_listen_paused = false, control_listen_paused = false;
  Nanos next_hello_check = kNever;         // the earliest hello_timeout of a session
  // Engines gone (disconnected, their grants settled): totals, for status.
  struct Gone {
    std::uint64_t count = 0, grants = 0, bytes = 0, works_done = 0;
  } gone;
  // Pid-matched tasks: the process's start time, so a pid reused by another process
  // is not taken for the task; untraced[k] says why task k is no longer traced.
  std::vector<std::optional<std::uint64_t>> pid_start;
  std::vector<std::string> untraced;
  Nanos next_pid_check = 0;
  struct Periodic {
    Nanos period = 0, next = 0;
    std::function<void(Nanos)> fn;
  };
  std::vector<Periodic> periodic;  // every(): watchdog, metrics
};

Agent::Agent(config::Config cfg) : cfg_(std::move(cfg)), impl_(std::make_unique<Impl>(cfg_)) {}

Agent::~Agent() {
  if (impl_ && impl_->ring_ok) io_uring_queue_exit(&impl_->ring);
  if (impl_)
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
  m.task_stats.resize(c.tasks.size());
  m.untraced.resize(c.tasks.size());
  for (const auto& t : c.tasks)
    m.pid_start.push_back(t.pt.match == tracer::MatchKind::kPid ? process_start_time(t.pt.pid) : std::nullopt);
  // Sessions must run out before descriptors do: at EMFILE nothing can be accepted, not
  // even a control session to see why.
  m.max_sessions = c.agent.max_sessions;
  if (rlimit rl{}; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(m.max_sessions + kReservedFds + kControlSessions) > rl.rlim_cur) {
    m.max_sessions = std::max(1, static_cast<int>(rl.rlim_cur) - kReservedFds - static_cast<int>(kControlSessions));
    RIPPLE_LOG_WARN("agent.max_sessions {} lowered to {}: RLIMIT_NOFILE is {} and the agent keeps {} for itself",
                    c.agent.max_sessions, m.max_sessions, rl.rlim_cur, kReservedFds);
  }
  m.adm = std::make_unique<admission::Admission>(m.ledger, std::move(*pol), c.agent.admission);

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
    Agent* self = a.get();
    auto tr = tracer::Tracer::create(std::move(topts), [self](const tracer::JobEvent& ev) {
      Impl& im = *self->impl_;
      ++im.events;
      if (ev.pt >= im.task_stats.size()) return;
      TaskStats& ts = im.task_stats[ev.pt];
      const Nanos now = monotonic_now();
      if (im.point == kNever) im.point = now;
      im.dirty = true;
      if (ev.kind == tracer::JobEventKind::kRelease) {
        ++ts.releases;
        const auto p = im.adm->on_release(ev.pt, ev.seq, static_cast<Nanos>(ev.release_ns));
        ts.last_allowance = p.allowance;
        im.job_threads[{ev.pt, ev.seq}] = {ev.tid, 0};
        return;
      }
      im.job_threads.erase({ev.pt, ev.seq});
      if (ev.kind == tracer::JobEventKind::kAbort) {
        // Its thread exited (or exec'd) mid-job: the job will never complete.
        ++im.jobs_aborted;
        if (im.adm->on_unfinished(ev.pt, ev.seq, now)) ++ts.unfinished;
        RIPPLE_LOG_INFO("task {}: job #{} ended without completing (thread {} exited or exec'd)",
                        im.ledger.task(ev.pt).spec().name, ev.seq, ev.tid);
        return;
      }
      auto done = im.adm->on_complete(ev.pt, ev.seq, static_cast<Nanos>(ev.ts_ns));
      // Completions count even if the release was not seen (agent started mid-job).
      const bool missed = done ? done->outcome.missed : ev.deadline_miss;
      ++ts.jobs;
      ts.misses += missed;
      ts.last_response = static_cast<Nanos>(ev.response_ns);
      const std::int64_t w = (now - im.started) / kWindow;
      if (w != ts.window) {
        ts.prev_window_jobs = w == ts.window + 1 ? ts.window_jobs : 0;
        ts.prev_window_misses = w == ts.window + 1 ? ts.window_misses : 0;
        ts.window = w;
        ts.window_jobs = ts.window_misses = 0;
      }
      ++ts.window_jobs;
      ts.window_misses += missed;
    });
    if (!tr) return make_error("tracer: {}", tr.error().message);
    m.tracer = std::move(*tr);
  }

  if (int r = io_uring_queue_init(256, &m.ring, 0); r < 0)
    return make_errno_error(r, "failed to set up io_uring: {}", std::strerror(-r));
  m.ring_ok = true;
  m.started = monotonic_now();
  RIPPLE_LOG_INFO("ripple-agent: policy {}, {} task(s), engines on {}, control on {}{}", c.agent.policy,
                  c.tasks.size(), c.agent.engine_socket, c.agent.control_socket,
                  c.agent.core >= 0 ? fmt::format(", pinned to CPU {}", c.agent.core) : std::string());
  return a;
}

namespace {

void arm_poll(io_uring* ring, int fd, std::uint64_t ud) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) {
    io_uring_submit(ring);
    sqe = io_uring_get_sqe(ring);
  }
  io_uring_prep_poll_add(sqe, fd, POLLIN);
  io_uring_sqe_set_data64(sqe, ud);
}

void cancel_poll(io_uring* ring, std::uint64_t ud) {
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  if (sqe == nullptr) {
    io_uring_submit(ring);
    sqe = io_uring_get_sqe(ring);
  }
  io_uring_prep_poll_remove(sqe, ud);
  io_uring_sqe_set_data64(sqe, 0);
}

}  // namespace

Status Agent::run() {
  Impl& m = *impl_;
  const config::Config& c = cfg_;
  auto send_msg = [&](Session& s, const engine::Message& msg) -> bool {
    if (!engine::encode(msg, m.out)) return false;
    return ::send(*s.fd, m.out.data(), m.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
           static_cast<ssize_t>(m.out.size());
  };
  auto close_session = [&](std::uint64_t id, const std::string& why, bool tell) {
    auto it = m.sessions.find(id);
    if (it == m.sessions.end()) return;
    Session& s = it->second;
    if (tell) send_msg(s, engine::ByeMsg{engine::ByeReason::kProtocol, why.substr(0, engine::kByeTextBytes - 1)});
    if (!s.control) {
      if (s.welcomed) {
        const Nanos now = monotonic_now();
        m.adm->remove_engine(s.engine, now);  // outstanding grants stay charged
        if (const admission::EngineState* e = m.adm->engine(s.engine)) {
          ++m.gone.count;
          m.gone.grants += e->stats.grants;
          m.gone.bytes += static_cast<std::uint64_t>(e->stats.bytes);
          m.gone.works_done += e->stats.works_done;
        }
        m.session_of_engine.erase(s.engine);
        m.dirty = true;
        if (m.point == kNever) m.point = now;
      }
      // Sessions that never said hello are said by their cause (malformed, timed out).
      if (s.welcomed) RIPPLE_LOG_INFO("engine session {} ({}, pid {}) closed: {}", id, s.name, s.cred.pid, why);
    }
    cancel_poll(&m.ring, user_data(s.control ? Tag::kControl : Tag::kEngine, id));
    --(s.control ? m.control_sessions : m.engine_sessions);
    m.sessions.erase(it);
  };

  auto handle_engine_msg = [&](std::uint64_t id, Session& s, const engine::Message& msg, Nanos now) -> std::string {
    using namespace engine;
    if (!s.welcomed) {
      const auto* h = std::get_if<Hello>(&msg);
      if (h == nullptr) return fmt::format("expected hello, got {}", type_name(msg));
      admission::EngineSpec spec;
      spec.name = h->name;
      spec.kind = h->kind == Kind::kDeadlineBound ? admission::EngineKind::kDeadlineBound
                                                  : admission::EngineKind::kBestEffort;
      spec.period = static_cast<Nanos>(h->period_ns);
      spec.deadline = static_cast<Nanos>(h->deadline_ns);
      spec.grant_overhead = static_cast<Nanos>(h->grant_overhead_ns);
      for (const auto& u : h->units)
        spec.catalog.push_back({u.name, static_cast<pricing::Bytes>(u.bytes), static_cast<Nanos>(u.duration_ns)});
      // Who the peer is decides, not what it declares: a configured name is claimed
      // only by the uid/executable its [[engine]] names, and only a configured engine
      // may be deadline-bound (Documentation/agent.md, "Engine identity and access").
      auto refuse_hello = [&](Throttle& t, const std::string& why) {
        if (t.note(now))
          RIPPLE_LOG_WARN("refused engine session {} (pid {} uid {}): {} ({} more refused since last said)", id,
                          s.cred.pid, s.cred.uid, why, t.suppressed());
        ++m.sessions_refused;
        s.refused = true;
        send_msg(s, ByeMsg{ByeReason::kRefused, why.substr(0, kByeTextBytes - 1)});
        return why;
      };
      if (const config::EngineSection* e = c.engine(h->name)) {  // the configuration wins
        if (!e->exe.empty()) s.peer.exe = exe_identity(s.cred.pid);
        if (std::string why = engine_mismatch(*e, s.peer); !why.empty()) return refuse_hello(m.identity_refused, why);
        spec.kind = e->kind;
        spec.period = e->period;
        spec.deadline = e->deadline;
      } else if (c.agent.refuse_unconfigured) {
        return refuse_hello(m.unconfigured_refused,
                            fmt::format("engine {} is not configured ([[engine]]) and agent.unconfigured_engines "
                                        "is \"refuse\"", h->name.substr(0, kNameBytes - 1)));
      } else {
        const bool claimed = spec.kind == admission::EngineKind::kDeadlineBound;
        spec.kind = admission::EngineKind::kBestEffort;
        spec.period = spec.deadline = 0;
        ++m.unconfigured_admitted;
        if (claimed) ++m.deadline_claims_downgraded;
        if (!std::exchange(m.said_unconfigured, true))
          RIPPLE_LOG_INFO("engine {} (pid {}, uid {}) is not configured: admitted as best-effort{} "
                          "(agent.unconfigured_engines; said once, counted in status)",
                          h->name, s.cred.pid, s.cred.uid, claimed ? " although it declared deadline-bound" : "");
      }
      auto eid = m.adm->add_engine(std::move(spec), now);
      if (!eid) return eid.error().message;
      s.welcomed = true;
      s.engine = *eid;
      s.name = h->name;
      m.session_of_engine[*eid] = id;
      RIPPLE_LOG_INFO("engine {} (pid {}, uid {}) joined as {} with {} unit(s)", h->name, s.cred.pid, s.cred.uid,
                      admission::to_string(m.adm->engine(*eid)->spec.kind), h->units.size());
      if (!send_msg(s, Welcome{*eid, c.agent.policy.substr(0, kNameBytes - 1),
                               static_cast<std::uint64_t>(c.agent.admission.lease), c.agent.fail_mode}))
        return "failed to send welcome";
      return {};
    }
    Status st;
    if (const auto* w = std::get_if<WorkMsg>(&msg)) {
      // A bound on what one engine can make the agent hold (a Work is up to 4096 units).
      if (const admission::EngineState* e = m.adm->engine(s.engine);
          e != nullptr && e->queue.size() >= static_cast<std::size_t>(c.agent.max_queued_works)) {
        m.works_refused.note(now);
        return fmt::format("work {}: {} works queued, at most {} (agent.max_queued_works)", w->work_id,
                           e->queue.size(), c.agent.max_queued_works);
      }
      admission::Work work;
      work.id = w->work_id;
      work.units = w->units;
      if (w->deadline_ns != 0) work.deadline = static_cast<Nanos>(w->deadline_ns);
      st = m.adm->announce(s.engine, std::move(work), now);
    } else if (const auto* g = std::get_if<StartMsg>(&msg)) {
      st = m.adm->on_start(s.engine, g->grant_id, now);
    } else if (const auto* d = std::get_if<DoneMsg>(&msg)) {
      st = m.adm->on_done(s.engine, d->grant_id, static_cast<Nanos>(d->measured_ns), now);
    } else if (const auto* x = std::get_if<DiscardMsg>(&msg)) {
      st = m.adm->on_discard(s.engine, x->grant_id, now);
    } else if (const auto* b = std::get_if<ByeMsg>(&msg)) {
      return fmt::format("bye: {}", b->text.empty() ? "no reason" : b->text);
    } else {
      return fmt::format("unexpected {} from an engine", type_name(msg));
    }
    if (!st) return st.error().message;
    m.dirty = true;
    if (m.point == kNever) m.point = now;
    return {};
  };

  auto schedule = [&] {
    const Nanos now = monotonic_now();
    const Nanos point = m.point == kNever ? now : m.point;
    admission::Decision d = m.adm->decide(now);
    m.wake_at = d.wake_at;
    for (const admission::GrantPlan& g : d.grants) {
      auto sid = m.session_of_engine.find(g.engine);
      if (sid == m.session_of_engine.end()) continue;
      Session& s = m.sessions.at(sid->second);
      const Nanos sent = monotonic_now();
      engine::GrantMsg msg{g.id, g.work, g.first, g.count, static_cast<std::uint64_t>(g.bytes),
                           static_cast<std::uint64_t>(g.start_by), static_cast<std::uint64_t>(sent), g.successor,
                           static_cast<std::uint64_t>(g.not_before)};
      if (!send_msg(s, msg)) {
        close_session(sid->second, fmt::format("failed to deliver grant: {}", std::strerror(errno)), false);
        continue;
      }
      ++m.grants_sent;
      (void)m.adm->on_sent(g.engine, g.id, sent);
      m.decision_latency.add(monotonic_now() - point);
    }
    m.dirty = false;
    m.point = kNever;
  };

  auto read_engine = [&](std::uint64_t id) {
    for (;;) {
      auto it = m.sessions.find(id);
      if (it == m.sessions.end()) return;
      Session& s = it->second;
      ssize_t n = ::recv(*s.fd, m.buf.data(), m.buf.size(), MSG_DONTWAIT | MSG_TRUNC);
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
      if (static_cast<std::size_t>(n) > m.buf.size()) {
        ++m.protocol_errors;
        close_session(id, fmt::format("message of {} bytes exceeds {}", n, m.buf.size()), true);
        return;
      }
      auto msg = engine::decode(std::span<const std::uint8_t>(m.buf.data(), static_cast<std::size_t>(n)));
      if (!msg) {
        ++m.protocol_errors;
        RIPPLE_LOG_WARN("engine session {} ({}): malformed message: {}", id, s.name, msg.error().message);
        close_session(id, "malformed message: " + msg.error().message, true);
        return;
      }
      const bool bye = std::holds_alternative<engine::ByeMsg>(*msg);
      if (std::string why = handle_engine_msg(id, s, *msg, now); !why.empty()) {
        const bool told = bye || s.refused;  // a refused Hello was told why, counted and said
        if (!told) {
          ++m.protocol_errors;
          RIPPLE_LOG_WARN("engine session {} ({}): {}", id, s.name, why);
        }
        close_session(id, why, !told);
        if (m.dirty) schedule();
        return;
      }
      // Decide before the next receive: one message is one scheduling point, and the
      // grant should not wait for the receive that finds the socket empty.
      if (m.dirty) schedule();
    }
    auto it = m.sessions.find(id);
    if (it != m.sessions.end()) arm_poll(&m.ring, *it->second.fd, user_data(Tag::kEngine, id));
  };

  auto read_control = [&](std::uint64_t id) {
    auto it = m.sessions.find(id);
    if (it == m.sessions.end()) return;
    Session& s = it->second;
    for (;;) {
      ssize_t n = ::recv(*s.fd, m.buf.data(), 256, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        close_session(id, "control client left", false);
        return;
      }
      const std::string cmd(reinterpret_cast<const char*>(m.buf.data()), static_cast<std::size_t>(n));
      const Nanos now = monotonic_now();
      s.spoke = true;
      json reply;
      if (cmd == "status" || cmd == "top") reply = status_json(now);
      else if (cmd == "explain") reply = explain_json(now);
      else reply = json{{"error", fmt::format("unknown command '{}' (status, top, explain)", cmd.substr(0, 32))}};
      const std::string text = reply.dump();
      if (::send(*s.fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        RIPPLE_LOG_WARN("control session {} (pid {}): reply of {} bytes to '{}' failed: {}", id, s.cred.pid,
                        text.size(), cmd.substr(0, 32), std::strerror(errno));
        close_session(id, "control reply failed", false);
        return;
      }
    }
    arm_poll(&m.ring, *s.fd, user_data(Tag::kControl, id));
  };

  // Refuses a connection and tells the peer why. What it sent (its Hello, a control
  // request) is read first: closed with it unread, the connection is reset and the peer
  // sees ECONNRESET instead of the reason.
  auto refuse = [&](Session& s, const std::string& why) {
    for (int k = 0; k < 4 && ::recv(*s.fd, m.buf.data(), m.buf.size(), MSG_DONTWAIT) > 0; ++k) {
    }
    if (s.control) {
      const std::string text = json{{"error", "ripple-agent refused the connection: " + why}}.dump();
      (void)::send(*s.fd, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    } else {
      send_msg(s, engine::ByeMsg{engine::ByeReason::kRefused, why.substr(0, engine::kByeTextBytes - 1)});
    }
  };

  auto accept_all = [&](int lfd, bool control) {
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
        if (m.accept_failed.note(now))
          RIPPLE_LOG_WARN("cannot accept {} connections: {} ({} session(s) open, agent.max_sessions {}); "
                          "retrying every {} ms ({} more failures since last said)",
                          control ? "control" : "engine", std::strerror(err), m.sessions.size(), m.max_sessions,
                          kAcceptBackoff / 1'000'000, m.accept_failed.suppressed());
        (control ? m.control_listen_paused : m.engine_listen_paused) = true;
        m.accept_paused_until = now + kAcceptBackoff;
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
        ++m.sessions_refused;
        if (m.no_credentials.note(now))
          RIPPLE_LOG_WARN("refused {} connection: cannot identify the peer: {} ({} more refused since last said)",
                          control ? "control" : "engine", peer.error().message, m.no_credentials.suppressed());
        refuse(s, "cannot identify the peer: " + peer.error().message);
        continue;
      }
      s.peer = std::move(*peer);
      s.cred = ucred{s.peer.pid, s.peer.uid, s.peer.gid};
      // Peer credentials against the allowed uids/gids, supplementary groups included
      // (root and the agent's own uid by default).
      if (!peer_allowed(s.peer, c.agent, ::geteuid())) {
        ++m.sessions_refused;
        // Said once per kSayEvery: a flood of refused connections must not become a
        // flood of log lines.
        if (m.refused.note(now))
          RIPPLE_LOG_WARN("refused {} connection from pid {} uid {} gid {}: not in allowed_uids/allowed_gids "
                          "({} more refused since last said)",
                          control ? "control" : "engine", s.cred.pid, s.cred.uid, s.cred.gid, m.refused.suppressed());
        refuse(s, fmt::format("uid {} gid {} is not in allowed_uids/allowed_gids", s.cred.uid, s.cred.gid));
        continue;
      }
      const std::size_t open = control ? m.control_sessions : m.engine_sessions;
      const std::size_t limit = control ? kControlSessions : static_cast<std::size_t>(m.max_sessions);
      if (open >= limit) {
        if (m.over_limit.note(now))
          RIPPLE_LOG_WARN("refused {} connection from pid {} uid {}: {} {} sessions open, the limit{} "
                          "({} more refused since last said)",
                          control ? "control" : "engine", s.cred.pid, s.cred.uid, open, control ? "control" : "engine",
                          control ? "" : " (agent.max_sessions)", m.over_limit.suppressed());
        refuse(s, fmt::format("too many {} sessions ({})", control ? "control" : "engine", limit));
        continue;
      }
      ++(control ? m.control_sessions : m.engine_sessions);
      if (control) {
        int sz = 1 << 20;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
      }
      const std::uint64_t id = m.next_session++;
      arm_poll(&m.ring, fd, user_data(control ? Tag::kControl : Tag::kEngine, id));
      m.sessions.emplace(id, std::move(s));
      m.next_hello_check = std::min(m.next_hello_check, now + c.agent.hello_timeout);
    }
    arm_poll(&m.ring, lfd, user_data(control ? Tag::kControlListen : Tag::kEngineListen));
  };

  // A session that never says hello (or, on the control socket, never asks) holds a
  // descriptor and a session slot for nothing: closed after agent.hello_timeout_ms.
  auto close_silent_sessions = [&](Nanos now) {
    Nanos next = kNever;
    std::vector<std::uint64_t> late;
    for (const auto& [id, s] : m.sessions) {
      if (s.welcomed || s.spoke) continue;
      const Nanos due = s.opened + c.agent.hello_timeout;
      if (due <= now) late.push_back(id);
      else next = std::min(next, due);
    }
    for (std::uint64_t id : late) {
      const Session& s = m.sessions.at(id);
      const std::string why = fmt::format("no {} within {} ms", s.control ? "request" : "hello", ms(c.agent.hello_timeout));
      if (m.hello_timeouts.note(now))
        RIPPLE_LOG_WARN("{} session {} (pid {} uid {}): {}: closed ({} more since last said)",
                        s.control ? "control" : "engine", id, s.cred.pid, s.cred.uid, why, m.hello_timeouts.suppressed());
      close_session(id, why, !s.control);
    }
    m.next_hello_check = next;
  };

  // A pid-matched task is traced by that pid only: once the process is gone (or the pid
  // names another process) the task is no longer protected. Said, and shown in status.
  auto check_pids = [&] {
    for (std::size_t k = 0; k < c.tasks.size(); ++k) {
      const tracer::PtSpec& pt = c.tasks[k].pt;
      if (pt.match != tracer::MatchKind::kPid || !m.untraced[k].empty()) continue;
      const auto start = process_start_time(pt.pid);
      if (start && start == m.pid_start[k]) continue;
      m.untraced[k] = fmt::format("pid {} {}; a pid match does not follow a restart (match by exe or comm)", pt.pid,
                                  start ? "now names another process" : "has exited");
      RIPPLE_LOG_WARN("task {}: not traced any more: {}", c.tasks[k].spec.name, m.untraced[k]);
    }
  };
  const bool pid_tasks = std::any_of(c.tasks.begin(), c.tasks.end(),
                                     [](const auto& t) { return t.pt.match == tracer::MatchKind::kPid; });

  auto drain_tracer = [&] {
    if (!m.tracer) return;
    if (auto r = m.tracer->consume(); !r) RIPPLE_LOG_WARN("tracer: {}", r.error().message);
    if (m.dirty) schedule();
  };

  // Every held job must still be open in the kernel. One whose thread is gone or has
  // moved on with no event reaching us (a full ring buffer) is closed as unfinished once
  // two sweeps in a row find it so (a completion emitted between the drain and the look
  // is read by the next drain first).
  auto sweep_jobs = [&](Nanos now) {
    if (!m.tracer) return;
    drain_tracer();
    // Threads that matched a task by name or file but ran as another user: said once
    // per rise (a task configured for the wrong user would otherwise see no jobs).
    m.uid_refused.resize(m.task_stats.size(), 0);
    for (std::uint32_t k = 0; k < m.task_stats.size(); ++k) {
      const auto st = m.tracer->stats(k);
      if (!st || st->uid_refused <= m.uid_refused[k]) continue;
      RIPPLE_LOG_WARN("task {}: {} thread(s) matched by exe/comm but ran as another user than task.user: "
                      "not traced (set task.user if the task runs as that user)",
                      m.ledger.task(k).spec().name, st->uid_refused - m.uid_refused[k]);
      m.uid_refused[k] = st->uid_refused;
    }
    for (auto it = m.job_threads.begin(); it != m.job_threads.end();) {
      const auto [pt, seq] = it->first;
      if (m.ledger.job(pt, seq) == nullptr) {  // closed by another path
        it = m.job_threads.erase(it);
        continue;
      }
      if (m.tracer->job_open(it->second.tid, seq)) {
        it->second.closed_sweeps = 0;
        ++it;
        continue;
      }
      if (++it->second.closed_sweeps < 2) {
        ++it;
        continue;
      }
      ++m.jobs_reaped;
      if (m.adm->on_unfinished(pt, seq, now) && pt < m.task_stats.size()) ++m.task_stats[pt].unfinished;
      RIPPLE_LOG_WARN("task {}: job #{} is no longer open in the kernel (thread {}) and no event said so: "
                      "closed as unfinished",
                      m.ledger.task(pt).spec().name, seq, it->second.tid);
      m.dirty = true;
      if (m.point == kNever) m.point = now;
      it = m.job_threads.erase(it);
    }
    if (m.dirty) schedule();
  };

  arm_poll(&m.ring, *m.sigfd, user_data(Tag::kSignal));
  arm_poll(&m.ring, *m.engine_listen, user_data(Tag::kEngineListen));
  arm_poll(&m.ring, *m.control_listen, user_data(Tag::kControlListen));
  if (m.tracer && c.agent.tracer_wakeup) arm_poll(&m.ring, m.tracer->ring_fd(), user_data(Tag::kRing));
  const bool drain_by_timer = m.tracer && !c.agent.tracer_wakeup;

  while (!m.stopping) {
    Nanos now = monotonic_now();
    Nanos next = m.wake_at;
    if (drain_by_timer) next = std::min(next, m.next_drain);
    if (!m.job_threads.empty()) next = std::min(next, m.next_sweep);
    next = std::min(next, m.next_hello_check);
    if (m.accept_paused_until != 0) next = std::min(next, m.accept_paused_until);
    if (pid_tasks) next = std::min(next, m.next_pid_check);
    for (const auto& p : m.periodic) next = std::min(next, p.next);
    io_uring_cqe* cqe = nullptr;
    // Busy-poll for a bounded time after the last events (agent.spin_us): the kernel
    // posts a poll completion without waking us, so the next engine message costs no
    // wake-up and, once found here, no io_uring_enter either.
    bool found = false;
    if (m.spin_until > now) {
      if (io_uring_sq_ready(&m.ring) > 0) io_uring_submit(&m.ring);
      const Nanos until = std::min(m.spin_until, next);
      for (;;) {
        if (io_uring_peek_cqe(&m.ring, &cqe) == 0) {
          found = true;
          break;
        }
        if (monotonic_now() >= until) break;
      }
    }
    if (found) {
      if (io_uring_sq_ready(&m.ring) > 0) io_uring_submit(&m.ring);
    } else if (next == kNever) {
      io_uring_submit_and_wait(&m.ring, 1);
    } else {
      const Nanos wait = std::max<Nanos>(0, next - monotonic_now());
      __kernel_timespec ts{wait / 1'000'000'000, wait % 1'000'000'000};
      io_uring_submit_and_wait_timeout(&m.ring, &cqe, 1, &ts, nullptr);
    }
    unsigned head = 0, seen = 0;
    std::vector<std::pair<std::uint64_t, int>>& ready = m.ready;
    ready.clear();
    io_uring_for_each_cqe(&m.ring, head, cqe) {
      ++seen;
      if (cqe->user_data != 0) ready.emplace_back(cqe->user_data, cqe->res);
    }
    io_uring_cq_advance(&m.ring, seen);
    if (!ready.empty() && c.agent.spin > 0) m.spin_until = monotonic_now() + c.agent.spin;
    for (auto [ud, res] : ready) {
      switch (tag_of(ud)) {
        case Tag::kSignal: {
          signalfd_siginfo si{};
          while (::read(*m.sigfd, &si, sizeof si) == sizeof si)
            RIPPLE_LOG_INFO("ripple-agent: signal {} received, stopping", si.ssi_signo);
          m.stopping = true;
          break;
        }
        case Tag::kRing:
          drain_tracer();
          arm_poll(&m.ring, m.tracer->ring_fd(), user_data(Tag::kRing));
          break;
        case Tag::kEngineListen: accept_all(*m.engine_listen, false); break;
        case Tag::kControlListen: accept_all(*m.control_listen, true); break;
        case Tag::kEngine:
          if (res == -ECANCELED) break;
          read_engine(id_of(ud));
          break;
        case Tag::kControl:
          if (res == -ECANCELED) break;
          read_control(id_of(ud));
          break;
      }
    }
    now = monotonic_now();
    if (drain_by_timer && now >= m.next_drain) {
      drain_tracer();
      m.next_drain = now + c.agent.poll;
    }
    if (now >= m.next_sweep) {
      sweep_jobs(now);
      m.next_sweep = now + kJobSweep;
    }
    if (now >= m.next_hello_check) close_silent_sessions(now);
    if (m.accept_paused_until != 0 && now >= m.accept_paused_until) {
      m.accept_paused_until = 0;
      if (std::exchange(m.engine_listen_paused, false))
        arm_poll(&m.ring, *m.engine_listen, user_data(Tag::kEngineListen));
      if (std::exchange(m.control_listen_paused, false))
        arm_poll(&m.ring, *m.control_listen, user_data(Tag::kControlListen));
    }
    if (pid_tasks && now >= m.next_pid_check) {
      check_pids();
      m.next_pid_check = now + kPidCheck;
    }
    for (auto& p : m.periodic) {
      if (now < p.next) continue;
      p.fn(now);
      p.next = now + p.period;
    }
    if (now >= m.wake_at) {
      m.dirty = true;  // scheduling point 4: the budget has accrued
      if (m.point == kNever) m.point = m.wake_at;
    }
    if (m.dirty) schedule();
  }

  // SIGTERM: tell every engine (fail-open ones run unmanaged), then detach BPF.
  std::size_t told = 0;
  for (auto& [id, s] : m.sessions) {
    if (s.control || !s.welcomed) continue;
    told += send_msg(s, engine::ByeMsg{engine::ByeReason::kShutdown, "ripple-agent is stopping"});
  }
  m.sessions.clear();
  m.tracer.reset();
  RIPPLE_LOG_INFO("ripple-agent: stopped; told {} engine(s), BPF detached", told);
  return Status::Ok();
}

json Agent::status_json(Nanos now) const {
  const Impl& m = *impl_;
  json j;
  j["policy"] = cfg_.agent.policy;
  j["uptime_s"] = static_cast<double>(now - m.started) / 1e9;
  const pricing::Bytes b = m.ledger.budget(now);
  j["budget_bytes"] = b == admission::kUnlimitedBytes ? json(nullptr) : json(b);
  j["decision_latency_us"] = {{"p50", us(m.decision_latency.percentile(50))},
                              {"p99", us(m.decision_latency.percentile(99))},
                              {"max", us(m.decision_latency.percentile(100))},
                              {"count", m.decision_latency.count()}};
  j["tracer"] = {{"attached", m.tracer != nullptr}, {"drops", m.tracer ? m.tracer->drops() : 0},
                 {"events", m.events}, {"jobs_aborted", m.jobs_aborted}, {"jobs_reaped", m.jobs_reaped}};
  j["grants_sent"] = m.grants_sent;
  j["protocol_errors"] = m.protocol_errors;
  j["sessions_refused"] = m.sessions_refused;
  // Each refusal by its reason (Documentation/agent.md, "Engine identity and access").
  j["refusals"] = {{"uid_not_allowed", m.refused.total()},
                   {"no_credentials", m.no_credentials.total()},
                   {"engine_identity", m.identity_refused.total()},
                   {"unconfigured", m.unconfigured_refused.total()},
                   {"unconfigured_admitted", m.unconfigured_admitted},
                   {"deadline_claims_downgraded", m.deadline_claims_downgraded}};
  // Each limit: its value and how often it was hit (Documentation/agent.md, "Limits").
  j["limits"] = {{"sessions", m.engine_sessions},
                 {"control_sessions", m.control_sessions},
                 {"max_sessions", m.max_sessions},
                 {"sessions_over_limit", m.over_limit.total()},
                 {"accept_failures", m.accept_failed.total()},
                 {"hello_timeouts", m.hello_timeouts.total()},
                 {"max_queued_works", cfg_.agent.max_queued_works},
                 {"works_refused", m.works_refused.total()}};
  json tasks = json::array();
  for (pricing::TaskId k = 0; k < m.ledger.task_count(); ++k) {
    const pricing::Estimator& est = m.ledger.task(k);
    const TaskStats& ts = m.task_stats[k];
    const bool cur = ts.window == (now - m.started) / kWindow;
    const std::uint64_t wj = cur ? ts.window_jobs : 0, wm = cur ? ts.window_misses : 0;
    json t;
    t["name"] = est.spec().name;
    t["deadline_ms"] = ms(est.spec().deadline);
    t["period_ms"] = ms(est.spec().period);
    t["miss_tolerance"] = est.spec().miss_tolerance;
    t["releases"] = ts.releases;
    t["jobs"] = ts.jobs;
    t["misses"] = ts.misses;
    t["unfinished"] = ts.unfinished;  // aborted, or lost and closed by the sweep
    t["dmr"] = ts.jobs ? static_cast<double>(ts.misses) / static_cast<double>(ts.jobs) : 0.0;
    t["window_jobs"] = wj;
    t["window_misses"] = wm;
    t["window_dmr"] = wj ? static_cast<double>(wm) / static_cast<double>(wj) : 0.0;
    t["allowance_bytes"] = ts.last_allowance;
    t["kappa_ms_per_gb"] = est.held_slope() * 1e3;
    const auto upper = est.slope_upper();
    t["kappa_upper_ms_per_gb"] = upper ? json(*upper * 1e3) : json(nullptr);
    t["a_hat_ms"] = est.fit().has_data() ? json(ms(static_cast<Nanos>(est.intercept()))) : json(nullptr);
    const auto q = est.margin().margin(pricing::Phase::kRest);
    t["margin_ms"] = q ? json(*q / 1e6) : json(nullptr);
    t["exempt"] = est.exempt();
    t["last_response_ms"] = ms(ts.last_response);
    bool active = false;
    for (const auto& jb : m.ledger.active_jobs()) active = active || jb.key.task == k;
    t["active"] = active;
    if (m.tracer) {
      if (auto st = m.tracer->stats(k)) {
        t["drops"] = st->drops;
        t["uid_refused"] = st->uid_refused;  // matched by exe/comm, ran as another user
      }
      t["threads"] = m.tracer->thread_count(k);
    }
    t["traced"] = m.tracer != nullptr && m.untraced[k].empty();
    if (!m.untraced[k].empty()) t["untraced_reason"] = m.untraced[k];
    tasks.push_back(std::move(t));
  }
  j["tasks"] = std::move(tasks);
  json engines = json::array();
  // Bounded: a reply must fit one datagram however many engines have come and gone.
  const auto& all = m.adm->engines();
  std::vector<bool> connected(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) connected[i] = all[i].connected;
  const std::vector<std::size_t> listed = listed_engines(connected, kStatusEngines);
  j["engines_not_listed"] = all.size() - listed.size();
  j["engines_gone"] = {{"count", m.gone.count},
                       {"grants", m.gone.grants},
                       {"bytes", m.gone.bytes},
                       {"works_done", m.gone.works_done}};
  for (std::size_t i : listed) {
    const admission::EngineState& e = all[i];
    const admission::EngineStats& s = e.stats;
    const double alive_s = static_cast<double>(now - m.started) / 1e9;
    json x;
    x["name"] = e.spec.name;
    x["id"] = e.id;
    x["kind"] = std::string(admission::to_string(e.spec.kind));
    x["connected"] = e.connected;
    x["grants"] = s.grants;
    x["successors"] = s.successors;
    x["stale"] = s.stale;
    x["for_release"] = s.for_release;
    x["units"] = s.units;
    x["bytes"] = s.bytes;
    x["works_done"] = s.works_done;
    x["deadline_misses"] = s.deadline_misses;
    x["late_ends"] = s.late_ends;  // grants that ended > 1 ms after their predicted end
    x["late_max_ms"] = ms(s.late_max);
    x["busy_s"] = static_cast<double>(s.busy) / 1e9;  // union of the grants' GPU intervals
    x["queued"] = s.queued;  // grants that ran queued behind the one before
    x["scale"] = e.scale;
    x["queued_scale"] = e.queued_scale;
    x["start_lag_ms"] = ms(e.start_lag);  // decision -> start of a grant to an idle engine
    x["throughput_gbps"] = alive_s > 0 ? static_cast<double>(s.bytes) / 1e9 / alive_s : 0.0;
    x["wait_ms"] = {{"budget", ms(s.wait_budget)}, {"decision", ms(s.wait_decision)}, {"delivery", ms(s.wait_delivery)}};
    x["wait"] = {{"cause", std::string(admission::to_string(e.wait.cause))}, {"detail", admission::describe(e.wait, now)}};
    engines.push_back(std::move(x));
  }
  j["engines"] = std::move(engines);
  return j;
}

json Agent::explain_json(Nanos now) const {
  const Impl& m = *impl_;
  json j;
  j["policy"] = cfg_.agent.policy;
  const pricing::Bytes b = m.ledger.budget(now);
  j["budget_bytes"] = b == admission::kUnlimitedBytes ? json(nullptr) : json(b);
  json jobs = json::array();
  const pricing::JobAccount* binding = nullptr;
  for (const auto& jb : m.ledger.active_jobs()) {
    if (!jb.task->exempt() && (binding == nullptr || jb.budget(now) < binding->budget(now))) binding = &jb;
    jobs.push_back({{"task", jb.task->spec().name},
                    {"seq", jb.key.seq},
                    {"since_ms", ms(now - jb.release)},
                    {"allowance_bytes", jb.allowance},
                    {"released_bytes", jb.released(now)},
                    {"charged_bytes", jb.charged},
                    {"budget_bytes", jb.budget(now)},
                    {"exempt", jb.task->exempt()}});
  }
  j["active_jobs"] = std::move(jobs);
  j["binding_job"] = binding ? json(fmt::format("{} #{}", binding->task->spec().name, binding->key.seq)) : json(nullptr);
  json engines = json::array();
  for (const admission::EngineState& e : m.adm->engines()) {
    if (!e.connected) continue;
    const admission::WaitReason& w = e.wait;
    engines.push_back({{"name", e.spec.name},
                       {"cause", std::string(admission::to_string(w.cause))},
                       {"detail", admission::describe(w, now)},
                       {"need_bytes", w.need},
                       {"pending_units", e.remaining()},
                       {"outstanding", e.outstanding},
                       {"until_ms", w.until == kNever ? json(nullptr) : json(ms(w.until - now))}});
  }
  j["engines"] = std::move(engines);
  return j;
}

}  // namespace ripple::daemon
