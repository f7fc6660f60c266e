// The interposer's tests, gating and safety (one binary, cuhook_test; cuhook_fixture.h):
// a unit waits for its grant; what is never gated (stream capture, communication
// kernels); graph launches; fail-open and fail-closed, impostor agents, the output
// files, agent restarts, grant timeouts and an invalid NVTX pattern.
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cuhooks/cuhook_fixture.h"

namespace ripple::testing {
namespace {

// --- gating -------------------------------------------------------------------------

// Tests that a host-to-device copy is a unit of its exact bytes and that the launching
// thread does not issue it before the grant arrives.
TEST_F(CuhookTest, GatingHoldsTheThreadUntilGranted) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  const std::string trace = tmp_ + "/trace";
  std::uint64_t released_at = 0;
  Outcome r = run({"direct", "copies", "1", "5000000"}, {{"FAKE_CUDA_TRACE", trace}}, false, [&] {
    for (int i = 0; i < 400 && srv.seen().works.empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(slurp(trace).find("cuMemcpyHtoDAsync"), std::string::npos) << "copy issued before its grant";
    released_at = ripple::engine::monotonic_ns();
    srv.release();
  });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto seen = srv.seen();
  ASSERT_EQ(seen.works.size(), 1u);
  ASSERT_EQ(seen.hellos.size(), 1u);
  std::uint64_t bytes = 0;
  for (auto u : seen.works[0].units) bytes += seen.hellos[0].units[u].bytes;
  EXPECT_EQ(bytes, (5000000ull + 4095) / 4096 * 4096) << "copy units carry the copy's bytes (4 KiB granules)";
  std::istringstream in(slurp(trace));
  std::uint64_t t = 0;
  std::string name;
  ASSERT_TRUE(in >> t >> name);
  EXPECT_EQ(name, "cuMemcpyHtoDAsync_v2");
  EXPECT_GE(t, released_at);
  EXPECT_GE(r.seconds, 0.3);
}

// Tests that the hello reports the GPU's memory as the driver gives it
// (CU_DEVICE_ATTRIBUTE_INTEGRATED of the context's device: discrete or integrated), unknown
// when the driver does not answer, and that the driver is asked once a process, not a call.
TEST_F(CuhookTest, HelloReportsTheGpuMemory) {
  using ripple::engine::Memory;
  for (const auto& [value, want] : std::vector<std::pair<std::string, Memory>>{
           {"0", Memory::kDiscrete}, {"1", Memory::kIntegrated}, {"fail", Memory::kUnknown}}) {
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "copies", "3", "5000000"}, {{"FAKE_CUDA_INTEGRATED", value}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    auto seen = srv.seen();
    ASSERT_EQ(seen.hellos.size(), 1u) << value;
    EXPECT_EQ(seen.hellos[0].memory, want) << "FAKE_CUDA_INTEGRATED=" << value;
    EXPECT_EQ(fake_queries(r)["cuDeviceGetAttribute"], 1u) << "asked once (at the hello), not per call";
  }
}

// Tests that during stream capture nothing blocks even if the agent never grants.
TEST_F(CuhookTest, NeverBlocksDuringStreamCapture) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "copies", "3", "4194304", "graph", "2"}, {{"FAKE_CUDA_CAPTURING", "1"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["capture_skips"].get<int>(), 5);
  EXPECT_EQ(st["grants"].get<int>(), 0);
  EXPECT_LT(r.seconds, 5.0);
}

// Tests that launches of communication kernels (nccl*) are never gated.
TEST_F(CuhookTest, NeverBlocksCommunicationKernels) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "comm", "5"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(stats_of(r)["comm_skips"].get<int>(), 5);
  EXPECT_TRUE(srv.seen().works.empty());
}

