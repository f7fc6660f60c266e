// Unit tests of the daemon's pure guards (agent/daemon/limits.h): the log throttle, the
// bounded engine listing of the status reply, process identity by start time.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "agent/daemon/limits.h"

namespace ripple::daemon {
namespace {

constexpr Nanos kMs = 1'000'000;

// Tests that a flood of one event is said once per interval, each time with the count
// of those not said since, and that every event is counted.
TEST(AgentLimits, ThrottleSaysOncePerIntervalAndCountsTheRest) {
  Throttle t(1000 * kMs);
  EXPECT_TRUE(t.note(0));
  EXPECT_EQ(t.suppressed(), 0u);
  int said = 0;
  for (Nanos now = 1; now < 1000 * kMs; now += kMs / 10) said += t.note(now);
  EXPECT_EQ(said, 0);
  EXPECT_TRUE(t.note(1000 * kMs));
  EXPECT_EQ(t.suppressed(), 10000u);
  EXPECT_EQ(t.total(), 10002u);
  EXPECT_FALSE(t.note(1500 * kMs));
  EXPECT_TRUE(t.note(5000 * kMs));  // a quiet gap: said at once
  EXPECT_EQ(t.suppressed(), 1u);
}

// Tests that the status listing keeps every connected engine up to the cap, fills the
// rest with the most recently gone ones, and never exceeds the cap.
TEST(AgentLimits, ListsConnectedEnginesFirstWithinTheCap) {
  std::vector<bool> c(10000, false);
  c[3] = c[9000] = true;
  const auto l = listed_engines(c, 5);
  EXPECT_EQ(l, (std::vector<std::size_t>{3, 9000, 9999, 9998, 9997}));
  std::vector<bool> all(100, true);
  EXPECT_EQ(listed_engines(all, 64).size(), 64u);
  EXPECT_TRUE(listed_engines({}, 64).empty());
}

// Tests that a process's start time is read while it lives and not once it is gone
// (a zombie, then reaped), so a pid-matched task that exits is noticed.
TEST(AgentLimits, ProcessStartTimeEndsWithTheProcess) {
  ASSERT_TRUE(process_start_time(getpid()).has_value());
  const pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  EXPECT_TRUE(process_start_time(child).has_value());
  kill(child, SIGKILL);
  siginfo_t si{};
  waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOWAIT);  // a zombie now
  EXPECT_FALSE(process_start_time(child).has_value());
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_start_time(child).has_value());
}

}  // namespace
}  // namespace ripple::daemon
