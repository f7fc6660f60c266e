// Unit tests of the task statistics (agent/daemon/task_stats.h): tracer job events
// turned into admission calls and per-task counts, the contract windows, and the sweep
// that closes a job whose events were lost, with hand-made events and an injected
// job_open() instead of the BPF tracer.
#include <gtest/gtest.h>

#include "agent/daemon/task_stats.h"
#include "tests/unit/agent_daemon_fixture.h"

namespace ripple::daemon {
namespace {

using testing::DaemonFixture;
using testing::kMs;
using tracer::JobEvent;
using tracer::JobEventKind;

JobEvent release(std::uint64_t seq, Nanos at, pid_t tid = 42) {
  JobEvent ev{};
  ev.kind = JobEventKind::kRelease;
  ev.pt = 0;
  ev.tid = tid;
  ev.seq = seq;
  ev.ts_ns = ev.release_ns = static_cast<std::uint64_t>(at);
  return ev;
}

JobEvent complete(std::uint64_t seq, Nanos released, Nanos response) {
  JobEvent ev = release(seq, released);
  ev.kind = JobEventKind::kComplete;
  ev.ts_ns = static_cast<std::uint64_t>(released + response);
  ev.response_ns = static_cast<std::uint64_t>(response);
  ev.deadline_miss = response > 70 * kMs;  // the tracer's verdict against the task's deadline
  return ev;
}

// Tests that a release prices the job (its allowance shown), and that completions count
// jobs and misses against the task's 70 ms deadline, in the current window.
TEST(TaskStatistics, ReleaseAndCompletionCountJobsAndMisses) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  EXPECT_TRUE(ts.on_event(release(1, 0), 0));
  EXPECT_EQ(ts.stats(0).releases, 1u);
  EXPECT_GT(ts.stats(0).last_allowance, 0);
  EXPECT_NE(f.ledger.job(0, 1), nullptr);
  EXPECT_TRUE(ts.holding());
  EXPECT_TRUE(ts.on_event(complete(1, 0, 40 * kMs), 40 * kMs));
  EXPECT_FALSE(ts.holding());
  EXPECT_TRUE(ts.on_event(release(2, 100 * kMs), 100 * kMs));
  EXPECT_TRUE(ts.on_event(complete(2, 100 * kMs, 90 * kMs), 190 * kMs));  // past 70 ms
  EXPECT_EQ(ts.stats(0).jobs, 2u);
  EXPECT_EQ(ts.stats(0).misses, 1u);
  EXPECT_EQ(ts.stats(0).last_response, 90 * kMs);
  EXPECT_EQ(ts.window_counts(0, 200 * kMs), std::make_pair(std::uint64_t{2}, std::uint64_t{1}));
  EXPECT_EQ(ts.events(), 4u);
}

// Tests that a completion whose release was never seen (the agent started mid-job)
// still counts, with the tracer's own deadline verdict.
TEST(TaskStatistics, CompletionWithoutReleaseTakesTracerVerdict) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  JobEvent ev = complete(9, 0, 30 * kMs);
  ev.deadline_miss = true;  // the kernel's deadline may differ from the ledger's: it is taken
  EXPECT_TRUE(ts.on_event(ev, 30 * kMs));
  EXPECT_EQ(ts.stats(0).jobs, 1u);
  EXPECT_EQ(ts.stats(0).misses, 1u);
}

// Tests that a window that has moved on reads as empty, that the window before is kept
// when the next one is entered directly, and that a gap of windows forgets it.
TEST(TaskStatistics, ContractWindowsRollOver) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  ts.on_event(complete(1, 0, 90 * kMs), 90 * kMs);
  EXPECT_EQ(ts.window_counts(0, kWindow + 1), std::make_pair(std::uint64_t{0}, std::uint64_t{0}));
  ts.on_event(complete(2, kWindow, 10 * kMs), kWindow + 10 * kMs);
  EXPECT_EQ(ts.stats(0).prev_window_jobs, 1u);
  EXPECT_EQ(ts.stats(0).prev_window_misses, 1u);
  EXPECT_EQ(ts.stats(0).window_jobs, 1u);
  ts.on_event(complete(3, 3 * kWindow, 10 * kMs), 3 * kWindow + 10 * kMs);
  EXPECT_EQ(ts.stats(0).prev_window_jobs, 0u);
  EXPECT_EQ(ts.stats(0).window, 3);
}