// Tests that nothing on a communication stream is gated: after an nccl kernel marks the
// app's stream, its host copies and graph launch pass the holding server ungated (a
// collective's stream waiting for a grant can deadlock the ranks; they were gated).
TEST_F(CuhookTest, NeverBlocksCopiesOrGraphsOnACommunicationStream) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "commcopy", "stream", "3", "4194304"}, {{"RIPPLE_FAIL", "closed"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["comm_skips"].get<int>(), 1 + 3 + 1) << st.dump();
  EXPECT_EQ(st["units_copy"].get<int>(), 0) << st.dump();
  EXPECT_EQ(st["grants"].get<int>(), 0) << st.dump();
  EXPECT_LT(r.seconds, 5.0);
}

// Tests that a destroyed communication stream's mark goes with it: the next stream created
// gets its handle back, and its copies are gated (the mark stayed: they passed ungated,
// an engine's copies never granted), whichever way the app took cuStreamDestroy.
TEST_F(CuhookTest, DestroyedCommunicationStreamsHandleIsGatedWhenReused) {
  for (const std::vector<std::string>& path :
       {std::vector<std::string>{"direct"}, {"dlsym"}, {"procaddr", "13000", "0"}}) {
    SCOPED_TRACE(path[0]);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    std::vector<std::string> args = path;
    for (const char* a : {"commreuse", "3", "4194304"}) args.push_back(a);
    Outcome r = run(args);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    json st = stats_of(r);
    EXPECT_EQ(st["calls"]["cuStreamDestroy_v2"][0].get<int>(), 2) << st.dump();
    EXPECT_EQ(st["comm_skips"].get<int>(), 1) << st.dump();
    EXPECT_EQ(st["units_copy"].get<int>(), 3) << st.dump();
    EXPECT_GE(st["grants"].get<int>(), 3) << st.dump();
  }
}

// Tests that an nccl kernel on the default stream does not mark it: compute shares that
// stream, and the copies on it after the collective are gated as before (marking it left
// the engine ungated for good).
TEST_F(CuhookTest, CommunicationKernelOnTheDefaultStreamDoesNotUngateIt) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "commcopy", "default", "3", "4194304"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["comm_skips"].get<int>(), 1) << st.dump();
  EXPECT_EQ(st["units_copy"].get<int>(), 3) << st.dump();
  EXPECT_GE(st["grants"].get<int>(), 3) << st.dump();
}

// Tests that an NVTX range pushed on a thread whose stream is capturing opens no unit and
// its pop closes none: another thread's unit stays open, and its 4 MiB copy inside it is
// gated sub-unit by sub-unit as when no such range is pushed (the pop used to close that
// unit, and the copy was gated again as bare copies: twice the grants for its bytes).
TEST_F(CuhookTest, CapturedRangeClosesNoOtherThreadsUnit) {
  json alone, beside;
  for (int other : {0, 1}) {
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "nvtxcapture", std::to_string(other)},
                    {{"RIPPLE_LEARN", "off"}, {"RIPPLE_UNIT_BYTES", "4194304"}, {"RIPPLE_CHUNK_BYTES", "1048576"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    (other ? beside : alone) = stats_of(r);
  }
  EXPECT_GE(beside["capture_skips"].get<int>(), 1) << beside.dump();
  for (const char* k : {"chunk_gates", "subunits_skipped", "units_copy", "grants"})
    EXPECT_EQ(beside[k].get<int>(), alone[k].get<int>()) << k << "\n" << beside.dump() << "\n" << alone.dump();
  EXPECT_EQ(alone["subunits_skipped"].get<int>(), 0) << alone.dump();
}

// Tests that the NVTX name cache is bounded: of 5000 distinct range names that are no
// units, 4096 are kept and the rest matched again each time (nvtx_uncached).
TEST_F(CuhookTest, NvtxNameCacheIsBounded) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "nvtxnames", "5000"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["nvtx_pushes"].get<int>(), 5000) << st.dump();
  EXPECT_EQ(st["nvtx_uncached"].get<int>(), 5000 - 4096) << st.dump();
}

