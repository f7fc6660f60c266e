// Unit tests of the admission framework and the `ripple` policy (paper §4.1, §4.3):
// longest run that fits B(t), the horizon, budget-accrual wake-ups, EDF due times,
// best-effort grants held for a deadline-bound due time or for the remaining units of a
// request behind its due times (the reservation), pipelined successors with
// lease and release limit, refunds of stale successors, disconnects, measured-time
// scaling and the wait-time breakdown. Simulated clock; every number hand-computed.
#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "agent/admission/admission.h"
#include "agent/policy/ripple.h"

namespace ripple::admission {
namespace {

using policy::RipplePolicy;

constexpr Nanos kMs = kNsPerMs;
constexpr Bytes kMB = 1'000'000;
constexpr Bytes kUnit = 100 * kMB;  // every engine unit: 100 MB, 1 ms solo

// f = 0: a job's allowance is released linearly over a_hat from zero (Eq. 6).
pricing::Params params(Bytes floor = 0) {
  pricing::Params p;
  p.peak_rate_bytes_per_ns = 200;
  p.prior_slope_ns_per_byte = 2.5e-3;
  p.pacing_floor_bytes = floor;
  p.certification = false;
  return p;
}

// Solo profile of identical 40 ms runs: a_hat = 40 ms, q = 0, deadline 70 ms. Its
// first job is below one unit (the +-25 % rule starts from 0), so it gets the one-unit
// probe: A = 100 MB, released at 100 MB / 40 ms = 2.5 B/ns.
pricing::TaskSpec task() {
  pricing::TaskSpec t;
  t.name = "costmap";
  t.period = 100 * kMs;
  t.deadline = 70 * kMs;
  t.solo_profile.assign(10, 40 * kMs);
  return t;
}

EngineSpec engine(const char* name, EngineKind kind = EngineKind::kBestEffort, Bytes unit = kUnit,
                  Nanos unit_ns = kMs) {
  EngineSpec e;
  e.name = name;
  e.kind = kind;
  e.catalog = {{"layer", unit, unit_ns}};
  if (kind == EngineKind::kDeadlineBound) e.period = e.deadline = 1000 * kMs;
  return e;
}

Work work(std::uint64_t id, std::uint32_t units) {
  Work w;
  w.id = id;
  w.units.assign(units, 0);
  return w;
}

struct Fixture {
  explicit Fixture(Bytes floor = 0, Options opts = {}) : ledger(params(floor)) {
    t = ledger.add_task(task());
    adm = std::make_unique<Admission>(ledger, std::make_unique<RipplePolicy>(), opts);
  }
  EngineId add(EngineSpec spec, Nanos now = 0) {
    auto r = adm->add_engine(std::move(spec), now);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return *r;
  }
  pricing::Ledger ledger;
  pricing::TaskId t = 0;
  std::unique_ptr<Admission> adm;
};

// Tests start_by for a grant admitted to cross a release: a late start moves its end, so
// it may start no later than keeps that end within the crossing bound, not a whole lease
// after its predicted start. The task as task() with D = 55 ms: job 1 ran 0-40 ms, the
// next release is at 100 ms; at 90 ms the LLM gets 18 units (1 ms each), 90-108 ms,
// crossing by 8 ms (allowed: the bound leaves D - a_hat = 15 ms, less the rest of the
// allowance's cost), and a start a lease late would cross by 28. Started at start_by, it
// still passes the crossing check; started 1 ms later, it would not.
TEST(Admission, StartByKeepsAnAdmittedCrossingWithinItsBound) {
  Fixture f;
  pricing::TaskSpec tight = task();
  tight.deadline = 55 * kMs;
  f.t = f.ledger.add_task(std::move(tight));
  const pricing::TaskId first = 0;
  f.adm->on_release(first, 1, 0);  // the fixture's own task: done before, never again
  f.adm->on_complete(first, 1, 1 * kMs);
  const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, kMs));
  f.adm->on_release(f.t, 1, 0);
  f.adm->on_complete(f.t, 1, 40 * kMs);
  ASSERT_TRUE(f.adm->announce(llm, work(1, 18), 90 * kMs));
  const Decision d = f.adm->decide(90 * kMs);
  ASSERT_FALSE(d.grants.empty());
  const GrantPlan& g = d.grants[0];
  ASSERT_GT(g.predicted_end, 100 * kMs) << "the scenario needs a grant that crosses the release";
  ASSERT_TRUE(f.ledger.crossing_allowed(g.bytes, g.predicted_end, 90 * kMs));
  const Nanos dur = g.predicted_end - g.predicted_start;
  const auto into = f.ledger.task(f.t).max_into_release(g.bytes);
  ASSERT_TRUE(into.has_value());
  EXPECT_EQ(g.start_by, std::min(g.predicted_start + f.adm->options().lease, 100 * kMs + *into - dur));
  EXPECT_LT(g.start_by, g.predicted_start + f.adm->options().lease) << "the bound, not the lease, limits it here";
  EXPECT_GE(g.start_by, g.predicted_start);
  EXPECT_TRUE(f.ledger.crossing_allowed(g.bytes, g.start_by + dur, 90 * kMs));
  EXPECT_FALSE(f.ledger.crossing_allowed(g.bytes, g.start_by + dur + kMs, 90 * kMs));
}

// Tests that with no PT job active a grant is the longest run within H = 18 ms, and
// that a successor of the same length is delivered ahead with a 20 ms lease.
TEST(Admission, LongestRunWithinHorizonAndPipelinedSuccessor) {
  Fixture f;
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 0));
  const Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(d.grants[0].count, 18u);  // 19 units would take 19 ms > H
  EXPECT_EQ(d.grants[0].bytes, 18 * kUnit);
  EXPECT_EQ(d.grants[0].predicted_end, 18 * kMs);
  EXPECT_FALSE(d.grants[0].successor);
  EXPECT_TRUE(d.grants[1].successor);
  EXPECT_EQ(d.grants[1].first, 18u);
  EXPECT_EQ(d.grants[1].count, 18u);
  EXPECT_EQ(d.grants[1].predicted_start, 18 * kMs);
  EXPECT_EQ(d.grants[1].start_by, 38 * kMs);  // lease: 20 ms after its predicted start
  EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kSlotsFull);
}

// Tests that a grant is the longest run that fits B(t): the first job's probe of
// 100 MB released at entry (floor f = 100 MB) admits exactly one unit; after the job
// completes nothing limits the rest of the forward pass.
TEST(Admission, GrantFitsGlobalBudget) {
  Fixture f(/*floor=*/kUnit);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
  const pricing::Pricing p = f.adm->on_release(f.t, 1, 0);
  ASSERT_EQ(p.allowance, kUnit);
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);  // the successor does not fit: B = 0 after charging
  EXPECT_EQ(d.grants[0].count, 1u);
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, kUnit);
  EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kBudget);
  EXPECT_EQ(f.adm->explain(llm).until, kNever);  // 200 MB exceeds A = 100 MB
  // No wake for the budget (a completion ends that wait), only the grant's expiry.
  EXPECT_EQ(d.wake_at, d.grants[0].start_by + f.adm->options().expire_slack);
  ASSERT_TRUE(f.adm->on_sent(llm, d.grants[0].id, 0));
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, kMs, kMs));
  f.adm->on_complete(f.t, 1, 30 * kMs);
  d = f.adm->decide(30 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].first, 1u);
  EXPECT_EQ(d.grants[0].count, 9u);
}

// Tests scheduling point 4: with f = 0 the probe accrues at 2.5 B/ns, so one 100 MB
// unit fits 40 ms after the release and decide() asks to be woken exactly then.
TEST(Admission, WakesWhenBudgetAccrues) {
  Fixture f;
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
  f.adm->on_release(f.t, 1, 1000 * kMs);
  Decision d = f.adm->decide(1000 * kMs);
  EXPECT_TRUE(d.grants.empty());
  EXPECT_EQ(d.wake_at, 1040 * kMs);
  EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kBudget);
  d = f.adm->decide(1040 * kMs - 1);
  EXPECT_TRUE(d.grants.empty());
  d = f.adm->decide(1040 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].count, 1u);
}

// Tests the due times of a deadline-bound request: n units spread evenly over gamma =
// 0.95 of the interval from announcement to deadline (§4.1).
TEST(Admission, DueTimesSpreadOverGamma) {
  Fixture f;
  const EngineId vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
  ASSERT_TRUE(f.adm->announce(vlm, work(1, 4), 100 * kMs));  // deadline 1100 ms
  const EngineState& e = *f.adm->engine(vlm);
  EXPECT_EQ(e.due_time(0, 0.95), 100 * kMs + 237'500'000);
  EXPECT_EQ(e.due_time(1, 0.95), 100 * kMs + 475 * kMs);
  EXPECT_EQ(e.due_time(3, 0.95), 100 * kMs + 950 * kMs);
}

// Tests EDF order: the deadline-bound engine is granted before the best-effort one
// even though the best-effort engine registered and announced first.
TEST(Admission, DeadlineBoundFirst) {
  Options o;
  o.pipelining = false;
  Fixture f(0, o);
  const EngineId llm = f.add(engine("llm"));
  const EngineId vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 4), 0));
  ASSERT_TRUE(f.adm->announce(vlm, work(1, 4), 0));
  const Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(d.grants[0].engine, vlm);
  EXPECT_EQ(d.grants[1].engine, llm);
}

// Tests the rule of §4.1: while a deadline-bound unit waits for budget, a best-effort
// grant may not take budget it needs. Without the VLM the 10 MB LLM unit would run
// 4 ms after the release (released 2.5 B/ns x 4 ms = 10 MB); with it, it is held.
TEST(Admission, BestEffortHeldForDueTime) {
  for (bool with_vlm : {false, true}) {
    Options o;
    o.pipelining = false;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, 100'000));
    if (with_vlm) {
      const EngineId vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
      ASSERT_TRUE(f.adm->announce(vlm, work(1, 4), 0));
    } else {
      f.add(engine("idle"));  // same 100 MB probe unit, no work
    }
    ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
    f.adm->on_release(f.t, 1, 0);
    const Decision d = f.adm->decide(4 * kMs);
    if (!with_vlm) {
      ASSERT_EQ(d.grants.size(), 1u);
      EXPECT_EQ(d.grants[0].bytes, 10 * kMB);
    } else {
      EXPECT_TRUE(d.grants.empty());
      EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kDueTime);
      EXPECT_EQ(f.adm->explain(llm).until, 237'500'000);
    }
  }
}

// Tests gap filling while a deadline-bound request waits for the crossing bound (issue 12):
// with no job active, a best-effort grant that ends by the next release runs even though
// the request's due time has passed, since the request cannot start before that release.
// Job 1 ran 0-40 ms; the next release is at 100 ms. At 80 ms the VLM's 60-ms unit (its
// first, due at 23.75 ms) would cross it by 40 ms: 40 + a_hat 40 > D = 70 ms, refused. The
// LLM's 1-ms units fill the gap: 18 (H) to 98 ms and a successor of 2 to 100 ms, none past
// the release. While a job is active (B limited) the due-time rule holds the LLM as before.
TEST(Admission, BestEffortFillsTheGapBeforeAReleaseTheRequestCannotCross) {
  for (bool job_active : {false, true}) {
    Fixture f;
    const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, kMs));
    EngineSpec v = engine("vlm", EngineKind::kDeadlineBound, 1 * kMB, 60 * kMs);
    v.period = v.deadline = 100 * kMs;
    const EngineId vlm = f.add(v);
    f.adm->on_release(f.t, 1, 0);
    if (!job_active) f.adm->on_complete(f.t, 1, 40 * kMs);
    ASSERT_TRUE(f.adm->announce(vlm, work(1, 4), 0));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 30), 0));
    const Decision d = f.adm->decide(80 * kMs);
    EXPECT_EQ(f.adm->explain(vlm).cause, WaitCause::kCrossing);
    if (job_active) {
      EXPECT_TRUE(d.grants.empty());
      EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kDueTime);
      continue;
    }
    ASSERT_EQ(d.grants.size(), 2u) << "the LLM is held for a due time that has passed";
    EXPECT_EQ(d.grants[0].engine, llm);
    EXPECT_EQ(d.grants[0].count, 18u);
    EXPECT_EQ(d.grants[0].predicted_end, 98 * kMs);
    EXPECT_EQ(d.grants[1].engine, llm);
    EXPECT_TRUE(d.grants[1].successor);
    EXPECT_EQ(d.grants[1].count, 2u);
    EXPECT_EQ(d.grants[1].predicted_end, 100 * kMs);
  }
}

