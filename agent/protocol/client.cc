#include "ripple/client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace ripple::engine {

Result<std::unique_ptr<Client>> Client::connect(const std::string& path, const Hello& hello, int timeout_ms,
                                                const AgentCheck& agent) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return make_error("engine socket path '{}' is too long", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // Non-blocking for the connect: a listener that never accepts (a stopped agent) queues
  // connections until its listen backlog is full, and a blocking connect() then waits for
  // ever. A local socket's connect is never in progress: it is queued at once, or refused
  // with EAGAIN while the backlog is full. Blocking again after it, as before.
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return make_errno_error(-errno, "failed to create engine socket: {}", std::strerror(errno));
  std::unique_ptr<Client> c(new Client(fd));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == EAGAIN)
      return make_errno_error(-EAGAIN, "the agent at {} accepts no connections (its backlog is full: stopped or hung)", path);
    return make_errno_error(-errno, "failed to connect to agent at {}: {}", path, std::strerror(errno));
  }
  if (const int fl = ::fcntl(fd, F_GETFL); fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0)
    return make_errno_error(-errno, "failed to make the engine socket blocking: {}", std::strerror(errno));
  if (agent.check) {
    // The credentials of whoever called listen() on the path, fixed at connect: checked
    // before anything is sent or obeyed (not even the destructor's Bye: open_ false).
    c->open_ = false;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
      return make_errno_error(kErrNotAgent, "cannot identify the process behind {}: {}", path, std::strerror(errno));
    if (cred.uid != 0 && cred.uid != agent.agent_uid)
      return make_errno_error(kErrNotAgent, "{} is served by pid {} uid {}, not by root or uid {} (RIPPLE_AGENT_UID): "
                              "not the agent", path, cred.pid, cred.uid, agent.agent_uid);
    c->open_ = true;
  }
  if (Status s = c->send(hello); !s) {
    // Refused before our Hello was read: the agent's Bye (read by send) says why.
    if (!c->agent_bye_.text.empty())
      return make_errno_error(kErrAgentGone, "agent refused engine {}: {}", hello.name, c->agent_bye_.text);
    return s.error();
  }
  auto m = c->receive(timeout_ms);
  if (!m) return m.error();
  if (auto* bye = std::get_if<ByeMsg>(&*m))
    return make_errno_error(kErrAgentGone, "agent refused engine {}: {}", hello.name, bye->text);
  auto* w = std::get_if<Welcome>(&*m);
  if (w == nullptr) return make_error("agent answered hello with {}", type_name(*m));
  c->welcome_ = *w;
  return c;
}

Client::~Client() {
  if (open_) bye(ByeReason::kNormal, "engine exits");
  if (fd_ >= 0) ::close(fd_);
}

void Client::bye(ByeReason reason, const std::string& text) {
  if (!open_) return;
  (void)send(ByeMsg{reason, text});
  open_ = false;
}

Status Client::send(const Message& m) {
  std::vector<std::uint8_t> out;
  if (Status s = encode(m, out); !s) return s;
  ssize_t n = ::send(fd_, out.data(), out.size(), MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EPIPE || errno == ECONNRESET) {
      // The agent may have said why before closing: its Bye can still be queued unread.
      // Read what is queued so agent_bye() tells the engine (a stopping agent, say).
      // A socket closed with our messages unread reports ECONNRESET once (the error is
      // consumed by that read) before the datagrams still queued: read past it.
      open_ = false;
      buf_.resize(kMaxMessageBytes);
      for (int i = 0, resets = 0; i < 64 && agent_bye_.text.empty(); ++i) {
        const ssize_t r = ::recv(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT);
        if (r < 0 && errno == ECONNRESET && ++resets <= 2) continue;
        if (r <= 0 || static_cast<std::size_t>(r) > buf_.size()) break;
        auto m = decode(std::span<const std::uint8_t>(buf_.data(), static_cast<std::size_t>(r)));
        if (m)
          if (auto* b = std::get_if<ByeMsg>(&*m)) agent_bye_ = *b;
      }
      if (agent_bye_.text.empty()) agent_bye_ = {ByeReason::kShutdown, "agent reset the connection"};
      return make_errno_error(kErrAgentGone, "agent closed the session");
    }
    return make_errno_error(-errno, "failed to send {}: {}", type_name(m), std::strerror(errno));
  }
  return Status::Ok();
}

Result<Message> Client::receive(int timeout_ms) {
  return receive_until(timeout_ms < 0 ? 0 : monotonic_ns() + std::uint64_t(timeout_ms) * 1000000ull);
}