// Tests that a CUDA graph launch is one unit whose bytes come from the profile (the sum
// of its units: the replayed forward pass).
TEST_F(CuhookTest, GraphLaunchIsOneUnitWithProfileBytes) {
  write_profile();
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "graph", "3"}, {{"RIPPLE_PROFILE", tmp_ + "/profile.json"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto seen = srv.seen();
  EXPECT_EQ(stats_of(r)["units_graph"].get<int>(), 3);
  ASSERT_EQ(seen.works.size(), 3u);
  ASSERT_EQ(seen.works[0].units.size(), 1u);
  const auto& u = seen.hellos.at(0).units.at(seen.works[0].units[0]);
  EXPECT_EQ(u.name, "graph");
  EXPECT_EQ(u.bytes, 4096u + 4 * 196608u + 8192u);
}

// --- safety -----------------------------------------------------------------------

// Tests that without an agent a fail-open process runs to completion, unmanaged, and
// says so once on stderr.
TEST_F(CuhookTest, FailOpenRunsUnmanagedWithOneWarning) {
  write_profile();
  Outcome r = run({"direct", "layers", "5", "4", "3"}, {{"RIPPLE_PROFILE", tmp_ + "/profile.json"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "driver_app: done\n");
  json st = stats_of(r);
  EXPECT_GE(st["unmanaged_units"].get<int>(), 5);
  std::size_t warnings = 0;
  for (std::size_t at = 0; (at = r.err.find("UNMANAGED", at)) != std::string::npos; ++at) ++warnings;
  EXPECT_EQ(warnings, 1u) << r.err;
}

// Tests that a fail-closed process waits for the agent and proceeds once it appears.
TEST_F(CuhookTest, FailClosedWaitsForTheAgent) {
  GrantServer srv(sock_);
  Outcome r = run({"direct", "copies", "2", "2097152"}, {{"RIPPLE_FAIL", "closed"}}, false, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ASSERT_TRUE(srv.start());
  });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_GE(r.seconds, 0.4);
  EXPECT_EQ(srv.seen().works.size(), 2u);
  EXPECT_EQ(stats_of(r)["unmanaged_units"].get<int>(), 0);
}

// An impostor: a grant server run by uid 65534 on the engine socket (a forked child that
// drops root first), which would grant everything if the hook obeyed it.
pid_t start_impostor(const std::string& dir, const std::string& sock, uid_t uid = 65534) {
  ::chmod(dir.c_str(), 0777);
  pid_t pid = fork();
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) _exit(2);
    GrantServer imp(sock, GrantServer::Mode::kAuto, ripple::engine::FailMode::kClosed);
    if (!imp.start()) _exit(3);
    for (;;) ::pause();
  }
  for (int i = 0; i < 200 && !fs::exists(sock); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pid;
}
void stop_impostor(pid_t pid, const std::string& sock) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ::unlink(sock.c_str());
}
std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// Tests that a socket served by a uid other than root or RIPPLE_AGENT_UID is no agent: a
// fail-open process runs unmanaged (said once, why included) and never obeys it.
TEST_F(CuhookTest, ImpostorAgentSocketIsNoAgentFailOpen) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the impostor as another uid";
  const pid_t imp = start_impostor(tmp_, sock_);
  ASSERT_GT(imp, 0);
  Outcome r = run({"direct", "copies", "3", "2097152"}, {{"RIPPLE_FAIL", "open"}});
  stop_impostor(imp, sock_);
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["agent_connects"].get<int>(), 0);
  EXPECT_EQ(st["grants"].get<int>(), 0);
  EXPECT_GE(st["unmanaged_units"].get<int>(), 3);
  EXPECT_EQ(count_of(r.err, "uid 65534, not by root or uid 0 (RIPPLE_AGENT_UID): not the agent"), 1u) << r.err;
  EXPECT_EQ(count_of(r.err, "UNMANAGED"), 1u) << r.err;
}

