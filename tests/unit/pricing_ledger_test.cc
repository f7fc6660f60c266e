// Unit tests of the byte ledger: pacing with floor (Eq. 3, 6), the global budget
// (Eq. 4), charging and refunds, inherited grants and the crossing bound (App. C).
#include <gtest/gtest.h>

#include "agent/pricing/ledger.h"

namespace ripple::pricing {
namespace {

constexpr Nanos kMs = kNsPerMs;
constexpr Bytes kGBytes = 1'000'000'000;

Params ledger_params() {
  Params p;
  p.peak_rate_bytes_per_ns = 200;
  p.prior_slope_ns_per_byte = 2.5e-3;  // 2.5 ms/GB
  p.probe_unit_bytes = kGBytes;        // U = 1 GB
  p.pacing_floor_bytes = 100'000'000;  // f = 0.1 GB
  return p;
}

// Solo profile of identical runs: a_hat = `solo`, q = 0. First job: base 0.25 GB,
// below one unit, so the probe issues A = U = 1 GB, paced over a_hat.
TaskSpec task(const char* name, Nanos solo, Nanos deadline, Nanos period = 100 * kMs) {
  TaskSpec t;
  t.name = name;
  t.period = period;
  t.deadline = deadline;
  t.solo_profile.assign(10, solo);
  return t;
}

// Tests Eq. 6: the floor at entry, linear release over a_hat, capped at A.
TEST(PricingLedger, PacedReleaseWithFloor) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  const Nanos r = 1000 * kMs;
  const Pricing p = ledger.on_release(a, 1, r);
  ASSERT_EQ(p.allowance, kGBytes);
  EXPECT_EQ(ledger.budget(r), 100'000'000);            // max(f, 0) = f
  EXPECT_EQ(ledger.budget(r + 2 * kMs), 100'000'000);  // 1 GB * 2/40 = 0.05 GB < f
  EXPECT_EQ(ledger.budget(r + 10 * kMs), 250'000'000);  // 1 GB * 10/40
  EXPECT_EQ(ledger.budget(r + 40 * kMs), kGBytes);
  EXPECT_EQ(ledger.budget(r + 60 * kMs), kGBytes);  // never beyond A
  EXPECT_EQ(ledger.budget(r - 5 * kMs), 100'000'000);  // a query before R sees the floor
}

// Tests that an unset floor is the probe unit and follows it when engines set it, and a
// set floor stays: f at entry.
TEST(PricingLedger, UnsetFloorFollowsTheProbeUnit) {
  Params p = ledger_params();
  p.pacing_floor_bytes = kFloorIsProbeUnit;
  Ledger follows(p);
  EXPECT_EQ(follows.params().pacing_floor(), kGBytes);
  follows.set_probe_unit(300'000'000);
  EXPECT_EQ(follows.params().pacing_floor(), 300'000'000);
  const TaskId a = follows.add_task(task("a", 40 * kMs, 70 * kMs));
  const Nanos r = 1000 * kMs;
  ASSERT_EQ(follows.on_release(a, 1, r).allowance, 300'000'000);  // the probe, U = 0.3 GB
  EXPECT_EQ(follows.budget(r), 300'000'000);                       // f = U at entry

  Ledger fixed(ledger_params());  // f = 0.1 GB, set
  fixed.set_probe_unit(300'000'000);
  EXPECT_EQ(fixed.params().pacing_floor(), 100'000'000);
  EXPECT_TRUE(validate(Params{}).empty());
  Params bad;
  bad.pacing_floor_bytes = -5;
  EXPECT_NE(validate(bad).find("pacing_floor"), std::string::npos);
}

// Tests that no active job means no budget limit, and B(t) is the minimum over jobs.
TEST(PricingLedger, GlobalBudgetIsMinimumOverActiveJobs) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  const TaskId b = ledger.add_task(task("b", 20 * kMs, 50 * kMs));
  EXPECT_EQ(ledger.budget(0), kUnlimitedBytes);
  EXPECT_EQ(ledger.binding_job(0), nullptr);
  ledger.on_release(a, 1, 0);        // 1 GB over 40 ms: 25 bytes/ns
  ledger.on_release(b, 1, 10 * kMs);  // 1 GB over 20 ms: 50 bytes/ns
  EXPECT_EQ(ledger.budget(20 * kMs), 500'000'000);  // a: 0.5 GB, b: 0.5 GB
  EXPECT_EQ(ledger.budget(30 * kMs), 750'000'000);  // a: 0.75 GB, b: 1 GB
  ASSERT_NE(ledger.binding_job(12 * kMs), nullptr);
  EXPECT_EQ(ledger.binding_job(12 * kMs)->key.task, b);  // a: 0.3 GB, b: 0.1 GB
  EXPECT_EQ(ledger.binding_job(30 * kMs)->key.task, a);  // the one whose B_ij is B(t)
  ASSERT_TRUE(ledger.on_complete(a, 1, 35 * kMs).has_value());
  EXPECT_EQ(ledger.budget(35 * kMs), kGBytes);  // b alone
  EXPECT_EQ(ledger.binding_job(35 * kMs)->key.task, b);
  ASSERT_TRUE(ledger.on_complete(b, 1, 36 * kMs).has_value());
  EXPECT_EQ(ledger.budget(36 * kMs), kUnlimitedBytes);
  EXPECT_EQ(ledger.binding_job(36 * kMs), nullptr);
}

