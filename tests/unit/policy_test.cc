// Unit tests of the baseline policies (paper §5.1, App. D) on the admission framework,
// and of choosing a policy by name. Simulated clock; numbers hand-computed.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "agent/admission/admission.h"
#include "agent/policy/cap.h"
#include "agent/policy/pace.h"
#include "agent/policy/registry.h"
#include "agent/policy/sereno.h"

namespace ripple::policy {
namespace {

using admission::Admission;
using admission::Decision;
using admission::EngineId;
using admission::EngineKind;
using admission::EngineSpec;
using admission::kNever;
using admission::WaitCause;
using admission::Work;

constexpr Nanos kMs = admission::kNsPerMs;

pricing::Params params() {
  pricing::Params p;
  p.certification = false;
  return p;
}

// Solo median 40 ms (profile 30, 40, 50 ms).
pricing::TaskSpec task() {
  pricing::TaskSpec t;
  t.name = "kdnn";
  t.period = 100 * kMs;
  t.deadline = 70 * kMs;
  t.solo_profile = {30 * kMs, 40 * kMs, 50 * kMs};
  return t;
}

EngineSpec engine(const char* name, EngineKind kind = EngineKind::kBestEffort) {
  EngineSpec e;
  e.name = name;
  e.kind = kind;
  e.catalog = {{"layer", 100'000'000, kMs}};
  if (kind == EngineKind::kDeadlineBound) e.period = e.deadline = 1000 * kMs;
  return e;
}

Work work(std::uint64_t id, std::uint32_t units) {
  Work w;
  w.id = id;
  w.units.assign(units, 0);
  return w;
}

struct Harness {
  explicit Harness(std::string_view policy) : ledger(params()) {
    t = ledger.add_task(task());
    auto p = make_policy(policy);
    EXPECT_TRUE(p.ok()) << p.error().message;
    adm = std::make_unique<Admission>(ledger, std::move(*p));
  }
  EngineId add(EngineSpec spec) { return *adm->add_engine(std::move(spec), 0); }
  // Runs a grant to completion in `ns` of measured time.
  void finish(const admission::GrantPlan& g, Nanos start, Nanos ns) {
    ASSERT_TRUE(adm->on_start(g.engine, g.id, start));
    ASSERT_TRUE(adm->on_done(g.engine, g.id, ns, start + ns));
  }
  pricing::Ledger ledger;
  pricing::TaskId t = 0;
  std::unique_ptr<Admission> adm;
};

// Tests that unmanaged grants whole forward passes whatever the PT jobs, pipelined.
TEST(Policy, UnmanagedGrantsEverything) {
  Harness r("unmanaged");
  const EngineId llm = r.add(engine("llm"));
  r.adm->on_release(r.t, 1, 0);
  ASSERT_TRUE(r.adm->announce(llm, work(1, 70), 0));
  ASSERT_TRUE(r.adm->announce(llm, work(2, 70), 0));
  const Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(d.grants[0].count, 70u);
  EXPECT_EQ(d.grants[1].work, 2u);
  EXPECT_TRUE(d.grants[1].successor);
}

// Tests that pause starts no forward pass while a PT job is active, lets the pass in
// flight finish, and resumes whole passes once no job is active.
TEST(Policy, PauseWaitsForNoActiveJob) {
  Harness r("pause");
  const EngineId llm = r.add(engine("llm"));
  ASSERT_TRUE(r.adm->announce(llm, work(1, 30), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 30u);  // the whole pass, not capped by H
  r.adm->on_release(r.t, 1, 5 * kMs);
  ASSERT_TRUE(r.adm->announce(llm, work(2, 30), 5 * kMs));
  EXPECT_TRUE(r.adm->decide(5 * kMs).grants.empty());
  EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kBoundary);
  r.finish(d.grants[0], 0, 30 * kMs);
  EXPECT_TRUE(r.adm->decide(30 * kMs).grants.empty());
  EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kPaused);
  r.adm->on_complete(r.t, 1, 45 * kMs);
  d = r.adm->decide(45 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].work, 2u);
}

// Tests that sigamma grants one unit at a time and none while a PT job is active.
TEST(Policy, SigammaOneUnitAndSuppressed) {
  Harness r("sigamma");
  const EngineId llm = r.add(engine("llm"));
  ASSERT_TRUE(r.adm->announce(llm, work(1, 30), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 1u);
  r.adm->on_release(r.t, 1, 0);
  r.finish(d.grants[0], 0, kMs);
  EXPECT_TRUE(r.adm->decide(kMs).grants.empty());
  EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kPaused);
  r.adm->on_complete(r.t, 1, 40 * kMs);
  d = r.adm->decide(40 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].first, 1u);
}

