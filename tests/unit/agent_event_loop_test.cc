// Unit tests of the daemon's event loop (agent/daemon/event_loop.h) on eventfds: what
// it hands back is what was armed, once per arming, a cancelled poll comes back
// cancelled, and a wait with nothing ready ends at its timer.
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "agent/daemon/event_loop.h"

namespace ripple::daemon {
namespace {

constexpr Nanos kMs = 1'000'000;

// A loop, or the test is skipped where the kernel interface is absent: qemu-user (the arm64
// suites of make check, run with RIPPLE_FOREIGN_ARCH set by tests/run-suites) does not
// implement io_uring (ENOSYS). Natively, and on any other failure, it fails.
#define LOOP_OR_SKIP(loop, entries, spin)                                               \
  auto loop = EventLoop::create(entries, spin);                                         \
  if (!loop.ok() && loop.error().code == -ENOSYS && getenv("RIPPLE_FOREIGN_ARCH") &&   \
      *getenv("RIPPLE_FOREIGN_ARCH"))                                                   \
    GTEST_SKIP() << "no io_uring here: " << loop.error().message; \
  ASSERT_TRUE(loop.ok()) << loop.error().message

struct EventFd {
  EventFd() : fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventFd() { ::close(fd); }
  void signal() const {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(fd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
  int fd;
};

// Tests that a tag and a session id survive the round trip through user_data, up to the
// largest id.
TEST(EventLoop, UserDataCarriesTagAndId) {
  constexpr std::uint64_t ud = user_data(Tag::kEngine, 12345);
  EXPECT_EQ(tag_of(ud), Tag::kEngine);
  EXPECT_EQ(id_of(ud), 12345u);
  EXPECT_EQ(tag_of(user_data(Tag::kControl, kMaxId)), Tag::kControl);
  EXPECT_EQ(id_of(user_data(Tag::kControl, kMaxId)), kMaxId);
  EXPECT_NE(user_data(Tag::kSignal), 0u);
}

// Tests that a readable descriptor comes back with its user_data, once per arming.
TEST(EventLoop, ArmedPollCompletesOnce) {
  LOOP_OR_SKIP(loop, 8, 0);
  EventFd a, b;
  (*loop)->arm(a.fd, user_data(Tag::kEngine, 1));
  (*loop)->arm(b.fd, user_data(Tag::kEngine, 2));
  b.signal();
  const auto& done = (*loop)->wait(monotonic_now() + 1000 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].user_data, user_data(Tag::kEngine, 2));
  EXPECT_GT(done[0].res, 0);
  // Still readable, but not armed again: nothing comes back before the timer.
  EXPECT_TRUE((*loop)->wait(monotonic_now() + 20 * kMs).empty());
}

// Tests that a wait with nothing ready returns at its timer, not before.
TEST(EventLoop, WaitEndsAtTheTimer) {
  LOOP_OR_SKIP(loop, 8, 0);
  const Nanos start = monotonic_now();
  EXPECT_TRUE((*loop)->wait(start + 30 * kMs).empty());
  EXPECT_GE(monotonic_now() - start, 29 * kMs);
}

// Tests that a cancelled poll comes back as -ECANCELED, and the removal request itself
// not at all.
TEST(EventLoop, CancelledPollComesBackCancelled) {
  LOOP_OR_SKIP(loop, 8, 0);
  EventFd a;
  (*loop)->arm(a.fd, user_data(Tag::kControl, 9));
  (void)(*loop)->wait(monotonic_now() + 1 * kMs);  // submitted
  (*loop)->cancel(user_data(Tag::kControl, 9));
  const auto& done = (*loop)->wait(monotonic_now() + 1000 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].user_data, user_data(Tag::kControl, 9));
  EXPECT_EQ(done[0].res, -ECANCELED);
}

// Tests that with agent.spin set, a completion arriving while the loop busy-polls after
// a turn with events is found without waiting for the timer.
TEST(EventLoop, SpinFindsTheNextCompletion) {
  LOOP_OR_SKIP(loop, 8, 200 * kMs);
  EventFd a, b;
  (*loop)->arm(a.fd, user_data(Tag::kEngine, 1));
  a.signal();
  ASSERT_EQ((*loop)->wait(monotonic_now() + 1000 * kMs).size(), 1u);  // starts the spin
  (*loop)->arm(b.fd, user_data(Tag::kEngine, 2));
  b.signal();
  const Nanos start = monotonic_now();
  const auto& done = (*loop)->wait(start + 5000 * kMs);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].user_data, user_data(Tag::kEngine, 2));
  EXPECT_LT(monotonic_now() - start, 1000 * kMs);
}

}  // namespace
}  // namespace ripple::daemon