// Tests charging at admission, refunds only for unexecuted grants, none after execution.
TEST(PricingLedger, ChargeAndRefund) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  ledger.on_release(a, 1, 0);
  const GrantId g1 = ledger.charge(/*engine=*/0, 300'000'000, 25 * kMs, 20 * kMs);
  EXPECT_EQ(ledger.budget(20 * kMs), 200'000'000);  // 0.5 - 0.3 GB
  EXPECT_TRUE(ledger.refund(g1));                    // returned unexecuted
  EXPECT_EQ(ledger.budget(20 * kMs), 500'000'000);
  const GrantId g2 = ledger.charge(0, 300'000'000, 25 * kMs, 20 * kMs);
  EXPECT_TRUE(ledger.grant_executed(g2));
  EXPECT_FALSE(ledger.refund(g2));  // executed: stays charged
  EXPECT_EQ(ledger.budget(20 * kMs), 200'000'000);
  // Splitting into smaller grants does not relax the limit: 0.2 GB left either way.
  ledger.charge(0, 100'000'000, 30 * kMs, 20 * kMs);
  ledger.charge(0, 100'000'000, 30 * kMs, 20 * kMs);
  EXPECT_EQ(ledger.budget(20 * kMs), 0);
  const auto done = ledger.on_complete(a, 1, 60 * kMs);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->charged, 500'000'000);
  EXPECT_EQ(done->response, 60 * kMs);
}

// Tests the slope's instrument: the bytes charged before release + m (m = the shortest
// recent job, here the 40-ms profile), inherited grants included, refunds taken back.
TEST(PricingLedger, EarlyChargeIsTheInstrument) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  const TaskId b = ledger.add_task(task("b", 40 * kMs, 70 * kMs));
  EXPECT_EQ(ledger.task(a).instrument_window(), 40 * kMs);
  ledger.on_release(b, 1, 0);
  const GrantId inflight = ledger.charge(0, 50'000'000, 5 * kMs, 0);  // b's, in flight at a's release
  ledger.on_release(a, 1, 1 * kMs);
  EXPECT_EQ(ledger.job(a, 1)->early_until, 41 * kMs);
  ledger.charge(0, 100'000'000, 20 * kMs, 10 * kMs);                 // early
  const GrantId back = ledger.charge(0, 30'000'000, 30 * kMs, 20 * kMs);  // early, refunded
  const GrantId late_back = ledger.charge(0, 7'000'000, 60 * kMs, 45 * kMs);  // late, refunded
  ledger.charge(0, 200'000'000, 60 * kMs, 50 * kMs);                 // late
  EXPECT_TRUE(ledger.refund(back));
  EXPECT_TRUE(ledger.refund(late_back));
  EXPECT_TRUE(ledger.grant_executed(inflight));
  const JobAccount* ja = ledger.job(a, 1);
  ASSERT_NE(ja, nullptr);
  EXPECT_EQ(ja->early, 150'000'000);  // inherited 0.05 + 0.1
  EXPECT_EQ(ja->charged, 350'000'000);
  const auto done = ledger.on_complete(a, 1, 61 * kMs);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->early, 150'000'000);
  EXPECT_EQ(done->charged, 350'000'000);
}

