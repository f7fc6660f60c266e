// The interposer's tests, interception (one binary, cuhook_test; cuhook_fixture.h):
// every resolution path the program reaches the driver by, the legacy ABI and the
// exported symbols; what marks a unit (NVTX, a recorded profile, the explicit API); the
// stats file, fork, pass-through and the driver queries; and the tools (ripple-profile,
// ripple-run, the dlsym trampoline).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "cuhooks/hook_list.h"
#include "cuhooks/op_info.h"
#include "tests/cuhooks/cuhook_fixture.h"

namespace ripple::testing {
namespace {

// --- resolution paths ----------------------------------------------------------------

struct PathCase {
  std::vector<std::string> args;
  bool ptds_binary;
  bool per_thread;  // the _ptsz/_ptds entry points must be the ones executed
  bool procaddr;
};

class ResolutionPath : public CuhookTest, public ::testing::WithParamInterface<PathCase> {};

// Tests that every launch and copy the program makes is seen by the hook, with the same
// entry point and bytes the driver executed, whichever way the program resolved it, and
// that the per-thread variant is kept when the program asked for it.
TEST_P(ResolutionPath, HookSeesEveryCallTheDriverExecutes) {
  const PathCase& c = GetParam();
  std::vector<std::string> args = c.args;
  args.push_back("ops");
  Outcome r = run(args, {}, c.ptds_binary);
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "driver_app: done\n") << "the hook wrote to the application's stdout";
  auto fake = fake_counts(r);
  json st = stats_of(r);
  ASSERT_TRUE(st.contains("calls")) << r.err;
  ASSERT_EQ(fake.size(), 15u) << "the ops mix uses 15 entry points";
  unsigned long long total = 0;
  for (auto& [name, v] : fake) {
    ASSERT_TRUE(st["calls"].contains(name)) << name << " executed by the driver but not seen by the hook";
    EXPECT_EQ(st["calls"][name][0].get<unsigned long long>(), v[0]) << name;
    if (name.find("Launch") == std::string::npos) {
      EXPECT_EQ(st["calls"][name][1].get<unsigned long long>(), v[1]) << name;
    }
    const bool pt = name.find("_ptsz") != std::string::npos || name.find("_ptds") != std::string::npos;
    EXPECT_EQ(pt, c.per_thread) << name;
    EXPECT_EQ(v[3] > 0, c.procaddr) << name << ": driver pointer from cuGetProcAddress used?";
    total += v[0];
  }
  EXPECT_EQ(st["calls"].size(), fake.size());
  EXPECT_EQ(st["via_procaddr"].get<unsigned long long>(), c.procaddr ? total : 0ull);
  EXPECT_EQ(st["h2d_bytes"].get<unsigned long long>(), 4194304ull + 3145728 + 524288 + 65536 + 12288);
  EXPECT_EQ(st["d2h_bytes"].get<unsigned long long>(), 2097152ull + 1048576 + 262144);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, ResolutionPath,
    ::testing::Values(PathCase{{"direct"}, false, false, false}, PathCase{{"direct"}, true, true, false},
                      PathCase{{"dlsym"}, false, false, false}, PathCase{{"dlsym"}, true, true, false},
                      PathCase{{"procaddr", "13000", "0"}, false, false, true},
                      PathCase{{"procaddr", "13000", "1"}, false, false, true},
                      PathCase{{"procaddr", "13000", "2"}, false, true, true},
                      PathCase{{"procaddr-v1", "13000", "2"}, false, true, true}),
    [](const auto& info) {
      std::string n;
      for (auto& a : info.param.args) n += a + "_";
      n += info.param.ptds_binary ? "ptds" : "legacy";
      for (auto& ch : n) if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

// Tests that an older ABI cuGetProcAddress returns for a low cudaVersion (the 32-bit
// cuMemcpyHtoD) is passed through untouched, and that cuGetProcAddress asked for itself
// returns a working wrapper whose results are intercepted.
TEST_F(CuhookTest, LegacyAbiPassesThroughAndProcAddressOfItselfIsWrapped) {
  Outcome r = run({"legacy-abi"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto fake = fake_counts(r);
  json st = stats_of(r);
  EXPECT_EQ(fake["cuMemcpyHtoD(v1)"].at(0), 1ull);
  EXPECT_EQ(st["passthrough"].get<int>(), 1);
  EXPECT_FALSE(st["calls"].contains("cuMemcpyHtoD_v2"));
  EXPECT_EQ(st["calls"]["cuLaunchKernel"][0].get<int>(), 1);
  EXPECT_EQ(st["via_procaddr"].get<int>(), 1);
}

// Tests that the library exports exactly the hook list (plus cuGetProcAddress, dlsym,
// the NVTX entry and the C API) and nothing of its C++ internals.
TEST_F(CuhookTest, ExportsOnlyTheHooks) {
  std::set<std::string> want = {"cuGetProcAddress", "cuGetProcAddress_v2", "dlsym", "InitializeInjectionNvtx2",
                                "ripple_cuhook_unit_begin", "ripple_cuhook_unit_end", "ripple_cuhook_set_comm_stream",
                                "ripple_cuhook_get_stats"};
#define NAME(name, ...) want.insert(#name);
  RIPPLE_CU_HOOKS(NAME)
#undef NAME
  FILE* p = popen(("nm -D --defined-only " + kHook + " | awk '{print $3}'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::set<std::string> got;
  char line[512];
  while (fgets(line, sizeof line, p)) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n')) s.pop_back();
    if (!s.empty()) got.insert(s);
  }
  pclose(p);
  EXPECT_EQ(got, want);
}

// --- unit boundaries -------------------------------------------------------------------

// Tests that NVTX layer ranges received through NVTX injection become units: each
// "model.layers.N" range is gated and its grant's GPU time is reported.
TEST_F(CuhookTest, NvtxRangesAreUnitBoundaries) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "nvtx", "2", "4", "3"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto seen = srv.seen();
  json st = stats_of(r);
  EXPECT_EQ(st["units_nvtx"].get<int>(), 8);
  EXPECT_EQ(st["units_profile"].get<int>(), 0);
  ASSERT_EQ(seen.hellos.size(), 1u);
  EXPECT_EQ(seen.hellos[0].name, "driver-app");
  EXPECT_EQ(seen.works.size(), 8u);
  EXPECT_EQ(seen.starts, 8u);
  EXPECT_EQ(seen.dones.size(), 8u) << "every grant's GPU time reported by the watcher";
  EXPECT_EQ(st["done_reported"].get<int>(), 8);
}

// Tests that with a recorded profile and no NVTX, the kernel sequence alone finds the
// units, and a forward pass is announced as one work granted as one contiguous run.
TEST_F(CuhookTest, ProfileKernelSequenceFindsUnits) {
  write_profile();
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "layers", "3", "4", "3"}, {{"RIPPLE_PROFILE", tmp_ + "/profile.json"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto seen = srv.seen();
  json st = stats_of(r);
  EXPECT_EQ(st["units_profile"].get<int>(), 18);  // 3 passes x (embed + 4 layers + head)
  ASSERT_EQ(seen.works.size(), 3u);
  EXPECT_EQ(seen.works[0].units, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(seen.grants.size(), 3u) << "one grant covers the contiguous run of a pass";
  EXPECT_EQ(seen.dones.size(), 3u);
  ASSERT_EQ(seen.hellos.size(), 1u);
  EXPECT_EQ(seen.hellos[0].units[1].name, "layers.0");
  EXPECT_EQ(seen.hellos[0].units[1].bytes, 196608u);
}

// Tests that explicit ripple_cuhook_unit_begin/end calls are unit boundaries.
TEST_F(CuhookTest, ExplicitApiMarksUnits) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "api", "1", "4", "2"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["units_api"].get<int>(), 4);
  EXPECT_EQ(srv.seen().works.size(), 4u);
}

// Tests that explicit units do not nest: a begin inside a unit open on the same thread
// opens nothing (its work belongs to the outer unit and runs under its grant) and its end
// closes nothing, so each layer is one unit and one work, as without the inner units.
// Before, each inner begin opened a work of its own, closing the layer's grant early, and
// each inner end closed the layer's unit before the layer's remaining kernels.
TEST_F(CuhookTest, ExplicitApiUnitsDoNotNest) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "apinest", "1", "4", "2"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["units_api"].get<int>(), 4);
  EXPECT_EQ(srv.seen().works.size(), 4u);
  EXPECT_EQ(st.value("unmanaged_units", -1), 0);
}

// Tests that a zero-byte host<->device copy is no unit boundary, even with
// RIPPLE_COPY_MIN_BYTES=0: it has no copy units, and the empty work it opened crashed the
// process (a position one before the work's first indexed it).
TEST_F(CuhookTest, ZeroByteCopyIsNoBoundary) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "roundtrip", "sync", "0", "copies", "2", "8192"}, {{"RIPPLE_COPY_MIN_BYTES", "0"}});
  ASSERT_TRUE(exited_ok(r)) << r.status << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st.value("units_copy", -1), 2) << "the two 8 KiB copies; the zero-byte ones are none";
  EXPECT_EQ(st.value("agent_losses", -1), 0) << r.err;
  for (const auto& w : srv.seen().works) EXPECT_FALSE(w.units.empty());
}

