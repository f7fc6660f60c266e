// The interposer's tests, grant timing (one binary, cuhook_test; cuhook_fixture.h): what
// the watcher reports for a grant's GPU time and the event pairs it times grants with,
// per context (two GPUs, contexts that end, streams destroyed inside a grant).
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ripple/protocol.h"
#include "tests/cuhooks/cuhook_fixture.h"

namespace ripple::testing {
namespace {

// Tests that a grant's GPU time is reported within the protocol's bound even when its
// events span longer (a grant held in hand while the engine idled for hours): a Done past
// it is malformed, so the agent dropped the Done (and the real agent the whole session).
TEST_F(CuhookTest, ReportedGrantTimeStaysWithinTheProtocolBound) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  // The fake times every event pair at 4000 s, past the hour the protocol allows.
  Outcome r = run({"direct", "copies", "3", "2097152"}, {{"FAKE_CUDA_ELAPSED_MS", "4000000"}, {"RIPPLE_LEARN", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  const GrantServer::Seen seen = srv.seen();
  json st = stats_of(r);
  ASSERT_EQ(seen.grants.size(), 3u);
  // The server decodes each Done as the agent does: one it refuses is not seen.
  EXPECT_EQ(seen.dones.size(), 3u) << r.err;
  EXPECT_EQ(st.value("done_reported", 0), 3);
  for (const auto& d : seen.dones) EXPECT_EQ(d.measured_ns, engine::kMaxDurationNs);
}

// Tests that an event the driver failed to record goes back to the hook's pool: with every
// record failing, 20 grants take one or two events, not one more a grant. (With only every
// second record failing, how many events are in use at once depends on how far the
// watcher lags the grants, which a loaded or sanitized host stretches: CI's sanitized run
// once saw 4 where a quiet one sees 3, so that case asserts nothing a mechanism bounds.)
TEST_F(CuhookTest, EventsThatFailedToRecordAreReused) {
  clear_outputs();
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "copies", "20", "2097152"}, {{"FAKE_CUDA_FAIL_EVENT_RECORD", "1"}, {"RIPPLE_LEARN", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  ASSERT_EQ(stats_of(r).value("grants", 0), 20);
  // No record succeeds, so no grant holds an event past its own failed record (a start
  // event that failed is given back at once, and no end event is taken without a start).
  EXPECT_LE(fake_queries(r)["cuEventCreate"], 2u);
}

// Tests that a process driving two GPUs has every grant timed, on either GPU (copies on
// each context's stream, or on its default stream) and for a grant spanning both (an
// NVTX unit with a copy on each: timed on the context it began on). Each context's
// grants take events created in that context, recorded only on its streams; one pool
// shared by every context handed the first GPU's events to the second's grants, the
// driver refused to record them, and those grants reported no GPU time.
TEST_F(CuhookTest, GrantsOnTwoGpusAreTimedWithEachContextsOwnEvents) {
  const std::size_t n = 20;
  for (const std::string on : {"stream", "default", "unit"}) {
    SCOPED_TRACE(on);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "sleep", "5", "twoctx", on, std::to_string(n), "2097152"},
                    {{"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_ELAPSED_MS", "2"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    const GrantServer::Seen seen = srv.seen();
    json st = stats_of(r);
    auto q = fake_queries(r);
    EXPECT_EQ(q["cuEventRecord-refused"], 0u);
    EXPECT_EQ(st.value("event_record_failures", -1), 0) << st.dump();
    EXPECT_EQ(seen.grants.size(), n);
    ASSERT_EQ(seen.dones.size(), n);
    for (const auto& d : seen.dones) EXPECT_EQ(d.measured_ns, 2'000'000u);
    // A spanning grant's end goes on its start's stream: only device 0's context pools.
    EXPECT_EQ(st.value("event_pools", -1), on == "unit" ? 1 : 2) << st.dump();
    // Pooled: fewer than one a grant, where a pair a grant would be 2n. (How many are in
    // use at once follows how far the watcher lags: 5 ms between grants keeps it near 3
    // a context; unpaced, a loaded host once made 21.)
    EXPECT_LT(q["cuEventCreate"], n);
  }
}

// Tests that a context's timing events end with it: contexts destroyed, and device 1's
// primary context released to its end or reset, each after a grant on it, each handle
// given out again at once (through the symbols and through cuGetProcAddress). No event of
// an ended context is recorded again, and no pool is left: the pool of that handle kept
// them, and the next context's grants recorded them (refused: no GPU time).
TEST_F(CuhookTest, EndedContextsTakeTheirTimingEventsWithThem) {
  const std::map<std::string, std::string> hook = {
      {"destroy", "cuCtxDestroy_v2"}, {"release", "cuDevicePrimaryCtxRelease_v2"}, {"reset", "cuDevicePrimaryCtxReset_v2"}};
  for (const auto& [how, fn] : hook) {
    for (const std::vector<std::string>& path : {std::vector<std::string>{"direct"}, {"procaddr", "13000", "0"}}) {
      SCOPED_TRACE(how + " " + path[0]);
      clear_outputs();
      GrantServer srv(sock_);
      ASSERT_TRUE(srv.start());
      std::vector<std::string> args = path;
      for (const char* a : {"sleep", "5", "ctxend", how.c_str(), "12", "2097152"}) args.push_back(a);
      Outcome r = run(args, {{"RIPPLE_LEARN", "off"}});
      ASSERT_TRUE(exited_ok(r)) << r.err;
      json st = stats_of(r);
      EXPECT_EQ(st.value("grants", 0), 12);
      EXPECT_EQ(st["calls"][fn][0].get<int>(), 12) << st.dump();
      EXPECT_EQ(fake_queries(r)["cuEventRecord-refused"], 0u);
      EXPECT_EQ(st.value("event_record_failures", -1), 0) << st.dump();
      EXPECT_EQ(st.value("event_pools", -1), 0) << st.dump();
    }
  }
}

// Tests that the watcher never queries, times or destroys an event of a context that
// ended while it looked at it: each context (destroyed, released to its end, reset) ends
// 8 ms after its grant closed, while the watcher still polls the grant's end event (the
// fake's events complete 20 ms after their record, and each cuEventQuery takes 3 ms).
// The watcher checked the pool under its lock and then queried without it: a context
// that ended in between had its events freed by the driver, and the query used one (5 to
// 7 of 8 grants'). Now it pins the pool across its calls, and the end waits for the pin.
TEST_F(CuhookTest, WatcherNeverUsesAnEventWhoseContextEndsMeanwhile) {
  for (const std::string how : {"destroy", "release", "reset"}) {
    SCOPED_TRACE(how);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "endwait", "8", "ctxend", how, "8", "2097152"},
                    {{"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_EVENT_DELAY_US", "20000"}, {"FAKE_CUDA_QUERY_DELAY_US", "3000"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    json st = stats_of(r);
    EXPECT_EQ(st.value("grants", 0), 8);
    auto q = fake_queries(r);
    EXPECT_EQ(q["cuEvent-of-ended-context"], 0u);
    EXPECT_EQ(q["cuEventRecord-refused"], 0u);
    EXPECT_EQ(st.value("event_pools", -1), 0) << st.dump();
    EXPECT_EQ(st.value("pin_waits_given_up", -1), 0) << st.dump();
  }
}

// Tests that a driver call the watcher makes on a grant's events stalls no hook call and
// holds a context's end for at most 1 s, however long it takes: each cuEventQuery takes
// 4 s. Holding the pool lock across the watcher's calls (a fix taken back) stalled every
// grant's close behind the query, and each context end until it returned: 6 contexts,
// 24 s and more (the run is killed at 15 s). Pinned, each end waits 1 s at most: the run
// takes under 6 s of waits, 1.8 s of the app's own and its exit, and says it gave up
// waiting (the first context ends 300 ms after its grant closed: the watcher has pinned
// that grant's pool by then, and is in its first 4-s query).
TEST_F(CuhookTest, ASlowWatcherCallHoldsAContextEndForOneSecondAtMost) {
  clear_outputs();
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "endwait", "300", "ctxend", "destroy", "6", "2097152"},
                  {{"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_QUERY_DELAY_US", "4000000"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st.value("grants", 0), 6);
  EXPECT_LT(r.seconds, 12.0);
  const auto given_up = st.value("pin_waits_given_up", std::uint64_t{0});
  EXPECT_GE(given_up, 1u) << st.dump();
  EXPECT_LE(given_up, 6u) << st.dump();
  if (given_up > 0) {
    EXPECT_NE(r.err.find("pin_waits_given_up"), std::string::npos) << r.err;
  }
}

// The tests of a grant's end event: runs whose every event record the driver must accept.
class CuhookEndTest : public CuhookTest {
 protected:
  // What the agent saw of a run that exited cleanly, no record refused or put into a
  // capture, with n grants and n Dones; *st gets its stats.
  GrantServer::Seen timed_run(GrantServer& srv, const Outcome& r, std::size_t n, json* st) {
    EXPECT_TRUE(exited_ok(r)) << r.err;
    *st = stats_of(r);
    auto q = fake_queries(r);
    EXPECT_EQ(q["cuEventRecord-refused"], 0u);
    EXPECT_EQ(q["cuEventRecord-captured"], 0u);
    EXPECT_EQ(st->value("event_record_failures", -1), 0) << st->dump();
    GrantServer::Seen seen = srv.seen();
    EXPECT_EQ(seen.grants.size(), n) << st->dump();
    EXPECT_EQ(seen.dones.size(), n) << st->dump();
    return seen;
  }
  // driver_app's `mode n` (RIPPLE_LEARN off, each event pair timed at 2 ms by the fake):
  // every Done 2 ms.
  void expect_every_grant_timed(const std::string& mode, std::size_t n) {
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", mode, std::to_string(n)}, {{"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_ELAPSED_MS", "2"}});
    json st;
    for (const auto& d : timed_run(srv, r, n, &st).dones) EXPECT_EQ(d.measured_ns, 2'000'000u);
  }
};

// Tests that no event of a context that ended inside a grant is recorded again: a grant
// of three units on the per-thread default stream, its context destroyed (or its device's
// primary context reset) after the first unit and its handle at once another context's.
// The end event the first unit's end recorded on that stream was recorded again at the
// second unit's end (the driver had freed it with its context); the grant still reports,
// without a GPU time (its start is the ended context's).
TEST_F(CuhookEndTest, EventsOfAContextThatEndedInsideAGrantAreNotRecordedAgain) {
  json p = {{"format", "ripple-unit-catalog/1"}, {"model", "test"}, {"units", json::array()}};
  for (int u = 0; u < 3; ++u)
    p["units"].push_back({{"name", "layers." + std::to_string(u)}, {"bytes", 4096}, {"kernels", {"attn_k"}}});
  std::ofstream(tmp_ + "/mid.json") << p.dump();
  const std::size_t n = 4;
  for (const std::string how : {"destroy", "reset"}) {
    SCOPED_TRACE(how);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "ctxmid", how, std::to_string(n)},
                    {{"RIPPLE_PROFILE", tmp_ + "/mid.json"}, {"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_ELAPSED_MS", "2"}});
    json st;
    for (const auto& d : timed_run(srv, r, n, &st).dones) EXPECT_EQ(d.measured_ns, 0u);
    EXPECT_EQ(st.value("event_pools", -1), 0) << st.dump();
  }
}

// Tests that a grant whose work ran last on a stream destroyed before the grant closed
// is timed: its end event goes on that stream when it is destroyed. Recorded at the
// close, on the destroyed handle, it was refused and the grant reported no GPU time.
TEST_F(CuhookEndTest, GrantEndsOnItsStreamWhenTheStreamIsDestroyedFirst) { expect_every_grant_timed("streamend", 5); }

// Tests that a grant's end event is never recorded on a stream that is capturing: the
// grant's last work was captured on a second stream (a graph capture begun inside the
// unit), and its close came before the capture ended. Recorded there, the driver put it
// into the application's graph as a node (the fake counts such records and leaves the
// event unrecorded) and the grant reported no GPU time; it is timed on its start's stream.
TEST_F(CuhookEndTest, GrantEndIsNeverRecordedIntoACapture) { expect_every_grant_timed("capclose", 4); }

// Tests that a grant whose work ran on one thread's per-thread default stream, closed on
// another thread, is timed over that work, with CU_STREAM_PER_THREAD and with stream 0 of
// the per-thread entry points. The fake's GPU runs behind the host here (each kernel
// keeps its stream busy 30 ms), and the closing thread ran nothing of the grant: the end
// event recorded at the close, with the handle that names the closer's own per-thread
// stream, was reached at once and the grant reported a few microseconds, or 0.
TEST_F(CuhookEndTest, GrantClosedOnAnotherThreadIsTimedOnThePerThreadStreamThatRanIt) {
  // One work of two units: the worker's layers.0, then the main thread's layers.1, whose
  // end closes the grant.
  json p = {{"format", "ripple-unit-catalog/1"}, {"model", "test"}, {"units", json::array()}};
  p["units"].push_back({{"name", "layers.0"}, {"bytes", 196608}, {"kernels", {"attn_k"}}});
  p["units"].push_back({{"name", "layers.1"}, {"bytes", 196608}, {"kernels", {"mlp_k"}}});
  std::ofstream(tmp_ + "/pts.json") << p.dump();
  const std::uint64_t n = 3, k = 2, kernel_us = 30000;
  for (const bool ptds : {false, true}) {
    SCOPED_TRACE(ptds ? "stream 0, _ptsz" : "CU_STREAM_PER_THREAD");
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "ptsclose", ptds ? "0" : "pt", std::to_string(n), std::to_string(k)},
                    {{"RIPPLE_PROFILE", tmp_ + "/pts.json"},
                     {"RIPPLE_LEARN", "off"},
                     {"FAKE_CUDA_KERNEL_US", std::to_string(kernel_us)}},
                    ptds);
    json st;
    for (const auto& d : timed_run(srv, r, n, &st).dones) EXPECT_GE(d.measured_ns, k * kernel_us * 1000);
  }
}

// Tests that a grant whose work ran on two created streams is timed over both, and
// reported once both passed it. The fake's GPU runs behind the host (each kernel keeps its
// stream busy 30 ms); each unit puts K kernels on the app's stream and then one on a
// second stream, which is ahead: the first stream falls further behind at each unit, as
// an offloading engine's copy stream behind its compute stream. Timed from a start on the
// first stream to an end on the second, the first grant read 30 ms for its 60 and every
// later one a negative time, reported as 0 (ripple-llm's grants that ended a layer on the
// GPU: results/e2e.md). With the second stream destroyed inside the unit (lanesend), its
// end goes on it then: recorded at the close, on the freed handle, it was refused.
TEST_F(CuhookEndTest, GrantOnTwoStreamsIsTimedOverBoth) {
  const std::uint64_t n = 4, k = 2, kernel_us = 30000;
  for (const std::string mode : {"lanes", "lanesend"}) {
    SCOPED_TRACE(mode);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", mode, std::to_string(n), std::to_string(k)},
                    {{"RIPPLE_LEARN", "off"}, {"FAKE_CUDA_KERNEL_US", std::to_string(kernel_us)}});
    json st;
    for (const auto& d : timed_run(srv, r, n, &st).dones) EXPECT_GE(d.measured_ns, k * kernel_us * 1000);
  }
}

}  // namespace
}  // namespace ripple::testing