// Tests the reservation (issue 12; Documentation/agent.md): while a deadline-bound request
// is behind its due times, a best-effort grant leaves the budget for all of its ungranted
// units, even while the request's two slots are taken; on schedule, nothing changes.
// A = 100 MB, fully released at 40 ms. At 60 ms the VLM (60 units of 1 MB, 1 ms) takes
// 18 + 18 units, leaving 64 MB and 24 ungranted units. Behind (deadline 100 ms: unit 36
// due at 58.6 ms), the LLM gets 100 - 36 - 24 = 40 MB and its successor is held; on
// schedule (deadline 200 ms: due at 117 ms) it takes all 64 MB it fits (6 units).
TEST(Admission, BestEffortLeavesBudgetForABehindRequest) {
  for (bool behind : {true, false}) {
    Fixture f;
    const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, 100'000));
    EngineSpec v = engine("vlm", EngineKind::kDeadlineBound, 1 * kMB, kMs);
    v.period = v.deadline = (behind ? 100 : 200) * kMs;
    const EngineId vlm = f.add(v);
    f.add(engine("idle"));  // the 100 MB probe unit, no work
    ASSERT_TRUE(f.adm->announce(vlm, work(1, 60), 0));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
    f.adm->on_release(f.t, 1, 0);
    const Decision d = f.adm->decide(60 * kMs);
    ASSERT_EQ(d.grants.size(), 3u);
    EXPECT_EQ(d.grants[0].engine, vlm);
    EXPECT_EQ(d.grants[1].engine, vlm);
    EXPECT_EQ(d.grants[0].count + d.grants[1].count, 36u);
    EXPECT_EQ(d.grants[2].engine, llm);
    if (behind) {
      EXPECT_EQ(d.grants[2].bytes, 40 * kMB);
      const WaitReason why = f.adm->explain(llm);
      EXPECT_EQ(why.cause, WaitCause::kReserve);
      EXPECT_EQ(why.other, vlm);
      EXPECT_EQ(why.until, 76 * kMs);  // the deadline less the 24 units' 24 ms
      EXPECT_EQ(to_string(why.cause), "reserve");
      EXPECT_NE(describe(why, 60 * kMs).find("16.000 ms"), std::string::npos) << describe(why, 60 * kMs);
    } else {
      EXPECT_EQ(d.grants[2].bytes, 60 * kMB);
      EXPECT_NE(f.adm->explain(llm).cause, WaitCause::kReserve);
    }
  }
}

// Tests that the reservation holds a best-effort engine outright when the active job cannot
// release what a behind request still needs (time_budget_reaches is kNever): the VLM of 100
// units of 1 MB (deadline 150 ms; unit 36 due at 52.7 ms) has 64 MB ungranted after its two
// grants at 60 ms, and 36 + 64 MB leave no room for a 10 MB LLM unit in A = 100 MB.
TEST(Admission, BestEffortHeldWhenTheJobCannotPayABehindRequest) {
  Fixture f;
  const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, 100'000));
  EngineSpec v = engine("vlm", EngineKind::kDeadlineBound, 1 * kMB, kMs);
  v.period = v.deadline = 150 * kMs;
  const EngineId vlm = f.add(v);
  f.add(engine("idle"));  // the 100 MB probe unit, no work
  ASSERT_TRUE(f.adm->announce(vlm, work(1, 100), 0));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
  f.adm->on_release(f.t, 1, 0);
  const Decision d = f.adm->decide(60 * kMs);
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(d.grants[0].engine, vlm);
  EXPECT_EQ(d.grants[1].engine, vlm);
  const WaitReason why = f.adm->explain(llm);
  EXPECT_EQ(why.cause, WaitCause::kReserve);
  EXPECT_EQ(why.until, 86 * kMs);  // 150 ms less the 64 units' 64 ms
}

// Tests that start_by is the lease or the CPU-release limit, whichever is earlier:
// with the next release predicted at 100 ms, a grant predicted to run 1-19 ms may
// start by 100 - 18 = 82 ms, its 10 ms successor by 100 - 10 = 90 ms (lease 200 ms).
TEST(Admission, StartByIsLeaseAndReleaseLimit) {
  Options o;
  o.lease = 200 * kMs;
  Fixture f(/*floor=*/100 * kUnit, o);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 28), 0));
  f.adm->on_release(f.t, 1, 0);
  f.adm->on_complete(f.t, 1, 1 * kMs);
  const Decision d = f.adm->decide(1 * kMs);
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(d.grants[0].start_by, 82 * kMs);
  EXPECT_EQ(d.grants[1].predicted_start, 19 * kMs);
  EXPECT_EQ(d.grants[1].count, 10u);
  EXPECT_EQ(d.grants[1].start_by, 90 * kMs);
}

// Tests that a stale successor returned unexecuted is refunded to the jobs that were
// charged it (here one that inherited it at its release) and its units go back to the
// front of the queue, to be granted again.
TEST(Admission, DiscardedSuccessorIsRefundedAndRequeued) {
  Fixture f(/*floor=*/100 * kUnit);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 30), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);  // 18 units, then a successor of the other 12
  ASSERT_EQ(d.grants[1].count, 12u);
  f.adm->on_release(f.t, 1, 1 * kMs);  // inherits both grants in flight
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, 30 * kUnit);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 1 * kMs));
  ASSERT_FALSE(f.adm->on_discard(llm, d.grants[0].id, 2 * kMs).ok());  // already started
  ASSERT_TRUE(f.adm->on_discard(llm, d.grants[1].id, 2 * kMs));
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, 18 * kUnit);
  const EngineState& e = *f.adm->engine(llm);
  ASSERT_EQ(e.queue.size(), 1u);
  EXPECT_EQ(e.queue.front()->id, 1u);
  EXPECT_EQ(e.cursor, 18u);
  EXPECT_EQ(e.stats.stale, 1u);
  f.adm->on_complete(f.t, 1, 3 * kMs);
  d = f.adm->decide(3 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].first, 18u);
  EXPECT_EQ(d.grants[0].count, 12u);
}

// Tests that discarding a successor also revokes the grant decided after it (the
// engine holds both and will hand the later one back too): both refunded, the units
// back from the discarded one's first, and the later hand-back accepted.
TEST(Admission, DiscardRevokesLaterGrants) {
  Fixture f(/*floor=*/100 * kUnit);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 54), 0));
  Decision d = f.adm->decide(0);  // 18 + successor 18
  ASSERT_EQ(d.grants.size(), 2u);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 18 * kMs, 18 * kMs));
  const Decision d2 = f.adm->decide(18 * kMs);  // successor of the (not yet started) second
  ASSERT_EQ(d2.grants.size(), 1u);
  ASSERT_EQ(d2.grants[0].first, 36u);
  f.adm->on_release(f.t, 1, 19 * kMs);  // inherits both outstanding grants: 36 units
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, 36 * kUnit);
  ASSERT_TRUE(f.adm->on_discard(llm, d.grants[1].id, 20 * kMs));
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, 0);
  EXPECT_EQ(f.adm->engine(llm)->cursor, 18u);
  EXPECT_EQ(f.adm->engine(llm)->outstanding, 0);
  EXPECT_TRUE(f.adm->on_discard(llm, d2.grants[0].id, 20 * kMs).ok());
  EXPECT_FALSE(f.adm->on_discard(llm, d2.grants[0].id, 20 * kMs).ok());  // only once
  EXPECT_EQ(f.adm->engine(llm)->stats.stale, 2u);
}

// Tests that a discarded successor no longer sets when the engine is busy until: G1 (18
// units, 0-18 ms) started 1 ms late, so it ends at 19 ms; its successor G2 (18-30 ms) is
// discarded at 2 ms. The successor decided next starts at G1's end, not at G2's.
TEST(Admission, DiscardedSuccessorNoLongerSetsBusyUntil) {
  Fixture f(/*floor=*/100 * kUnit);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 30), 0));
  const Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  ASSERT_EQ(d.grants[1].predicted_end, 30 * kMs);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 1 * kMs));
  ASSERT_TRUE(f.adm->on_discard(llm, d.grants[1].id, 2 * kMs));
  EXPECT_EQ(f.adm->engine(llm)->busy_until, 19 * kMs);
  const Decision d2 = f.adm->decide(2 * kMs);
  ASSERT_EQ(d2.grants.size(), 1u);
  EXPECT_TRUE(d2.grants[0].successor);
  EXPECT_EQ(d2.grants[0].first, 18u);
  EXPECT_EQ(d2.grants[0].predicted_start, 19 * kMs);
}

// Tests expiry (Options::expire_slack): the successor G2 of a grant G1 that ran, never
// started (the engine went idle: the work announced ahead of an LLM between requests),
// is revoked at its start_by (38 ms) + the 20 ms slack, with a wake at exactly then, so
// a job released later (60 ms) inherits none of it; the engine gets no grant until it
// hands G2 back, a Start for it is refused as expired, its Discard is accepted, and then
// G2's units are granted again. Also when the release comes before any decide() at 58 ms.
TEST(Admission, UnstartedGrantExpiresAndIsNotInherited) {
  for (bool decide_at_wake : {true, false}) {
    Options o;
    o.expire_slack = 20 * kMs;  // one lease (the default is longer: agent.md, "Expiry")
    Fixture f(/*floor=*/100 * kUnit, o);
    const EngineId llm = f.add(engine("llm"));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 36), 0));
    Decision d = f.adm->decide(0);
    ASSERT_EQ(d.grants.size(), 2u);  // G1: 18 units, 0-18 ms; G2: the other 18, 18-36 ms
    const GrantPlan g2 = d.grants[1];
    ASSERT_EQ(g2.start_by, 38 * kMs);
    ASSERT_TRUE(f.adm->on_sent(llm, d.grants[0].id, 0));
    ASSERT_TRUE(f.adm->on_sent(llm, g2.id, 0));
    ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
    ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 18 * kMs, 18 * kMs));
    d = f.adm->decide(18 * kMs);
    EXPECT_TRUE(d.grants.empty());
    EXPECT_EQ(d.wake_at, 58 * kMs) << "nothing else wakes the agent while the engine is idle";
    if (decide_at_wake) {
      EXPECT_EQ(f.adm->engine(llm)->outstanding, 1);
      d = f.adm->decide(58 * kMs - 1);
      EXPECT_EQ(f.adm->engine(llm)->outstanding, 1) << "expired before start_by + slack";
      d = f.adm->decide(58 * kMs);
      EXPECT_TRUE(d.grants.empty()) << "granted again before the engine handed G2 back";
      EXPECT_EQ(d.wake_at, kNever);
    }
    f.adm->on_release(f.t, 1, 60 * kMs);
    EXPECT_EQ(f.ledger.job(f.t, 1)->inherited, 0) << "a job released after the expiry inherits the dead grant";
    EXPECT_EQ(f.ledger.job(f.t, 1)->charged, 0);
    EXPECT_TRUE(f.ledger.grants_in_flight().empty());
    const EngineState& e = *f.adm->engine(llm);
    EXPECT_EQ(e.outstanding, 0);
    EXPECT_EQ(e.cursor, 18u);
    EXPECT_EQ(e.stats.expired, 1u);
    EXPECT_EQ(e.stats.stale, 0u);
    EXPECT_TRUE(f.adm->decide(60 * kMs).grants.empty());
    EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kExpired);
    EXPECT_EQ(to_string(WaitCause::kExpired), "expired");
    // A Start delayed past the slack is refused, naming the grant as expired; it changes nothing.
    const Status late = f.adm->on_start(llm, g2.id, 61 * kMs);
    ASSERT_FALSE(late.ok());
    EXPECT_NE(late.error().message.find("expired"), std::string::npos) << late.error().message;
    EXPECT_FALSE(f.adm->on_done(llm, g2.id, kMs, 61 * kMs).ok());
    EXPECT_EQ(e.stats.bytes, 18 * kUnit);
    // The engine asks again: it hands G2 back (its client discards it past start_by).
    ASSERT_TRUE(f.adm->on_discard(llm, g2.id, 62 * kMs));
    EXPECT_FALSE(f.adm->on_discard(llm, g2.id, 62 * kMs).ok());  // only once
    f.adm->on_complete(f.t, 1, 62 * kMs);
    d = f.adm->decide(62 * kMs);
    ASSERT_EQ(d.grants.size(), 1u);
    EXPECT_EQ(d.grants[0].work, 1u);
    EXPECT_EQ(d.grants[0].first, 18u);
    EXPECT_EQ(d.grants[0].count, 18u);
    EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kNoWork);
  }
}

// Tests that an expiry revokes the engine's later grants with the first one it can no
// longer start (a 5 ms slack: G1, decided for the idle engine at 0, start_by 20 ms, is
// dead at 25 ms, and its successor G2 with it, both refunded and handed back later), and
// that an engine where a later grant already started is left alone: it dropped the
// earlier one itself, and its Discard is on the way.
TEST(Admission, ExpiryRevokesLaterGrantsUnlessOneStarted) {
  for (bool later_started : {false, true}) {
    Options o;
    o.expire_slack = 5 * kMs;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm"));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 0));
    Decision d = f.adm->decide(0);
    ASSERT_EQ(d.grants.size(), 2u);
    ASSERT_EQ(d.grants[0].start_by, 20 * kMs);
    EXPECT_EQ(d.wake_at, 25 * kMs);
    const GrantId g1 = d.grants[0].id, g2 = d.grants[1].id;
    if (later_started) {
      ASSERT_TRUE(f.adm->on_start(llm, g2, 1 * kMs));
    }
    d = f.adm->decide(25 * kMs);
    const EngineState& e = *f.adm->engine(llm);
    if (later_started) {
      EXPECT_EQ(e.outstanding, 2);
      EXPECT_EQ(e.stats.expired, 0u);
      EXPECT_GT(d.wake_at, 25 * kMs) << "a wake for a grant it leaves alone spins the agent";
      continue;
    }
    EXPECT_TRUE(d.grants.empty());
    EXPECT_EQ(e.outstanding, 0);
    EXPECT_EQ(e.cursor, 0u);
    EXPECT_EQ(e.stats.expired, 2u);
    EXPECT_TRUE(f.ledger.grants_in_flight().empty());
    ASSERT_TRUE(f.adm->on_discard(llm, g1, 26 * kMs));
    ASSERT_TRUE(f.adm->on_discard(llm, g2, 26 * kMs));
    d = f.adm->decide(26 * kMs);
    ASSERT_EQ(d.grants.size(), 2u);
    EXPECT_EQ(d.grants[0].first, 0u);
    EXPECT_EQ(d.grants[1].first, 18u);
  }
}