// Tests that a job inherits the grants in flight at its release, and B(t) stays >= 0.
TEST(PricingLedger, ReleaseInheritsGrantsInFlight) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  const TaskId b = ledger.add_task(task("b", 20 * kMs, 50 * kMs));
  ledger.on_release(a, 1, 0);
  const GrantId g = ledger.charge(0, 400'000'000, 30 * kMs, 20 * kMs);
  ledger.on_release(b, 7, 20 * kMs);
  const JobAccount* jb = ledger.job(b, 7);
  ASSERT_NE(jb, nullptr);
  EXPECT_EQ(jb->charged, 400'000'000);
  EXPECT_EQ(jb->inherited, 400'000'000);
  EXPECT_EQ(jb->budget(20 * kMs), 100'000'000 - 400'000'000);  // f - C: in debt
  EXPECT_EQ(ledger.budget(20 * kMs), 0);                      // B(t) never negative
  EXPECT_TRUE(ledger.refund(g));
  EXPECT_EQ(ledger.job(b, 7)->charged, 0);
  EXPECT_EQ(ledger.job(b, 7)->inherited, 0);
  EXPECT_EQ(ledger.job(a, 1)->charged, 0);
}

// Tests the budget-accrual time: when B(t) will reach a given number of bytes.
TEST(PricingLedger, TimeBudgetReaches) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  EXPECT_EQ(ledger.time_budget_reaches(5 * kGBytes, 3), 3);  // nothing active
  ledger.on_release(a, 1, 0);
  EXPECT_EQ(ledger.time_budget_reaches(500'000'000, 0), 20 * kMs);  // 0.5 GB / 25 B/ns
  EXPECT_EQ(ledger.time_budget_reaches(100'000'000, 0), 0);          // the floor covers it
  EXPECT_EQ(ledger.time_budget_reaches(2 * kGBytes, 0), kNever);     // beyond A
  ledger.charge(0, 300'000'000, 5 * kMs, 1 * kMs);
  EXPECT_EQ(ledger.time_budget_reaches(500'000'000, 1 * kMs), 32 * kMs);  // 0.8 GB / 25 B/ns
}

// Tests the crossing bound against a task's next release, and admits() = budget + crossing.
TEST(PricingLedger, CrossingIntoNextRelease) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  EXPECT_TRUE(ledger.crossing_allowed(kGBytes, 1000 * kMs, 0));  // never released: no constraint
  ledger.on_release(a, 1, 0);
  // Completing in exactly the solo 40 ms keeps a_hat = 40 ms and q = 0.
  ASSERT_TRUE(ledger.on_complete(a, 1, 40 * kMs).has_value());
  EXPECT_EQ(ledger.next_release(a, 50 * kMs), 100 * kMs);
  // A_bar = max(0.25 + 0.25 * 1, 1) = 1 GB; c = 0.2 GB: kappa (A_bar - c) = 2 ms.
  // Ending 28 ms into the release: 28 + 40 + 2 = 70 <= 70; 29 ms: 71 > 70.
  EXPECT_TRUE(ledger.crossing_allowed(200'000'000, 128 * kMs, 50 * kMs));
  EXPECT_FALSE(ledger.crossing_allowed(200'000'000, 129 * kMs, 50 * kMs));
  EXPECT_TRUE(ledger.crossing_allowed(200'000'000, 100 * kMs, 50 * kMs));  // ends at R
  EXPECT_TRUE(ledger.admits(200'000'000, 128 * kMs, 50 * kMs));  // no active job: no budget limit
  EXPECT_FALSE(ledger.admits(200'000'000, 129 * kMs, 50 * kMs));
  // A late release: the next one is "now" at the earliest.
  EXPECT_EQ(ledger.next_release(a, 130 * kMs), 130 * kMs);
}

