// The interposer's tests, works of learned graph passes (one binary, cuhook_test;
// cuhook_fixture.h): llama.cpp's graph decoding, several short passes a work, a work
// drained or carried across an agent restart, and grants ahead.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cuhooks/cuhook_fixture.h"

namespace ripple::testing {
namespace {

// Tests llama.cpp's CUDA-graph decoding (ggml-cuda) through every path an engine
// resolves the driver by: graphs captured on several streams (relaxed mode) with plain and
// cuBLAS-style (cuLaunchKernelEx with attributes) kernels and a copy inside the capture,
// re-captured and re-instantiated every 4th step of a stream, a graph launch per step
// between small input and logits copies. Every launch the driver received is counted by
// the hook (captured kernels and graph launches), every graph launch on every stream is
// a gated boundary granted by the agent, nothing captured is gated, and the app's output
// is unchanged.
TEST_F(CuhookTest, LlamaCppGraphDecodeOnSeveralStreams) {
  struct Case {
    std::vector<std::string> path;
    bool ptds;
  };
  for (const Case& c : {Case{{"direct"}, false}, Case{{"dlsym"}, false}, Case{{"procaddr", "13000", "0"}, false},
                        Case{{"procaddr", "13000", "2"}, true}}) {
    SCOPED_TRACE(c.path[0] + (c.ptds ? " (per-thread default stream)" : ""));
    clear_outputs();
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    std::vector<std::string> args = c.path;
    for (const char* a : {"llama", "24", "3", "6"}) args.push_back(a);
    // One pass a work (RIPPLE_MIN_WORK_MS=0): the steps take microseconds here, so the
    // default would span many passes (ShortPassesShareAWork tests that).
    Outcome r = run(args, {{"RIPPLE_GRAPH_BYTES", "1000000"}, {"RIPPLE_MIN_WORK_MS", "0"}}, c.ptds);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.out, "driver_app: done\n");
    // 3 streams x 8 steps: captured at steps 0 and 4 of each, 6 kernels a capture.
    auto fake = fake_counts(r);
    auto calls = [&](const std::string& base) {
      unsigned long long n = 0;
      for (const char* suffix : {"", "_ptsz"})
        if (fake.count(base + suffix)) n += fake[base + suffix][0];
      return n;
    };
    EXPECT_EQ(calls("cuGraphLaunch"), 24u);
    EXPECT_EQ(calls("cuLaunchKernel") + calls("cuLaunchKernelEx"), 36u);
    json st = stats_of(r);
    EXPECT_EQ(st["launches"].get<unsigned long long>(), 36u + 24u);
    EXPECT_EQ(st["units_graph"].get<int>(), 24);
    EXPECT_EQ(st["capture_skips"].get<int>(), 6);  // the copies inside the captures
    EXPECT_EQ(st["units_copy"].get<int>(), 0);     // input and logits copies are below RIPPLE_COPY_MIN_BYTES
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    EXPECT_EQ(st["errors"].get<int>(), 0);
    auto seen = srv.seen();
    std::size_t graph_units = 0;
    for (std::size_t i = 0; i < seen.works.size(); ++i) {
      const auto& cat = seen.hellos.at(seen.work_hello.at(i)).units;
      for (auto u : seen.works[i].units) {
        EXPECT_EQ(cat.at(u).bytes, 1000000u) << cat.at(u).name;
        ++graph_units;
      }
    }
    // Each graph launch announced once, with RIPPLE_GRAPH_BYTES (and the pass announced
    // ahead after the last step, never run).
    EXPECT_EQ(graph_units, 24u + unrun_ahead(st, seen));
    EXPECT_GE(st["grants"].get<int>(), 1);
  }
}

// Runs llama.cpp's graph decoding (1 stream, 6 kernels a graph) for `steps` tokens with a
// nap of `nap_ms` a token under a grant server; `env` adds to the environment.
struct DecodeRun {
  json st;
  GrantServer::Seen seen;
  std::string err;
  // Works of one graph launch (before the pass and its period are known) and of several,
  // the most passes one spans, and the graph units announced in all; `onset`: the works
  // before the first of several passes.
  std::size_t singles = 0, multi = 0, most = 0, units = 0, onset = 0;
};

// Tests that a short learned pass (llama.cpp decoding a small model: one graph launch a
// token) is announced as works of several passes, so the grant round trip is paid once
// per several tokens (-5.7 % tokens/s on an H200 when it was paid every token), while
// every launch is still gated and counted exactly: each graph launch a boundary, no
// position off the work, nothing drained or unmanaged, and what is announced beyond the
// launches is only the rest of the last work (the engine stopped mid-work). With
// RIPPLE_MIN_WORK_MS=0, and for a pass longer than it, one pass a work as before.
TEST_F(CuhookTest, ShortPassesShareAWork) {
  auto decode = [&](int steps, int nap_ms, std::map<std::string, std::string> env) {
    clear_outputs();
    GrantServer srv(sock_);
    EXPECT_TRUE(srv.start());
    env.emplace("RIPPLE_GRAPH_BYTES", "1000000");  // unless the case sets it
    Outcome r = run({"direct", "sleep", std::to_string(nap_ms), "llama", std::to_string(steps), "1", "6"}, env);
    EXPECT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.out, "driver_app: done\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    DecodeRun d;
    d.st = stats_of(r);
    d.seen = srv.seen();
    d.err = r.err;
    for (const auto& w : d.seen.works) {
      d.units += w.units.size();
      if (d.multi == 0 && w.units.size() == 1) ++d.onset;
      (w.units.size() > 1 ? d.multi : d.singles) += 1;
      d.most = std::max(d.most, w.units.size());
    }
    auto fake = fake_counts(r);
    EXPECT_EQ(fake["cuGraphLaunch"][0], static_cast<unsigned long long>(steps));
    EXPECT_EQ(d.st["units_graph"].get<int>(), steps) << "every graph launch a boundary";
    EXPECT_EQ(d.st["launches"].get<int>(), steps + 6 * ((steps + 3) / 4));
    EXPECT_EQ(d.st["copy_passes_learned"].get<int>(), 1) << r.err;
    EXPECT_EQ(d.st["learned_pass_units"].get<int>(), 1);
    EXPECT_EQ(d.st["multi_pass_works"].get<std::size_t>(), d.multi);
    EXPECT_EQ(d.st["unmanaged_units"].get<int>(), 0);
    EXPECT_EQ(d.st["seq_mismatch"].get<int>(), 0);
    EXPECT_EQ(d.st["units_drained"].get<int>(), 0);
    EXPECT_EQ(d.st["relearns"].get<int>(), 0);
    EXPECT_EQ(d.st["errors"].get<int>(), 0);
    EXPECT_EQ(d.seen.discards, 0u);
    const std::size_t ahead = unrun_ahead(d.st, d.seen);
    EXPECT_EQ(d.st["grants"].get<std::size_t>() + (ahead > 0), d.seen.works.size())
        << "one whole-work grant each (but the work announced ahead, never run)";
    EXPECT_EQ(d.st["ahead_drained"].get<int>(), 0);
    d.units -= ahead;
    EXPECT_GE(d.units, static_cast<std::size_t>(steps)) << "every launch announced";
    return d;
  };
  const int steps = 300;
  // >= 1 ms a token: works of up to 10 passes once the pass is stable: matched twice, as
  // a drain of a whole work (10 passes x 1 MB) charges under 16 MiB.
  // (When its works start spanning passes is timed, not counted: a work spans
  // ceil(10 ms / the median pass period) passes, 1 while the median of the first few
  // periods is 10 ms or more. Under qemu-user on a loaded host this run once had 14 works
  // of one pass where 9 is usual; the cheap and heavy runs below count the onset.)
  DecodeRun fast = decode(steps, 1, {});
  EXPECT_GE(fast.singles, 2u);
  EXPECT_GE(fast.multi, 1u) << fast.err;
  EXPECT_LE(fast.most, 10u) << "a token takes at least 1 ms: at most 10 ms / 1 ms passes a work";
  EXPECT_LE(fast.multi, (steps - fast.singles) / 2 + 1) << "two passes a work at least";
  EXPECT_LT(fast.units - steps, fast.most) << "announced, never run: the rest of the last work (and the work ahead)";
  EXPECT_LE(fast.st["grant_waits"].get<std::size_t>(), fast.seen.works.size());
  // Every grant's GPU time reported, but the one of the work the engine stopped in.
  EXPECT_EQ(fast.seen.dones.size() + (fast.units > static_cast<std::size_t>(steps)),
            fast.st["grants"].get<std::size_t>());

  // RIPPLE_MIN_WORK_MS=0: one pass a work, as before.
  DecodeRun off = decode(steps, 1, {{"RIPPLE_MIN_WORK_MS", "0"}});
  EXPECT_EQ(off.multi, 0u);
  EXPECT_EQ(off.st["passes_per_work"].get<int>(), 1);
  EXPECT_EQ(off.units, static_cast<std::size_t>(steps)) << "each launch announced once";
  EXPECT_EQ(off.seen.works.size(), static_cast<std::size_t>(steps) + 1) << "and one pass ahead after the last";
  EXPECT_LT(fast.seen.works.size() * 2, off.seen.works.size()) << "far fewer round trips";

  // A pass whose drained work would charge real bytes (100 MB a graph launch) spans
  // passes only once matched 16 times in a row; a cheap one (1 kB) once matched twice.
  // RIPPLE_MIN_WORK_MS=1000: a work spans several passes as soon as its pass is stable
  // whatever a token takes (under 1 s), so the works before the first of several passes
  // are counted, not timed: learning (the same launches in both runs), then 16 or 2.
  DecodeRun heavy = decode(steps, 1, {{"RIPPLE_GRAPH_BYTES", "100000000"}, {"RIPPLE_MIN_WORK_MS", "1000"}});
  EXPECT_GE(heavy.onset, 16u) << "16 passes matched before a work spans passes";
  EXPECT_LE(heavy.singles, 8u + 16 + 4);
  EXPECT_GE(heavy.multi, 1u) << heavy.err;
  DecodeRun cheap = decode(60, 1, {{"RIPPLE_GRAPH_BYTES", "1000"}, {"RIPPLE_MIN_WORK_MS", "1000"}});
  EXPECT_GE(cheap.multi, 1u) << cheap.err;
  EXPECT_EQ(cheap.onset + 14, heavy.onset) << "the cheap pass spans passes 14 round trips sooner";

  // A pass longer than RIPPLE_MIN_WORK_MS (12 ms a token) keeps one pass a work, also
  // once stable.
  DecodeRun slow = decode(90, 12, {});
  EXPECT_EQ(slow.multi, 0u);
  EXPECT_EQ(slow.st["passes_per_work"].get<int>(), 1);
  EXPECT_EQ(slow.units, 90u);
  EXPECT_EQ(slow.seen.works.size(), 90u + 1);
}

// Tests that a work spanning several graph passes keeps the work's rules: a copy off the
// pass in the middle of it drains the rest of the work (charged, counted, never run) and
// gets its own work, the graph pass is learned again; and after an agent restart the new
// session gets the rest of the open work, then works of several passes again, with every
// launch a boundary and no position lost.
TEST_F(CuhookTest, MultiPassWorkDrainsAndSurvivesRestart) {
  const std::map<std::string, std::string> env = {{"RIPPLE_GRAPH_BYTES", "1000000"}};
  {
    GrantServer srv(sock_);
    ASSERT_TRUE(srv.start());
    Outcome r = run({"direct", "sleep", "1", "graph", "155", "copies", "1", "2097152", "graph", "20"}, env);
    ASSERT_TRUE(exited_ok(r)) << r.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    json st = stats_of(r);
    auto seen = srv.seen();
    ASSERT_GE(seen.hellos.size(), 1u);
    std::uint32_t graph = 0;
    while (graph < seen.hellos[0].units.size() && seen.hellos[0].units[graph].name != "graph") ++graph;
    std::size_t before = 0, multi = 0, i = 0;
    bool at_boundary = false;  // a work (the one announced ahead, if any) started at launch 156
    for (; i < seen.works.size(); ++i) {
      const auto& w = seen.works[i].units;
      if (std::count(w.begin(), w.end(), graph) != static_cast<std::ptrdiff_t>(w.size())) break;
      at_boundary = at_boundary || before == 155;
      before += w.size();
      multi += w.size() > 1;
    }
    ASSERT_LT(i, seen.works.size()) << "the copy's own work";
    EXPECT_EQ(seen.works[i].units.size(), 1u) << "one copy-2^21 unit";
    EXPECT_GE(multi, 1u) << r.err;
    EXPECT_EQ(st["units_graph"].get<int>(), 175);
    EXPECT_EQ(st["units_copy"].get<int>(), 1);
    // (At ~1 ms a token, 9 or 10 passes a work from the 24th launch on: the copy comes in
    // one, and the work after it was announced ahead: both drained; or, under a slow
    // emulation, at a work boundary: then only the work announced ahead there.)
    EXPECT_EQ(st["units_drained"].get<std::size_t>(), before - 155) << "the rest of the work the copy came in";
    EXPECT_LT(before - 155, 20u);
    EXPECT_EQ(st["ahead_drained"].get<int>(), 1);
    // The copy in the middle of a work: that work's sequence mismatched (its rest drained);
    // at a work's boundary only the work announced ahead there is drained.
    EXPECT_EQ(st["seq_mismatch"].get<std::size_t>(), before > 155 && !at_boundary ? 1u : 0u)
        << "before " << before << (at_boundary ? ", at a boundary" : "");
    EXPECT_EQ(st["relearns"].get<int>(), 1);
    EXPECT_EQ(st["copy_passes_learned"].get<int>(), 2) << "the graph pass again after the copy";
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    // The drained rest was in the grant in hand; the last work may be one announced ahead
    // the engine never ran (the graph pass relearned was stable before: stable at once).
    EXPECT_GE(st["grants"].get<std::size_t>() + 1, seen.works.size());
    EXPECT_LE(st["grants"].get<std::size_t>(), seen.works.size());
    EXPECT_EQ(seen.discards, 0u);
  }
  clear_outputs();
  GrantServer::Seen seen;
  // The first agent goes once it has seen a work of several passes (the pass learned and
  // stable; the hook's only session, none renewed for a graph pass), not at a fixed time
  // in: under emulation or load that could come before learning, and the new session's
  // works would then be single passes until the pass is stable.
  Outcome r = run_across_restart({"direct", "sleep", "1", "graph", "700"}, &seen, env, 0,
                                 [](const GrantServer::Seen& s) {
                                   return std::any_of(s.works.begin(), s.works.end(),
                                                      [](const auto& w) { return w.units.size() > 1; });
                                 });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  json st = stats_of(r);
  EXPECT_EQ(st["units_graph"].get<int>(), 700);
  EXPECT_EQ(st["passes_learned"].get<int>(), 1) << r.err;
  EXPECT_EQ(st["relearns"].get<int>(), 0);
  EXPECT_EQ(st["seq_mismatch"].get<int>(), 0);
  EXPECT_EQ(st["units_drained"].get<int>(), 0);
  EXPECT_GE(st["agent_losses"].get<int>(), 1);
  ASSERT_GE(seen.works.size(), 5u);
  std::size_t multi = 0, announced = 0;
  for (const auto& w : seen.works) {
    EXPECT_LE(w.units.size(), 10u);
    multi += w.units.size() > 1;
    announced += w.units.size();
  }
  EXPECT_GE(multi + 1, seen.works.size()) << "all but the first (the rest of the open work) span passes";
  EXPECT_LT(announced, 700u) << "the new session announces what is left, not a replay";
  EXPECT_GE(st["grants"].get<std::size_t>(), seen.works.size());
}

// Tests that with an always-grant agent the work boundaries of a stable learned bare pass
// (llama.cpp decoding: one graph launch a token) no longer wait for the announce -> grant
// round trip: each next work is announced once the one before is granted to its end, and
// its grant is in hand at the boundary. The agent takes 300 us to grant (a token takes
// 2 ms): without grants ahead (RIPPLE_GRANT_AHEAD=off) every work start waits for it;
// with them, every work start after the pass is stable finds its grant there. The
// engine runs the same launches either way, each gated once.
TEST_F(CuhookTest, GrantsAheadAreInHandAtWorkBoundaries) {
  auto decode = [&](const std::string& ahead, const std::string& min_work_ms) {
    clear_outputs();
    GrantServer srv(sock_);
    srv.set_decide_us(300);
    EXPECT_TRUE(srv.start());
    Outcome r = run({"direct", "sleep", "2", "llama", "120", "1", "6"},
                    {{"RIPPLE_GRAPH_BYTES", "1000000"}, {"RIPPLE_GRANT_AHEAD", ahead}, {"RIPPLE_MIN_WORK_MS", min_work_ms}});
    EXPECT_TRUE(exited_ok(r)) << r.err;
    EXPECT_EQ(r.out, "driver_app: done\n");
    EXPECT_EQ(fake_counts(r)["cuGraphLaunch"][0], 120u);
    json st = stats_of(r);
    EXPECT_EQ(st["units_graph"].get<int>(), 120);
    EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
    EXPECT_EQ(st["units_drained"].get<int>(), 0);
    EXPECT_EQ(st["ahead_drained"].get<int>(), 0);
    EXPECT_EQ(srv.seen().discards, 0u);
    EXPECT_EQ(st["work_start_waits"].get<std::size_t>(), st["grants"].get<std::size_t>()) << "whole-work grants";
    return st;
  };
  for (const char* min_work_ms : {"0", "10"}) {
    SCOPED_TRACE(std::string("RIPPLE_MIN_WORK_MS=") + min_work_ms);
    json off = decode("off", min_work_ms);
    EXPECT_EQ(off["works_ahead"].get<int>(), 0);
    // (Its work starts rarely find the grant in hand, 300 us after the announce; under
    // qemu-user, slow enough for the grant to arrive first, 6 did: not asserted.)
    EXPECT_GE(off["work_start_wait_ns"].get<std::size_t>(), off["work_start_waits"].get<std::size_t>() * 300'000);
    // The watcher read the GPU gap between every pair of consecutive grants (the first has
    // none before it; at most the last may go unreported at exit), and the fake driver's
    // events complete when recorded: the end at the next boundary (after the app's 2 ms
    // between tokens), before the announce; the start at the first launch after the grant,
    // 300 us after the announce at least.
    const std::size_t grants = off["grants"].get<std::size_t>(), gaps = off["boundary_gaps"].get<std::size_t>();
    EXPECT_LE(gaps + 1, grants);
    EXPECT_GE(gaps + 2, grants);
    EXPECT_GE(off["boundary_gap_ns"].get<std::size_t>(), gaps * 300'000);
    json on = decode("on", min_work_ms);
    const std::size_t ahead = on["works_ahead"].get<std::size_t>();
    EXPECT_GE(ahead, 1u);
    // Every work announced ahead that ran (all but the last: the engine stopped) found its
    // grant in hand, but for host stalls: the grant comes 300 us after the announce and
    // the boundary 2 ms after it, so a work waits only when the host stalls the agent or
    // the engine for over 1.7 ms there. CI's parallel suites on 2 vCPUs did that to 6 of
    // 96 works once: one work in 8 is allowed (without grants ahead nearly all wait).
    // Before the pass was stable (16 passes matched), works waited.
    const std::size_t stalls = std::max<std::size_t>(2, ahead / 8);
    EXPECT_GE(on["work_starts_in_hand"].get<std::size_t>() + stalls, ahead - 1) << "(a stall of the test host)";
    EXPECT_LE(on["work_start_waits"].get<std::size_t>() - on["work_starts_in_hand"].get<std::size_t>(),
              8u + 16 + stalls)
        << "only the works before the pass was learned and stable waited, and those the host stalled";
    // Counts, not times: the total wait also holds the learning phase's waits, which a
    // loaded or sanitized host stretches (a sanitizer run of CI once had on > off with
    // MIN_WORK_MS=10, where few works span several passes each).
    EXPECT_GT(on["work_starts_in_hand"].get<std::size_t>(), 0u);
  }
}

// Tests that a pass that was stable once and is learned again (llama-bench's reps, a
// server's requests: a copy between generations drops llama.cpp's decode pass) is stable
// at once: its works are announced ahead from the start, where a pass learned the first
// time waits kSpanAfterPasses (16) passes, each a work and a round trip. Three
// generations of 70, 100 and 90 tokens (where a generation is no longer than the one
// before, the learner finds a pass of it and its copy at the copy: a period, but not
// this test's), a 2 MiB copy between them; the agent takes 300 us to grant,
// a token 2 ms. The first generation's works wait until the pass is learned and stable
// (~8 + 16); the later two only while it is learned again (~8 each), not 16 more.
TEST_F(CuhookTest, AStablePassLearnedAgainIsStableAtOnce) {
  GrantServer srv(sock_);
  srv.set_decide_us(300);
  ASSERT_TRUE(srv.start());
  Outcome r = run({"direct", "sleep", "2", "llama", "70", "1", "6", "copies", "1", "2097152", "llama", "100", "1", "6",
                   "copies", "1", "2097152", "llama", "90", "1", "6"},
                  {{"RIPPLE_GRAPH_BYTES", "1000000"}, {"RIPPLE_MIN_WORK_MS", "0"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "driver_app: done\n");
  EXPECT_EQ(fake_counts(r)["cuGraphLaunch"][0], 260u);
  json st = stats_of(r);
  EXPECT_EQ(st["units_graph"].get<int>(), 260);
  EXPECT_EQ(st["units_copy"].get<int>(), 2);
  EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
  EXPECT_EQ(st["relearns"].get<int>(), 2);
  EXPECT_EQ(st["copy_passes_learned"].get<int>(), 3);
  EXPECT_EQ(st["passes_recalled"].get<int>(), 2) << "the graph pass, learned again after each copy";
  const std::size_t waited = st["work_start_waits"].get<std::size_t>() - st["work_starts_in_hand"].get<std::size_t>();
  const std::size_t ahead = st["works_ahead"].get<std::size_t>();
  // Host stalls (CI's parallel suites on 2 vCPUs) may make a work announced ahead wait, or
  // be announced at its boundary: one in 16 allowed. (On a quiet host: 42 waited and 223
  // announced ahead; with the recall taken out, 74 and 191.)
  const std::size_t stalls = std::max<std::size_t>(2, ahead / 16);
  // Not recalled, each relearned pass would wait 16 passes more: 2 x 16 over the bound.
  EXPECT_LE(waited, (8u + 16 + 2) + 2 * (8u + 2) + stalls) << "the relearned passes waited as if new";
  EXPECT_GE(ahead + stalls, 260u - (8 + 16) - 2 * 8 - 3 * 2) << "every work after learning is announced ahead";
}

// Tests that a copy off the learned graph pass, coming where the work announced ahead
// should begin, drains that work (acquired in order and closed unrun: charged, counted)
// before the copy's own work; the launches and the copy run as without grants ahead.
TEST_F(CuhookTest, DeviationDrainsTheWorkAnnouncedAhead) {
  GrantServer srv(sock_);
  ASSERT_TRUE(srv.start());
  // One pass a work: the copy comes at a work boundary, nothing of the open work is left.
  // The graph pass is learned again after the copy, stable at once (it was before the
  // copy: passes_recalled): the run ends with a work announced ahead (unrun_ahead).
  Outcome r = run({"direct", "sleep", "1", "graph", "60", "copies", "1", "2097152", "graph", "40"},
                  {{"RIPPLE_GRAPH_BYTES", "1000000"}, {"RIPPLE_MIN_WORK_MS", "0"}});
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "driver_app: done\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  json st = stats_of(r);
  auto seen = srv.seen();
  auto fake = fake_counts(r);
  EXPECT_EQ(fake["cuGraphLaunch"][0], 100u);
  EXPECT_EQ(fake["cuMemcpyHtoDAsync_v2"].at(1), 2097152u) << "copied once, whole";
  EXPECT_EQ(st["units_graph"].get<int>(), 100);
  EXPECT_EQ(st["units_copy"].get<int>(), 1);
  EXPECT_EQ(st["unmanaged_units"].get<int>(), 0);
  EXPECT_GE(st["works_ahead"].get<int>(), 1);
  EXPECT_EQ(st["ahead_drained"].get<int>(), 1);
  EXPECT_EQ(st["units_drained"].get<int>(), 1) << "the one graph pass announced ahead";
  EXPECT_EQ(st["seq_mismatch"].get<int>(), 0) << "no work was open: the copy came at a boundary";
  EXPECT_EQ(st["relearns"].get<int>(), 1);
  EXPECT_EQ(seen.discards, 0u);
  ASSERT_GE(seen.hellos.size(), 1u);
  std::uint32_t graph = 0;
  while (graph < seen.hellos[0].units.size() && seen.hellos[0].units[graph].name != "graph") ++graph;
  // The works: graph passes, the one drained, then the copy's own work right after it.
  std::size_t graphs = 0, copy_at = seen.works.size();
  for (std::size_t i = 0; i < seen.works.size(); ++i) {
    const auto& w = seen.works[i].units;
    const auto n = static_cast<std::size_t>(std::count(w.begin(), w.end(), graph));
    if (n != w.size() && copy_at == seen.works.size()) copy_at = i;
    graphs += n;
  }
  ASSERT_LT(copy_at, seen.works.size());
  EXPECT_EQ(seen.works[copy_at].units.size(), 1u);
  ASSERT_EQ(unrun_ahead(st, seen), 1u);
  EXPECT_EQ(graphs, 100u + 1 + 1) << "each launch once, the drained pass, the last work ahead";
  // The drained work was granted (charged) and its grant closed: reported like the others.
  EXPECT_EQ(st["grants"].get<std::size_t>() + 1, seen.works.size());
  EXPECT_EQ(seen.dones.size(), st["grants"].get<std::size_t>());
}

// Tests that an agent lost while a work is announced ahead does not strand the engine:
// the work ahead goes with the session (the agent drops the engine's queue; it is not
// drained against the next agent), the engine reconnects, announces what is left of the
// open work and then works ahead again, every launch a boundary and none drained.
TEST_F(CuhookTest, AgentLossForgetsTheWorkAnnouncedAhead) {
  GrantServer::Seen seen;
  // The first agent goes once it has seen 30 works (one pass each): past learning (8
  // launches at most) and stability (2 passes matched for this cheap pass, 16 at most):
  // works are announced ahead when it goes. Not a fixed time in (150 ms could come before
  // learning under emulation or load).
  Outcome r = run_across_restart({"direct", "sleep", "1", "graph", "400"}, &seen,
                                 {{"RIPPLE_GRAPH_BYTES", "1000000"}, {"RIPPLE_MIN_WORK_MS", "0"}}, 0,
                                 [](const GrantServer::Seen& s) { return s.works.size() >= 30; });
  ASSERT_TRUE(exited_ok(r)) << r.err;
  EXPECT_EQ(r.out, "driver_app: done\n");
  json st = stats_of(r);
  EXPECT_EQ(fake_counts(r)["cuGraphLaunch"][0], 400u);
  EXPECT_EQ(st["units_graph"].get<int>(), 400);
  EXPECT_GE(st["agent_losses"].get<int>(), 1);
  EXPECT_EQ(st["passes_learned"].get<int>(), 1) << r.err;
  EXPECT_EQ(st["ahead_drained"].get<int>(), 0) << "forgotten with the session, not drained";
  EXPECT_EQ(st["units_drained"].get<int>(), 0);
  EXPECT_EQ(st["seq_mismatch"].get<int>(), 0);
  EXPECT_EQ(seen.discards, 0u) << "no grant of the old session's works asked of the new agent";
  ASSERT_GE(seen.works.size(), 20u);
  std::size_t announced = 0;
  for (const auto& w : seen.works) {
    EXPECT_EQ(w.units.size(), 1u) << "one pass a work";
    announced += w.units.size();
  }
  EXPECT_LE(announced, 400u + 1) << "the new session announces what is left, not a replay";
  // Works ahead before the loss and again after it.
  EXPECT_GT(st["works_ahead"].get<std::size_t>(), seen.works.size() / 2);
  EXPECT_GE(st["work_starts_in_hand"].get<std::size_t>(), seen.works.size() / 2);
}

}  // namespace
}  // namespace ripple::testing