// Tests the fault rule: an engine that disconnects mid-grant has its grant settled as
// executed (the job stays charged, nothing is in flight), and the other engine goes on.
TEST(Admission, DisconnectSettlesChargedGrant) {
  Options o;
  o.pipelining = false;
  Fixture f(/*floor=*/100 * kUnit, o);
  const EngineId a = f.add(engine("a"));
  const EngineId b = f.add(engine("b"));
  ASSERT_TRUE(f.adm->announce(a, work(1, 5), 0));
  f.adm->on_release(f.t, 1, 0);
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  ASSERT_EQ(d.grants[0].engine, a);
  ASSERT_TRUE(f.adm->on_start(a, d.grants[0].id, 0));
  f.adm->remove_engine(a, 1 * kMs);
  EXPECT_TRUE(f.ledger.grants_in_flight().empty());
  EXPECT_EQ(f.ledger.job(f.t, 1)->charged, kUnit);
  EXPECT_FALSE(f.adm->announce(a, work(2, 1), 1 * kMs).ok());
  f.adm->on_complete(f.t, 1, 2 * kMs);
  ASSERT_TRUE(f.adm->announce(b, work(1, 2), 2 * kMs));
  d = f.adm->decide(2 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, b);
}

// Tests the grant span an engine's rate is taken over: from its first grant's decision
// (5 ms, not its connection at 0) to its last Done (30 ms), with the bytes of the grants
// done; a successor handed back unexecuted and a grant settled at disconnect are in
// `bytes` or nowhere, never in `done_bytes`, and do not move the span's end.
TEST(Admission, GrantSpanFromFirstGrantToLastDone) {
  Fixture f;
  const EngineId llm = f.add(engine("llm"));
  EXPECT_EQ(f.adm->engine(llm)->stats.first_grant, kNever);
  EXPECT_EQ(f.adm->engine(llm)->stats.last_done, -1);
  ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 5 * kMs));
  Decision d = f.adm->decide(5 * kMs);  // 18 units, then a successor of 18
  ASSERT_EQ(d.grants.size(), 2u);
  EXPECT_EQ(f.adm->engine(llm)->stats.first_grant, 5 * kMs);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 6 * kMs));
  ASSERT_TRUE(f.adm->on_discard(llm, d.grants[1].id, 7 * kMs));  // stale: never ran
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 18 * kMs, 24 * kMs));
  d = f.adm->decide(25 * kMs);  // the discarded 18 again, then the last 4
  ASSERT_EQ(d.grants.size(), 2u);
  ASSERT_EQ(d.grants[1].count, 4u);
  EXPECT_EQ(f.adm->engine(llm)->stats.first_grant, 5 * kMs);  // the first stays
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 25 * kMs));
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 5 * kMs, 30 * kMs));
  f.adm->remove_engine(llm, 40 * kMs);  // the 4-unit successor: settled, not reported done
  const EngineStats& s = f.adm->engine(llm)->stats;
  EXPECT_EQ(s.first_grant, 5 * kMs);
  EXPECT_EQ(s.last_done, 30 * kMs);
  EXPECT_EQ(s.done_bytes, 36 * kUnit);
  EXPECT_EQ(s.bytes, 40 * kUnit);
  EXPECT_EQ(s.stale, 1u);

  // A process's sessions: the span from the earliest first grant to the latest Done.
  EngineStats total;
  accumulate(total, s);
  EngineStats later;
  later.first_grant = 50 * kMs;
  later.last_done = 60 * kMs;
  later.done_bytes = kUnit;
  accumulate(total, later);
  EXPECT_EQ(total.first_grant, 5 * kMs);
  EXPECT_EQ(total.last_done, 60 * kMs);
  EXPECT_EQ(total.done_bytes, 37 * kUnit);
}

// Tests that measured GPU time rescales predictions: a grant that took twice its
// profile moves the scale to 0.8 + 0.2 x 2 = 1.2, so a 5-unit grant is predicted at 6 ms.
TEST(Admission, MeasuredTimeScalesPredictions) {
  Options o;
  o.pipelining = false;
  Fixture f(0, o);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 5), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 10 * kMs, 10 * kMs));
  EXPECT_DOUBLE_EQ(f.adm->engine(llm)->scale, 1.2);
  // It ended at 10 ms against a predicted 5 ms: counted late, overrun 5 ms.
  EXPECT_EQ(f.adm->engine(llm)->stats.late_ends, 1u);
  EXPECT_EQ(f.adm->engine(llm)->stats.late_max, 5 * kMs);
  ASSERT_TRUE(f.adm->announce(llm, work(2, 5), 10 * kMs));
  d = f.adm->decide(10 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_end, 16 * kMs);
  // Started at 11 ms and ran 5.5 ms, its Done at 16.8 ms: within the 1 ms slack.
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 11 * kMs));
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 5 * kMs + kMs / 2, 16 * kMs + 8 * kMs / 10));
  EXPECT_EQ(f.adm->engine(llm)->stats.late_ends, 1u);
}

// Tests that a grant's end is its Done's arrival, not its start + measured time: a
// successor taken in hand while its predecessor runs waits behind it on the stream, so its
// measured GPU time begins later than its Start. Here the successor (predicted 5-10 ms) is
// started at 1 ms, measures 5 ms and is done at 11.5 ms: 1.5 ms late, which start +
// measured (6 ms) would hide; the trace puts its GPU time at 6.5-11.5 ms.
TEST(Admission, LateEndIsTheDonesArrival) {
  Options o;
  o.horizon = 5 * kMs;  // five 1 ms units a grant
  Fixture f(0, o);
  std::vector<TraceRecord> recs;
  f.adm->set_trace([&](const TraceRecord& r) { recs.push_back(r); });
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  const GrantPlan first = d.grants[0], next = d.grants[1];
  ASSERT_TRUE(next.successor);
  ASSERT_EQ(first.predicted_end, next.predicted_start);
  ASSERT_TRUE(f.adm->on_start(llm, first.id, 0));
  ASSERT_TRUE(f.adm->on_start(llm, next.id, kMs));
  ASSERT_TRUE(f.adm->on_done(llm, first.id, first.predicted_end, first.predicted_end + kMs / 2));
  EXPECT_EQ(f.adm->engine(llm)->stats.late_ends, 0u);
  const Nanos done_at = next.predicted_end + 3 * kMs / 2;
  const Nanos measured = next.predicted_end - next.predicted_start;
  ASSERT_TRUE(f.adm->on_done(llm, next.id, measured, done_at));
  EXPECT_EQ(f.adm->engine(llm)->stats.late_ends, 1u);
  EXPECT_EQ(f.adm->engine(llm)->stats.late_max, 3 * kMs / 2);
  ASSERT_FALSE(recs.empty());
  const TraceRecord& r = recs.back();
  ASSERT_EQ(r.kind, TraceKind::kDone);
  EXPECT_EQ(r.to, done_at);
  EXPECT_EQ(r.from, done_at - measured);
  EXPECT_EQ(r.value, measured);
}

// Tests grants queued behind the one before (a pipelined engine): a successor the engine
// started before its predecessor was done counts only its time after that one's end as
// busy and in queued_scale; with queued_durations on, the next successor's predicted
// duration takes queued_scale (but not below its lone duration from now) and the solo
// scale learns from lone grants only; off, one scale learns from both (the paper's rule)
// and busy is still the union.
TEST(Admission, QueuedGrantsOwnTimeAndSuccessorDurations) {
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "queued_durations on" : "queued_durations off");
    Options o;
    o.horizon = kMs;  // one 1 ms unit per grant
    o.queued_durations = on;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm"));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 10), 0));
    Decision d = f.adm->decide(0);
    ASSERT_EQ(d.grants.size(), 2u);
    ASSERT_TRUE(d.grants[1].successor);
    ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
    ASSERT_TRUE(f.adm->on_start(llm, d.grants[1].id, kMs / 2));  // passed its boundary early
    // Alone: 2 ms measured, done at 2 ms. Queued: its event pair spans 0.5-3 ms (2.5 ms),
    // done at 3 ms, so its own time is 1 ms.
    ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 2 * kMs, 2 * kMs));
    ASSERT_TRUE(f.adm->on_done(llm, d.grants[1].id, 2 * kMs + kMs / 2, 3 * kMs));
    const EngineState& e = *f.adm->engine(llm);
    EXPECT_EQ(e.stats.queued, 1u);
    EXPECT_EQ(e.stats.busy, 3 * kMs);  // not 4.5 ms: the overlap counts once
    EXPECT_DOUBLE_EQ(e.queued_scale, 1.0);
    EXPECT_DOUBLE_EQ(e.scale, on ? 1.2 : 1.2 * 0.8 + 2.5 * 0.2);
    d = f.adm->decide(3 * kMs);
    ASSERT_EQ(d.grants.size(), 2u);
    const Nanos alone = on ? 1'200'000 : 1'460'000;
    EXPECT_EQ(d.grants[0].predicted_end, 3 * kMs + alone);
    EXPECT_EQ(d.grants[1].predicted_start, 3 * kMs + alone);
    EXPECT_EQ(d.grants[1].predicted_end, 3 * kMs + alone + (on ? kMs : alone));
    if (!on) continue;
    // A successor decided late, 0.1 ms before the grant ahead of it ends (5.2 ms), cannot
    // end before it could alone from now: 5.1 + 1.2 ms, not 5.2 + 1 ms.
    ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 1'200'000, 4'200'000));
    d = f.adm->decide(5'100'000);
    ASSERT_EQ(d.grants.size(), 1u);
    EXPECT_TRUE(d.grants[0].successor);
    EXPECT_EQ(d.grants[0].predicted_start, 5'200'000);
    EXPECT_EQ(d.grants[0].predicted_end, 6'300'000);
  }
}