// Tests that a task that stops releasing (exited, paused) stops being a release that
// every grant crosses: after idle_periods periods past its expected release, with no
// job active, no release is predicted and the crossing bound lets a long grant through;
// an active job keeps it predicted; forget_release() makes it idle at once, and a new
// release makes it count again.
TEST(PricingLedger, IdleTaskIsNotAReleaseThatNeverComes) {
  Ledger ledger(ledger_params());  // idle_periods = 1 by default
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  ledger.on_release(a, 1, 0);
  ASSERT_TRUE(ledger.on_complete(a, 1, 40 * kMs).has_value());
  // The release expected at 100 ms is late: "now" at the earliest, until 200 ms.
  EXPECT_EQ(ledger.next_release(a, 150 * kMs), 150 * kMs);
  EXPECT_EQ(ledger.next_release(a, 200 * kMs), 200 * kMs);
  // A grant ending 60 ms into a release is refused while one is predicted ...
  EXPECT_FALSE(ledger.crossing_allowed(200'000'000, 210 * kMs, 150 * kMs));
  // ... and allowed once the task is idle (nothing since 0 ms, expected at 100 ms).
  EXPECT_FALSE(ledger.next_release(a, 201 * kMs).has_value());
  EXPECT_TRUE(ledger.crossing_allowed(200'000'000, 261 * kMs, 201 * kMs));
  // A job still active keeps the release predicted, however late.
  ledger.on_release(a, 2, 300 * kMs);
  EXPECT_EQ(ledger.next_release(a, 900 * kMs), 900 * kMs);
  ASSERT_TRUE(ledger.on_unfinished(a, 2, 900 * kMs).has_value());
  EXPECT_FALSE(ledger.next_release(a, 900 * kMs).has_value());  // 900 > 300 + 2 * 100
  // Known gone: idle at once; a new release counts again.
  ledger.on_release(a, 3, 1000 * kMs);
  ASSERT_TRUE(ledger.on_complete(a, 3, 1040 * kMs).has_value());
  EXPECT_EQ(ledger.next_release(a, 1050 * kMs), 1100 * kMs);
  ledger.forget_release(a);
  EXPECT_FALSE(ledger.next_release(a, 1050 * kMs).has_value());
  ledger.on_release(a, 4, 1060 * kMs);
  EXPECT_EQ(ledger.next_release(a, 1070 * kMs), 1160 * kMs);
  // idle_periods = 0: idle as soon as the expected release passes with nothing active.
  Params p0 = ledger_params();
  p0.idle_periods = 0;
  Ledger eager(p0);
  const TaskId b = eager.add_task(task("b", 40 * kMs, 70 * kMs));
  eager.on_release(b, 1, 0);
  ASSERT_TRUE(eager.on_complete(b, 1, 40 * kMs).has_value());
  EXPECT_EQ(eager.next_release(b, 100 * kMs), 100 * kMs);
  EXPECT_FALSE(eager.next_release(b, 101 * kMs).has_value());
}

// Tests the completion record and that unknown or repeated events change nothing.
TEST(PricingLedger, CompletionRecordAndBadEvents) {
  Ledger ledger(ledger_params());
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  const Pricing p1 = ledger.on_release(a, 1, 0);
  const Pricing again = ledger.on_release(a, 1, 5 * kMs);  // duplicate event
  EXPECT_EQ(again.allowance, p1.allowance);
  EXPECT_EQ(ledger.active_jobs().size(), 1u);
  EXPECT_EQ(ledger.task(a).releases(), 1);
  EXPECT_FALSE(ledger.on_complete(a, 2, 10 * kMs).has_value());
  EXPECT_FALSE(ledger.grant_executed(99));
  const auto c = ledger.on_complete(a, 1, 75 * kMs);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->outcome.missed);  // 75 > 70 ms
  EXPECT_EQ(c->allowance, kGBytes);
  EXPECT_FALSE(ledger.on_complete(a, 1, 76 * kMs).has_value());  // already closed
}

