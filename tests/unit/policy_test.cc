// Unit tests of the baseline policies (paper §5.1, App. D) on the admission framework,
// and of choosing a policy by name. Simulated clock; numbers hand-computed.
#include <gtest/gtest.h>

#include <memory>

#include "agent/admission/admission.h"
#include "agent/policy/registry.h"

namespace ripple::policy {
namespace {

using admission::Admission;
using admission::Decision;
using admission::EngineId;
using admission::EngineKind;
using admission::EngineSpec;
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

// Tests that every documented name makes a policy of that name and bad ones are
// refused with a message listing the valid names.
TEST(Policy, MakeByName) {
  for (const char* n : {"ripple", "unmanaged", "pause", "cap-1/8", "cap-1/4", "cap-1/2", "cap-0.3", "sigamma",
                        "sereno", "sereno-ui-first"}) {
    auto p = make_policy(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
  auto bad = make_policy("fifo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("unknown policy 'fifo'"), std::string::npos);
  EXPECT_NE(bad.error().message.find("cap-1/4"), std::string::npos);
  for (const char* n : {"cap-0", "cap-3/2", "cap-x", "cap-1/0"}) EXPECT_FALSE(make_policy(n).ok()) << n;
}

}  // namespace
}  // namespace ripple::policy