// Tests the start lag: a grant to an idle engine that starts 2 ms after its decision
// moves the next such grant's predicted start and end by the smoothed lag (0.2 x 2 ms).
TEST(Admission, StartLagShiftsPredictedStart) {
  Options o;
  o.pipelining = false;
  Fixture f(0, o);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 2), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_start, 0);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 2 * kMs));
  EXPECT_EQ(f.adm->engine(llm)->start_lag, 400'000);
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 2 * kMs, 4 * kMs));
  ASSERT_TRUE(f.adm->announce(llm, work(2, 2), 4 * kMs));
  d = f.adm->decide(4 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_start, 4 * kMs + 400'000);
  EXPECT_EQ(d.grants[0].count, 2u);
  EXPECT_EQ(d.grants[0].predicted_end, 6 * kMs + 400'000);  // 2 units x 1 ms, scale 1
}

// An engine "llm" of 1 ms units with H = 1 ms (one unit per grant), its first work of
// `units` decided at 0 (a grant and, with more than one unit, its successor).
struct OneMsChain {
  explicit OneMsChain(std::uint32_t units) : f(0, options()) {
    llm = f.add(engine("llm"));
    EXPECT_TRUE(f.adm->announce(llm, work(1, units), 0));
    first = f.adm->decide(0);
  }
  static Options options() {
    Options o;
    o.horizon = kMs;
    return o;
  }
  Fixture f;
  EngineId llm = 0;
  Decision first;
};

// Tests the end guard (Options::end_guard_quantile; Documentation/agent.md): grants that
// ended 3 ms after their predicted ends set the LLM's guard to 3 ms (the largest of four
// errors at q = 0.95), and a grant in the gap before the release of a task with no slack
// (deadline 40.5 ms, a_hat 40: no crossing into its job is allowed) then ends 3 ms before
// that release, where without the guard it ends at the release itself (each to within the
// crossing the task's last 0.5 ms of slack allows). Same sequence both
// ways: four 10-unit passes, each grant measured 3 ms longer than predicted (the learned
// scale grows, the error stays 3 ms); the task released at 200 ms, done at 240 ms, next
// release predicted at 300 ms; a 60-unit pass announced at 285 ms.
TEST(Admission, EndGuardKeepsAGapGrantClearOfTheReleaseByItsLateEnds) {
  Nanos end_on = 0, end_off = 0, unit = 0;
  for (const double q : {0.95, 0.0}) {
    Options o;
    o.end_guard_quantile = q;
    pricing::Ledger ledger(params());
    pricing::TaskSpec spec = task();
    spec.deadline = 40 * kMs + kMs / 2;
    const pricing::TaskId t = ledger.add_task(spec);
    Admission adm(ledger, std::make_unique<RipplePolicy>(), o);
    auto added = adm.add_engine(engine("llm"), 0);
    ASSERT_TRUE(added.ok());
    const EngineId llm = *added;
    for (std::uint64_t i = 0; i < 4; ++i) {
      const Nanos t0 = static_cast<Nanos>(i) * 30 * kMs;
      ASSERT_TRUE(adm.announce(llm, work(i + 1, 10), t0));
      const Decision d = adm.decide(t0);
      ASSERT_EQ(d.grants.size(), 1u);
      const GrantPlan& g = d.grants[0];
      ASSERT_TRUE(adm.on_start(llm, g.id, g.predicted_start));
      const Nanos measured = g.predicted_end - g.predicted_start + 3 * kMs;
      ASSERT_TRUE(adm.on_done(llm, g.id, measured, g.predicted_start + measured));
    }
    const Nanos guard = adm.engines()[0].end_guard;
    EXPECT_EQ(guard, q > 0 ? 3 * kMs : 0);
    adm.on_release(t, 1, 200 * kMs);
    adm.on_complete(t, 1, 240 * kMs);
    ASSERT_TRUE(adm.announce(llm, work(9, 60), 285 * kMs));
    const Decision d = adm.decide(285 * kMs);
    ASSERT_FALSE(d.grants.empty());
    const GrantPlan& g = d.grants[0];
    EXPECT_FALSE(g.successor);
    (q > 0 ? end_on : end_off) = g.predicted_end;
    unit = static_cast<Nanos>(adm.engines()[0].scale * static_cast<double>(kMs));
  }
  // Both stop at the same allowed crossing into the release (< 1 unit: here 12 units end
  // at 299.88 ms without the guard, 10 at 297.4 ms with it, 300.4 ms with its 3 ms).
  EXPECT_LE(end_off - end_on, 3 * kMs + unit);
  EXPECT_GE(end_off - end_on, 3 * kMs - unit);
  EXPECT_LT(end_off, 300 * kMs + unit);
}

// Tests the admission trace (agent/admission/trace.h): a release with its allowance, the
// grant with its predicted interval, its start (with the time it was sent), its done (actual
// interval and measured time), the completion (bytes charged, response, missed), in order;
// the JSON line names every field; no sink, no records.
TEST(Admission, TraceRecordsWhatWasPredictedAndWhatHappened) {
  Fixture f(kUnit);  // the 100-MB probe released at entry: one unit fits at once
  std::vector<TraceRecord> recs;
  f.adm->set_trace([&](const TraceRecord& r) { recs.push_back(r); });
  const EngineId llm = f.add(engine("llm"));
  const pricing::Pricing p = f.adm->on_release(f.t, 1, 0);
  ASSERT_TRUE(f.adm->announce(llm, work(1, 1), 0));
  const Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);
  const GrantPlan& g = d.grants[0];
  ASSERT_TRUE(f.adm->on_sent(llm, g.id, kMs / 10));
  ASSERT_TRUE(f.adm->on_start(llm, g.id, kMs / 2));
  ASSERT_TRUE(f.adm->on_done(llm, g.id, 2 * kMs, 3 * kMs));
  f.adm->on_complete(f.t, 1, 80 * kMs);
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[0].kind, TraceKind::kRelease);
  EXPECT_EQ(recs[0].bytes, p.allowance);
  EXPECT_EQ(recs[1].kind, TraceKind::kGrant);
  EXPECT_EQ(recs[1].who, llm);
  EXPECT_EQ(recs[1].id, g.id);
  EXPECT_EQ(recs[1].bytes, kUnit);
  EXPECT_EQ(recs[1].to, g.predicted_end);
  EXPECT_EQ(recs[2].kind, TraceKind::kStart);
  EXPECT_EQ(recs[2].from, kMs / 10);
  EXPECT_EQ(recs[3].kind, TraceKind::kDone);
  // Done at 3 ms after 2 ms measured: the GPU ran it 1-3 ms (its Start was at 0.5 ms).
  EXPECT_EQ(recs[3].from, kMs);
  EXPECT_EQ(recs[3].to, 3 * kMs);
  EXPECT_EQ(recs[3].value, 2 * kMs);
  EXPECT_EQ(recs[4].kind, TraceKind::kComplete);
  EXPECT_EQ(recs[4].value, 80 * kMs);
  EXPECT_EQ(recs[4].bytes, kUnit);  // the grant ran inside the job: charged to it
  EXPECT_EQ(recs[4].from, kUnit);   // admitted at its release: inside the instrument's window
  EXPECT_TRUE(recs[4].flag);        // 80 ms > the 70 ms deadline
  EXPECT_EQ(trace_json_line(recs[4], "cost\"map"),
            R"({"k":"complete","t":80000000,"who":0,"name":"cost\"map","id":1,"bytes":100000000,"from":100000000,"to":0,)"
            R"("value":80000000,"flag":1})");
  f.adm->set_trace({});
  f.adm->on_release(f.t, 2, 100 * kMs);
  EXPECT_EQ(recs.size(), 5u);
}

// Tests end_error_quantile: the rank-ceil(q n) smallest, the largest at q = 1, 0 for none.
TEST(Admission, EndErrorQuantile) {
  const std::vector<Nanos> e = {5, 1, 4, 2, 3, 0, 9, 7, 8, 6};
  EXPECT_EQ(end_error_quantile(e, 0.95), 9);  // ceil(9.5) = 10th
  EXPECT_EQ(end_error_quantile(e, 0.9), 8);   // 9th
  EXPECT_EQ(end_error_quantile(e, 0.5), 4);   // 5th
  EXPECT_EQ(end_error_quantile(e, 1.0), 9);
  EXPECT_EQ(end_error_quantile(e, 0.01), 0);  // 1st
  EXPECT_EQ(end_error_quantile({}, 0.95), 0);
  EXPECT_EQ(end_error_quantile(e, 0.0), 0);
}

// Tests that a late start or a late end moves the engine's slot: the successor decided
// after it starts where the grant ahead of it can end, not where it was predicted to.
//  - start: a 1 ms grant predicted 0-1 ms starts at 3 ms; a successor decided at 3.5 ms
//    starts at 4 ms.
//  - end: grants predicted 0-1 and 1-2 ms; the first ends at 3 ms, so the one behind it
//    ends no earlier than 4 ms, and the successor decided then starts there.
TEST(Admission, LateStartOrEndMovesNextSuccessor) {
  OneMsChain late_start(1);
  ASSERT_EQ(late_start.first.grants.size(), 1u);
  EXPECT_EQ(late_start.first.grants[0].predicted_end, kMs);
  ASSERT_TRUE(late_start.f.adm->on_start(late_start.llm, late_start.first.grants[0].id, 3 * kMs));
  ASSERT_TRUE(late_start.f.adm->announce(late_start.llm, work(2, 1), 3 * kMs + kMs / 2));
  Decision d = late_start.f.adm->decide(3 * kMs + kMs / 2);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_TRUE(d.grants[0].successor);
  EXPECT_EQ(d.grants[0].predicted_start, 4 * kMs);

  OneMsChain late_end(3);
  ASSERT_EQ(late_end.first.grants.size(), 2u);
  EXPECT_EQ(late_end.first.grants[1].predicted_end, 2 * kMs);
  ASSERT_TRUE(late_end.f.adm->on_start(late_end.llm, late_end.first.grants[0].id, 0));
  ASSERT_TRUE(late_end.f.adm->on_done(late_end.llm, late_end.first.grants[0].id, kMs, 3 * kMs));
  d = late_end.f.adm->decide(3 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_TRUE(d.grants[0].successor);
  EXPECT_EQ(d.grants[0].predicted_start, 4 * kMs);
}

// Tests Options::early_end_carries: three 1-ms units, horizon 1 ms, so grant 0 [0, 1 ms]
// and its successor grant 1 [1, 2 ms]. The engine issues ahead: it starts grant 1 at 0.1
// ms, while grant 0 runs, and grant 0 is done early, at 0.5 ms. The next successor's
// slot is grant 1's end: 0.5 + 1 ms with the option (grant 1 waited behind grant 0 on the
// GPU and runs from its end), 2 ms without (its prediction when decided). Grant 1 not yet
// started keeps its prediction either way.
TEST(Admission, EarlyEndCarriesToAStartedSuccessor) {
  for (const bool carries : {true, false}) {
    for (const bool started : {true, false}) {
      Options o = OneMsChain::options();
      o.early_end_carries = carries;
      Fixture f(0, o);
      const EngineId llm = f.add(engine("llm"));
      ASSERT_TRUE(f.adm->announce(llm, work(1, 3), 0));
      const Decision first = f.adm->decide(0);
      ASSERT_EQ(first.grants.size(), 2u);
      EXPECT_EQ(first.grants[1].predicted_start, kMs);
      EXPECT_EQ(first.grants[1].predicted_end, 2 * kMs);
      ASSERT_TRUE(f.adm->on_start(llm, first.grants[0].id, 0));
      if (started) {
        ASSERT_TRUE(f.adm->on_start(llm, first.grants[1].id, kMs / 10));
      }
      ASSERT_TRUE(f.adm->on_done(llm, first.grants[0].id, kMs / 2, kMs / 2));
      const Decision d = f.adm->decide(kMs / 2);
      ASSERT_EQ(d.grants.size(), 1u) << carries << started;
      EXPECT_TRUE(d.grants[0].successor);
      EXPECT_EQ(d.grants[0].predicted_start, carries && started ? kMs / 2 + kMs : 2 * kMs) << carries << started;
    }
  }
}

// Tests the wait-time breakdown (Fig. 9): budget wait from idle-with-work to the
// decision, decision to sent, and sent to started.
TEST(Admission, WaitTimeBreakdown) {
  Options o;
  o.pipelining = false;
  Fixture f(0, o);
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 1), 0));
  f.adm->on_release(f.t, 1, 0);
  EXPECT_TRUE(f.adm->decide(0).grants.empty());
  const WaitCause why = f.adm->explain(llm).cause;
  ASSERT_EQ(why, WaitCause::kBudget) << to_string(why);
  EXPECT_EQ(f.adm->explain(llm).task, std::optional<pricing::TaskId>(f.t));  // its job binds B(t)
  const Decision d = f.adm->decide(40 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  ASSERT_TRUE(f.adm->on_sent(llm, d.grants[0].id, 40 * kMs + 7'000));
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 40 * kMs + 20'000));
  const EngineStats& s = f.adm->engine(llm)->stats;
  EXPECT_EQ(s.wait_budget, 40 * kMs);
  EXPECT_EQ(s.wait_decision, 7'000);
  EXPECT_EQ(s.wait_delivery, 13'000);
  // The budget wait, by cause: all of it went to the reason the decision at 0 gave.
  for (std::size_t c = 0; c < kWaitCauses; ++c)
    EXPECT_EQ(s.wait_by_cause[c], static_cast<WaitCause>(c) == why ? 40 * kMs : 0) << to_string(static_cast<WaitCause>(c));
  // ... and to the task whose job bound B(t); no other task has any.
  EXPECT_EQ(f.adm->budget_wait_by_task(f.t), 40 * kMs);
  EXPECT_EQ(f.adm->budget_wait_by_task(f.t + 1), 0);
}

// Tests the split of an idle interval by cause (EngineState::account_wait): each stretch
// since the mark goes to the cause in force over it (the one a call finds); a new interval starts from zero, and
// an interval that ends without a grant (end_idle) leaves nothing behind.
TEST(Admission, IdleTimeGoesToTheCauseInForce) {
  EngineState e;
  e.wait.cause = WaitCause::kSlotsFull;
  e.account_wait(5 * kMs);  // not idle: nothing counted
  e.start_idle(10 * kMs);
  e.account_wait(10 * kMs);  // the interval's start: nothing yet
  e.account_wait(12 * kMs);  // [10, 12) under kSlotsFull, the cause in force
  e.wait.cause = WaitCause::kBudget;  // as decide() does: count, then take the new cause
  e.account_wait(30 * kMs);  // [12, 30) under kBudget
  e.wait.cause = WaitCause::kCrossing;
  e.account_wait(30 * kMs);  // no time passed
  e.account_wait(34 * kMs);
  e.account_wait(33 * kMs);  // a clock read out of order counts nothing and keeps the mark
  e.account_wait(35 * kMs);
  const auto at = [&](WaitCause c) { return e.idle_by_cause[static_cast<std::size_t>(c)]; };
  EXPECT_EQ(at(WaitCause::kSlotsFull), 2 * kMs);
  EXPECT_EQ(at(WaitCause::kBudget), 18 * kMs);
  EXPECT_EQ(at(WaitCause::kCrossing), 5 * kMs);
  Nanos sum = 0;
  for (Nanos v : e.idle_by_cause) sum += v;
  EXPECT_EQ(sum, 35 * kMs - e.idle_since);
  e.end_idle();
  EXPECT_EQ(e.idle_since, -1);
  for (Nanos v : e.idle_by_cause) EXPECT_EQ(v, 0);
  e.start_idle(50 * kMs);
  e.account_wait(51 * kMs);
  EXPECT_EQ(at(WaitCause::kCrossing), kMs);
  EXPECT_EQ(at(WaitCause::kBudget), 0);
}

// Tests that bad input is refused with a message naming it: an empty catalog, a
// unit outside the catalog, a non-increasing work id, a deadline above the period.
TEST(Admission, RefusesBadInput) {
  Fixture f;
  EngineSpec empty = engine("x");
  empty.catalog.clear();
  auto r = f.adm->add_engine(empty, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("catalog is empty"), std::string::npos);
  EngineSpec late = engine("vlm", EngineKind::kDeadlineBound);
  late.deadline = 2 * late.period;
  r = f.adm->add_engine(late, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deadline"), std::string::npos);
  const EngineId llm = f.add(engine("llm"));
  Work w = work(1, 2);
  w.units[1] = 7;
  Status s = f.adm->announce(llm, w, 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("outside its catalog"), std::string::npos);
  ASSERT_TRUE(f.adm->announce(llm, work(5, 2), 0));
  s = f.adm->announce(llm, work(5, 2), 0);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("does not increase"), std::string::npos);
  EXPECT_FALSE(f.adm->on_done(llm, 999, 0, 0).ok());
}

// Tests that the probe unit follows the engines: the largest, over the engines, of
// each one's smallest unit (App. C), recomputed when one leaves.
TEST(Admission, ProbeUnitFromEngines) {
  Fixture f;
  EngineSpec a = engine("a");
  a.catalog.push_back({"head", 30 * kMB, kMs});  // smallest 30 MB
  const EngineId ia = f.add(a);
  f.add(engine("b", EngineKind::kBestEffort, 60 * kMB));  // smallest 60 MB
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 60 * kMB);
  f.adm->remove_engine(1, 0);
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 30 * kMB);
  (void)ia;
}

// Tests that the probe unit comes from the units an engine announces, not from catalog
// placeholders it never runs: the interposer's catalog holds a 1-byte generic unit, which
// made the probe 1 byte and kept every allowance at zero on the GPU (found there).
TEST(Admission, ProbeUnitFromAnnouncedUnits) {
  Fixture f;
  EngineSpec a = engine("llm", EngineKind::kBestEffort, 1400 * kMB);   // unit 0: a layer
  a.catalog.push_back({"unit", 1, 1});                                 // unit 1: a placeholder
  a.catalog.push_back({"copy-2^12", 4096, 1});                         // unit 2: a placeholder
  a.catalog.push_back({"lm_head", 1200 * kMB, kMs});                   // unit 3
  const EngineId id = f.add(a);
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 1u);   // before any work: the catalog's smallest
  Work w = work(1, 3);                                   // three layers
  ASSERT_TRUE(f.adm->announce(id, w, 0).ok());
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 1400 * kMB);
  Work w2 = work(2, 1);
  w2.units = {0, 3};                                     // a layer and the head
  ASSERT_TRUE(f.adm->announce(id, w2, 0).ok());
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 1200 * kMB);
  // A second engine whose units are 1 byte (GPU-memory-only work): the largest smallest wins.
  EngineSpec v = engine("vlm", EngineKind::kBestEffort, 1);
  const EngineId iv = f.add(v);
  ASSERT_TRUE(f.adm->announce(iv, work(1, 2), 0).ok());
  EXPECT_EQ(f.ledger.params().probe_unit_bytes, 1200 * kMB);
}


