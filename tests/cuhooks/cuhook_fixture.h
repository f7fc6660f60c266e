// libripple-cuhook.so end to end, without a GPU: the driver-API test program
// (driver_app.c, built against the real CUDA headers) runs on the fake libcuda.so.1
// (a TEST DOUBLE) with the hook preloaded; the test-only grant server (a TEST DOUBLE of
// the agent's engine side, grant_server.h) plays the agent. Each test reads what the
// fake executed, what the hook counted (RIPPLE_CUHOOK_STATS) and what the server saw.
//
// The fixture and helpers the tests share. One binary, cuhook_test, over files by theme:
// cuhook_intercept_test.cc (resolution paths, exports, unit boundaries, counting, tools),
// cuhook_gating_test.cc (gating, safety), cuhook_works_test.cc (works of learned graph
// passes, grants ahead), cuhook_chunking_test.cc (sub-layer grants),
// cuhook_learning_test.cc (learned NVTX and copy passes) and cuhook_timing_test.cc (grant
// timing: the reported GPU time, the event pools per context).
#pragma once

#include <sys/wait.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ripple/client.h"
#include "tests/cuhooks/grant_server.h"

namespace ripple::testing {

namespace fs = std::filesystem;
using nlohmann::json;

extern const std::string kDir;  // $O/tests/cuhooks
extern const std::string kHook;
extern const std::string kFakeDir;

struct Outcome {
  int status = -1;
  std::string out, err;
  double seconds = 0;
  std::vector<std::string> stats_files, fake_logs;
};

class CuhookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cuhook-test-XXXXXX";
    tmp_ = mkdtemp(tmpl);
    sock_ = tmp_ + "/engine.sock";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Runs driver_app with the hook preloaded; env adds/overrides variables.
  Outcome run(std::vector<std::string> args, std::map<std::string, std::string> env = {}, bool ptds = false,
          std::function<void()> meanwhile = nullptr);

  // Runs driver_app across an agent restart: one grant server stops `down_ms` in, once it
  // has seen two works (or, with `stop_when`, once what it saw satisfies that: expected
  // within 10 s), and a second starts 150 ms later. *seen gets what the second one saw.
  Outcome run_across_restart(std::vector<std::string> args, GrantServer::Seen* seen,
                             std::map<std::string, std::string> env = {}, int down_ms = 200,
                             std::function<bool(const GrantServer::Seen&)> stop_when = nullptr);

  // Removes the stats and fake-driver files of earlier runs (tests that run several times).
  void clear_outputs();

  static std::string slurp(const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static json stats_of(const Outcome& r, std::size_t i = 0) {
    if (i >= r.stats_files.size()) return json::object();
    return json::parse(slurp(r.stats_files[i]), nullptr, false);
  }
  // The fake's per-entry-point counts: name -> {calls, bytes, via_symbol, via_procaddr}.
  static std::map<std::string, std::vector<unsigned long long>> fake_counts(const Outcome& r, std::size_t i = 0);
  // The queries the driver answered (cuPointerGetAttribute, cuFuncGetName,
  // cuStreamIsCapturing): name -> calls.
  static std::map<std::string, unsigned long long> fake_queries(const Outcome& r, std::size_t i = 0);
  static bool exited_ok(const Outcome& r) { return r.status >= 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0; }

  void write_profile();

  // A model catalog for the offload mode: embed and head (never NVTX ranges there) and
  // layers.1 with bytes of its own.
  void write_offload_catalog();

  // Runs `ripple-profile record [--catalog CATALOG] -o OUT -- driver_app ARGS`; returns
  // its exit status (stderr in tmp_/rec.err).
  int record(const std::string& out, const std::string& args, const std::string& catalog = "");

  std::string tmp_, sock_;
};

// The catalog entries of a Hello by name.
std::map<std::string, ripple::engine::UnitInfo> by_name(const ripple::engine::Hello& h);

// The units of the work announced ahead that the engine never ran (it stopped after the
// work before): with works granted whole (the grant server), a stable learned bare pass
// has every later work announced ahead, so it is the last work announced (0 when none was
// announced ahead; a run must end on a stable pass: 16 passes matched since it was last
// learned). cuhooks/gate.cc, "grants ahead".
std::size_t unrun_ahead(const json& st, const GrantServer::Seen& seen);

}  // namespace ripple::testing