// Tests that an unfinished job is a miss scored above its line, and closes its account.
TEST(PricingLedger, UnfinishedJobIsAMiss) {
  Params params = ledger_params();
  params.margin_antiwindup = false;  // App. C's level: the empty window's floor would hold it
  Ledger ledger(params);
  const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
  ledger.on_release(a, 1, 0);
  const std::int64_t alpha = ledger.task(a).margin().alpha_ppm();
  const auto c = ledger.on_unfinished(a, 1, 200 * kMs);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->outcome.missed);
  EXPECT_TRUE(c->outcome.above_line);
  EXPECT_LT(ledger.task(a).margin().alpha_ppm(), alpha);  // the margin widens
  EXPECT_TRUE(ledger.active_jobs().empty());
}

// Tests that an exempt task's jobs do not limit B(t) but are still charged.
TEST(PricingLedger, ExemptJobsDoNotLimitBudget) {
  Params params = ledger_params();
  params.certify_passes = 1;
  params.prior_slope_ns_per_byte = 1e-5;
  Ledger ledger(params);
  TaskSpec t = task("control", 10 * kMs, 20 * kMs, 20 * kMs);
  const TaskId c = ledger.add_task(t);
  Nanos now = 0;
  JobSeq seq = 0;
  for (; seq < 20 && !ledger.task(c).exempt(); ++seq, now += 20 * kMs) {
    ledger.on_release(c, seq, now);
    const Bytes bytes = static_cast<Bytes>(seq % 3) * kGBytes;
    if (bytes > 0) ledger.grant_executed(ledger.charge(0, bytes, now + 1, now));
    ledger.on_complete(c, seq, now + 10 * kMs + static_cast<Nanos>(1e-5 * bytes) + seq % 2);
  }
  ASSERT_TRUE(ledger.task(c).exempt());
  ledger.on_release(c, seq, now);
  EXPECT_EQ(ledger.budget(now), kUnlimitedBytes);
  ledger.charge(0, 123, now + 1, now);
  EXPECT_EQ(ledger.job(c, seq)->charged, 123);
}

// Tests that a job priced uncertified keeps limiting B(t) when a later job of its task,
// released while it still runs (an overrun), completes the passes and makes the task
// exempt (Eq. 4: the minimum over the active uncertified jobs); the job priced certified
// does not limit it.
TEST(PricingLedger, JobPricedUncertifiedKeepsItsLimitWhenItsTaskTurnsExempt) {
  Params params = ledger_params();
  params.certify_passes = 5;
  params.prior_slope_ns_per_byte = 1e-5;
  Ledger ledger(params);
  const TaskId c = ledger.add_task(task("control", 10 * kMs, 20 * kMs, 20 * kMs));
  Nanos now = 0;
  JobSeq seq = 0;
  Pricing first;
  for (; seq < 200; ++seq, now += 20 * kMs) {
    first = ledger.on_release(c, seq, now);
    if (ledger.task(c).certification_passes() == params.certify_passes - 1) break;  // one pass short
    const Bytes bytes = static_cast<Bytes>(seq % 3) * kGBytes;
    if (bytes > 0) ledger.grant_executed(ledger.charge(0, bytes, now + 1, now));
    ledger.on_complete(c, seq, now + 10 * kMs + static_cast<Nanos>(1e-5 * bytes) + seq % 2);
  }
  ASSERT_FALSE(first.certified);
  ASSERT_FALSE(ledger.task(c).exempt());
  const Nanos later = now + 20 * kMs;  // job `seq` overran: still active at the next release
  const Pricing second = ledger.on_release(c, seq + 1, later);
  ASSERT_TRUE(second.certified);
  ASSERT_TRUE(ledger.task(c).exempt());
  const Bytes own = ledger.job(c, seq)->budget(later);
  EXPECT_EQ(ledger.budget(later), std::max<Bytes>(0, own));
  EXPECT_LT(ledger.budget(later), kUnlimitedBytes);
  EXPECT_NE(ledger.time_budget_reaches(first.allowance + 1, later), later) << "the job's limit binds the time too";
  ledger.on_complete(c, seq, later + kMs);
  EXPECT_EQ(ledger.budget(later + kMs), kUnlimitedBytes) << "the certified job alone does not limit B(t)";
}