namespace ahead {

// Prior slope 0.1 ns/B (10 ms per 100 MB), floor f = 20 MB; the task of task() with
// D = 49 ms: slack D - a_hat = 9 ms, guard ceil(0.1 x 20 MB) = 2 ms <= 9 ms: not tight.
struct AheadFixture {
  AheadFixture() : ledger(make_params()) {
    pricing::TaskSpec s = task();
    s.deadline = 49 * kMs;
    t = ledger.add_task(std::move(s));
    adm = std::make_unique<Admission>(ledger, std::make_unique<RipplePolicy>());
  }
  static pricing::Params make_params() {
    pricing::Params p = params(/*floor=*/20 * kMB);
    p.prior_slope_ns_per_byte = 0.1;
    return p;
  }
  pricing::Ledger ledger;
  pricing::TaskId t = 0;
  std::unique_ptr<Admission> adm;
};

// The probe engine ("big", 100 MB units) and the 10 MB / 1 ms LLM, with job 1 released at
// 0 and completed at 40 ms: the LLM's id.
EngineId llm_after_job_one(AheadFixture& f) {
  (void)f.adm->add_engine(engine("big"), 0).value();
  const EngineId llm = f.adm->add_engine(engine("llm", EngineKind::kBestEffort, 10 * kMB, kMs), 0).value();
  f.adm->on_release(f.t, 1, 0);
  f.adm->on_complete(f.t, 1, 40 * kMs);
  return llm;
}

}  // namespace ahead

// Tests grant pipelining for a CPU release (§4.3). Probe unit 100 MB (engine "big"),
// llm units 10 MB / 1 ms. Job 1 (base 25 MB) completes at 40 ms; at 99.5 ms any run
// from now crosses the release at 100 ms by k - 0.5 ms with A_bar = 100 MB:
// (k - 0.5) + 40 + 0.1 (100 - 10k) MB = 49.5 ms > 49 ms, so nothing may start now.
// The grant is delivered ahead for the release instead: entry budget >= min(f = 20 MB,
// 25 MB x 0.75 x 0.6 = 11.25 MB) = 11.25 MB -> one unit, not before 100 ms, start_by
// 100 + 20 ms. Job 2 (A = 50 MB, 20 MB at entry) inherits it: B = 20 - 10 = 10 MB.
TEST(Admission, SuccessorAheadForCpuReleaseWaitsForIt) {
  ahead::AheadFixture f;
  const EngineId llm = ahead::llm_after_job_one(f);
  const Nanos now = 99 * kMs + 500 * kNsPerUs;
  ASSERT_TRUE(f.adm->announce(llm, work(1, 30), now));
  const Decision d = f.adm->decide(now);
  ASSERT_EQ(d.grants.size(), 1u);
  const GrantPlan& g = d.grants[0];
  EXPECT_EQ(g.count, 1u);
  EXPECT_EQ(g.bytes, 10 * kMB);
  EXPECT_EQ(g.not_before, 100 * kMs);
  EXPECT_EQ(g.predicted_start, 100 * kMs);
  EXPECT_EQ(g.predicted_end, 101 * kMs);
  EXPECT_EQ(g.start_by, 120 * kMs);
  EXPECT_FALSE(g.successor);
  EXPECT_EQ(f.adm->engine(llm)->stats.for_release, 1u);
  // Its successor would start at 101 ms, after the release: crossing, not ahead.
  EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kCrossing);
  f.adm->on_release(f.t, 2, 100 * kMs);
  EXPECT_EQ(f.ledger.job(f.t, 2)->inherited, 10 * kMB);
  EXPECT_EQ(f.ledger.job(f.t, 2)->allowance, 50 * kMB);
  EXPECT_EQ(f.ledger.budget(100 * kMs), 10 * kMB);
}