// Tests cap-1/4: the cap is 1/4 of the 40 ms solo median = 10 ms of exposure; a job
// that saw a 30 ms pass run has spent it, so the next pass waits for its completion,
// while a job that saw 8 ms has not.
TEST(Policy, CapStopsAfterExposureSpent) {
  EXPECT_EQ(CapPolicy::budget_of(pricing::Estimator(task(), pricing::Params{}), 0.25), 10 * kMs);
  for (Nanos pass_ms : {8, 30}) {
    Harness r("cap-1/4");
    const EngineId llm = r.add(engine("llm"));
    r.adm->on_release(r.t, 1, 0);
    ASSERT_TRUE(r.adm->announce(llm, work(1, static_cast<std::uint32_t>(pass_ms)), 0));
    Decision d = r.adm->decide(0);
    ASSERT_EQ(d.grants.size(), 1u);
    r.finish(d.grants[0], 0, pass_ms * kMs);
    ASSERT_TRUE(r.adm->announce(llm, work(2, 5), pass_ms * kMs));
    d = r.adm->decide(pass_ms * kMs);
    const auto& cap = static_cast<const CapPolicy&>(r.adm->policy());
    EXPECT_EQ(cap.exposure(r.t, 1), pass_ms * kMs);
    if (pass_ms == 8) {
      EXPECT_EQ(d.grants.size(), 1u);
    } else {
      EXPECT_TRUE(d.grants.empty());
      EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kPaused);
      r.adm->on_complete(r.t, 1, 50 * kMs);
      EXPECT_EQ(r.adm->decide(50 * kMs).grants.size(), 1u);
    }
  }
}

// Tests sereno's PI pause: a 10 ms step measured at 15 ms scores 0.5 against the
// 0.15 target, error 0.35, integral 0.35, pause (1 x 0.35 + 0.25 x 0.35) x 10 ms =
// 4.375 ms; a deadline-bound engine is not paused.
TEST(Policy, SerenoPausesBestEffortBetweenSteps) {
  Harness r("sereno");
  const EngineId llm = r.add(engine("llm"));
  const EngineId vlm = r.add(engine("vlm", EngineKind::kDeadlineBound));
  ASSERT_TRUE(r.adm->announce(llm, work(1, 10), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  r.finish(d.grants[0], 0, 15 * kMs);
  const auto& sereno = static_cast<const SerenoPolicy&>(r.adm->policy());
  EXPECT_EQ(sereno.resume_at(llm), 15 * kMs + 4'375'000);
  ASSERT_TRUE(r.adm->announce(llm, work(2, 10), 15 * kMs));
  ASSERT_TRUE(r.adm->announce(vlm, work(1, 3), 15 * kMs));
  d = r.adm->decide(15 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, vlm);
  EXPECT_EQ(d.wake_at, 15 * kMs + 4'375'000);
  EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kPaused);
  d = r.adm->decide(15 * kMs + 4'375'000);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, llm);
}

// --- pace-R --------------------------------------------------------------------

constexpr Bytes kMB = 1'000'000;

// An engine whose catalog has one unit per size (1 us each: a GPU far faster than
// any pace tested).
EngineSpec sized_engine(const char* name, const std::vector<Bytes>& sizes) {
  EngineSpec e;
  e.name = name;
  for (Bytes b : sizes) e.catalog.push_back({fmt::format("u{}", b), b, admission::kNsPerUs});
  return e;
}

struct Granted {
  Nanos at;
  EngineId engine;
  Bytes bytes;
};