// Tests that a fail-closed process is not stalled by an impostor: it keeps waiting for
// the agent (saying why once) and is managed as soon as the real agent (root) is there.
TEST_F(CuhookTest, ImpostorAgentSocketIsNoAgentFailClosed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the impostor as another uid";
  const pid_t imp = start_impostor(tmp_, sock_);
  ASSERT_GT(imp, 0);
  GrantServer srv(sock_);
  Outcome r = run({"direct", "copies", "2", "2097152"}, {{"RIPPLE_FAIL", "closed"}}, false, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    stop_impostor(imp, sock_);
    ASSERT_TRUE(srv.start());
  });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_GE(r.seconds, 0.4);
  EXPECT_EQ(srv.seen().works.size(), 2u);
  EXPECT_EQ(stats_of(r)["unmanaged_units"].get<int>(), 0);
  EXPECT_EQ(count_of(r.err, "not the agent): waiting for it (fail-closed)"), 1u) << r.err;
}

// Tests that RIPPLE_AGENT_UID names the uid the agent may run as besides root.
TEST_F(CuhookTest, AgentUidNamesAnotherAgentUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the agent as another uid";
  const pid_t agent = start_impostor(tmp_, sock_);
  ASSERT_GT(agent, 0);
  Outcome r = run({"direct", "copies", "3", "2097152"}, {{"RIPPLE_FAIL", "open"}, {"RIPPLE_AGENT_UID", "65534"}});
  stop_impostor(agent, sock_);
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["agent_connects"].get<int>(), 1);
  EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
  EXPECT_GE(st["grants"].get<int>(), 1);
}

