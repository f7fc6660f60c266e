// The interposer's tests, sub-layer grants (one binary, cuhook_test; cuhook_fixture.h):
// large copies issued as chunks, large units granted sub-unit by sub-unit, and the
// chunk size the agent suggests.
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cuhooks/cuhook_fixture.h"

namespace ripple::testing {
namespace {

// --- sub-layer grants ------------------------------------------------------------------

// One line of the fake's trace (FAKE_CUDA_TRACE).
struct TraceOp {
  std::string name;
  unsigned long long bytes;
  std::string stream;
};
std::vector<TraceOp> trace_ops(const std::string& text) {
  std::vector<TraceOp> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    unsigned long long t;
    TraceOp op;
    std::string fn;
    if (l >> t >> op.name >> op.bytes >> fn >> op.stream) v.push_back(op);
  }
  return v;
}

// Tests that a copy larger than RIPPLE_CHUNK_BYTES outside any unit is issued as chunks
// through its own entry point, in order, on its own stream, moving the same bytes (the
// program copies a pattern to the device and back and compares), that a synchronous
// copy stays synchronous (only the synchronous entry point runs), that each chunk is its
// own bare boundary charged its bytes, and that RIPPLE_CHUNK_BYTES=0 keeps whole copies.
TEST_F(CuhookTest, ChunkedCopiesMoveTheSameBytesInOrder) {
  struct Case {
    std::string how, h2d, d2h;
    std::vector<unsigned long long> chunks;  // per direction
  };
  const std::vector<unsigned long long> lin = {1000000, 1000000, 1000000, 123}, rows = {1000000, 1000000, 1000000};
  const std::vector<Case> cases = {{"sync", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", lin},
                                   {"async", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", lin},
                                   {"unified", "cuMemcpy", "cuMemcpyAsync", lin},
                                   {"2d", "cuMemcpy2D_v2", "cuMemcpy2D_v2", rows},
                                   {"3d", "cuMemcpy3D_v2", "cuMemcpy3D_v2", rows}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.how);
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    const std::string trace = tmp_ + "/trace." + c.how;
    Outcome r = run({"direct", "roundtrip", c.how, "3000123"},
                    {{"FAKE_CUDA_TRACE", trace}, {"RIPPLE_CHUNK_BYTES", "1000000"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    auto ops = trace_ops(slurp(trace));
    ASSERT_EQ(ops.size(), 2 * c.chunks.size()) << slurp(trace);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const bool up = i < c.chunks.size();
      EXPECT_EQ(ops[i].name, up ? c.h2d : c.d2h) << i;
      EXPECT_EQ(ops[i].bytes, c.chunks[i % c.chunks.size()]) << i;
      EXPECT_EQ(ops[i].stream, ops[up ? 0 : c.chunks.size()].stream) << "one stream per copy";
    }
    json st = stats_of(r);
    EXPECT_EQ(st["chunked_copies"].get<int>(), 2);
    EXPECT_EQ(st["chunks"].get<std::size_t>(), ops.size());
    EXPECT_EQ(st["units_copy"].get<std::size_t>(), ops.size()) << "each chunk a boundary";
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    const GrantServer::Seen seen = srv.seen();
    ASSERT_EQ(seen.works.size(), ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      std::uint64_t bytes = 0;
      for (auto u : seen.works[i].units) bytes += seen.hellos[0].units[u].bytes;
      EXPECT_EQ(bytes, (ops[i].bytes + 4095) / 4096 * 4096) << "a chunk's work carries its bytes (4 KiB granules)";
    }
  }
  // Off: whole copies, as before.
  clear_outputs();
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  const std::string trace = tmp_ + "/trace.off";
  Outcome r = run({"direct", "roundtrip", "sync", "3000123"}, {{"FAKE_CUDA_TRACE", trace}, {"RIPPLE_CHUNK_BYTES", "0"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  auto ops = trace_ops(slurp(trace));
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].bytes, 3000123u);
  EXPECT_EQ(stats_of(r)["chunks"].get<int>(), 0);
  EXPECT_EQ(srv.seen().works.size(), 2u);
}

// Tests that RIPPLE_CHUNK_BYTES below the protocol's 4 KiB is raised to it with one line
// naming the variable (a 1-byte chunk made a 1 MiB copy 2^20 driver calls), and that
// RIPPLE_RECONNECT_MS outside [1, 3600000] is brought inside with one line (0, or a value
// that wrapped an int, retried the agent at every boundary).
TEST_F(CuhookTest, ChunkSizeAndReconnectOutsideTheirRangesAreClamped) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  const std::string trace = tmp_ + "/trace.tiny";
  Outcome r = run({"direct", "roundtrip", "sync", "40960"},
                  {{"FAKE_CUDA_TRACE", trace}, {"RIPPLE_CHUNK_BYTES", "1"}, {"RIPPLE_COPY_MIN_BYTES", "4096"},
                   {"RIPPLE_RECONNECT_MS", "4294967296"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_NE(r.err.find("RIPPLE_CHUNK_BYTES=1 is outside [4096, 1099511627776] (0: off): using 4096"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("RIPPLE_RECONNECT_MS=4294967296 is outside [1, 3600000]: using 3600000"), std::string::npos)
      << r.err;
  auto ops = trace_ops(slurp(trace));
  ASSERT_EQ(ops.size(), 20u) << "10 chunks of 4 KiB each way";
  for (const auto& op : ops) EXPECT_EQ(op.bytes, 4096u);
  EXPECT_EQ(stats_of(r)["chunk_bytes"].get<std::uint64_t>(), 4096u);
}

// Tests that a unit larger than the chunk size is announced as its sub-units (C bytes,
// then the rest), that the copy inside it (issued by a helper thread, as an offloading
// engine does) waits at each sub-unit for a grant covering it, and that the agent is
// charged exactly the bytes the units copy: every announced sub-unit granted once, none
// skipped, none discarded. The agent grants one unit at a time, each after the one
// before started; then all of them at once (successors delivered ahead).
TEST_F(CuhookTest, LargeUnitsAreGrantedSubUnitBySubUnit) {
  for (const bool ahead : {false, true}) {
    SCOPED_TRACE(ahead ? "successors ahead" : "one grant at a time");
    clear_outputs();
    GrantServer srv(sock_);
    srv.set_in_order(!ahead);
    srv.set_units_per_grant(1);
    ASSERT_TRUE(srv.start());
    // 8 passes of 4 layers: a 1 MiB copy and a 4 KiB read-back each, C = 64 KiB.
    Outcome r = run({"direct", "offload", "8", "4", "3", "1048576"}, {{"RIPPLE_CHUNK_BYTES", "65536"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    const GrantServer::Seen seen = srv.seen();
    json st = stats_of(r);
    ASSERT_EQ(st["passes_learned"].get<int>(), 1) << r.err;
    const auto& hello = seen.hellos.back();
    auto cat = by_name(hello);
    const std::uint64_t unit = 1048576 + 4096;
    ASSERT_EQ(cat["layers.2"].bytes, unit);
    ASSERT_EQ(cat["layers.2/c"].bytes, 65536u);
    ASSERT_EQ(cat["layers.2/t"].bytes, unit - 16 * 65536);
    EXPECT_NEAR(static_cast<double>(cat["layers.2/c"].duration_ns * 16 + cat["layers.2/t"].duration_ns),
                static_cast<double>(cat["layers.2"].duration_ns), 17.0) << "durations split in proportion (ns truncated)";
    // The learned session's works: each layer as 17 sub-units, granted one by one.
    const std::size_t learned = seen.hellos.size() - 1;
    std::map<std::uint64_t, const ripple::engine::WorkMsg*> works;
    std::size_t whole = 0;
    std::uint64_t announced = 0;
    for (std::size_t i = 0; i < seen.works.size(); ++i) {
      if (seen.work_hello[i] != learned) continue;
      works[seen.works[i].work_id] = &seen.works[i];
      whole += seen.works[i].units.size() == 4 * 17 + 1;
      for (auto u : seen.works[i].units) announced += hello.units[u].bytes;
    }
    EXPECT_GE(whole, 4u) << "whole passes of sub-units";
    std::uint64_t charged = 0;
    for (const auto& g : seen.grants) {
      auto w = works.find(g.work_id);
      if (w == works.end()) continue;
      EXPECT_EQ(g.count, 1u);
      charged += hello.units[w->second->units[g.first]].bytes;
    }
    EXPECT_EQ(seen.discards, 0u);
    EXPECT_EQ(st["subunits_skipped"].get<int>(), 0);
    EXPECT_EQ(charged, announced) << "every announced sub-unit granted once";
    EXPECT_GE(charged, 4 * whole * unit);
    // Each layer's 1 MiB copy: 16 chunks, gated at sub-units 1..15; its read-back at 16.
    const auto chunked = st["chunked_copies"].get<std::uint64_t>();
    EXPECT_GE(chunked, 4 * whole);
    EXPECT_EQ(st["chunks"].get<std::uint64_t>(), 16 * chunked);
    EXPECT_EQ(st["chunk_gates"].get<std::uint64_t>(), 16 * chunked);
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
  }
}

// Tests that the chunk size the agent suggests in its Welcome is applied: a session whose
// Hello announced whole layers (the 64 MiB default) is followed, at the next work, by one
// whose Hello announces them as sub-units of the suggested size, and the copies are then
// gated chunk by chunk; that the session opened for it applies no other suggestion; and
// that RIPPLE_CHUNK_BYTES wins over the suggestion.
TEST_F(CuhookTest, AgentSuggestedChunkSizeIsApplied) {
  {
    GrantServer srv(sock_);
    srv.set_chunk_suggestion(65536, 0, 1);  // in the Welcome, from the learned pass's session on
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "offload", "8", "4", "3", "1048576"});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    const GrantServer::Seen seen = srv.seen();
    json st = stats_of(r);
    ASSERT_EQ(st["passes_learned"].get<int>(), 1) << r.err;
    ASSERT_EQ(seen.hellos.size(), 3u) << "first, learned pass, suggested chunk size\n" << r.err;
    auto learned = by_name(seen.hellos[1]);
    EXPECT_EQ(learned["layers.2"].bytes, 1048576u + 4096);
    EXPECT_EQ(learned.count("layers.2/c"), 0u) << "the learned session announced whole layers (64 MiB default)";
    auto chunked = by_name(seen.hellos[2]);
    ASSERT_EQ(chunked.count("layers.2/c"), 1u) << r.err;
    EXPECT_EQ(chunked["layers.2/c"].bytes, 65536u);
    EXPECT_EQ(st["chunk_bytes"].get<std::uint64_t>(), 65536u);
    EXPECT_EQ(st["chunk_suggested"].get<std::uint64_t>(), 65536u);
    EXPECT_EQ(st["chunk_changes"].get<int>(), 1);
    EXPECT_GT(st["chunk_gates"].get<std::uint64_t>(), 0u) << "copies gated chunk by chunk in the new session";
    EXPECT_LE(st["chunk_waits"].get<std::uint64_t>(), st["grant_waits"].get<std::uint64_t>());
    EXPECT_LE(st["chunk_wait_ns"].get<std::uint64_t>(), st["wait_ns"].get<std::uint64_t>());
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    EXPECT_EQ(seen.discards, 0u);
    EXPECT_NE(r.err.find("chunk size 65536 bytes as the agent suggests"), std::string::npos) << r.err;
  }
  {
    clear_outputs();
    GrantServer srv(sock_);
    srv.set_chunk_suggestion(65536, 65536);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "offload", "8", "4", "3", "1048576"}, {{"RIPPLE_CHUNK_BYTES", "131072"}});
    ASSERT_TRUE(exited_ok(r)) << r.err;
    const GrantServer::Seen seen = srv.seen();
    json st = stats_of(r);
    EXPECT_EQ(st["chunk_bytes"].get<std::uint64_t>(), 131072u) << "RIPPLE_CHUNK_BYTES wins";
    EXPECT_EQ(st["chunk_changes"].get<int>(), 0);
    auto cat = by_name(seen.hellos.back());
    EXPECT_EQ(cat["layers.2/c"].bytes, 131072u);
  }
}

// Tests that the grants carry the agent's current suggestion, so an engine whose Welcome
// had none (the agent had priced no job yet) follows it without asking: one new session
// announces its units as sub-units of it. And that a size applied is held
// RIPPLE_CHUNK_HOLD_MS before another suggestion is applied (each change is a session).
TEST_F(CuhookTest, GrantsCarryTheSuggestionAndChangesAreHeld) {
  const std::map<std::string, std::string> env{{"RIPPLE_LEARN", "off"}, {"RIPPLE_UNIT_BYTES", "1052672"}};
  {
    GrantServer srv(sock_);
    srv.set_chunk_suggestion(0, 65536);  // none in the Welcome
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "offload", "8", "4", "3", "1048576"}, env);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    const GrantServer::Seen seen = srv.seen();
    json st = stats_of(r);
    ASSERT_EQ(seen.hellos.size(), 2u) << "the first session, then the one with the suggested sub-units\n" << r.err;
    EXPECT_EQ(by_name(seen.hellos[0]).count("unit/c"), 0u);
    auto cat = by_name(seen.hellos[1]);
    ASSERT_EQ(cat.count("unit/c"), 1u) << r.err;
    EXPECT_EQ(cat["unit/c"].bytes, 65536u);
    EXPECT_EQ(st["chunk_changes"].get<int>(), 1);
    EXPECT_GT(st["chunk_gates"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    EXPECT_EQ(r.err.find("learned units"), std::string::npos) << "no misleading line: " << r.err;
  }
  for (const char* hold : {"3600000", "0"}) {
    SCOPED_TRACE(std::string("RIPPLE_CHUNK_HOLD_MS=") + hold);
    clear_outputs();
    GrantServer srv(sock_);
    srv.set_chunk_suggestion(0, 65536, 0, true);  // 64 KiB and 128 KiB, grant after grant
    ASSERT_TRUE(srv.start());
    auto e = env;
    e["RIPPLE_CHUNK_HOLD_MS"] = hold;
    Outcome r = run({"direct", "offload", "8", "4", "3", "1048576"}, e);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    json st = stats_of(r);
    const bool held = std::string(hold) != "0";
    const auto changes = st["chunk_changes"].get<std::uint64_t>();
    if (held) {
      EXPECT_EQ(changes, 1u) << r.err;
      EXPECT_EQ(srv.seen().hellos.size(), 2u);
    } else {
      EXPECT_GE(changes, 3u) << "without a hold, every flip is a change\n" << r.err;
      EXPECT_EQ(srv.seen().hellos.size(), changes + 1);
    }
  }
}

}  // namespace
}  // namespace ripple::testing