// Runs admission on a fake clock from `begin` to `end`: decide() at every wake-up it asks
// for; every grant starts and ends at once; an engine out of work announces its pass
// again. Checks that each wake-up is later than now, that nothing is granted 1 ns
// before it, and that the wake-up itself grants (so it is not early either).
std::vector<Granted> drive(Harness& r, const std::vector<std::pair<EngineId, std::vector<std::uint32_t>>>& passes,
                           Nanos end, Nanos begin = 0) {
  std::vector<Granted> out;
  std::map<EngineId, std::uint64_t> ids;
  Nanos now = begin;
  bool woken = false;
  for (;;) {
    for (const auto& [id, units] : passes) {
      if (r.adm->engine(id)->has_work()) continue;
      Work w;
      w.id = ++ids[id];
      w.units = units;
      EXPECT_TRUE(r.adm->announce(id, std::move(w), now));
    }
    const Decision d = r.adm->decide(now);
    if (woken) {
      EXPECT_FALSE(d.grants.empty()) << "woken at " << now << " ns for nothing";
    }
    woken = false;
    for (const auto& g : d.grants) {
      out.push_back({now, g.engine, g.bytes});
      r.finish(g, now, 0);
    }
    if (!d.grants.empty()) continue;  // the slots are free again: decide again now
    if (d.wake_at == kNever || d.wake_at <= now) {
      ADD_FAILURE() << "no later wake-up at " << now << " ns: " << d.wake_at;
      break;
    }
    if (d.wake_at >= end) break;
    const Decision early = r.adm->decide(d.wake_at - 1);
    EXPECT_TRUE(early.grants.empty()) << "granted 1 ns before the wake-up at " << d.wake_at;
    EXPECT_EQ(early.wake_at, d.wake_at);
    if (!early.grants.empty()) break;
    now = d.wake_at;
    woken = true;
  }
  return out;
}

// The largest excess of granted bytes over the pace in any window [t_i, t_j] of
// grants i..j: max (bytes of i..j) - R (t_j - t_i). A token bucket keeps it at most
// its size, or one unit where a unit is larger.
double worst_burst(const std::vector<Granted>& g, double gbps) {
  double sum = 0, min_before = 0, worst = 0;
  for (const Granted& x : g) {
    // f = S_j - R t_j; g_i = S_(i-1) - R t_i; worst = max over i <= j of f_j - g_i.
    min_before = std::min(min_before, sum - gbps * static_cast<double>(x.at));
    if (&x == &g.front()) min_before = sum - gbps * static_cast<double>(x.at);
    sum += static_cast<double>(x.bytes);
    worst = std::max(worst, sum - gbps * static_cast<double>(x.at) - min_before);
  }
  return worst;
}

Bytes total(const std::vector<Granted>& g, std::optional<EngineId> engine = {}) {
  Bytes b = 0;
  for (const Granted& x : g)
    if (!engine || x.engine == *engine) b += x.bytes;
  return b;
}

