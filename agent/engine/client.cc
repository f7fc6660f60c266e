#include "agent/engine/client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ripple::engine {

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

Result<std::unique_ptr<Client>> Client::connect(const std::string& path, const Hello& hello, int timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return make_error("engine socket path '{}' is too long", path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return make_errno_error(-errno, "failed to create engine socket: {}", std::strerror(errno));
  std::unique_ptr<Client> c(new Client(fd));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return make_errno_error(-errno, "failed to connect to agent at {}: {}", path, std::strerror(errno));
  if (Status s = c->send(hello); !s) return s.error();
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
    if (errno == EPIPE || errno == ECONNRESET) return make_errno_error(kErrAgentGone, "agent closed the session");
    return make_errno_error(-errno, "failed to send {}: {}", type_name(m), std::strerror(errno));
  }
  return Status::Ok();
}

Result<Message> Client::receive(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int r;
  do r = ::poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  if (r < 0) return make_errno_error(-errno, "failed to poll agent socket: {}", std::strerror(errno));
  if (r == 0) return make_errno_error(kErrTimeout, "no message from the agent within {} ms", timeout_ms);
  buf_.resize(kMaxMessageBytes);
  ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), MSG_TRUNC);
  if (n < 0) return make_errno_error(-errno, "failed to receive from agent: {}", std::strerror(errno));
  if (n == 0) {
    open_ = false;
    agent_bye_ = {ByeReason::kShutdown, "agent closed the socket"};
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
    while (!cache_.empty()) {
      GrantMsg g = cache_.front();
      cache_.pop_front();
      // The pipelining check (§4.3): work identity, then lease and release limit.
      if (g.work_id == work && g.first == first && monotonic_ns() <= g.start_by_ns) return g;
      ++discarded_;
      if (Status s = send(DiscardMsg{g.grant_id}); !s) return s.error();
    }
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const std::uint64_t now = monotonic_ns();
      if (now >= deadline) return make_errno_error(kErrTimeout, "no grant within {} ms", timeout_ms);
      wait_ms = static_cast<int>((deadline - now + 999999) / 1000000);
    }
    auto m = receive(wait_ms);
    if (!m) return m.error();
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