// Tests that an abort closes the job as unfinished and that an event of an unknown task
// is counted and ignored (no scheduling point).
TEST(TaskStatistics, AbortIsUnfinishedAndUnknownTaskIgnored) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  ts.on_event(release(1, 0), 0);
  JobEvent abort = release(1, 0);
  abort.kind = JobEventKind::kAbort;
  EXPECT_TRUE(ts.on_event(abort, 5 * kMs));
  EXPECT_EQ(ts.stats(0).unfinished, 1u);
  EXPECT_EQ(ts.jobs_aborted(), 1u);
  EXPECT_EQ(f.ledger.job(0, 1), nullptr);
  EXPECT_FALSE(ts.holding());
  JobEvent stray = release(1, 0);
  stray.pt = 5;
  EXPECT_FALSE(ts.on_event(stray, 6 * kMs));
  EXPECT_EQ(ts.events(), 3u);
}

// Tests that the sweep closes a held job only after two sweeps in a row find it closed
// in the kernel, that an open look resets the count, and that it asks for the job's
// own thread and sequence number.
TEST(TaskStatistics, SweepReapsAJobClosedTwiceInARow) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  ts.on_event(release(1, 0, 77), 0);
  bool open = false;
  pid_t asked_tid = 0;
  std::uint64_t asked_seq = 0;
  auto job_open = [&](pid_t tid, std::uint64_t seq) {
    asked_tid = tid;
    asked_seq = seq;
    return open;
  };
  EXPECT_FALSE(ts.sweep(1 * kMs, job_open));
  EXPECT_EQ(asked_tid, 77);
  EXPECT_EQ(asked_seq, 1u);
  open = true;
  EXPECT_FALSE(ts.sweep(2 * kMs, job_open));  // open again: the count starts over
  open = false;
  EXPECT_FALSE(ts.sweep(3 * kMs, job_open));
  EXPECT_NE(f.ledger.job(0, 1), nullptr);
  EXPECT_TRUE(ts.sweep(4 * kMs, job_open));
  EXPECT_EQ(f.ledger.job(0, 1), nullptr);
  EXPECT_EQ(ts.jobs_reaped(), 1u);
  EXPECT_EQ(ts.stats(0).unfinished, 1u);
  EXPECT_FALSE(ts.holding());
}

