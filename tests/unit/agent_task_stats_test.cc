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

}  // namespace
}  // namespace ripple::daemon