Result<Message> Client::receive_until(std::uint64_t until_ns) {
  buf_.resize(kMaxMessageBytes);
  ssize_t n = -1;
  // A bounded spin first: a grant usually answers within microseconds, and a sleep in
  // poll() costs a wake-up (tens of us on a VM) on every round trip.
  const std::uint64_t spin_end = spin_ns_ ? monotonic_ns() + spin_ns_ : 0;
  for (;;) {
    n = ::recv(fd_, buf_.data(), buf_.size(), MSG_TRUNC | MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) break;
    const std::uint64_t now = monotonic_ns();
    if (now < spin_end && (until_ns == 0 || now < until_ns)) continue;
    if (until_ns != 0 && now >= until_ns) return make_errno_error(kErrTimeout, "no message from the agent in time");
    pollfd p{fd_, POLLIN, 0};
    timespec ts{};
    if (until_ns != 0) {
      const std::uint64_t left = until_ns - now;
      ts.tv_sec = static_cast<time_t>(left / 1000000000ull);
      ts.tv_nsec = static_cast<long>(left % 1000000000ull);
    }
    const int r = ::ppoll(&p, 1, until_ns != 0 ? &ts : nullptr, nullptr);
    if (r < 0 && errno != EINTR) return make_errno_error(-errno, "failed to poll agent socket: {}", std::strerror(errno));
  }
  // The agent is gone. A Bye it sent before going (read earlier, say by a failed send)
  // says why better than the socket does: keep it.
  if (n < 0 && errno == ECONNRESET) {  // the agent closed with our messages unread
    open_ = false;
    if (agent_bye_.text.empty()) agent_bye_ = {ByeReason::kShutdown, "agent reset the connection"};
    return make_errno_error(kErrAgentGone, "agent closed the session");
  }
  if (n < 0) return make_errno_error(-errno, "failed to receive from agent: {}", std::strerror(errno));
  if (n == 0) {
    open_ = false;
    if (agent_bye_.text.empty()) agent_bye_ = {ByeReason::kShutdown, "agent closed the socket"};
    return make_errno_error(kErrAgentGone, "agent closed the session");
  }
  if (static_cast<std::size_t>(n) > buf_.size()) return make_error("agent message of {} bytes is too large", n);
  return decode(std::span<const std::uint8_t>(buf_.data(), static_cast<std::size_t>(n)));
}

Status Client::announce(const WorkMsg& work) { return send(work); }
Status Client::started(const GrantMsg& g) { return send(StartMsg{g.grant_id}); }
Status Client::done(const GrantMsg& g, std::uint64_t measured_ns) { return send(DoneMsg{g.grant_id, measured_ns}); }

Result<GrantMsg> Client::acquire(std::uint64_t work, std::uint32_t first, int timeout_ms) {
  const std::uint64_t deadline = timeout_ms < 0 ? 0 : monotonic_ns() + std::uint64_t(timeout_ms) * 1000000ull;
  for (;;) {
    std::uint64_t hold_until = 0;  // a usable grant waits for its CPU release
    hold_until_ns_ = 0;
    while (!cache_.empty()) {
      const GrantMsg& g = cache_.front();
      const std::uint64_t now = monotonic_ns();
      // The pipelining check (§4.3): work identity, then lease and release limit.
      if (g.work_id == work && g.first == first && now <= g.start_by_ns) {
        // A grant delivered ahead for a CPU release waits until that release.
        if (now >= g.not_before_ns) {
          GrantMsg out = g;
          cache_.pop_front();
          return out;
        }
        hold_until = g.not_before_ns;
        hold_until_ns_ = hold_until;
        if (held_id_ != g.grant_id) {
          held_id_ = g.grant_id;
          ++held_;
        }
        break;
      }
      const std::uint64_t id = g.grant_id;
      cache_.pop_front();
      ++discarded_;
      if (Status s = send(DiscardMsg{id}); !s) return s.error();
    }
    const std::uint64_t now = monotonic_ns();
    // Past the deadline, messages already queued are still read (receive_until then
    // only tries once, without waiting): acquire(..., 0) drains without blocking.
    const bool expired = deadline != 0 && now >= deadline && (hold_until == 0 || hold_until > deadline);
    std::uint64_t until = deadline;
    if (hold_until != 0) until = until == 0 ? hold_until : std::min(until, hold_until);
    auto m = receive_until(until);
    if (!m) {
      if (m.error().code != kErrTimeout) return m.error();
      if (expired) return make_errno_error(kErrTimeout, "no grant within {} ms", timeout_ms);
      continue;  // the release came, or the timeout: look again
    }
    if (auto* g = std::get_if<GrantMsg>(&*m)) {
      last_delivery_ns_ = monotonic_ns() - g->sent_ns;
      cache_.push_back(*g);
      continue;
    }
    if (auto* b = std::get_if<ByeMsg>(&*m)) {
      agent_bye_ = *b;
      open_ = false;
      return make_errno_error(kErrAgentGone, "agent ended the session: {}", b->text);
    }
    return make_error("unexpected {} from the agent", type_name(*m));
  }
}

}  // namespace ripple::engine