// Tests that a grant delivered ahead for a CPU release is a wait the policy chose, not a
// slow delivery: `ripplectl explain` names the release it is held for while nothing else
// is asked, and at its Start the time from its sending to not_before is budget wait (cause
// "release") and only the rest is delivery. The ahead fixture's one-unit request at 99.5 ms.
TEST(Admission, HoldForACpuReleaseIsBudgetWaitNotDelivery) {
  ahead::AheadFixture f;
  const EngineId llm = ahead::llm_after_job_one(f);
  const Nanos now = 99 * kMs + 500 * kNsPerUs;
  ASSERT_TRUE(f.adm->announce(llm, work(1, 1), now));
  const Decision d = f.adm->decide(now);
  ASSERT_EQ(d.grants.size(), 1u);
  ASSERT_EQ(d.grants[0].not_before, 100 * kMs);
  const WaitReason why = f.adm->explain(llm);
  EXPECT_EQ(why.cause, WaitCause::kRelease) << to_string(why.cause);
  EXPECT_EQ(why.until, 100 * kMs);
  EXPECT_EQ(to_string(WaitCause::kRelease), "release");
  EXPECT_EQ(describe(why, now), "granted 10000000 B ahead, held 0.500 ms for the CPU release it was admitted "
                                "against (it would cross that release from now)");
  const EngineStats before = f.adm->engine(llm)->stats;
  ASSERT_TRUE(f.adm->on_sent(llm, d.grants[0].id, now + 10'000));
  f.adm->on_release(f.t, 2, 100 * kMs);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 100 * kMs + 30'000));
  const EngineStats& s = f.adm->engine(llm)->stats;
  EXPECT_EQ(s.wait_delivery - before.wait_delivery, 30'000);
  EXPECT_EQ(s.wait_budget - before.wait_budget, 490'000);
  const auto release = static_cast<std::size_t>(WaitCause::kRelease);
  EXPECT_EQ(s.wait_by_cause[release] - before.wait_by_cause[release], 490'000);
  Nanos parts = 0;
  for (Nanos c : s.wait_by_cause) parts += c;
  EXPECT_EQ(parts, s.wait_budget);  // the parts still sum to the budget wait
}

// The ahead fixture at 99.5 ms with a second task ("kdnn") whose job, released at 95 ms, is
// active (B(t) = its floor, 20 MB, accruing at 2.5 MB/ms), and a 10 MB-unit LLM: the two
// tests below of a best-effort grant ahead of a waiting deadline-bound unit.
struct AheadWithActiveJob : ahead::AheadFixture {
  AheadWithActiveJob() {
    pricing::TaskSpec s2 = task();
    s2.name = "kdnn";
    t2 = ledger.add_task(std::move(s2));
    (void)adm->add_engine(engine("big"), 0).value();
    llm = adm->add_engine(engine("llm", EngineKind::kBestEffort, 10 * kMB, kMs), 0).value();
    adm->on_release(t, 1, 0);
    adm->on_complete(t, 1, 40 * kMs);
    adm->on_release(t2, 1, 95 * kMs);
  }
  pricing::TaskId t2 = 0;
  EngineId llm = 0;
  const Nanos now = 99 * kMs + 500 * kNsPerUs;
};

// Tests that a grant delivered ahead for a CPU release leaves the budget for a waiting
// deadline-bound request's next unit, as a grant that starts now must (§4.1). The ahead
// fixture at 99.5 ms (the LLM may not cross costmap's release at 100 ms; one 10 MB unit
// ahead for it, ending at 101 ms), with a second task's job released at 95 ms active:
// B(t) = its floor, 20 MB, accruing at 2.5 MB/ms. The VLM's next unit (30 MB, due at
// 109 ms) does not fit yet: B(t) reaches 30 MB at 107 ms, but 10 + 30 MB only at 111 ms.
// So the LLM's grant ahead would push the VLM past its due time: it is held for it.
TEST(Admission, AheadForReleaseLeavesBudgetForAWaitingDeadlineBoundUnit) {
  for (bool with_vlm : {false, true}) {
    AheadWithActiveJob f;
    const pricing::TaskId t2 = f.t2;
    const EngineId llm = f.llm;
    const Nanos now = f.now;
    EngineId vlm = 0;
    if (with_vlm) {
      EngineSpec v = engine("vlm", EngineKind::kDeadlineBound, 30 * kMB, kMs);
      vlm = f.adm->add_engine(v, 0).value();
      Work w = work(1, 1);
      w.deadline = 109 * kMs + 500 * kNsPerUs;  // one unit, due at 99.5 + 0.95 x 10 = 109 ms
      ASSERT_TRUE(f.adm->announce(vlm, w, now));
      ASSERT_EQ(f.adm->engine(vlm)->due_time(0, 0.95), 109 * kMs);
    }
    ASSERT_TRUE(f.adm->announce(llm, work(1, 30), now));
    ASSERT_EQ(f.ledger.budget(now), 20 * kMB);
    ASSERT_EQ(f.ledger.time_budget_reaches(30 * kMB, now), 107 * kMs);
    ASSERT_EQ(f.ledger.time_budget_reaches(40 * kMB, now), 111 * kMs);
    const Decision d = f.adm->decide(now);
    if (!with_vlm) {  // the grant ahead the VLM's unit would be held against
      ASSERT_EQ(d.grants.size(), 1u);
      EXPECT_EQ(d.grants[0].engine, llm);
      EXPECT_EQ(d.grants[0].not_before, 100 * kMs);
      EXPECT_EQ(d.grants[0].bytes, 10 * kMB);
      continue;
    }
    EXPECT_TRUE(d.grants.empty()) << "granted ahead " << (d.grants.empty() ? 0 : d.grants[0].bytes)
                                  << " B the VLM's unit needs by its due time";
    EXPECT_EQ(f.adm->engine(llm)->stats.for_release, 0u);
    EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kDueTime);
    EXPECT_EQ(f.adm->explain(llm).other, vlm);
    EXPECT_EQ(f.adm->explain(vlm).cause, WaitCause::kBudget);
    EXPECT_EQ(f.adm->explain(vlm).until, 107 * kMs);
    EXPECT_EQ(f.ledger.job(t2, 1)->charged, 0);
  }
}

// Tests App. C's 1 ms: a best-effort grant ahead of a waiting deadline-bound request must
// leave the budget for the request's unit 1 ms before its due time, not at it. The fixture
// above, with the VLM's unit due between 111 and 112 ms: B(t) reaches 10 + 30 MB at
// 111 ms, so the LLM's grant ahead fits the due time but not the 1 ms before it (held);
// due after 112 ms, it fits both (granted ahead).
TEST(Admission, BestEffortLeavesOneMillisecondBeforeTheDueTime) {
  for (const Nanos target : {111 * kMs + 500 * kNsPerUs, 113 * kMs}) {
    AheadWithActiveJob f;
    const EngineId llm = f.llm;
    const Nanos now = f.now;
    const EngineId vlm = f.adm->add_engine(engine("vlm", EngineKind::kDeadlineBound, 30 * kMB, kMs), 0).value();
    Work w = work(1, 1);
    w.deadline = now + static_cast<Nanos>(static_cast<double>(target - now) / 0.95);
    ASSERT_TRUE(f.adm->announce(vlm, w, now));
    const Nanos due = f.adm->engine(vlm)->due_time(0, 0.95);
    ASSERT_LT(std::llabs(due - target), 10) << due;
    ASSERT_TRUE(f.adm->announce(llm, work(1, 30), now));
    ASSERT_EQ(f.ledger.time_budget_reaches(40 * kMB, now), 111 * kMs);
    const Decision d = f.adm->decide(now);
    if (due < 112 * kMs) {
      EXPECT_TRUE(d.grants.empty()) << "granted ahead " << (d.grants.empty() ? 0 : d.grants[0].bytes)
                                    << " B leaving the VLM's unit less than 1 ms before its due time";
      EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kDueTime);
    } else {
      ASSERT_EQ(d.grants.size(), 1u);
      EXPECT_EQ(d.grants[0].engine, llm);
      EXPECT_EQ(d.grants[0].not_before, 100 * kMs);
    }
    (void)vlm;
  }
}

// Tests that without pipelining (option off) the same engine just waits for the
// release (crossing), so nothing is delivered ahead.
TEST(Admission, NoAheadGrantWithoutPipelining) {
  ahead::AheadFixture f;
  Options o;
  o.pipelining = false;
  f.adm = std::make_unique<Admission>(f.ledger, std::make_unique<RipplePolicy>(), o);
  const EngineId llm = ahead::llm_after_job_one(f);
  const Nanos now = 99 * kMs + 500 * kNsPerUs;
  ASSERT_TRUE(f.adm->announce(llm, work(1, 30), now));
  EXPECT_TRUE(f.adm->decide(now).grants.empty());
  EXPECT_EQ(f.adm->explain(llm).cause, WaitCause::kCrossing);
}

// Tests the VLM phase split (App. C): a release within the first 10 % (100 ms) of a
// deadline-bound engine's 1 s period, which starts at its announcement (200 ms), is
// priced in the head phase; at 350 ms, after a full period (1250 ms), or with no
// deadline-bound request it is kRest; an explicit phase wins.
TEST(Admission, ReleasePhaseFromDeadlineBoundRequest) {
  Fixture f;
  const EngineId vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
  EXPECT_EQ(f.adm->phase_at(250 * kMs), pricing::Phase::kRest);  // nothing announced
  ASSERT_TRUE(f.adm->announce(vlm, work(1, 4), 200 * kMs));
  EXPECT_EQ(f.adm->phase_at(199 * kMs), pricing::Phase::kRest);
  f.adm->on_release(f.t, 1, 250 * kMs);
  EXPECT_EQ(f.ledger.job(f.t, 1)->pricing.phase, pricing::Phase::kVlmHead);
  f.adm->on_complete(f.t, 1, 290 * kMs);
  f.adm->on_release(f.t, 2, 350 * kMs);
  EXPECT_EQ(f.ledger.job(f.t, 2)->pricing.phase, pricing::Phase::kRest);
  f.adm->on_complete(f.t, 2, 390 * kMs);
  EXPECT_EQ(f.adm->phase_at(299 * kMs), pricing::Phase::kVlmHead);
  EXPECT_EQ(f.adm->phase_at(300 * kMs), pricing::Phase::kRest);
  EXPECT_EQ(f.adm->phase_at(1250 * kMs), pricing::Phase::kRest);
  f.adm->on_release(f.t, 3, 450 * kMs, pricing::Phase::kVlmHead);
  EXPECT_EQ(f.ledger.job(f.t, 3)->pricing.phase, pricing::Phase::kVlmHead);
  // A disconnected engine no longer sets the phase.
  f.adm->on_complete(f.t, 3, 490 * kMs);
  ASSERT_TRUE(f.adm->announce(vlm, work(2, 4), 1000 * kMs));
  f.adm->remove_engine(vlm, 1010 * kMs);
  EXPECT_EQ(f.adm->phase_at(1020 * kMs), pricing::Phase::kRest);
}

// Liveness invariant (issue 15): an engine with work and nothing outstanding never
// waits on a condition that cannot become true. A driver in virtual time runs a 20 ms
// task (5 ms jobs, 8 ms deadline) beside an engine of 15 ms units (each longer than the
// task's slack, so grants fit only between jobs) and stops the task at a random point,
// by a normal exit or killed mid-job (on_unfinished); random seeds. Checked at every
// decision: a waiting engine names a cause whose end is an event that will come (an
// active job's completion, a predicted release, a task turning idle, or a time), and
// once the task has stopped the engine is granted within (1 + idle_periods) periods.
TEST(Admission, NoWaitOnAConditionThatCannotComeTrue) {
  for (std::uint32_t seed = 1; seed <= 40; ++seed) {
    pricing::Params p = params(kMB);
    pricing::Ledger ledger(p);
    pricing::TaskSpec ts = task();
    ts.period = 20 * kMs;
    ts.deadline = 8 * kMs;
    ts.solo_profile.assign(10, 5 * kMs);
    const pricing::TaskId t = ledger.add_task(ts);
    Admission adm(ledger, std::make_unique<RipplePolicy>());
    auto eid = adm.add_engine(engine("llm", EngineKind::kBestEffort, 15 * kMB, 15 * kMs), 0);
    ASSERT_TRUE(eid.ok());
    std::uint64_t rng = seed * 0x9E3779B97F4A7C15ull;
    auto draw = [&rng](std::uint64_t n) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      return rng % n;
    };
    const int jobs = 5 + static_cast<int>(draw(40));
    const bool killed = draw(2) == 1;
    Nanos stop = 0;  // when the task stopped (its last completion or its kill)
    std::uint64_t work_id = 1;
    ASSERT_TRUE(adm.announce(*eid, work(work_id, 1000), 0));
    struct Running { GrantId id; Nanos end; Nanos measured; };
    std::vector<Running> running;
    Nanos granted_after_stop = kNever;
    // Events: job j released at 20 j ms + jitter, completes 5 ms later.
    std::vector<std::pair<Nanos, int>> events;  // (time, +j release / -j completion)
    for (int j = 1; j <= jobs; ++j) {
      const Nanos r = j * 20 * kMs + static_cast<Nanos>(draw(2000)) * 1000;
      events.push_back({r, j});
      if (j < jobs || !killed) events.push_back({r + 5 * kMs, -j});
      else stop = r + 2 * kMs;  // killed 2 ms into its last job
    }
    if (!killed) stop = events.back().first;
    Nanos now = 0, wake = 0;
    std::size_t next_ev = 0;
    const Nanos bound = (1 + static_cast<Nanos>(pricing::kDefaultIdlePeriods)) * ts.period + kMs;
    const Nanos horizon = stop + 2 * bound;
    while (now < horizon) {
      // Next scheduling point: a job event, a grant's end, the kill, or wake_at.
      Nanos t_next = std::min(wake, horizon);
      if (next_ev < events.size()) t_next = std::min(t_next, events[next_ev].first);
      for (const auto& r : running) t_next = std::min(t_next, r.end);
      if (killed && now < stop) t_next = std::min(t_next, stop);
      now = std::max(now, t_next);
      while (next_ev < events.size() && events[next_ev].first <= now) {
        const auto [at, j] = events[next_ev++];
        if (j > 0) adm.on_release(t, static_cast<JobSeq>(j), at);
        else adm.on_complete(t, static_cast<JobSeq>(-j), at);
      }
      if (killed && now == stop) adm.on_unfinished(t, static_cast<JobSeq>(jobs), now);
      for (auto it = running.begin(); it != running.end();) {
        if (it->end <= now) {
          ASSERT_TRUE(adm.on_done(*eid, it->id, it->measured, now));
          it = running.erase(it);
        } else {
          ++it;
        }
      }
      if (adm.engine(*eid)->remaining() == 0) {
        ASSERT_TRUE(adm.announce(*eid, work(++work_id, 1000), now));
      }
      const Decision d = adm.decide(now);
      wake = d.wake_at;
      Nanos busy = running.empty() ? now : running.back().end;
      for (const GrantPlan& g : d.grants) {
        ASSERT_TRUE(adm.on_sent(*eid, g.id, now));
        const Nanos start = std::max({busy, now, g.not_before});
        ASSERT_TRUE(adm.on_start(*eid, g.id, start));
        const Nanos dur = g.predicted_end - g.predicted_start;
        running.push_back({g.id, start + dur, dur});
        busy = start + dur;
        if (now >= stop && granted_after_stop == kNever) granted_after_stop = now;
      }
      if (running.empty() && d.grants.empty()) {
        const WaitReason& w = adm.explain(*eid);
        const bool job_active = !ledger.active_jobs().empty();
        const bool release_predicted = ledger.next_release(t, now).has_value();
        switch (w.cause) {
          case WaitCause::kBudget:
            EXPECT_TRUE(job_active || w.until != kNever) << "seed " << seed << " at " << now;
            break;
          case WaitCause::kCrossing:
            EXPECT_TRUE(job_active || release_predicted) << "seed " << seed << " at " << now;
            EXPECT_TRUE(job_active || w.until != kNever || wake != kNever)
                << "seed " << seed << ": crossing with no event to end it at " << now;
            break;
          default:
            ADD_FAILURE() << "seed " << seed << ": idle with work, cause " << to_string(w.cause);
        }
      }
    }
    ASSERT_NE(granted_after_stop, kNever) << "seed " << seed << (killed ? " (killed)" : " (exited)");
    EXPECT_LE(granted_after_stop - stop, bound)
        << "seed " << seed;
  }
}

// Tests that the engine table stays bounded (issue 15, M1): 1,000 engines that join,
// take a grant and leave leave at most gone_engines_kept entries behind, the newest; an
// engine that stays connected throughout keeps its id and is still granted.
TEST(Admission, GoneEnginesDoNotAccumulate) {
  Fixture f;
  const EngineId stay = f.add(engine("stay"));
  Nanos now = 0;
  EngineId last = 0;
  for (int k = 0; k < 1000; ++k) {
    last = f.add(engine("churn"), now);
    ASSERT_TRUE(f.adm->announce(last, work(1, 1), now));
    (void)f.adm->decide(now);
    f.adm->remove_engine(last, now);
    now += kMs;
  }
  const auto& all = f.adm->engines();
  EXPECT_LE(all.size(), 1 + f.adm->options().gone_engines_kept);
  ASSERT_NE(f.adm->engine(last), nullptr);  // the newest gone one is kept, disconnected
  EXPECT_FALSE(f.adm->engine(last)->connected);
  EXPECT_EQ(f.adm->engine(1), nullptr);     // an old one is gone
  EXPECT_FALSE(f.adm->announce(1, work(9, 1), now).ok());
  ASSERT_TRUE(f.adm->announce(stay, work(1, 2), now));
  const Decision d = f.adm->decide(now);
  ASSERT_FALSE(d.grants.empty());
  EXPECT_EQ(d.grants[0].engine, stay);
  EXPECT_TRUE(f.adm->on_sent(stay, d.grants[0].id, now).ok());
}

// Two engines that move host bytes, no PT job active: the deadline-bound VLM (EDF first)
// gets its 5 units at 0-5 ms; the LLM's grant is held for the link until the VLM's
// predicted end (not_before = 5 ms, start_by 5 + lease), predicted alone to 23 ms.
struct LinkRun {
  Decision d;
  EngineId llm = 0, vlm = 0;
};
LinkRun two_host_engines(Fixture& f, Bytes vlm_unit = kUnit, DeviceMemory llm_memory = DeviceMemory::kUnknown,
                         DeviceMemory vlm_memory = DeviceMemory::kUnknown) {
  LinkRun r;
  EngineSpec llm = engine("llm"), vlm = engine("vlm", EngineKind::kDeadlineBound, vlm_unit);
  llm.memory = llm_memory;
  vlm.memory = vlm_memory;
  r.llm = f.add(llm);
  r.vlm = f.add(vlm);
  EXPECT_TRUE(f.adm->announce(r.vlm, work(1, 5), 0));
  EXPECT_TRUE(f.adm->announce(r.llm, work(1, 40), 0));
  r.d = f.adm->decide(0);
  return r;
}

// Tests that a grant moving host bytes starts after another engine's outstanding
// host-byte grant is predicted to end, delivered with not_before, counted as held for
// the link (not for a release), and that explain names the link and its holder.
TEST(Admission, SharedLinkHoldsASecondEnginesHostByteGrant) {
  Fixture f;
  const LinkRun r = two_host_engines(f);
  ASSERT_EQ(r.d.grants.size(), 3u);
  const GrantPlan& v = r.d.grants[0];
  EXPECT_EQ(v.engine, r.vlm);
  EXPECT_EQ(v.predicted_start, 0);
  EXPECT_EQ(v.predicted_end, 5 * kMs);
  EXPECT_EQ(v.not_before, 0);
  EXPECT_FALSE(v.link_held);
  const GrantPlan& l = r.d.grants[1];
  EXPECT_EQ(l.engine, r.llm);
  EXPECT_EQ(l.count, 18u);
  EXPECT_EQ(l.predicted_start, 5 * kMs);
  EXPECT_EQ(l.not_before, 5 * kMs);
  EXPECT_TRUE(l.link_held);
  EXPECT_EQ(l.predicted_end, 23 * kMs);
  EXPECT_EQ(l.start_by, 25 * kMs);
  // Its successor queues behind it on the LLM's own slot: not held for the link.
  const GrantPlan& s = r.d.grants[2];
  EXPECT_TRUE(s.successor);
  EXPECT_EQ(s.predicted_start, 23 * kMs);
  EXPECT_EQ(s.not_before, 0);
  EXPECT_FALSE(s.link_held);
  EXPECT_EQ(f.adm->engine(r.llm)->stats.link_held, 1u);
  EXPECT_EQ(f.adm->engine(r.llm)->stats.for_release, 0u);
  const WaitReason why = f.adm->explain(r.llm);
  EXPECT_EQ(why.cause, WaitCause::kLink);
  EXPECT_EQ(why.until, 5 * kMs);
  EXPECT_EQ(why.other, r.vlm);
  EXPECT_EQ(describe(why, 0), "granted 1800000000 B, held 5.000 ms for engine 1's host-byte grant (shared link)");
  // The VLM's next frame waits for the LLM's grants: its slot is after their predicted end.
  ASSERT_TRUE(f.adm->announce(r.vlm, work(2, 2), kMs));
  const Decision d = f.adm->decide(kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, r.vlm);
  EXPECT_EQ(d.grants[0].predicted_start, 41 * kMs);
  EXPECT_EQ(d.grants[0].not_before, 41 * kMs);
  EXPECT_TRUE(d.grants[0].link_held);
  // Started 20 us after the hold: the 5 ms held is budget wait for the link, not delivery.
  ASSERT_TRUE(f.adm->on_sent(r.llm, l.id, 0));
  ASSERT_TRUE(f.adm->on_sent(r.vlm, v.id, 0));
  ASSERT_TRUE(f.adm->on_start(r.vlm, v.id, 0));
  ASSERT_TRUE(f.adm->on_done(r.vlm, v.id, 5 * kMs, 5 * kMs));
  const EngineStats before = f.adm->engine(r.llm)->stats;
  ASSERT_TRUE(f.adm->on_start(r.llm, l.id, 5 * kMs + 20'000));
  const EngineStats& st = f.adm->engine(r.llm)->stats;
  const auto link = static_cast<std::size_t>(WaitCause::kLink);
  EXPECT_EQ(st.wait_delivery - before.wait_delivery, 20'000);
  EXPECT_EQ(st.wait_budget - before.wait_budget, 5 * kMs);
  EXPECT_EQ(st.wait_by_cause[link] - before.wait_by_cause[link], 5 * kMs);
}

// An LLM with nothing announced yet, and a VLM whose one grant (5 units, 0-5 ms) holds the
// link, started at `started` (< 0: not started).
struct LinkHolder {
  explicit LinkHolder(Nanos started) {
    llm = f.add(engine("llm"));
    vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
    EXPECT_TRUE(f.adm->announce(vlm, work(1, 5), 0));
    const Decision d = f.adm->decide(0);
    EXPECT_EQ(d.grants.size(), 1u);
    if (d.grants.empty()) return;
    EXPECT_EQ(d.grants[0].predicted_end, 5 * kMs);
    held_by = d.grants[0].id;
    if (started >= 0) {
      EXPECT_TRUE(f.adm->on_start(vlm, held_by, started));
    }
  }
  Fixture f;
  EngineId llm = 0, vlm = 0;
  GrantId held_by = 0;
};

// Tests that a late start of the holder's grant pushes the link out: a grant decided
// after it is held until the holder's later predicted end.
TEST(Admission, SharedLinkFollowsTheHoldersLateStart) {
  LinkHolder h(2 * kMs);  // 2 ms late: ends at 7 ms
  auto& [f, llm, vlm, held_by] = h;
  ASSERT_NE(held_by, 0u);
  Decision d;
  ASSERT_TRUE(f.adm->announce(llm, work(1, 4), 3 * kMs));
  d = f.adm->decide(3 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_start, 7 * kMs);
  EXPECT_EQ(d.grants[0].not_before, 7 * kMs);
  EXPECT_EQ(d.grants[0].predicted_end, 11 * kMs);
  // Done: the link is free, the next grant is not held.
  ASSERT_TRUE(f.adm->on_done(vlm, held_by, 5 * kMs, 7 * kMs));
  ASSERT_TRUE(f.adm->announce(vlm, work(2, 1), 8 * kMs));
  d = f.adm->decide(8 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_start, 11 * kMs);  // behind the LLM's held grant
  EXPECT_TRUE(d.grants[0].link_held);
}

// Tests that a holder's host-byte grant running past its predicted end (0-5 ms, no Done
// at 6 ms) still holds the link: the LLM's host-byte grant is not decided beside it (the
// two would each run at about half speed, against the predictions), explain names the
// link and its holder with no time, and the holder's Done frees the link at once.
TEST(Admission, SharedLinkWaitsForAHolderPastItsPredictedEnd) {
  LinkHolder h(0);
  auto& [f, llm, vlm, held_by] = h;
  ASSERT_NE(held_by, 0u);
  Decision d;
  ASSERT_TRUE(f.adm->announce(llm, work(1, 4), 6 * kMs));
  d = f.adm->decide(6 * kMs);
  EXPECT_TRUE(d.grants.empty());
  const WaitReason why = f.adm->explain(llm);
  EXPECT_EQ(why.cause, WaitCause::kLink);
  EXPECT_EQ(why.until, kNever);
  EXPECT_EQ(why.other, vlm);
  EXPECT_EQ(describe(why, 6 * kMs),
            "next unit 100000000 B waits for engine 1's host-byte grant, past its predicted end, to end (shared link)");
  ASSERT_TRUE(f.adm->on_done(vlm, held_by, 8 * kMs, 8 * kMs));
  d = f.adm->decide(8 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, llm);
  EXPECT_EQ(d.grants[0].predicted_start, 8 * kMs);
  EXPECT_FALSE(d.grants[0].link_held);
}

// Tests that a host-byte grant past its predicted end that has not started holds nothing:
// the engine may have gone idle and never start it (it expires, start_by + 500 ms later),
// so the LLM's grant is decided at once, not held for it.
TEST(Admission, SharedLinkIsNotHeldByAnUnstartedGrantPastItsEnd) {
  LinkHolder h(-1);
  auto& [f, llm, vlm, held_by] = h;
  ASSERT_NE(held_by, 0u);
  ASSERT_TRUE(f.adm->announce(llm, work(1, 4), 6 * kMs));
  const Decision d = f.adm->decide(6 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].engine, llm);
  EXPECT_EQ(d.grants[0].predicted_start, 6 * kMs);
  EXPECT_FALSE(d.grants[0].link_held);
}

// Tests that an engine whose units carry no host bytes (an HBM-resident VLM's 1-byte
// units) is never held for the link and never holds another engine.
TEST(Admission, SharedLinkIgnoresEnginesWithoutHostBytes) {
  Fixture f;
  const LinkRun r = two_host_engines(f, /*vlm_unit=*/1);
  ASSERT_EQ(r.d.grants.size(), 3u);
  EXPECT_EQ(r.d.grants[0].engine, r.vlm);
  EXPECT_EQ(r.d.grants[1].engine, r.llm);
  EXPECT_EQ(r.d.grants[1].predicted_start, 0);
  EXPECT_EQ(r.d.grants[1].not_before, 0);
  EXPECT_FALSE(r.d.grants[1].link_held);
  EXPECT_EQ(r.d.grants[1].predicted_end, 18 * kMs);
  // With the LLM's host-byte grants outstanding, the VLM's next frame is not held either.
  ASSERT_TRUE(f.adm->announce(r.vlm, work(2, 2), kMs));
  const Decision d = f.adm->decide(kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_EQ(d.grants[0].predicted_start, 5 * kMs);  // its own slot, after its first grant
  EXPECT_FALSE(d.grants[0].link_held);
  EXPECT_EQ(f.adm->engine(r.llm)->stats.link_held + f.adm->engine(r.vlm)->stats.link_held, 0u);
}

// Tests that agent.shared_link = false restores solo predictions: both engines' grants
// start at once, nothing held.
TEST(Admission, SharedLinkOffPredictsEachEngineAlone) {
  Options o;
  o.shared_link = LinkMode::kOff;
  Fixture f(0, o);
  const LinkRun r = two_host_engines(f);
  ASSERT_EQ(r.d.grants.size(), 3u);
  EXPECT_EQ(r.d.grants[1].engine, r.llm);
  EXPECT_EQ(r.d.grants[1].predicted_start, 0);
  EXPECT_EQ(r.d.grants[1].not_before, 0);
  EXPECT_FALSE(r.d.grants[1].link_held);
  EXPECT_EQ(r.d.grants[1].predicted_end, 18 * kMs);
  EXPECT_EQ(f.adm->engine(r.llm)->stats.link_held, 0u);
}

// Tests agent.shared_link = "auto" (the default) by what each engine's hello reports: an
// engine on an integrated GPU (unified memory: Jetson, GB10) is off the link, neither
// held nor holding; discrete and unknown engines share it; "on" holds whatever they say.
TEST(Admission, SharedLinkAutoFollowsTheReportedMemory) {
  EXPECT_EQ(Options{}.shared_link, LinkMode::kAuto);
  struct Case {
    LinkMode mode;
    DeviceMemory llm, vlm;
    bool held;
  };
  const DeviceMemory kU = DeviceMemory::kUnknown, kD = DeviceMemory::kDiscrete, kI = DeviceMemory::kIntegrated;
  for (const Case& c : {Case{LinkMode::kAuto, kU, kU, true}, Case{LinkMode::kAuto, kD, kD, true},
                        Case{LinkMode::kAuto, kD, kU, true}, Case{LinkMode::kAuto, kI, kI, false},
                        Case{LinkMode::kAuto, kI, kD, false}, Case{LinkMode::kAuto, kD, kI, false},
                        Case{LinkMode::kOn, kI, kI, true}, Case{LinkMode::kOff, kD, kD, false}}) {
    Options o;
    o.shared_link = c.mode;
    Fixture f(0, o);
    const LinkRun r = two_host_engines(f, kUnit, c.llm, c.vlm);
    const std::string what = fmt::format("{} llm {} vlm {}", to_string(c.mode), to_string(c.llm), to_string(c.vlm));
    ASSERT_EQ(r.d.grants.size(), 3u) << what;
    EXPECT_EQ(r.d.grants[1].engine, r.llm) << what;
    EXPECT_EQ(r.d.grants[1].link_held, c.held) << what;
    EXPECT_EQ(r.d.grants[1].predicted_start, c.held ? 5 * kMs : 0) << what;
    EXPECT_EQ(f.adm->engine(r.llm)->stats.link_held, c.held ? 1u : 0u) << what;
  }
}

// Tests agent.link_by_deadline. The VLM's frame (40 units of 1 ms, deadline 1000 ms,
// gamma 0.95) gets 36 units at once, two grants; the 36th is due at 855 ms. Decided at 0
// they end at 36 ms, by 72 ms at half speed: ahead, the LLM's host-byte grant runs beside
// them. Decided first at 840 ms they end at 876 ms, past 855: the LLM is held for the link,
// as it is at 0 with the option off. The VLM never waits for the LLM's grant (off, it does).
TEST(Admission, LinkByDeadlineHoldsOnlyForABehindDeadlineEngine) {
  struct Case {
    bool yield;
    Nanos at;
    bool held;
  };
  for (const Case& c : {Case{true, 0, false}, Case{true, 840 * kMs, true}, Case{false, 0, true}}) {
    Options o;
    o.link_by_deadline = c.yield;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm")), vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
    ASSERT_TRUE(f.adm->announce(vlm, work(1, 40), 0));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 0));
    const Decision d = f.adm->decide(c.at);
    const std::string what = fmt::format("yield {} at {} ms", c.yield, c.at / kMs);
    ASSERT_GE(d.grants.size(), 2u) << what;
    EXPECT_EQ(d.grants[0].engine, vlm) << what;
    EXPECT_EQ(d.grants[0].predicted_end, c.at + 18 * kMs) << what;
    const auto l = std::find_if(d.grants.begin(), d.grants.end(), [&](const GrantPlan& g) { return g.engine == llm; });
    ASSERT_NE(l, d.grants.end()) << what;
    EXPECT_EQ(l->link_held, c.held) << what;
    EXPECT_GE(l->predicted_start, c.held ? c.at + 18 * kMs : c.at) << what;
    if (!c.held) {
      EXPECT_EQ(l->predicted_start, c.at) << what;
    }
    EXPECT_EQ(f.adm->engine(llm)->stats.link_held, c.held ? 1u : 0u) << what;
  }
  // The LLM's grant outstanding first (0-18 ms): the VLM's frame starts at once beside it;
  // with the option off it waits for the LLM's grant to end.
  for (const bool by_deadline : {true, false}) {
    Options o;
    o.link_by_deadline = by_deadline;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm")), vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 0));
    const Decision first = f.adm->decide(0);
    ASSERT_FALSE(first.grants.empty());
    EXPECT_EQ(first.grants[0].predicted_end, 18 * kMs);
    ASSERT_TRUE(f.adm->announce(vlm, work(1, 40), kMs));
    const Decision d = f.adm->decide(kMs);
    ASSERT_FALSE(d.grants.empty());
    EXPECT_EQ(d.grants[0].engine, vlm);
    EXPECT_EQ(d.grants[0].link_held, !by_deadline) << by_deadline;
    if (by_deadline) EXPECT_EQ(d.grants[0].predicted_start, kMs);
    else EXPECT_GE(d.grants[0].predicted_start, 18 * kMs);
  }
}

// Tests EngineState::beside_end, which end_of applies: a host-byte grant that overlaps
// another engine's host-byte grant (beside_until) runs at 1 / beside_scale of its rate until
// that one's predicted end, then alone. Nothing beside, a factor <= 1 or a unit under
// kLinkMinBytes leaves the solo end.
TEST(Admission, BesideEndStretchesTheOverlapByTheFactor) {
  EngineState e;
  e.spec = engine("vlm", EngineKind::kDeadlineBound);
  e.queue.push_back(std::make_shared<const Work>(work(1, 10)));
  EXPECT_EQ(e.end_of(0, 6, 0), 6 * kMs);  // nothing beside
  e.beside_until = 10 * kMs;
  e.beside_scale = 1.5;
  EXPECT_EQ(e.beside_end(0, 6 * kMs), 9 * kMs);                  // all of it beside: 1.5 x 6
  EXPECT_EQ(e.end_of(0, 6, 0), 9 * kMs);                         // the prediction the policy reads
  EXPECT_EQ(e.beside_end(0, 8 * kMs), 10 * kMs + 4 * kMs / 3);   // 10 ms beside do 6.67 ms of it
  EXPECT_EQ(e.beside_end(10 * kMs, 16 * kMs), 16 * kMs);         // starts as the other ends
  EXPECT_EQ(e.beside_end(2 * kMs, 4 * kMs), 5 * kMs);
  e.beside_until = kNever;  // another engine may run beside all of it
  EXPECT_EQ(e.beside_end(0, 8 * kMs), 12 * kMs);
  e.beside_until = 10 * kMs;
  e.beside_scale = 0.9;  // not slowed beside the other: solo
  EXPECT_EQ(e.beside_end(0, 6 * kMs), 6 * kMs);
  e.beside_scale = 1.5;
  e.spec.catalog[0].bytes = kLinkMinBytes - 1;  // no host bytes: not on the link
  EXPECT_EQ(e.beside_end(0, 6 * kMs), 6 * kMs);
}

// Tests what link_by_deadline learns and predicts. The VLM's frame (80 units of 1 ms) and
// the LLM's (40) run beside each other from 0 (the VLM is ahead of its due times). The
// LLM's first grant (18 units) ends at 18 ms as predicted; the VLM's ends at 25.2 ms, 1.4x
// its solo 18 ms, beside an LLM grant all along. The VLM learns a beside factor of 1.4 and
// keeps its solo scale of 1; the LLM learns 1.0. Then the VLM's next grant, which the LLM's
// may run beside, is predicted at 1.4x (18 units from 43.2 ms: to 68.4), and the LLM's at
// its solo duration. Off, the VLM's solo scale learns the slow grant and nothing is beside.
TEST(Admission, LinkByDeadlineLearnsTheBesideFactorAndPredictsWithIt) {
  for (const bool by_deadline : {true, false}) {
    Options o;
    o.link_by_deadline = by_deadline;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm")), vlm = f.add(engine("vlm", EngineKind::kDeadlineBound));
    ASSERT_TRUE(f.adm->announce(vlm, work(1, 80), 0));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 40), 0));
    const Decision d = f.adm->decide(0);
    std::vector<GrantPlan> v, l;
    for (const GrantPlan& g : d.grants) (g.engine == vlm ? v : l).push_back(g);
    ASSERT_EQ(v.size(), 2u) << by_deadline;
    ASSERT_EQ(l.size(), 2u) << by_deadline;
    EXPECT_EQ(v[0].predicted_end, 18 * kMs) << by_deadline;  // nothing learned yet: solo
    EXPECT_EQ(l[0].predicted_start, by_deadline ? 0 : 36 * kMs) << by_deadline;
    for (const GrantPlan& g : d.grants) {
      ASSERT_TRUE(f.adm->on_sent(g.engine, g.id, 0));
      ASSERT_TRUE(f.adm->on_start(g.engine, g.id, 0));
    }
    ASSERT_TRUE(f.adm->on_done(llm, l[0].id, 18 * kMs, 18 * kMs));
    const Nanos vlm_done = 25'200'000;
    ASSERT_TRUE(f.adm->on_done(vlm, v[0].id, vlm_done, vlm_done));
    const EngineState& ve = *f.adm->engine(vlm);
    const EngineState& le = *f.adm->engine(llm);
    if (!by_deadline) {
      EXPECT_EQ(ve.beside_scale, 0.0);
      EXPECT_NEAR(ve.scale, 0.8 + 0.2 * 1.4, 1e-9);  // the paper's scale learns it
      EXPECT_EQ(le.beside_scale, 0.0);
      continue;
    }
    EXPECT_NEAR(ve.beside_scale, 1.4, 1e-9);
    EXPECT_EQ(ve.scale, 1.0);
    EXPECT_NEAR(le.beside_scale, 1.0, 1e-9);
    EXPECT_EQ(le.scale, 1.0);
    EXPECT_EQ(ve.busy_until, vlm_done + 18 * kMs);
    const Decision next = f.adm->decide(vlm_done);
    ASSERT_FALSE(next.grants.empty());
    EXPECT_EQ(next.grants[0].engine, vlm);
    EXPECT_EQ(next.grants[0].predicted_start, vlm_done + 18 * kMs);
    EXPECT_EQ(next.grants[0].predicted_end, vlm_done + 18 * kMs + 25'200'000);
    const auto ln = std::find_if(next.grants.begin(), next.grants.end(), [&](const GrantPlan& g) { return g.engine == llm; });
    ASSERT_NE(ln, next.grants.end());
    EXPECT_EQ(ln->predicted_start, 36 * kMs);
    EXPECT_EQ(ln->predicted_end, 40 * kMs);  // the LLM is not slowed beside the VLM
    EXPECT_FALSE(ln->link_held);
  }
}