// Tests the late-start rule (release_lag.h): a release after a real sleep is on time and
// restarts the thread's chain; one whose wait did not sleep was released a period after
// the thread's last release, or at its start if that is earlier; each thread has its own
// chain; an unknown thread's first no-wake-up release is on time; a forgotten thread
// starts over; stale threads are dropped once the table is large.
TEST(ReleaseLag, OverrunReleasesAreDatedFromThePeriod) {
  ReleaseLag lag(100 * kMs);
  EXPECT_EQ(lag.on_release(1, 0, false), 0);
  EXPECT_EQ(lag.on_release(1, 130 * kMs, true), 30 * kMs);   // due at 100
  EXPECT_EQ(lag.on_release(1, 215 * kMs, true), 15 * kMs);   // due at 200 (100 + 100)
  EXPECT_EQ(lag.on_release(1, 250 * kMs, true), 0);          // due at 300: at most its start
  EXPECT_EQ(lag.on_release(1, 400 * kMs, false), 0);         // slept: on time
  EXPECT_EQ(lag.on_release(2, 410 * kMs, true), 0);          // a thread not seen before
  EXPECT_EQ(lag.on_release(2, 520 * kMs, true), 10 * kMs);   // its own chain: due at 510
  EXPECT_EQ(lag.on_release(1, 540 * kMs, true), 40 * kMs);   // thread 1's: due at 500
  lag.forget(1);
  EXPECT_EQ(lag.on_release(1, 700 * kMs, true), 0);
  // A wake-up 40 us after the wait began (an expired timer's) did not sleep either;
  // one 5 ms after it did.
  EXPECT_EQ(lag.short_wait(), 500'000);  // min(500 us, T / 10)
  lag.on_complete(1, 840 * kMs);
  EXPECT_EQ(lag.on_release(1, 840 * kMs + 40'000, false), 40 * kMs + 40'000);  // due at 800
  lag.on_complete(1, 850 * kMs);
  EXPECT_EQ(lag.on_release(1, 855 * kMs, false), 0);
  EXPECT_EQ(ReleaseLag(kMs).short_wait(), 100'000);
  for (pid_t t = 100; t < 100 + static_cast<pid_t>(ReleaseLag::kPruneAbove); ++t) lag.on_release(t, 900 * kMs, false);
  EXPECT_GE(lag.threads(), ReleaseLag::kPruneAbove);
  const Nanos later = 900 * kMs + ReleaseLag::kForgetPeriods * 100 * kMs + 1;
  lag.on_release(9999, later, false);
  EXPECT_EQ(lag.threads(), 1u);
}

// Tests that a job released by a wait that did not sleep, behind an overrun, reaches the
// ledger with its lag: priced on what is left of its deadline, its miss counted from its
// release (the task's own view), and counted in the task's late starts.
TEST(TaskStatistics, ALateStartCountsFromItsRelease) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  ts.on_event(release(1, 0), 0);
  ts.on_event(complete(1, 0, 140 * kMs), 140 * kMs);  // overran its 100 ms period
  JobEvent late = release(2, 140 * kMs);
  late.no_wakeup = true;
  ts.on_event(late, 140 * kMs);
  const auto* job = f.ledger.job(0, 2);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->lag, 40 * kMs);  // released at 100
  EXPECT_EQ(job->allowance, 0);   // 70 - 40 ms leave nothing past its own 40 ms run
  EXPECT_EQ(ts.stats(0).late_starts, 1u);
  EXPECT_EQ(ts.stats(0).max_lag, 40 * kMs);
  // 35 ms of its own: within 70 ms of its start, but 75 ms after its release.
  JobEvent done = complete(2, 140 * kMs, 35 * kMs);
  done.deadline_miss = false;  // the kernel counts from the late start
  ts.on_event(done, 175 * kMs);
  EXPECT_EQ(ts.stats(0).misses, 2u);
  // Linux's way: the expired timer wakes the thread 40 us into its wait (no_wakeup false).
  ts.on_event(release(3, 200 * kMs), 200 * kMs);  // slept 25 ms: on time
  ts.on_event(complete(3, 200 * kMs, 130 * kMs), 330 * kMs);  // overran again
  ts.on_event(release(4, 330 * kMs + 40'000), 330 * kMs + 40'000);
  ASSERT_NE(f.ledger.job(0, 4), nullptr);
  EXPECT_EQ(f.ledger.job(0, 4)->lag, 30 * kMs + 40'000);  // due at 300
  EXPECT_EQ(ts.stats(0).late_starts, 2u);
}

// Tests the count of untouched jobs that left the conformal level alone: none with
// pricing.untouched_level = true (App. C: every job moves the level), each job no grant
// reached with false (the default).
TEST(TaskStatistics, UntouchedJobsThatLeaveTheLevelAreCounted) {
  for (const bool level : {true, false}) {
    pricing::Params p = testing::params();
    p.untouched_level = level;
    DaemonFixture f(p);
    TaskStatistics ts(*f.adm, 1, 0);
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      const Nanos at = static_cast<Nanos>(seq) * 100 * kMs;
      ts.on_event(release(seq, at), at);
      ts.on_event(complete(seq, at, 40 * kMs), at + 40 * kMs);
    }
    EXPECT_EQ(ts.stats(0).jobs, 3u);
    EXPECT_EQ(ts.stats(0).level_skips, level ? 0u : 3u) << "untouched_level = " << level;
  }
}

// Tests the misses no GPU byte was admitted into: a job with nothing charged that misses
// counts (whole run and window), one charged a grant's bytes does not, a completion whose
// release was never seen counts neither way, and a new window starts from 0.
TEST(TaskStatistics, MissesNoGrantWasAdmittedIntoAreCounted) {
  DaemonFixture f;
  TaskStatistics ts(*f.adm, 1, 0);
  ts.on_event(release(1, 0), 0);
  ts.on_event(complete(1, 0, 90 * kMs), 90 * kMs);  // missed, nothing charged
  ts.on_event(release(2, 100 * kMs), 100 * kMs);
  const auto grant = f.ledger.charge(0, 64 << 20, 150 * kMs, 100 * kMs);  // 64 MiB while job 2 runs
  ASSERT_NE(grant, 0u);
  EXPECT_EQ(f.ledger.job(0, 2)->charged, pricing::Bytes{64 << 20});
  ts.on_event(complete(2, 100 * kMs, 90 * kMs), 190 * kMs);  // missed, with traffic
  ASSERT_TRUE(f.ledger.grant_executed(grant));  // done: not in flight at the next release
  ts.on_event(release(3, 200 * kMs), 200 * kMs);
  ts.on_event(complete(3, 200 * kMs, 30 * kMs), 230 * kMs);  // met, nothing charged
  JobEvent unseen = complete(9, 300 * kMs, 90 * kMs);        // its release was never seen
  unseen.deadline_miss = true;
  ts.on_event(unseen, 390 * kMs);
  const TaskStats& s = ts.stats(0);
  EXPECT_EQ(s.jobs, 4u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.untouched_jobs, 2u);
  EXPECT_EQ(s.untouched_misses, 1u);
  EXPECT_EQ(ts.window_untouched_misses(0, 400 * kMs), 1u);
  EXPECT_EQ(ts.window_untouched_misses(0, kWindow), 0u);  // the window has moved on
  ts.on_event(release(10, kWindow), kWindow);
  ts.on_event(complete(10, kWindow, 90 * kMs), kWindow + 90 * kMs);
  EXPECT_EQ(ts.window_untouched_misses(0, kWindow + 100 * kMs), 1u);
  EXPECT_EQ(ts.stats(0).untouched_misses, 2u);
}

}  // namespace
}  // namespace ripple::daemon