// Tests that with no residual yet (the margin unbounded, q = D) a job gets no bytes even
// when the fit's intercept is negative (a first job that inherited 3 GB and ran 10 ms:
// a_hat = 10 ms - 5 ms/GB x 3 GB < 0): a_hat is floored at 0, so a_hat + q >= D. Before,
// the job got a nominal allowance, a floor and a probe.
TEST(PricingLedger, UnboundedMarginGivesNoBytesWhateverTheIntercept) {
  Params params;  // prior 5 ms/GB; no profile below
  Ledger ledger(params);
  TaskSpec t;
  t.name = "cold";
  t.period = 100 * kMs;
  t.deadline = 50 * kMs;
  const TaskId id = ledger.add_task(t);
  Nanos now = kNsPerSec;
  const GrantId g = ledger.charge(0, 3 * kGBytes, now + 20 * kMs, now);  // in flight at the release
  EXPECT_EQ(ledger.on_release(id, 1, now).allowance, 0);
  ledger.grant_executed(g);
  ledger.on_complete(id, 1, now + 10 * kMs);
  now += t.period;
  const Pricing p2 = ledger.on_release(id, 2, now);
  ASSERT_TRUE(p2.margin_unbounded);
  EXPECT_GE(p2.a_hat, 0.0);
  EXPECT_EQ(p2.nominal, 0);
  EXPECT_TRUE(p2.guard) << "no probe, no floor, no crossing";
  EXPECT_EQ(ledger.budget(now), 0);
}

// Tests that a completion stamped before its job's release (a clock stepped back) is taken
// as a zero-length run, not a negative one: the next job's a_hat and allowance stay near
// those after an ordinary completion (a -1 s response dragged a_hat from 41 to 4 ms).
TEST(PricingLedger, CompletionBeforeTheReleaseIsNoNegativeRun) {
  auto next_after = [](Nanos completion_offset, Nanos* response) {
    Params params;
    params.certification = false;
    Ledger ledger(params);
    TaskSpec t;
    t.name = "t";
    t.period = 100 * kMs;
    t.deadline = 70 * kMs;
    for (int k = 0; k < 20; ++k) t.solo_profile.push_back((40 + k % 3) * kMs);
    const TaskId id = ledger.add_task(t);
    Nanos now = 10 * kNsPerSec;
    JobSeq s = 1;
    for (; s <= 20; ++s, now += t.period) {
      ledger.on_release(id, s, now);
      ledger.on_complete(id, s, now + 41 * kMs);
    }
    ledger.on_release(id, s, now);
    *response = ledger.on_complete(id, s, now + completion_offset)->response;
    return ledger.on_release(id, s + 1, now + t.period);
  };
  Nanos r_normal = 0, r_back = 0;
  const Pricing normal = next_after(41 * kMs, &r_normal);
  const Pricing back = next_after(-1000 * kMs, &r_back);
  EXPECT_EQ(r_normal, 41 * kMs);
  EXPECT_EQ(r_back, 0);
  EXPECT_GE(back.a_hat, normal.a_hat - 2.0 * kMs);
  EXPECT_LE(back.nominal, normal.nominal * 2);
}

// Tests that a fit with no scatter (a solo profile of identical durations and one charged
// job: the line passes through every point, SE = 0) is not estimable: that one job's slope
// is not priced as known (it was, with no pessimistic margin and no one-in-eight cut).
TEST(PricingLedger, ExactFitIsNotAnEstimate) {
  Params params;
  Ledger ledger(params);
  TaskSpec t = task("t", 40 * kMs, 70 * kMs);
  t.solo_profile.assign(4, 40 * kMs);
  const TaskId id = ledger.add_task(t);
  const Nanos now = kNsPerSec;
  const GrantId g = ledger.charge(0, 2 * kGBytes, now + kMs, now);
  const Pricing p1 = ledger.on_release(id, 1, now);
  ledger.grant_executed(g);
  ledger.on_complete(id, 1, now + 40'200'000);  // 0.1 ms/GB on this one job
  EXPECT_FALSE(ledger.task(id).fit().slope_estimable());
  EXPECT_FALSE(ledger.task(id).slope_reading().estimable);  // the instrumented one neither
  EXPECT_GE(ledger.task(id).priced_slope(), p1.slope_priced * 0.99) << "still the prior's price";
}