// Tests pace-2 step by step (R = 2 GB/s = 2 MB/ms; bucket R x H = 2 x 18 ms = 36 MB;
// 10 MB units) while a PT job is active: the full bucket covers a run of 3 units
// (30 MB, 6 MB left); the next unit waits (10 - 6) / 2 = 2 ms, then one unit every
// 5 ms; explain says it waits for the pace, and nothing is granted 1 ns early.
TEST(Policy, PaceGrantsAtItsRate) {
  Harness r("pace-2");
  const auto& pace = static_cast<const PacePolicy&>(r.adm->policy());
  EXPECT_EQ(pace.bytes_per_ms(), 2 * kMB);
  const EngineId llm = r.add(sized_engine("llm", {10 * kMB}));
  r.adm->on_release(r.t, 1, 0);  // the protected task does not matter
  ASSERT_TRUE(r.adm->announce(llm, work(1, 100), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 3u);
  EXPECT_EQ(d.grants[0].bytes, 30 * kMB);
  EXPECT_EQ(pace.burst(), 36 * kMB);
  EXPECT_EQ(d.wake_at, 2 * kMs);
  const admission::WaitReason why = r.adm->explain(llm);
  EXPECT_EQ(why.cause, WaitCause::kBudget);
  EXPECT_EQ(why.until, 2 * kMs);
  EXPECT_EQ(why.need, 10 * kMB);
  EXPECT_EQ(why.budget, 6 * kMB);
  EXPECT_NE(admission::describe(why, 0).find("grant pace of 2 GB/s"), std::string::npos) << why.detail;
  r.finish(d.grants[0], 0, kMs);
  d = r.adm->decide(2 * kMs - 1);
  EXPECT_TRUE(d.grants.empty());
  EXPECT_EQ(d.wake_at, 2 * kMs);
  for (Nanos t = 2 * kMs; t <= 22 * kMs; t += 5 * kMs) {
    EXPECT_TRUE(r.adm->decide(t - 1).grants.empty()) << t;
    d = r.adm->decide(t);
    ASSERT_EQ(d.grants.size(), 1u) << t;
    EXPECT_EQ(d.grants[0].count, 1u);
    EXPECT_EQ(d.wake_at, t + 5 * kMs);
    r.finish(d.grants[0], t, kMs);
  }
}

// Tests that the bucket fills to one grant's worth and no more: an engine idle for 1 s
// at 2 GB/s then gets 36 MB (3 units of 10 MB), not the 2 GB the idle second accrued.
TEST(Policy, PaceBucketHoldsOneGrant) {
  Harness r("pace-2");
  const EngineId llm = r.add(sized_engine("llm", {10 * kMB}));
  Decision d = r.adm->decide(0);
  EXPECT_TRUE(d.grants.empty());
  EXPECT_EQ(d.wake_at, kNever);  // nothing to wait for without work
  EXPECT_EQ(r.adm->explain(llm).cause, WaitCause::kNoWork);
  ASSERT_TRUE(r.adm->announce(llm, work(1, 100), 1000 * kMs));
  d = r.adm->decide(1000 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 3u);
  EXPECT_EQ(d.wake_at, 1002 * kMs);
}

// Tests a unit larger than the bucket (100 MB against 36 MB at 2 GB/s): granted alone
// on the full bucket, leaving a 64 MB debt; a 10 MB unit after it waits (64 + 10) / 2
// = 37 ms; another 100 MB unit then waits until the bucket is full again, 36 / 2 =
// 18 ms later.
TEST(Policy, PaceUnitLargerThanBucket) {
  Harness r("pace-2");
  const EngineId llm = r.add(sized_engine("llm", {100 * kMB, 10 * kMB}));
  Work w;
  w.id = 1;
  w.units = {0, 1, 0};
  ASSERT_TRUE(r.adm->announce(llm, std::move(w), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 1u);
  EXPECT_EQ(d.grants[0].bytes, 100 * kMB);
  EXPECT_EQ(d.wake_at, 37 * kMs);
  EXPECT_EQ(r.adm->explain(llm).budget, -64 * kMB);
  EXPECT_NE(r.adm->explain(llm).detail.find("paying off"), std::string::npos) << r.adm->explain(llm).detail;
  r.finish(d.grants[0], 0, kMs);
  EXPECT_TRUE(r.adm->decide(37 * kMs - 1).grants.empty());
  d = r.adm->decide(37 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].bytes, 10 * kMB);
  EXPECT_EQ(d.wake_at, 55 * kMs);
  EXPECT_NE(r.adm->explain(llm).detail.find("larger than the bucket"), std::string::npos);
  r.finish(d.grants[0], 37 * kMs, kMs);
  EXPECT_TRUE(r.adm->decide(55 * kMs - 1).grants.empty());
  d = r.adm->decide(55 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].bytes, 100 * kMB);
}

// Tests that over 60 s the granted byte rate is R within 1 % for units smaller than,
// equal to and larger than the bucket, and a pass mixing them, at 2 and 0.5 GB/s; and
// that no window of grants runs ahead of the pace by more than the bucket (or the
// unit, where larger).
TEST(Policy, PaceRateOverLongRun) {
  const std::vector<Bytes> sizes = {1 * kMB, 10 * kMB, 36 * kMB, 50 * kMB, 250 * kMB};
  const Nanos end = 60'000 * kMs;
  for (const char* name : {"pace-2", "pace-0.5"}) {
    const double gbps = std::string_view(name) == "pace-2" ? 2.0 : 0.5;
    const Bytes bucket = static_cast<Bytes>(gbps * 18 * kMB);
    std::vector<std::vector<std::uint32_t>> passes;
    for (std::uint32_t k = 0; k < sizes.size(); ++k) passes.push_back(std::vector<std::uint32_t>(40, k));
    passes.push_back({0, 0, 1, 4, 2, 0, 3, 1, 1, 4, 0});
    for (const auto& pass : passes) {
      SCOPED_TRACE(fmt::format("{}, pass of {} units, first {} B", name, pass.size(), sizes[pass[0]]));
      Harness r(name);
      const EngineId llm = r.add(sized_engine("llm", sizes));
      const auto g = drive(r, {{llm, pass}}, end);
      const double rate = static_cast<double>(total(g)) / static_cast<double>(end);  // B/ns = GB/s
      EXPECT_NEAR(rate, gbps, 0.01 * gbps);
      Bytes largest = bucket;
      for (std::uint32_t u : pass) largest = std::max(largest, sizes[u]);
      EXPECT_LE(worst_burst(g, gbps), static_cast<double>(largest) + 1);
    }
  }
}