// Defects the twenty-eighth session's probe of the admission code found (each test failed
// before its fix).

// Tests that a Discard of a successor while the grant before it still runs (late) does not
// count as an end: that grant's Done reads as run alone, its whole GPU time busy and
// taught to the solo scale (it was read as queued: busy 0.2 ms, the queued scale seeded
// at its floor, and the next successor sized far past the horizon).
TEST(AdmissionProbe, DiscardIsNoEndForTheGrantStillRunning) {
  Fixture f;  // no job active: B unlimited
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 1000), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  const GrantPlan g1 = d.grants[0], g2 = d.grants[1];
  ASSERT_EQ(g1.count, 18u);
  ASSERT_TRUE(f.adm->on_start(llm, g1.id, 0));
  // G1 runs 22 ms late; the client discards G2 (past its start_by) at 40 ms, and G1's
  // Done (40 ms of GPU time) arrives 0.2 ms later.
  ASSERT_TRUE(f.adm->on_discard(llm, g2.id, 40 * kMs));
  ASSERT_TRUE(f.adm->on_done(llm, g1.id, 40 * kMs, 40 * kMs + 200'000));
  const EngineState& e = *f.adm->engine(llm);
  EXPECT_EQ(e.stats.queued, 0u);
  EXPECT_EQ(e.stats.busy, 40 * kMs);
  EXPECT_GT(e.scale, 1.2) << "the 2.2x overrun teaches the solo scale";
  EXPECT_EQ(e.queued_scale, 0.0) << "no queued grant was seen";
  d = f.adm->decide(40 * kMs + 200'000);
  for (const auto& g : d.grants) EXPECT_LE(g.predicted_end - g.predicted_start, 18 * kMs * 22 / 10 + kMs);
}

// Tests that a successor starting after a Done that came late moves the engine's slot to
// its own end (its plan's end no longer equals busy_until, which the late Done moved), so
// the next successor is predicted after it, with early_end_carries on and off.
TEST(AdmissionProbe, LateStartAfterALateDoneMovesTheSlot) {
  for (bool carries : {true, false}) {
    SCOPED_TRACE(carries);
    Options o;
    o.early_end_carries = carries;
    Fixture f(0, o);
    const EngineId llm = f.add(engine("llm"));
    ASSERT_TRUE(f.adm->announce(llm, work(1, 1000), 0));
    Decision d = f.adm->decide(0);
    ASSERT_EQ(d.grants.size(), 2u);  // G1 0-18 ms, G2 18-36 ms
    const GrantPlan g1 = d.grants[0], g2 = d.grants[1];
    ASSERT_TRUE(f.adm->on_start(llm, g1.id, 0));
    ASSERT_TRUE(f.adm->on_done(llm, g1.id, 25 * kMs, 25 * kMs));  // 7 ms late
    ASSERT_TRUE(f.adm->on_start(llm, g2.id, 30 * kMs));          // G2 (18 ms) from 30 ms
    EXPECT_GE(f.adm->engine(llm)->busy_until, 48 * kMs);
    d = f.adm->decide(30 * kMs);
    ASSERT_FALSE(d.grants.empty());
    EXPECT_GE(d.grants[0].predicted_start, 48 * kMs);
  }
}

// Tests that an engine's grant overhead and unit durations are bounded by an hour (the
// protocol's bound on a duration): a larger overhead wrapped every prediction, and one
// grant of 1000 one-ms units was predicted to end before a release 10 ms away.
TEST(AdmissionProbe, GrantOverheadAndDurationsAreBounded) {
  EngineSpec s = engine("llm");
  s.grant_overhead = std::numeric_limits<Nanos>::max() - kMs / 2;
  EXPECT_FALSE(validate(s).ok());
  s.grant_overhead = 3600 * pricing::kNsPerSec;
  EXPECT_TRUE(validate(s).ok());
  s.grant_overhead = 3600 * pricing::kNsPerSec + 1;
  EXPECT_NE(validate(s).error().message.find("grant overhead 3600000000001 ns outside [0, 1 h]"), std::string::npos);
  s = engine("llm", EngineKind::kBestEffort, kUnit, 3600 * pricing::kNsPerSec + 1);
  EXPECT_FALSE(validate(s).ok());
}

// Tests that a best-effort engine is not held for a deadline-bound request whose latest
// start has passed when the budget holds both its unit and the whole request now (a VLM
// that stalled 9.9 s past its deadline held the LLM for as long as it stalled, with no
// wake-up), and that a reservation that does hold sets a wake-up.
TEST(AdmissionProbe, ReservationPastItsLatestHoldsOnlyWhatTheBudgetLacks) {
  Options o;
  o.expire_slack = 20 * kMs;
  Fixture f(/*floor=*/100 * kUnit, o);
  const EngineId llm = f.add(engine("llm", EngineKind::kBestEffort, 10 * kMB, 100'000));
  EngineSpec v = engine("vlm", EngineKind::kDeadlineBound, 1 * kMB, kMs);
  v.period = v.deadline = 100 * kMs;
  const EngineId vlm = f.add(v);
  f.add(engine("idle"));  // a 100 MB probe unit, no work: the job gets 100 MB
  ASSERT_TRUE(f.adm->announce(vlm, work(1, 5), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 1u);  // the VLM's whole request; never started (stalled)
  d = f.adm->decide(d.wake_at);    // expired: refunded, units back, hand-back pending
  ASSERT_TRUE(f.adm->engine(vlm)->handback_pending);
  const Nanos t0 = 10'000 * kMs;   // the VLM's deadline was at 100 ms
  ASSERT_TRUE(f.adm->announce(llm, work(1, 10), t0));
  f.adm->on_release(f.t, 1, t0);
  d = f.adm->decide(t0);
  ASSERT_FALSE(d.grants.empty()) << describe(f.adm->explain(llm), t0);
  EXPECT_EQ(d.grants[0].engine, llm);
}

// Tests that a queued successor decided near the end of the grant before it is sized by
// the horizon against its predicted end, which is no earlier than now + its duration
// alone: with a queued scale of 0.5 a 36-unit successor was predicted to run 35 ms, H 18.
TEST(AdmissionProbe, QueuedSuccessorStaysWithinTheHorizon) {
  Options o;
  o.queued_durations = true;
  Fixture f(0, o);  // no job: B unlimited
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(1, 36), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[1].id, kMs));  // issued ahead
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 18 * kMs, 18 * kMs));
  ASSERT_TRUE(f.adm->decide(18 * kMs).grants.empty());
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[1].id, 26 * kMs, 27 * kMs));  // own time 9 ms: queued scale 0.5
  ASSERT_LT(f.adm->engine(llm)->queued_scale, 0.75);
  ASSERT_TRUE(f.adm->announce(llm, work(2, 18), 27 * kMs));
  d = f.adm->decide(27 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);  // 27-45 ms
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 27 * kMs));
  ASSERT_TRUE(f.adm->announce(llm, work(3, 100), 44 * kMs));  // the next pass, 1 ms before the end
  d = f.adm->decide(44 * kMs);
  ASSERT_EQ(d.grants.size(), 1u);
  EXPECT_LE(d.grants[0].predicted_end - d.grants[0].predicted_start, f.adm->options().horizon);
}

