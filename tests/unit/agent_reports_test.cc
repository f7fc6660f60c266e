// Unit tests of the control socket's replies (agent/daemon/reports.h): status and
// explain rendered from hand-built state, with the tracer's facts given, not read.
#include <gtest/gtest.h>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "agent/daemon/reports.h"
#include "tests/unit/agent_daemon_fixture.h"

namespace ripple::daemon {
namespace {

using nlohmann::json;
using testing::DaemonFixture;
using testing::kMs;

// Tests that percentiles are nearest-rank over the samples, 0 with none, and that only
// the last kCapacity samples are kept while the count goes on.
TEST(Samples, NearestRankOverTheRetainedSamples) {
  Samples s;
  EXPECT_EQ(s.percentile(50), 0);
  for (Nanos v = 100; v >= 1; --v) s.add(v);
  EXPECT_EQ(s.percentile(50), 50);
  EXPECT_EQ(s.percentile(99), 99);
  EXPECT_EQ(s.percentile(100), 100);
  EXPECT_EQ(s.percentile(0), 1);
  Samples w;
  for (std::size_t i = 0; i < Samples::kCapacity; ++i) w.add(1'000);
  for (std::size_t i = 0; i < Samples::kCapacity; ++i) w.add(7);
  EXPECT_EQ(w.count(), 2 * Samples::kCapacity);
  EXPECT_EQ(w.percentile(100), 7);
}

struct Reports : DaemonFixture {
  Reports() : engines(cfg, *adm), tasks(*adm, 1, 0) { untraced.resize(1); }
  json status(Nanos now) {
    const StatusInputs in{cfg, 0, *adm, tasks, engines, latency, facts, untraced, counters};
    return status_json(in, now);
  }
  EngineSessions engines;
  TaskStatistics tasks;
  Samples latency;
  TracerFacts facts;
  std::vector<std::string> untraced;
  SessionCounters counters;
};

tracer::JobEvent event(tracer::JobEventKind kind, std::uint64_t seq, Nanos released, Nanos response = 0) {
  tracer::JobEvent ev{};
  ev.kind = kind;
  ev.seq = seq;
  ev.tid = 1;
  ev.release_ns = static_cast<std::uint64_t>(released);
  ev.ts_ns = static_cast<std::uint64_t>(released + response);
  ev.response_ns = static_cast<std::uint64_t>(response);
  return ev;
}

// Tests that status shows each task's jobs, misses and miss ratios (overall and in the
// window), its untraced reason, the counters, and refusals by reason, with the sessions
// refused at accept and at Hello added up.
TEST(Reports, StatusShowsTasksCountersAndRefusals) {
  Reports f;
  f.cfg.agent.policy = "ripple";
  f.cfg.agent.max_queued_works = 33;
  f.tasks.on_event(event(tracer::JobEventKind::kRelease, 1, 0), 0);
  f.tasks.on_event(event(tracer::JobEventKind::kComplete, 1, 0, 90 * kMs), 90 * kMs);
  f.tasks.on_event(event(tracer::JobEventKind::kRelease, 2, 100 * kMs), 100 * kMs);
  f.tasks.on_event(event(tracer::JobEventKind::kComplete, 2, 100 * kMs, 30 * kMs), 130 * kMs);
  f.untraced[0] = "pid 5 has exited";
  f.counters.grants_sent = 12;
  f.counters.sessions_refused = 2;
  f.counters.refused.note(0);
  f.counters.refused.note(1);
  f.cfg.agent.refuse_unconfigured = true;
  EngineSession s;
  f.engines.handle(1, s, engine::Hello{"x", engine::Kind::kBestEffort, 0, 0, 0, engine::Memory::kUnknown, {}}, 0,
                   [](const engine::Message&) { return true; });
  f.latency.add(2'000);

  const json j = f.status(200 * kMs);
  EXPECT_EQ(j["policy"], "ripple");
  EXPECT_DOUBLE_EQ(j["uptime_s"].get<double>(), 0.2);
  EXPECT_EQ(j["grants_sent"], 12);
  EXPECT_EQ(j["sessions_refused"], 3);
  EXPECT_EQ(j["refusals"]["uid_not_allowed"], 2);
  EXPECT_EQ(j["refusals"]["unconfigured"], 1);
  EXPECT_EQ(j["limits"]["max_queued_works"], 33);
  EXPECT_EQ(j["chunk_bytes"], 64 << 20);  // the task is priced: the suggestion, at least 64 MiB
  EXPECT_DOUBLE_EQ(j["decision_latency_us"]["p50"].get<double>(), 2.0);
  EXPECT_EQ(j["tracer"]["attached"], false);
  EXPECT_EQ(j["tracer"]["events"], 4);
  ASSERT_EQ(j["tasks"].size(), 1u);
  const json& t = j["tasks"][0];
  EXPECT_EQ(t["name"], "costmap");
  EXPECT_EQ(t["jobs"], 2);
  EXPECT_EQ(t["misses"], 1);
  EXPECT_DOUBLE_EQ(t["dmr"].get<double>(), 0.5);
  EXPECT_EQ(t["window_jobs"], 2);
  EXPECT_DOUBLE_EQ(t["window_dmr"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(t["last_response_ms"].get<double>(), 30.0);
  EXPECT_EQ(t["traced"], false);
  EXPECT_EQ(t["untraced_reason"], "pid 5 has exited");
  EXPECT_FALSE(t.contains("threads"));
  EXPECT_TRUE(j["engines"].empty());
}

// Tests that with a tracer attached each task shows its threads, drops and uid refusals
// from the tracer's facts, and is traced unless a reason says otherwise.
TEST(Reports, StatusShowsTracerFactsPerTask) {
  Reports f;
  f.facts.attached = true;
  f.facts.drops = 4;
  ripple_pt_stats st{};
  st.drops = 3;
  st.uid_refused = 2;
  f.facts.stats = {st};
  f.facts.threads = {6};
  const json j = f.status(0);
  EXPECT_EQ(j["tracer"]["drops"], 4);
  const json& t = j["tasks"][0];
  EXPECT_EQ(t["threads"], 6);
  EXPECT_EQ(t["drops"], 3);
  EXPECT_EQ(t["uid_refused"], 2);
  EXPECT_EQ(t["traced"], true);
}

// Tests that status lists connected engines with their counters and the gone ones as
// totals, and that explain names the binding job and why each engine waits.
TEST(Reports, EnginesAndExplain) {
  Reports f;
  EngineSession a, b;
  auto ok = [](const engine::Message&) { return true; };
  engine::Hello h{"llm", engine::Kind::kBestEffort, 0, 0, 0, engine::Memory::kIntegrated, {{"layer", 100'000'000, 1'000'000}}};
  ASSERT_TRUE(f.engines.handle(1, a, h, 0, ok).close.empty());
  h.name = "vlm";
  h.memory = engine::Memory::kUnknown;
  ASSERT_TRUE(f.engines.handle(2, b, h, 0, ok).close.empty());
  ASSERT_TRUE(f.engines.close(b, 0));
  f.tasks.on_event(event(tracer::JobEventKind::kRelease, 1, 0), 0);
  engine::WorkMsg w;
  w.work_id = 1;
  w.units.assign(40, 0);
  ASSERT_TRUE(f.engines.handle(1, a, w, 0, ok).point);
  (void)f.adm->decide(0);

  const json j = f.status(1 * kMs);
  ASSERT_EQ(j["engines"].size(), 2u);  // connected first, then the one gone
  EXPECT_EQ(j["engines"][0]["name"], "llm");
  EXPECT_EQ(j["engines"][0]["connected"], true);
  EXPECT_GE(j["engines"][0]["grants"].get<int>(), 1);
  EXPECT_EQ(j["engines"][0]["memory"], "integrated");  // as its hello reported
  EXPECT_EQ(j["engines"][1]["name"], "vlm");
  EXPECT_EQ(j["engines"][1]["memory"], "unknown");
  EXPECT_EQ(j["engines_gone"]["count"], 1);
  EXPECT_EQ(j["engines_not_listed"], 0);

  const json x = explain_json("ripple", *f.adm, 1 * kMs);
  EXPECT_EQ(x["policy"], "ripple");
  ASSERT_EQ(x["active_jobs"].size(), 1u);
  EXPECT_EQ(x["active_jobs"][0]["task"], "costmap");
  EXPECT_EQ(x["binding_job"], "costmap #1");
  ASSERT_EQ(x["engines"].size(), 1u);  // only connected engines wait
  EXPECT_EQ(x["engines"][0]["name"], "llm");
  EXPECT_FALSE(x["engines"][0]["cause"].get<std::string>().empty());
}

// Tests that each engine entry shows its process's pid, its session's ordinal and the
// process's counters over its sessions ("total"), so that a reader differencing two
// replies across a session renewal gets the grants of both sessions, not a negative.
TEST(Reports, EngineTotalsSpanARenewedSession) {
  Reports f;
  auto ok = [](const engine::Message&) { return true; };
  const engine::Hello h{"llm", engine::Kind::kBestEffort, 0, 0, 0, engine::Memory::kUnknown, {{"layer", 100'000'000, 1'000'000}}};
  auto one_grant = [&](EngineSession& s, std::uint64_t work_id, Nanos t) {
    engine::WorkMsg w;
    w.work_id = work_id;
    w.units.assign(1, 0);
    ASSERT_TRUE(f.engines.handle(1, s, w, t, ok).point);
    const admission::Decision d = f.adm->decide(t);
    ASSERT_EQ(d.grants.size(), 1u);
    ASSERT_TRUE(f.adm->on_sent(d.grants[0].engine, d.grants[0].id, t));
    ASSERT_TRUE(f.engines.handle(1, s, engine::StartMsg{d.grants[0].id}, t, ok).point);
    ASSERT_TRUE(f.engines.handle(1, s, engine::DoneMsg{d.grants[0].id, 2'000'000}, t + 2 * kMs, ok).point);
  };
  EngineSession a;
  a.cred.pid = ::getpid();  // a real process: its start time is read from /proc
  ASSERT_TRUE(f.engines.handle(1, a, h, 0, ok).close.empty());
  one_grant(a, 1, 10 * kMs);
  one_grant(a, 2, 20 * kMs);
  const json before = f.status(25 * kMs);
  ASSERT_TRUE(f.engines.close(a, 30 * kMs));
  EngineSession b;
  b.cred.pid = ::getpid();
  ASSERT_TRUE(f.engines.handle(2, b, h, 30 * kMs, ok).close.empty());
  one_grant(b, 1, 40 * kMs);
  const json after = f.status(50 * kMs);

  const json& e0 = before["engines"][0];
  EXPECT_EQ(e0["pid"], ::getpid());
  EXPECT_EQ(e0["session"], 1);
  EXPECT_EQ(e0["total"]["grants"], 2);
  ASSERT_EQ(after["engines"].size(), 2u);
  const json& e1 = after["engines"][0];  // the connected session, then the gone one
  EXPECT_EQ(e1["connected"], true);
  EXPECT_EQ(e1["pid"], ::getpid());
  EXPECT_EQ(e1["session"], 2);
  EXPECT_EQ(e1["grants"], 1);  // the session's own
  EXPECT_EQ(e1["total"]["grants"], 3);
  EXPECT_EQ(e1["total"]["works_done"], 3);
  EXPECT_EQ(e1["total"]["bytes"], 300'000'000);
  EXPECT_DOUBLE_EQ(e1["total"]["busy_s"].get<double>() - e0["total"]["busy_s"].get<double>(), 0.002);
  EXPECT_EQ(after["engines"][1]["session"], 1);
  EXPECT_EQ(after["engines"][1]["total"]["grants"], 2);

  // The grant span: the session's own from its grant at 40 ms to its Done at 42 ms; the
  // process's from its first grant (10 ms) to its last Done, over both sessions.
  const json& own = e1["grant_span"];
  EXPECT_EQ(own["first_grant_ns"], 40 * kMs);
  EXPECT_EQ(own["last_done_ns"], 42 * kMs);
  EXPECT_EQ(own["done_bytes"], 100'000'000);
  EXPECT_DOUBLE_EQ(own["s"].get<double>(), 0.002);
  EXPECT_DOUBLE_EQ(own["gbps"].get<double>(), 50.0);  // 100 MB in 2 ms
  const json& all = e1["total"]["grant_span"];
  EXPECT_EQ(all["first_grant_ns"], 10 * kMs);
  EXPECT_EQ(all["last_done_ns"], 42 * kMs);
  EXPECT_EQ(all["done_bytes"], 300'000'000);
  EXPECT_DOUBLE_EQ(all["gbps"].get<double>(), 300e6 / 32e6);
  EXPECT_EQ(before["engines"][0]["total"]["grant_span"]["last_done_ns"], 22 * kMs);
}

// Tests that an engine with no grant done has no grant span (null, not zeros), and
// one whose only grant was done at its decision instant has a span of 0 s and no rate.
TEST(Reports, GrantSpanNullUntilAGrantIsDone) {
  Reports f;
  auto ok = [](const engine::Message&) { return true; };
  const engine::Hello h{"llm", engine::Kind::kBestEffort, 0, 0, 0, engine::Memory::kUnknown, {{"layer", 100'000'000, 1'000'000}}};
  EngineSession a;
  ASSERT_TRUE(f.engines.handle(1, a, h, 0, ok).close.empty());
  EXPECT_TRUE(f.status(1 * kMs)["engines"][0]["grant_span"].is_null());
  engine::WorkMsg w;
  w.work_id = 1;
  w.units.assign(1, 0);
  ASSERT_TRUE(f.engines.handle(1, a, w, 2 * kMs, ok).point);
  const admission::Decision d = f.adm->decide(2 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_TRUE(f.status(3 * kMs)["engines"][0]["grant_span"].is_null()) << "granted, not done";
  ASSERT_TRUE(f.engines.handle(1, a, engine::DoneMsg{d.grants[0].id, 0}, 2 * kMs, ok).point);
  const json span = f.status(3 * kMs)["engines"][0]["grant_span"];
  EXPECT_EQ(span["s"], 0.0);
  EXPECT_EQ(span["done_bytes"], 100'000'000);
  EXPECT_TRUE(span["gbps"].is_null());
}

}  // namespace
}  // namespace ripple::daemon