// Tests that the engine's grant span (first grant to last Done, agent status
// "grant_span") holds pace-2's rate where the whole run does not: an engine connected at
// 0 that starts work only at 1 s (its start-up) and is paced for 4 s more moves
// R x 4 s + the bucket, 0.8 R over its 5 s, but R within 1 % over its span; and no more
// than R x span + the bucket (R x H) in it, the bound the bucket guarantees.
TEST(Policy, PaceRateOverTheGrantSpan) {
  Harness r("pace-2");
  const auto& pace = static_cast<const PacePolicy&>(r.adm->policy());
  const EngineId llm = r.add(sized_engine("llm", {10 * kMB}));
  const Nanos begin = 1000 * kMs, end = 5000 * kMs;
  const auto g = drive(r, {{llm, std::vector<std::uint32_t>(40, 0)}}, end, begin);
  ASSERT_FALSE(g.empty());
  const admission::EngineStats& s = r.adm->engine(llm)->stats;
  EXPECT_EQ(s.first_grant, begin);
  EXPECT_EQ(s.last_done, g.back().at);  // each grant is done when decided
  EXPECT_EQ(s.done_bytes, total(g));
  const Nanos span = s.last_done - s.first_grant;
  const double over_span = static_cast<double>(s.done_bytes) / static_cast<double>(span);  // B/ns = GB/s
  const double over_run = static_cast<double>(s.done_bytes) / static_cast<double>(end);
  EXPECT_NEAR(over_span, 2.0, 0.02);
  EXPECT_LT(over_run, 0.85 * 2.0);
  EXPECT_LE(static_cast<double>(s.done_bytes), 2.0 * static_cast<double>(span) + static_cast<double>(pace.burst()));
}

