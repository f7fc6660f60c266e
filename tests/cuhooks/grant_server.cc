#include "tests/cuhooks/grant_server.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ripple/client.h"

namespace ripple::testing {

GrantServer::GrantServer(std::string path, Mode mode, engine::FailMode fail)
    : path_(std::move(path)), mode_(mode), fail_(fail) {}

GrantServer::~GrantServer() { stop(); }

bool GrantServer::start() {
  ::unlink(path_.c_str());
  listen_fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listen_fd_, 16) != 0) return false;
  if (::pipe2(wake_, O_CLOEXEC) != 0) return false;
  thread_ = std::thread([this] {
    // The stand-in agent answers at real-time priority where the test may (root or
    // CAP_SYS_NICE), as the closed-loop tests run the real agent: a build beside the test
    // on 2 cores would otherwise delay a grant by whole scheduler slices, longer than the
    // 2-ms tokens the grants-ahead test counts on. Without the privilege it runs as before.
    sched_param p{};
    p.sched_priority = 10;
    (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    serve();
  });
  return true;
}

void GrantServer::stop() {
  if (!thread_.joinable()) return;
  char c = 'q';
  (void)!::write(wake_[1], &c, 1);
  thread_.join();
  for (int fd : sessions_) ::close(fd);
  sessions_.clear();
  ::close(listen_fd_);
  ::close(wake_[0]);
  ::close(wake_[1]);
  ::unlink(path_.c_str());
}

void GrantServer::release() {
  std::lock_guard<std::mutex> l(m_);
  released_ = true;
  grant_pending_locked();
}

GrantServer::Seen GrantServer::seen() {
  std::lock_guard<std::mutex> l(m_);
  return seen_;
}

static void send_msg(int fd, const engine::Message& m) {
  std::vector<std::uint8_t> out;
  if (engine::encode(m, out)) (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
}

void GrantServer::grant_pending_locked() {
  std::vector<Pending> later;
  for (Pending& p : pending_) {
    const auto size = static_cast<std::uint32_t>(p.work.units.size());
    while (p.next < size && !(in_order_ && outstanding_.count(p.fd))) {
      engine::GrantMsg g;
      g.grant_id = next_grant_++;
      g.work_id = p.work.work_id;
      g.first = p.next;
      g.count = per_grant_ ? std::min(per_grant_, size - p.next) : size - p.next;
      g.successor = p.next > 0;
      g.start_by_ns = engine::monotonic_ns() + 60'000'000'000ull;
      g.sent_ns = engine::monotonic_ns();
      if (hello_of_.count(p.fd) && hello_of_[p.fd] >= suggest_from_)
        g.chunk_bytes = suggest_alternate_ && g.grant_id % 2 ? 2 * suggest_grant_ : suggest_grant_;
      send_msg(p.fd, g);
      seen_.grants.push_back(g);
      seen_.grant_sent_ns.push_back(g.sent_ns);
      if (in_order_) outstanding_[p.fd] = g.grant_id;
      p.next += g.count;
    }
    if (p.next < size) later.push_back(std::move(p));
  }
  pending_ = std::move(later);
}

void GrantServer::handle(int fd, const engine::Message& m) {
  std::lock_guard<std::mutex> l(m_);
  if (auto* h = std::get_if<engine::Hello>(&m)) {
    hello_of_[fd] = seen_.hellos.size();
    seen_.hellos.push_back(*h);
    engine::Welcome w{static_cast<std::uint32_t>(seen_.hellos.size()), "test-grant-server", 0, fail_};
    if (seen_.hellos.size() > suggest_from_) w.chunk_bytes = suggest_welcome_;
    send_msg(fd, w);
  } else if (auto* w = std::get_if<engine::WorkMsg>(&m)) {
    seen_.works.push_back(*w);
    seen_.work_hello.push_back(hello_of_.count(fd) ? hello_of_[fd] : SIZE_MAX);
    if (seen_.works.size() <= stall_works_) return;  // never granted
    pending_.push_back({fd, *w, 0});
    if (decide_us_) std::this_thread::sleep_for(std::chrono::microseconds(decide_us_));
    if (mode_ == Mode::kAuto || released_) grant_pending_locked();
  } else if (auto* st = std::get_if<engine::StartMsg>(&m)) {
    ++seen_.starts;
    auto o = outstanding_.find(fd);
    if (o != outstanding_.end() && o->second == st->grant_id) {
      outstanding_.erase(o);
      if (mode_ == Mode::kAuto || released_) grant_pending_locked();
    }
  } else if (auto* d = std::get_if<engine::DoneMsg>(&m)) {
    seen_.dones.push_back(*d);
  } else if (auto* x = std::get_if<engine::DiscardMsg>(&m)) {
    // The agent refunds a discarded grant and grants its units again.
    ++seen_.discards;
    for (std::size_t i = seen_.grants.size(); i-- > 0;) {  // a recent one
      if (seen_.grants[i].grant_id != x->grant_id) continue;
      engine::GrantMsg g = seen_.grants[i];
      g.grant_id = next_grant_++;
      g.sent_ns = engine::monotonic_ns();
      send_msg(fd, g);
      seen_.grants.push_back(g);
      seen_.grant_sent_ns.push_back(g.sent_ns);
      if (in_order_) outstanding_[fd] = g.grant_id;
      break;
    }
  } else if (std::get_if<engine::ByeMsg>(&m)) {
    ++seen_.byes;
  }
}

void GrantServer::serve() {
  std::vector<std::uint8_t> buf(engine::kMaxMessageBytes);
  for (;;) {
    std::vector<pollfd> p{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (int fd : sessions_) p.push_back({fd, POLLIN, 0});
    if (::poll(p.data(), p.size(), -1) < 0) continue;
    if (p[0].revents) return;
    if (p[1].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) sessions_.push_back(fd);
    }
    for (std::size_t i = 2; i < p.size(); ++i) {
      if (!p[i].revents) continue;
      const int fd = p[i].fd;
      ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0) {
        ::close(fd);
        std::erase(sessions_, fd);
        std::lock_guard<std::mutex> l(m_);
        std::erase_if(pending_, [&](const Pending& pw) { return pw.fd == fd; });
        outstanding_.erase(fd);
        continue;
      }
      auto m = engine::decode(std::span<const std::uint8_t>(buf.data(), static_cast<std::size_t>(n)));
      if (m) handle(fd, *m);
    }
  }
}

}  // namespace ripple::testing