// Tests that work ids increase over the session, not only over the queue: an old id
// announced again once its work left the queue is refused (a discard then sent the
// revoked units to the new work of that id, past its end, and the engine's later works
// were never granted), and a revoked grant goes back to its own work.
TEST(AdmissionProbe, WorkIdsIncreaseOverTheSession) {
  Fixture f;
  const EngineId llm = f.add(engine("llm"));
  ASSERT_TRUE(f.adm->announce(llm, work(5, 30), 0));
  Decision d = f.adm->decide(0);
  ASSERT_EQ(d.grants.size(), 2u);  // [0, 18) and [18, 30): work 5 wholly granted
  ASSERT_TRUE(f.adm->on_start(llm, d.grants[0].id, 0));
  const Status again = f.adm->announce(llm, work(5, 4), kMs);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("work id 5 does not increase (last 5)"), std::string::npos);
  ASSERT_TRUE(f.adm->on_discard(llm, d.grants[1].id, 2 * kMs));
  ASSERT_TRUE(f.adm->announce(llm, work(6, 10), 3 * kMs));
  ASSERT_TRUE(f.adm->on_done(llm, d.grants[0].id, 18 * kMs, 18 * kMs));
  d = f.adm->decide(18 * kMs);
  ASSERT_FALSE(d.grants.empty()) << describe(f.adm->explain(llm), 18 * kMs);
  std::uint32_t units = 0;
  for (const auto& g : d.grants) units += g.count;
  EXPECT_GE(units, 12u) << "work 5's 12 revoked units come first";
}

}  // namespace
}  // namespace ripple::admission