// Tests that a successor the engine hands back unexecuted (stale) gives its bytes back
// to the bucket, as the ledger refunds them: pace-2 (2 MB/ms, bucket 36 MB), 10 MB
// units. The full bucket covers 3 units at 0 (6 MB left); at 2 ms a successor of 1 unit
// empties it; discarded at 3 ms, the bucket holds 2 + 10 MB again, so the same unit is
// granted at once rather than at 7 ms: the bytes never moved. Without the refund every
// discarded successor cost the engine its bytes of the pace.
TEST(Policy, PaceRefundsAGrantHandedBack) {
  Harness r("pace-2");
  const auto& pace = static_cast<const PacePolicy&>(r.adm->policy());
  const EngineId llm = r.add(sized_engine("llm", {10 * kMB}));
  ASSERT_TRUE(r.adm->announce(llm, work(1, 100), 0));
  Decision d = r.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  ASSERT_EQ(d.grants[0].count, 3u);
  ASSERT_TRUE(r.adm->on_start(llm, d.grants[0].id, 0));
  d = r.adm->decide(2 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  const admission::GrantPlan succ = d.grants[0];
  EXPECT_TRUE(succ.successor);
  EXPECT_EQ(succ.first, 3u);
  EXPECT_EQ(pace.tokens(), 0);
  ASSERT_TRUE(r.adm->on_discard(llm, succ.id, 3 * kMs));
  d = r.adm->decide(3 * kMs);
  ASSERT_EQ(d.grants.size(), 1u) << "waits for " << d.wake_at << " ns: the discarded bytes were not refunded";
  EXPECT_EQ(d.grants[0].first, 3u);
  EXPECT_EQ(d.grants[0].count, 1u);
  EXPECT_EQ(pace.tokens(), 2 * kMB);
}

// Tests two engines sharing one pace: with equal units each gets R/2 and the sum is
// R; with 10 MB and 30 MB units they take turns, so the 30 MB engine is not starved
// by the smaller units the bucket covers sooner, and the sum is still R.
TEST(Policy, PaceSharedByEngines) {
  const Nanos end = 20'000 * kMs;
  {
    Harness r("pace-2");
    const EngineId a = r.add(sized_engine("a", {10 * kMB}));
    const EngineId b = r.add(sized_engine("b", {10 * kMB}));
    const auto g = drive(r, {{a, std::vector<std::uint32_t>(20, 0)}, {b, std::vector<std::uint32_t>(20, 0)}}, end);
    const double ns = static_cast<double>(end);
    EXPECT_NEAR(static_cast<double>(total(g)) / ns, 2.0, 0.02);
    EXPECT_NEAR(static_cast<double>(total(g, a)) / ns, 1.0, 0.01);
    EXPECT_NEAR(static_cast<double>(total(g, b)) / ns, 1.0, 0.01);
    EXPECT_LE(worst_burst(g, 2.0), 36.0 * kMB + 1);
  }
  {
    Harness r("pace-2");
    const EngineId a = r.add(sized_engine("a", {10 * kMB}));
    const EngineId b = r.add(sized_engine("b", {30 * kMB}));
    const auto g = drive(r, {{a, std::vector<std::uint32_t>(20, 0)}, {b, std::vector<std::uint32_t>(20, 0)}}, end);
    ASSERT_GT(g.size(), 100u);
    for (std::size_t k = 1; k < g.size(); ++k) EXPECT_NE(g[k].engine, g[k - 1].engine) << "grant " << k;
    const double ns = static_cast<double>(end);
    EXPECT_NEAR(static_cast<double>(total(g)) / ns, 2.0, 0.02);
    EXPECT_NEAR(static_cast<double>(total(g, b)) / ns, 1.5, 0.015);
    // While b is in line, a waits behind it, and says so.
    r.adm->on_release(r.t, 1, end);
    const Decision d = r.adm->decide(end);
    const admission::WaitReason wa = r.adm->explain(a), wb = r.adm->explain(b);
    EXPECT_EQ(wa.cause, WaitCause::kBudget);
    EXPECT_EQ(wb.cause, WaitCause::kBudget);
    EXPECT_EQ(wa.until, d.wake_at);
    EXPECT_NE((g.back().engine == a ? wa : wb).detail.find("behind engine"), std::string::npos);
  }
}

// Tests that every documented name makes a policy of that name and bad ones are
// refused with a message listing the valid names.
TEST(Policy, MakeByName) {
  for (const char* n : {"ripple", "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2", "cap-0.3", "sigamma",
                        "sereno", "sereno-ui-first", "pace-2", "pace-0.5", "pace-1/4"}) {
    auto p = make_policy(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
  auto bad = make_policy("fifo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown policy 'fifo'"), std::string::npos);
  EXPECT_NE(bad.error().message.find("cap-1/4"), std::string::npos);
  for (const char* n : {"cap-0", "cap-3/2", "cap-x", "cap-1/0"}) EXPECT_FALSE(make_policy(n).ok()) << n;
  EXPECT_EQ(static_cast<const PacePolicy&>(**make_policy("pace-0.5")).bytes_per_ms(), 500'000);
  EXPECT_EQ(static_cast<const PacePolicy&>(**make_policy("pace-1/4")).bytes_per_ms(), 250'000);
  for (const char* n : {"pace-0", "pace--2", "pace-x", "pace-", "pace-2GB", "pace-nan", "pace-inf", "pace-1e-9"}) {
    auto p = make_policy(n);
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_NE(p.error().message.find(fmt::format("policy {}: the pace R must be a positive number", n)),
              std::string::npos)
        << p.error().message;
  }
  EXPECT_NE(bad.error().message.find("pace-R"), std::string::npos);
}

// Tests that the shared-link rule (agent.shared_link, on by default) leaves the baselines
// as they are: with two engines that move host bytes, each gets its grant at once, none
// held for the other's; only ripple models the link.
TEST(Policy, BaselinesDoNotModelTheSharedLink) {
  for (const char* name : {"unmanaged", "pause", "cap-1/4", "sigamma", "sereno", "pace-2"}) {
    Harness r(name);
    const EngineId llm = r.add(engine("llm"));
    const EngineId vlm = r.add(engine("vlm", EngineKind::kDeadlineBound));
    EXPECT_FALSE(r.adm->policy().models_shared_link()) << name;
    ASSERT_TRUE(r.adm->announce(vlm, work(1, 5), 0));
    ASSERT_TRUE(r.adm->announce(llm, work(1, 5), 0));
    const Decision d = r.adm->decide(0);
    ASSERT_FALSE(d.grants.empty()) << name;
    for (const auto& g : d.grants) {
      EXPECT_FALSE(g.link_held) << name;
      EXPECT_EQ(g.not_before, 0) << name;
    }
    EXPECT_EQ(r.adm->engine(llm)->stats.link_held + r.adm->engine(vlm)->stats.link_held, 0u) << name;
  }
  Harness r("ripple");
  EXPECT_TRUE(r.adm->policy().models_shared_link());
}

}  // namespace
}  // namespace ripple::policy
