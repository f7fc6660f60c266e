// A test-only grant server — a TEST DOUBLE of ripple-agent's engine side, not a
// scheduler. It speaks the real engine protocol (include/ripple/protocol.h encode/decode)
// on a SOCK_SEQPACKET socket and grants every announced work whole, at once ("auto") or
// only after release() ("hold"), recording what each engine said so the interposer's
// tests can check it. A discarded grant is granted again at once, as the real agent does
// (it refunds the grant and re-queues its units): an engine that discards a grant it
// will never take loops, and the tests see it in `discards`.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ripple/protocol.h"

namespace ripple::testing {

class GrantServer {
 public:
  enum class Mode { kAuto, kHold };
  struct Seen {
    std::vector<engine::Hello> hellos;
    std::vector<engine::WorkMsg> works;
    std::vector<std::size_t> work_hello;  // per work: the index in hellos of its session's Hello
    std::vector<engine::GrantMsg> grants;
    std::vector<std::uint64_t> grant_sent_ns;
    std::vector<engine::DoneMsg> dones;
    std::uint64_t starts = 0, byes = 0, discards = 0;
  };

  explicit GrantServer(std::string path, Mode mode = Mode::kAuto,
                       engine::FailMode fail = engine::FailMode::kOpen);
  ~GrantServer();
  GrantServer(const GrantServer&) = delete;
  GrantServer& operator=(const GrantServer&) = delete;

  bool start();  // binds and serves on a thread
  void stop();   // closes the socket and every session (an agent going away)
  // Hold mode: grant every work announced so far (and later ones at once).
  void release();
  // The agent's queue: a session's works are granted one at a time, in order, each once
  // the grant before it was started (a discarded grant stays the one outstanding). Call
  // before start().
  void set_in_order(bool on) { in_order_ = on; }
  // Each grant covers at most `k` units of its work (0: the whole work). In order, the
  // next one is sent once the one before was started; otherwise all at once, the later
  // ones delivered ahead of their turn (successors). Call before start().
  void set_units_per_grant(std::uint32_t k) { per_grant_ = k; }
  // The chunk size the Welcome and the grants suggest (the agent's
  // pricing::suggest_chunk_bytes; 0: none) to the sessions after the first `from_session`
  // ones; `alternate`: every other grant suggests twice `in_grants` (allowances at a
  // power-of-two boundary). Call before start().
  void set_chunk_suggestion(std::uint64_t in_welcome, std::uint64_t in_grants, std::size_t from_session = 0,
                            bool alternate = false) {
    suggest_welcome_ = in_welcome;
    suggest_grant_ = in_grants;
    suggest_from_ = from_session;
    suggest_alternate_ = alternate;
  }
  // Each announced work is granted this long after it came (an agent's decision and
  // delivery, the announce -> grant round trip; the server thread sleeps). Call before start().
  void set_decide_us(std::uint32_t us) { decide_us_ = us; }
  // The first `n` works announced are never granted (an agent stalled on them: the
  // engine's grant timeout ends that session); later works are granted as the mode says.
  // Call before start().
  void set_stall_first_works(std::size_t n) { stall_works_ = n; }
  Seen seen();

 private:
  void serve();
  void handle(int fd, const engine::Message& m);
  void grant_pending_locked();

  std::string path_;
  Mode mode_;
  engine::FailMode fail_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  std::mutex m_;
  Seen seen_;
  struct Pending {
    int fd;
    engine::WorkMsg work;
    std::uint32_t next = 0;  // its first unit not yet granted
  };
  std::vector<Pending> pending_;
  std::uint32_t per_grant_ = 0;
  std::uint32_t decide_us_ = 0;
  std::size_t stall_works_ = 0;
  std::uint64_t suggest_welcome_ = 0, suggest_grant_ = 0;
  bool suggest_alternate_ = false;
  std::size_t suggest_from_ = 0;
  std::vector<int> sessions_;
  std::map<int, std::size_t> hello_of_;  // session fd -> its Hello in seen_.hellos
  bool in_order_ = false;
  std::map<int, std::uint64_t> outstanding_;  // in order: session fd -> its grant not yet started
  bool released_ = false;
  std::uint64_t next_grant_ = 1;
};

}  // namespace ripple::testing
