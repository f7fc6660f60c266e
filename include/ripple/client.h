// Engine side of the engine protocol (protocol.h): what an inference process links (the
// stand-in test engine, the LD_PRELOAD interposer in cuhooks/). Blocking,
// single-threaded, one session per process; no threads of its own.
//
//   auto c = Client::connect(path, hello, 1000);   // hello -> welcome
//   c->announce({id, 0, units});                   // a forward pass
//   for (first = 0; first < n; first += g.count) {
//     auto g = c->acquire(id, first, timeout);     // cached successor or a new grant
//     c->started(*g); run g.count units; c->done(*g, gpu_ns);
//   }
// acquire() applies the pipelining check of paper §4.3: a successor delivered ahead is
// used only if its work identity is the engine's position and start_by has not passed;
// otherwise it is handed back (Discard) and the next grant is awaited. A grant delivered
// ahead for a CPU release (not_before_ns) is held until that release: acquire() returns
// it no earlier, and keeps it cached if its own timeout ends first.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "ripple/clock.h"
#include "ripple/protocol.h"
#include "ripple/status.h"

namespace ripple::engine {

// Error codes of Client calls besides negative errno.
inline constexpr int kErrTimeout = -110;   // -ETIMEDOUT
inline constexpr int kErrAgentGone = -104; // -ECONNRESET: EOF or Bye from the agent
inline constexpr int kErrNotAgent = -13;   // -EACCES: the socket's owner is not the agent

// Who the engine takes for its agent. With `check` on, the process that accepted the
// connection (SO_PEERCRED of the connected socket) must run as root or as `agent_uid`:
// anyone else bound at the path (a stale socket's directory writable by others) is no
// agent, and connect() fails with kErrNotAgent before the Hello is sent.
struct AgentCheck {
  bool check = false;
  uid_t agent_uid = 0;
};

class Client {
 public:
  // Sends the Hello and waits at most timeout_ms for the Welcome. The connect itself never
  // waits: a listener whose backlog is full (an agent that stopped accepting) fails it at
  // once (-EAGAIN), so a call returns within about timeout_ms whatever the agent does.
  static Result<std::unique_ptr<Client>> connect(const std::string& path, const Hello& hello, int timeout_ms,
                                                 const AgentCheck& agent = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  int fd() const { return fd_; }
  const Welcome& welcome() const { return welcome_; }
  Status announce(const WorkMsg& work);
  Result<GrantMsg> acquire(std::uint64_t work, std::uint32_t first, int timeout_ms);
  Status started(const GrantMsg& g);
  Status done(const GrantMsg& g, std::uint64_t measured_ns);
  // Ends the session (also done by the destructor with kNormal).
  void bye(ByeReason reason, const std::string& text);
  // Why the agent ended the session, once acquire() returned kErrAgentGone.
  const ByeMsg& agent_bye() const { return agent_bye_; }
  std::uint64_t discarded() const { return discarded_; }
  // Times acquire() held a usable grant for its CPU release (not_before_ns).
  std::uint64_t held_for_release() const { return held_; }
  // The not_before_ns of the grant the last acquire() held (0: it held none): a caller
  // that waits outside acquire() looks again then, not later.
  std::uint64_t hold_until_ns() const { return hold_until_ns_; }
  // Busy-polls the socket this long before sleeping in poll() (0: never spin). For an
  // engine thread with a core of its own: trades CPU for the wake-up latency.
  void set_spin_ns(std::uint64_t ns) { spin_ns_ = ns; }
  // Grant round trip of the last acquire that had to wait: agent send -> engine receive.
  std::uint64_t last_delivery_ns() const { return last_delivery_ns_; }

 private:
  explicit Client(int fd) : fd_(fd) {}
  Status send(const Message& m);
  // Receives one message within timeout_ms (-1: forever).
  Result<Message> receive(int timeout_ms);
  // Receives one message before CLOCK_MONOTONIC `until_ns` (0: forever).
  Result<Message> receive_until(std::uint64_t until_ns);

  int fd_ = -1;
  Welcome welcome_;
  std::deque<GrantMsg> cache_;
  std::vector<std::uint8_t> buf_;
  ByeMsg agent_bye_;
  bool open_ = true;
  std::uint64_t discarded_ = 0;
  std::uint64_t held_ = 0, held_id_ = 0;
  std::uint64_t hold_until_ns_ = 0;
  std::uint64_t spin_ns_ = 0;
  std::uint64_t last_delivery_ns_ = 0;
};

// engine::monotonic_ns, as the interposer and the tests name it.
using ripple::monotonic_ns;

}  // namespace ripple::engine