// Tests that the files the interposer writes are not written through a symlink (one
// line says so; the file it names is untouched) and that a longer regular file left
// from before is replaced whole.
TEST_F(CuhookTest, OutputFilesRefuseSymlinks) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  const std::string victim = tmp_ + "/victim", link = tmp_ + "/link-stats.json", rec = tmp_ + "/link-record";
  { std::ofstream(victim) << "keep\n"; }
  fs::create_symlink(victim, link);
  fs::create_symlink(victim, rec);
  Outcome r = run({"direct", "copies", "2", "2097152"}, {{"RIPPLE_CUHOOK_STATS", link}, {"RIPPLE_RECORD", rec}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(slurp(victim), "keep\n");
  EXPECT_EQ(count_of(r.err, "not writing the stats file " + link + ": it is a symlink"), 1u) << r.err;
  EXPECT_EQ(count_of(r.err, "not writing the record file " + rec + ": it is a symlink"), 1u) << r.err;

  const std::string regular = tmp_ + "/stats.old.json";
  { std::ofstream(regular) << std::string(100000, 'x'); }
  Outcome o = run({"direct", "copies", "2", "2097152"}, {{"RIPPLE_CUHOOK_STATS", regular}});
  ASSERT_TRUE(exited_ok(o)) << o.err;
  json st = json::parse(slurp(regular), nullptr, false);
  ASSERT_FALSE(st.is_discarded()) << slurp(regular).substr(0, 200);
  EXPECT_GE(st["grants"].get<int>(), 1);
}

// Tests that when the agent goes away and comes back the process neither crashes nor
// deadlocks, and reconnects to the new agent.
TEST_F(CuhookTest, AgentRestartReconnects) {
  write_profile();
  GrantServer::Seen seen;
  // The first agent goes once it has seen two works (no fixed time in): the hook then
  // holds its only session (no units are learned here), and its next announce must fail.
  Outcome r = run_across_restart({"direct", "sleep", "20", "layers", "30", "4", "3"}, &seen,
                                 {{"RIPPLE_PROFILE", tmp_ + "/profile.json"}}, 0);
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_GE(st["agent_losses"].get<int>(), 1);
  EXPECT_GE(st["agent_connects"].get<int>(), 2);
  EXPECT_GE(seen.hellos.size(), 1u);
  EXPECT_GE(seen.grants.size(), 1u);
}

// Tests that a grant wait past RIPPLE_GRANT_TIMEOUT_MS can never loop (probe defect H3):
// the agent grants the waiting work late and, like the real agent, grants a session's
// works in order and a discarded grant again at once. The hook ends the session on the timeout (one line on stderr,
// counted), runs unmanaged until it reconnects and is managed again once grants come in
// time: the app finishes with a handful of stale grants, not one per microsecond.
TEST_F(CuhookTest, GrantTimeoutEndsTheSessionInsteadOfLooping) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  srv.set_in_order(true);
  ASSERT_TRUE(srv.start());
  // 40 passes of 4 layers with 20 ms between passes: at least 0.8 s of work; the server
  // grants nothing until the hook has ended two sessions on the timeout (their Byes: with
  // nothing granted a session can end no other way; each timeout blocks one boundary, so
  // the app is far from done), then at once. Not a fixed time in: under emulation or load
  // the app's start-up alone could take it (0.5 s once left no timeout at all).
  Outcome r = run({"direct", "sleep", "20", "nvtx", "40", "4", "3"}, {{"RIPPLE_GRANT_TIMEOUT_MS", "200"}}, false, [&] {
    bool timed_out = false;
    for (int i = 0; i < 2000 && !(timed_out = srv.seen().byes >= 2); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(timed_out) << "two sessions ended on the grant timeout within 10 s";
    srv.release();
  });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  const GrantServer::Seen seen = srv.seen();
  json st = stats_of(r);
  // Unmanaged: 0.8 s of passes plus the timeouts; 8 s is far beyond that and far below
  // what a loop of discards costs (it never ends).
  EXPECT_LT(r.seconds, 8.0) << r.err;
  const std::uint64_t timeouts = st.value("grant_timeouts", std::uint64_t{0});
  EXPECT_GE(timeouts, 2u) << r.err;
  // One session per timeout at most, each of which may have one grant in flight.
  EXPECT_LE(seen.discards, 2 * timeouts + 2) << r.err;
  EXPECT_GE(st["agent_connects"].get<int>(), 2) << "a new session after the timeout";
  EXPECT_GE(st["unmanaged_units"].get<int>(), 1);
  EXPECT_GE(st["grants"].get<int>(), 1) << "managed again once grants come in time";
  std::size_t said = 0;
  for (std::size_t at = 0; (at = r.err.find("RIPPLE_GRANT_TIMEOUT_MS", at)) != std::string::npos; ++at) ++said;
  EXPECT_EQ(said, 1u) << r.err;
}

// Tests that a fail-closed engine whose grant timed out runs unmanaged until
// RIPPLE_RECONNECT_MS has passed and is then managed again. It used to wait at every later
// boundary for the reconnect and time out at once after it (the wait's bound had started
// before the wait for the agent): every boundary blocked RIPPLE_RECONNECT_MS, no grant used.
TEST_F(CuhookTest, FailClosedIsManagedAgainAfterAGrantTimeout) {
  GrantServer srv(sock_);
  srv.set_stall_first_works(1);  // the first work's grant never comes: one timeout
  srv.set_decide_us(10000);      // later ones 10 ms after their work, as an agent decides
  ASSERT_TRUE(srv.start());
  // 60 passes of 2 layers, 20 ms between passes: at least 1.2 s. The 300 ms timeout, then
  // 600 ms unmanaged: the passes of at least the last 0.3 s (sleeps alone) are managed.
  Outcome r = run({"direct", "sleep", "20", "nvtx", "60", "2", "3"},
                  {{"RIPPLE_FAIL", "closed"}, {"RIPPLE_GRANT_TIMEOUT_MS", "300"}, {"RIPPLE_RECONNECT_MS", "600"},
                   {"RIPPLE_LEARN", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.status << r.err;
  json st = stats_of(r);
  // ~2.5 s; the defect blocked 0.6 s at each of the 120 boundaries.
  EXPECT_LT(r.seconds, 10.0) << r.err;
  EXPECT_EQ(st.value("grant_timeouts", 0), 1) << r.err;
  EXPECT_EQ(st.value("agent_connects", 0), 2) << "one new session after the timeout";
  EXPECT_GE(st.value("unmanaged_units", 0), 1) << "unmanaged until RIPPLE_RECONNECT_MS passed";
  EXPECT_GE(st.value("grants", 0), 1) << "managed again: every grant comes after the timeout";
  EXPECT_EQ(static_cast<std::size_t>(st.value("grants", 0)), srv.seen().grants.size());
}

// A stopped agent: its socket exists and its listener never accepts, so connections queue
// until the backlog (1) is full, and a blocking connect() then waits for ever.
int stalled_listener(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 1) != 0) return -1;
  return fd;
}

// Tests that a stopped agent neither hangs nor throttles a fail-open engine: each connect
// attempt is bounded (it used to wait 1 s for the Welcome, then block in connect() for ever
// once the backlog was full) and the next one comes RIPPLE_RECONNECT_MS after it ends.
TEST_F(CuhookTest, StoppedAgentNeitherHangsNorThrottlesFailOpen) {
  const int fd = stalled_listener(sock_);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  Outcome r = run({"direct", "sleep", "5", "graph", "100"},
                  {{"RIPPLE_FAIL", "open"}, {"RIPPLE_AGENT_UID", std::to_string(::geteuid())}});
  ::close(fd);
  ASSERT_TRUE(exited_ok(r)) << r.status << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st.value("agent_connects", -1), 0);
  EXPECT_EQ(st.value("grants", -1), 0);
  EXPECT_EQ(st.value("unmanaged_units", 0), 100);
  // 100 launches 5 ms apart (~0.5 s of its own), a Welcome wait (250 ms) every reconnect,
  // the rest unmanaged: a few seconds at most where the old code hung.
  EXPECT_LT(r.seconds, 8.0);
  // Attempts at least RIPPLE_RECONNECT_MS (the fixture's 50 ms) apart, counted.
  const int failures = st.value("connect_failures", 0);
  EXPECT_GE(failures, 1);
  EXPECT_LE(failures, 1 + static_cast<int>(r.seconds * 1000 / 50)) << r.err;
  EXPECT_EQ(count_of(r.err, "UNMANAGED"), 1u) << r.err;
}

// Tests that an invalid RIPPLE_NVTX_PATTERN is said once, naming the variable, and the
// default pattern gates the layer ranges (probe defect M10: it silently gated nothing);
// ripple-run refuses such a pattern with one line.
TEST_F(CuhookTest, InvalidNvtxPatternFallsBackToTheDefaultAndSaysSo) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "nvtx", "2", "4", "3"}, {{"RIPPLE_NVTX_PATTERN", "("}, {"RIPPLE_LEARN", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  std::size_t said = 0;
  for (std::size_t at = 0; (at = r.err.find("RIPPLE_NVTX_PATTERN='('", at)) != std::string::npos; ++at) ++said;
  EXPECT_EQ(said, 1u) << r.err;
  EXPECT_NE(r.err.find("using the default pattern"), std::string::npos) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["units_nvtx"].get<int>(), 8);
  EXPECT_EQ(srv.seen().works.size(), 8u);
  const std::string cmd = kDir + "/../../bin/ripple-run --engine llm --nvtx-pattern '(' -- true 2>" + tmp_ + "/rr.err";
  EXPECT_NE(system(cmd.c_str()), 0);
  const std::string err = slurp(tmp_ + "/rr.err");
  EXPECT_NE(err.find("--nvtx-pattern '('"), std::string::npos) << err;
}

}  // namespace
}  // namespace ripple::testing