// Tests the task spec's bounds that keep the pricing's integer math finite: a period
// above an hour and a prior slope above 1000 ns a byte are refused, naming the task.
TEST(PricingLedger, TaskSpecBoundsKeepTheMathFinite) {
  TaskSpec t = task("t", 40 * kMs, 70 * kMs);
  EXPECT_EQ(validate(t), "");
  t.period = 3600 * kNsPerSec + 1;
  EXPECT_NE(validate(t).find("task 't': period must be in (0, 3600000000000] ns"), std::string::npos) << validate(t);
  t = task("t", 40 * kMs, 70 * kMs);
  t.prior_slope_ns_per_byte = 1e10;
  EXPECT_NE(validate(t).find("task 't': prior_slope must be in (0, 1000] ns/byte"), std::string::npos) << validate(t);
}

// Tests a job that started late, behind an overrun (Pricing::lag): it is priced on what
// is left of its deadline (Eq. 2 over D - lag), nothing at all when that leaves no room
// for its own run (no floor, no probe); the task's base allowance does not move; the
// next release is predicted a period after its release, not its start; its response
// and miss count from its release while its residual takes its execution time.
TEST(PricingLedger, LateStartIsPricedOnWhatIsLeft) {
  Params params = ledger_params();
  params.probe_unit_bytes = 100'000'000;  // U = 0.1 GB: the allowances below are above it
  auto settled = [&](Ledger& ledger) {     // a_hat = 40 ms, q = 0 after one exact job
    const TaskId a = ledger.add_task(task("a", 40 * kMs, 70 * kMs));
    ledger.on_release(a, 1, 0);
    EXPECT_TRUE(ledger.on_complete(a, 1, 40 * kMs).has_value());
    return a;
  };
  Ledger on_time(params), late(params), very_late(params);
  const TaskId a = settled(on_time), b = settled(late), c = settled(very_late);
  const Bytes base = late.task(b).base_allowance();
  const Pricing p0 = on_time.on_release(a, 2, 100 * kMs);
  // 29.9 ms late: room 70 - 29.9 - 40 = 0.1 ms at the priced slope (the prior / 0.85).
  const Nanos lag = 29'900'000;
  const Pricing p1 = late.on_release(b, 2, 100 * kMs + lag, Phase::kRest, lag);
  EXPECT_EQ(p1.lag, lag);
  EXPECT_NEAR(static_cast<double>(p1.allowance), 100'000 / p1.slope_priced, 1.0);  // 34 MB
  EXPECT_LT(p1.allowance, p0.allowance);
  EXPECT_FALSE(p1.probe);
  EXPECT_EQ(late.task(b).base_allowance(), base);  // the rate limit's state is the on-time one
  EXPECT_EQ(late.next_release(b, 135 * kMs), 200 * kMs);  // a period after its release (100)
  // 35 ms late: 70 - 35 < 40 ms, nothing is left for the GPU, not even the floor.
  const Pricing p2 = very_late.on_release(c, 2, 135 * kMs, Phase::kRest, 35 * kMs);
  EXPECT_EQ(p2.allowance, 0);
  EXPECT_TRUE(p2.guard);
  EXPECT_EQ(very_late.budget(135 * kMs), 0);
  EXPECT_EQ(very_late.budget(160 * kMs), 0);
  // It runs 40 ms: 75 ms after its release, a miss; its own run was as predicted.
  const auto done = very_late.on_complete(c, 2, 175 * kMs);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->response, 75 * kMs);
  EXPECT_TRUE(done->outcome.missed);
  EXPECT_FALSE(done->outcome.above_line);
  ASSERT_TRUE(done->outcome.residual.has_value());
  EXPECT_NEAR(*done->outcome.residual, 0.0, 1.0);
  // late_starts = false: the job counts from its start, as if released then.
  params.late_starts = false;
  Ledger off(params);
  const TaskId d = settled(off);
  const Pricing p3 = off.on_release(d, 2, 135 * kMs, Phase::kRest, 35 * kMs);
  EXPECT_EQ(p3.lag, 0);
  EXPECT_GT(p3.allowance, 0);
  const auto counted = off.on_complete(d, 2, 175 * kMs);
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(counted->response, 40 * kMs);
  EXPECT_FALSE(counted->outcome.missed);
}

}  // namespace
}  // namespace ripple::pricing
