// The daemon's one event loop (agent.h): one-shot poll requests on io_uring, each
// tagged with what it watches, and one wait per turn that ends at the first completion
// or at the loop's next timer. After a turn with completions the loop busy-polls its
// completion queue for agent.spin_us before sleeping: the kernel posts a poll completion
// without waking a spinning loop, so an engine's next message costs no wake-up and, once
// found, no io_uring_enter either. It knows nothing of sessions or admission: the agent
// dispatches what comes back by tag. tests/unit/agent_event_loop_test.cc drives it with
// eventfds.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "agent/admission/types.h"
#include "ripple/status.h"

struct io_uring;
struct io_uring_sqe;

namespace ripple::daemon {

using admission::Nanos;

// CLOCK_MONOTONIC in ns: the clock of the loop, the tracer's events and the engines.
Nanos monotonic_now();

// io_uring user_data: what completed. Sessions are named by a never-reused id, so a late
// completion for a closed session is recognised and dropped. 0 is never a poll of ours.
enum class Tag : std::uint64_t { kSignal = 1, kRing = 2, kEngineListen = 3, kControlListen = 4, kEngine = 5, kControl = 6 };
inline constexpr std::uint64_t kMaxId = (1ULL << 56) - 1;
constexpr std::uint64_t user_data(Tag tag, std::uint64_t id = 0) { return (static_cast<std::uint64_t>(tag) << 56) | id; }
constexpr Tag tag_of(std::uint64_t ud) { return static_cast<Tag>(ud >> 56); }
constexpr std::uint64_t id_of(std::uint64_t ud) { return ud & kMaxId; }

class EventLoop {
 public:
  struct Completion {
    std::uint64_t user_data;
    int res;  // the poll's result: POLLIN bits, or -ECANCELED once cancel()ed
  };

  // A ring of `entries` submissions; `spin` is agent.spin (0: never busy-poll).
  static Result<std::unique_ptr<EventLoop>> create(unsigned entries, Nanos spin);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Watches `fd` until it is readable, once; the completion carries `ud` (not 0).
  void arm(int fd, std::uint64_t ud);
  // Withdraws the poll armed with `ud` (its completion comes back as -ECANCELED).
  void cancel(std::uint64_t ud);
  // Submits what was armed and waits for completions until `until` (kNever: until there
  // is one), after busy-polling while within agent.spin of the last turn that had some.
  // The completions of this turn, in order; valid until the next wait().
  const std::vector<Completion>& wait(Nanos until);

 private:
  explicit EventLoop(Nanos spin);
  io_uring_sqe* sqe();

  std::unique_ptr<io_uring> ring_;
  bool ring_ok_ = false;
  Nanos spin_ = 0;
  Nanos spin_until_ = 0;  // busy-poll the completion queue until then
  std::vector<Completion> ready_;
};

}  // namespace ripple::daemon