// --- stats, fork, pass-through, driver queries ---------------------------------------

// Tests that RIPPLE_CUHOOK_STATS_MS rewrites the stats file while the engine runs (a bench
// reads it at a window's start and end): the file at exit is the last of many writes,
// each a whole file (renamed into place), with the monotonic time it was taken at; without
// the variable it is written once, at exit.
TEST_F(CuhookTest, StatsFileIsRewrittenPeriodically) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  const std::uint64_t t0 = ripple::engine::monotonic_ns();
  Outcome r = run({"direct", "sleep", "10", "nvtx", "10", "4", "2"}, {{"RIPPLE_CUHOOK_STATS_MS", "20"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_GE(st["stats_seq"].get<std::uint64_t>(), 5u) << "a run of ~400 ms, a write every 20 ms\n" << r.err;
  EXPECT_GT(st["mono_ns"].get<std::uint64_t>(), t0);
  EXPECT_EQ(st["units_nvtx"].get<int>(), 40) << "the last write is the one at exit";
  clear_outputs();
  Outcome once = run({"direct", "nvtx", "2", "4", "2"});
  ASSERT_TRUE(exited_ok(once)) << once.err;
  EXPECT_EQ(stats_of(once)["stats_seq"].get<std::uint64_t>(), 1u);
}

// Tests that fork works: parent and child both run their launches to completion, and
// the child is its own engine session (it does not use the parent's).
TEST_F(CuhookTest, ForkedChildRunsAsItsOwnSession) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "fork"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  ASSERT_EQ(r.stats_files.size(), 2u);
  std::multiset<int> launches = {stats_of(r, 0)["launches"].get<int>(), stats_of(r, 1)["launches"].get<int>()};
  EXPECT_EQ(launches, (std::multiset<int>{6, 12})) << "parent 6; child 6 inherited + 6 of its own";
  EXPECT_EQ(srv.seen().hellos.size(), 2u) << r.err;
}

// Tests that a threaded engine can fork while its other threads change what the hook
// keeps (event pools made and dropped with their contexts, works and grants, the
// watcher's queue): each of 200 children makes a gated copy through the hook and exits 0
// within 10 s. The hook's fork handlers hold the locks of that state across the fork, so
// a child neither waits for a lock a vanished thread held nor walks a map or queue left
// half changed (a crash, or a hang).
TEST_F(CuhookTest, ForkWhileThreadsChangePoolsAndWorksLeavesWorkingChildren) {
#if defined(__SANITIZE_ADDRESS__)
  // GCC 12's ASan allocator takes no lock across fork: a child whose parent had another
  // thread inside malloc hangs in its own first malloc (seen here, with or without the
  // hook's handlers). Its runtime's limitation, not the hook's.
  GTEST_SKIP() << "ASan's allocator is not fork-safe in a threaded parent";
#endif
  // TSan cannot start a thread in the child of a threaded process ("dup thread"): there
  // the child's copy is below RIPPLE_COPY_MIN_BYTES (counted, no grant, so no watcher).
#if defined(__SANITIZE_THREAD__)
  const std::string child_bytes = "4096";
#else
  const std::string child_bytes = "65536";
#endif
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  // Not learned: each copy its own work and grant, so each grant takes its timing events
  // from the pool of a context that is destroyed right after.
  Outcome r = run({"direct", "forks", "200", "3", "65536", child_bytes},
                  {{"RIPPLE_COPY_MIN_BYTES", "65536"}, {"RIPPLE_LEARN", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.status << "\n" << r.err.substr(0, 4000);
  EXPECT_NE(r.err.find("forks: 200 of 200 children exited 0"), std::string::npos) << r.err.substr(0, 4000);
  // The threads ran while the main thread forked (else the test tests nothing).
  const auto at = r.err.find("children exited 0, ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_GE(std::stoull(r.err.substr(at + 19)), 200u) << "copies by the threads while the parent forked";
  EXPECT_GE(stats_of(r).value("grants", 0), 200) << "the threads' copies were gated";
}

// Tests that a fork does not wait for a boundary that waits for its grant (the gate's
// lock is held across the wait, for as long as the agent takes): fork() returns at once,
// and the child, forked while a boundary held the gate, runs unmanaged and exits 0.
TEST_F(CuhookTest, ForkWhileABoundaryWaitsForItsGrantDoesNotWait) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "forkheld", "65536"}, {{"RIPPLE_COPY_MIN_BYTES", "65536"}}, false, [&] {
    // The boundary waits from its work's announce; its grant comes well past the bound
    // driver_app puts on fork() (1 s).
    for (int i = 0; i < 2000 && srv.seen().works.empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    srv.release();
  });
  ASSERT_TRUE(exited_ok(r)) << r.status << "\n" << r.err;
  EXPECT_NE(r.err.find("forkheld: fork took"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("this child runs unmanaged"), std::string::npos) << r.err;
}

// Tests that with RIPPLE_CUHOOK=off the hook only counts: nothing is gated.
TEST_F(CuhookTest, OffMeansPassThrough) {
  GrantServer srv(sock_, GrantServer::Mode::kHold);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "ops"}, {{"RIPPLE_CUHOOK", "off"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_TRUE(srv.seen().hellos.empty());
  EXPECT_EQ(stats_of(r)["calls"]["cuLaunchKernel"][0].get<int>(), 3);
}

// Tests that the direction of a generic copy (cuMemcpy, cuMemcpyAsync, a batch: the
// pointers decide) is asked of the driver only when the hook needs it: with
// RIPPLE_CUHOOK=off never, each copy still counted with its bytes; gated, two pointer
// queries a copy, and the host<->device bytes still counted by direction.
TEST_F(CuhookTest, GenericCopyDirectionIsAskedOnlyWhenNeeded) {
  Outcome off = run({"direct", "ops"}, {{"RIPPLE_CUHOOK", "off"}});
  ASSERT_TRUE(exited_ok(off)) << off.err;
  json st = stats_of(off);
  EXPECT_EQ(st["calls"]["cuMemcpy"][1].get<unsigned long long>(), 524288ull);
  EXPECT_EQ(st["calls"]["cuMemcpyAsync"][1].get<unsigned long long>(), 262144ull);
  EXPECT_EQ(st["calls"]["cuMemcpyBatchAsync_v2"][1].get<unsigned long long>(), 12288ull);
  auto q = fake_queries(off);
  ASSERT_TRUE(q.count("cuPointerGetAttribute")) << "the fake driver wrote no query lines";
  EXPECT_EQ(q["cuPointerGetAttribute"], 0u) << "RIPPLE_CUHOOK=off asked the driver about pointers";
  EXPECT_EQ(q["cuFuncGetName"], 0u);
  EXPECT_EQ(q["cuStreamIsCapturing"], 0u);

  clear_outputs();
  Outcome on = run({"direct", "ops"});
  ASSERT_TRUE(exited_ok(on)) << on.err;
  st = stats_of(on);
  // The unified H2D cuMemcpy and the batch (as its first copy: H2D) against the unified
  // D2H cuMemcpyAsync, besides the explicit forms.
  EXPECT_EQ(st["h2d_bytes"].get<unsigned long long>(), 4194304ull + 3145728 + 524288 + 65536 + 12288);
  EXPECT_EQ(st["d2h_bytes"].get<unsigned long long>(), 2097152ull + 1048576 + 262144);
  EXPECT_EQ(fake_queries(on)["cuPointerGetAttribute"], 6u) << "two a generic copy: cuMemcpy, cuMemcpyAsync, the batch";
}

// Tests that a kernel's name is asked of the driver once per function, however many
// times it is launched (the hook's name cache), and every launch is still seen.
TEST_F(CuhookTest, KernelNamesAreAskedOncePerFunction) {
  // 5 passes: embed_k, 4 layers x (attn_k, mlp_k, norm_k), head_k: 70 launches of 5 functions.
  Outcome r = run({"direct", "layers", "5", "4", "3"});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(fake_counts(r)["cuLaunchKernel"][0], 70u);
  EXPECT_EQ(stats_of(r)["calls"]["cuLaunchKernel"][0].get<unsigned long long>(), 70u);
  EXPECT_EQ(fake_queries(r)["cuFuncGetName"], 5u);
}

// --- tools -----------------------------------------------------------------------

// Tests that ripple-profile record writes each NVTX unit's kernel sequence, and that the
// recorded profile then finds the units of an NVTX-free run by kernel sequence.
TEST_F(CuhookTest, ProfileRecordThenMatch) {
  const std::string out = tmp_ + "/rec.json";
  std::string cmd = "LD_LIBRARY_PATH=" + kFakeDir + " " + kDir + "/../../bin/ripple-profile record -o " + out +
                    " -- " + kDir + "/driver_app direct nvtx 2 3 3 >/dev/null 2>" + tmp_ + "/rec.err";
  ASSERT_EQ(system(cmd.c_str()), 0) << slurp(tmp_ + "/rec.err");
  json p = json::parse(slurp(out), nullptr, false);
  ASSERT_FALSE(p.is_discarded());
  ASSERT_EQ(p["units"].size(), 3u);
  EXPECT_EQ(p["units"][0]["name"], "layers.0");
  EXPECT_EQ(p["units"][0]["kernels"], json({"attn_k", "mlp_k", "norm_k"}));
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "layers", "2", "3", "3"}, {{"RIPPLE_PROFILE", out}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(stats_of(r)["units_profile"].get<int>(), 6);
}

// Tests that ripple-run sets the preload, NVTX injection and engine variables for the
// command, and refuses a bad --kind naming it.
TEST_F(CuhookTest, RippleRunSetsTheEnvironment) {
  const std::string bin = kDir + "/../../bin/ripple-run";
  std::string cmd = bin + " --engine llm --kind deadline-bound --socket /tmp/x.sock -- /usr/bin/env > " + tmp_ + "/env";
  ASSERT_EQ(system(cmd.c_str()), 0);
  const std::string env = slurp(tmp_ + "/env");
  EXPECT_NE(env.find("LD_PRELOAD=" + fs::canonical(kHook).string()), std::string::npos) << env;
  EXPECT_NE(env.find("NVTX_INJECTION64_PATH=" + fs::canonical(kHook).string()), std::string::npos);
  EXPECT_NE(env.find("RIPPLE_ENGINE=llm\n"), std::string::npos);
  EXPECT_NE(env.find("RIPPLE_KIND=deadline-bound\n"), std::string::npos);
  EXPECT_NE(env.find("RIPPLE_SOCKET=/tmp/x.sock\n"), std::string::npos);
  cmd = bin + " --engine llm --kind fast -- true 2>" + tmp_ + "/err";
  EXPECT_NE(system(cmd.c_str()), 0);
  EXPECT_NE(slurp(tmp_ + "/err").find("--kind 'fast'"), std::string::npos);
}

// Tests that a dlsym the hook does not answer reaches the real dlsym as if the program had
// called it (the trampoline tail-jumps with the caller's return address): RTLD_NEXT from the
// program finds the interposer's dlsym, not the C library's. Runs the trampoline of the
// architecture built (x86_64 natively, aarch64 in make check's arm64 suites).
TEST_F(CuhookTest, DlsymPassThroughKeepsTheCallersRtldNext) {
  const std::string cmd = "LD_PRELOAD=" + kHook + " " + kDir + "/dlsym_next >" + tmp_ + "/out 2>&1";
  EXPECT_EQ(system(cmd.c_str()), 0) << slurp(tmp_ + "/out");
  EXPECT_NE(slurp(tmp_ + "/out").find("\nok\n"), std::string::npos) << slurp(tmp_ + "/out");
}

}  // namespace
}  // namespace ripple::testing
