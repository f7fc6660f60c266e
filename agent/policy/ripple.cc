#include "agent/policy/ripple.h"

#include <algorithm>
#include <optional>

namespace ripple::policy {

using admission::kUnlimitedBytes;
using admission::UnitSpec;

namespace {

struct Candidate {
  const EngineState* e;
  Nanos start;
  Nanos due;  // kNever for best-effort
};

// The time by which a best-effort grant ahead of a deadline-bound request due at `due`
// must end: 1 ms before it (App. C), kNever for none.
constexpr Nanos kBestEffortDueMargin = admission::kNsPerMs;
Nanos be_due(Nanos due) { return due == kNever ? kNever : due - kBestEffortDueMargin; }

// §4.3, "Grant pipelining": a grant delivered ahead for a CPU release. When every run
// from `start` would cross the release at R and the crossing bound forbids it, the
// engine would idle until the agent sees the release and decides; instead, decide now
// the grant the job released at R can pay at entry, to start at R (it is in flight at
// R, so that job inherits it, Eq. 6). Its entry budget is bounded below, from what is
// known before pricing it: min(f, base (1 - rate limit) (1 - reduced cut)) minus the
// bytes already in flight; no floor at all when the model is missing, the margin
// unbounded or the tight-deadline guard trips (crossing_response() is then nullopt).
// It must also fit B(now) (charged to the jobs active now), the horizon, every other
// task's crossing bound, and end before R's task releases again.
struct Ahead {
  std::uint32_t count = 0;
  Nanos release = 0;
};

Ahead ahead_for_release(const Context& ctx, const EngineState& e, Nanos start, Bytes budget) {
  const pricing::Ledger& ledger = ctx.ledger;
  const pricing::Params& params = ledger.params();
  // The earliest future release a one-unit grant from `start` would cross.
  std::optional<pricing::TaskId> task;
  Nanos release = kNever;
  for (pricing::TaskId k = 0; k < ledger.task_count(); ++k) {
    if (ledger.task(k).exempt()) continue;
    const auto next = ledger.next_release(k, ctx.now);
    if (!next || *next <= ctx.now || *next < start || *next >= release) continue;
    if (e.end_of(start, 1, ctx.now) + e.end_guard <= *next) continue;
    task = k;
    release = *next;
  }
  if (!task) return {};
  if (release - ctx.now > ctx.lease) return {0, release};  // too early to deliver it
  const pricing::Estimator& est = ledger.task(*task);
  if (!est.has_priced() || !est.crossing_response(1, 0)) return {};
  const double lower = static_cast<double>(est.base_allowance()) * (1 - params.rate_limit) * (1 - params.reduced_cut);
  Bytes entry = std::min(params.pacing_floor(), static_cast<Bytes>(lower));
  for (const pricing::Grant& g : ledger.grants_in_flight()) entry -= g.bytes;
  const Bytes limit = std::min(entry, budget);
  Ahead out;
  out.release = release;
  for (std::uint32_t n = 1; n <= e.remaining(); ++n) {
    const Bytes bytes = e.bytes_of(n);
    const Nanos dur = e.duration_alone(n);  // it may find the engine idle at the release
    // As late as its grants end, and slowed beside another engine's (link_by_deadline).
    const Nanos end = e.beside_end(release, release + dur) + e.end_guard;
    if (bytes > limit || (n > 1 && dur > ctx.horizon) || end - release > est.spec().period) break;
    bool crossing_ok = true;
    for (pricing::TaskId k = 0; k < ledger.task_count() && crossing_ok; ++k) {
      if (k == *task || ledger.task(k).exempt()) continue;
      const auto next = ledger.next_release(k, ctx.now);
      if (next && end > *next) crossing_ok = ledger.task(k).crossing_allowed(end - *next, bytes);
    }
    if (!crossing_ok) break;
    out.count = n;
  }
  return out;
}

// Reservation for deadline-bound requests that have fallen behind (§3: objective 2 before
// objective 3). The paper's rule (§4.1) holds a best-effort grant only for the waiting
// request's *next* unit. When B(t) binds, a request behind its due times can stay behind:
// the best-effort engine spends the budget its later units need, notably while the
// request's two slots are taken and it is no candidate at all, and the request finishes
// late (issue 12: a VLM that streams its weights from host memory). So while a request's
// next unit is past its due time, a best-effort grant of `bytes` must leave the budget for
// all of the request's ungranted units in time for them to run: the ledger's projection
// must reach `bytes` + those units' bytes by the deadline less their predicted GPU time
// alone (conservative: as if they all ran after the budget for the last is there).
// kNever (more than the active jobs can release) fails too: the grant waits until the
// request needs less. A request on schedule keeps only the next-unit rule, so one that
// keeps up (an HBM-resident VLM, whose units carry no host bytes) sees no change.
struct Reserve {
  const EngineState* e = nullptr;  // the request that would be short
  Nanos latest = kNever;           // when its budget must be there
  Nanos reach = kNever;            // when the budget reaches the grant and the request (a wake-up)
};

// Past `latest` (the request will be late whatever is held), the grant goes only when the
// budget holds it and the whole request now: holding it to a time already gone would
// stop best-effort work until the request ends (a stalled engine's, for as long as it
// stalls), with nothing to wake the policy.
Reserve reserve_violated(const Context& ctx, Bytes bytes) {
  for (const EngineState& d : ctx.engines) {
    if (!d.connected || d.spec.kind != EngineKind::kDeadlineBound || !d.has_work()) continue;
    const Nanos deadline = d.queue.front()->deadline;
    if (deadline == kNever) continue;
    if (d.due_time(0, ctx.gamma) > ctx.now) continue;  // on schedule
    const std::uint32_t left = d.remaining();
    const Bytes need = d.bytes_of(left);
    const Nanos latest = deadline - d.duration_alone(left);
    const Nanos reach = ctx.ledger.time_budget_reaches(bytes + need, ctx.now);
    if (reach > std::max(latest, ctx.now)) return {&d, latest, reach};
  }
  return {};
}

// Until when a deadline-bound request that the crossing bound holds back cannot start:
// the earliest predicted release of an uncertified task, or a task turning idle (the
// crossings it is refused change only at those events; its slot only moves later).
Nanos crossing_fixed_until(const pricing::Ledger& ledger, Nanos now) {
  Nanos t = ledger.next_idle(now);
  for (pricing::TaskId k = 0; k < ledger.task_count(); ++k) {
    if (ledger.task(k).exempt()) continue;
    if (const auto next = ledger.next_release(k, now)) t = std::min(t, *next);
  }
  return t;
}

}  // namespace

Pick RipplePolicy::pick(const Context& ctx) {
  Pick out;
  const pricing::Ledger& ledger = ctx.ledger;
  const Nanos now = ctx.now;
  const Bytes budget = ledger.budget(now);

  std::vector<Candidate> cands;
  cands.reserve(ctx.engines.size());
  for (const EngineState& e : ctx.engines) {
    if (!e.connected) continue;
    if (!e.has_work()) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kNoWork, 0, budget, kNever, {}});
      continue;
    }
    const auto start = ctx.slot(e);
    if (!start) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kSlotsFull, e.bytes_of(1), budget, e.busy_until, {}});
      continue;
    }
    const Nanos due = e.spec.kind == EngineKind::kDeadlineBound ? e.due_time(0, ctx.gamma) : kNever;
    cands.push_back({&e, *start, due});
  }
  // EDF: due time first; among best-effort engines the least recently served.
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.due != b.due) return a.due < b.due;
    if (a.e->last_done != b.e->last_done) return a.e->last_done < b.e->last_done;
    return a.e->id < b.e->id;
  });

  const Candidate* waiting_bound = nullptr;  // earliest-due deadline-bound request left waiting
  WaitCause waiting_cause = WaitCause::kNone;  // and why it waits
  for (const Candidate& c : cands) {
    const EngineState& e = *c.e;
    // Longest run that fits B(t) and the horizon (at least one unit for the horizon). A
    // queued successor is predicted to end no earlier than now + its duration alone
    // (EngineState::end_of): decided late, that floor is what the horizon bounds.
    std::uint32_t n = 0;
    Bytes bytes = 0;
    Nanos units_ns = 0;
    const double scale = e.slot_scale();
    const bool queued = e.queued_slot();
    for (std::uint32_t k = 0; k < e.remaining(); ++k) {
      const UnitSpec& u = e.unit(k);
      const Nanos dur = e.spec.grant_overhead +
                        static_cast<Nanos>(scale * static_cast<double>(units_ns + u.duration));
      const Nanos floor_end =
          queued ? now + e.spec.grant_overhead + static_cast<Nanos>(e.scale * static_cast<double>(units_ns + u.duration))
                 : c.start;
      if (bytes + u.bytes > budget) break;
      if (n >= 1 && (dur > ctx.horizon || floor_end - c.start > ctx.horizon)) break;
      bytes += u.bytes;
      units_ns += u.duration;
      ++n;
    }
    // The crossing bound: shrink until every crossing it makes is allowed.
    // The end guard: as late as this engine's grants end (0 unless Options::end_guard_quantile).
    while (n > 0 && !ledger.crossing_allowed(e.bytes_of(n), e.end_of(c.start, n, now) + e.end_guard, now)) --n;
    const bool fits_budget = e.bytes_of(1) <= budget;
    // A best-effort grant ahead of a waiting deadline-bound request must end by that
    // request's next due time, less App. C's 1 ms ("must finish 1 ms before it": room for
    // a grant that ends a little late), and leave budget for its next unit by then.
    bool held_for_due = false;
    const Nanos bound_due = waiting_bound == nullptr ? kNever : be_due(waiting_bound->due);
    if (n > 0 && c.due == kNever && waiting_bound != nullptr) {
      Nanos due = bound_due;
      // Gap filling (issue 12): a request the crossing bound holds back, with no job
      // active (B unlimited), cannot start before the next release (or a task turning
      // idle). A best-effort grant that ends by then crosses no release and is charged
      // to no job: it takes neither GPU time nor budget from the request. Holding it to
      // a due time that has passed would idle the GPU until the request finds a gap,
      // which may not come for many periods (the plant at k = 1.1: 16-ms VLM units
      // between 20-Hz releases).
      if (waiting_cause == WaitCause::kCrossing && budget == kUnlimitedBytes)
        due = std::max(due, crossing_fixed_until(ledger, now));
      const Bytes need = waiting_bound->e->bytes_of(1);
      while (n > 0 && (e.end_of(c.start, n, now) > due ||
                       (budget != kUnlimitedBytes && ledger.time_budget_reaches(e.bytes_of(n) + need, now) > due)))
        --n;
      held_for_due = n == 0;
    }
    Reserve reserve;
    if (n > 0 && c.due == kNever && budget != kUnlimitedBytes) {
      while (n > 0 && (reserve = reserve_violated(ctx, e.bytes_of(n))).e != nullptr) --n;
      held_for_due = n == 0;
    }
    if (n > 0) {
      out.engine = e.id;
      out.count = n;
      return out;
    }
    if (fits_budget && !held_for_due && ctx.pipelining) {
      const Ahead a = ahead_for_release(ctx, e, c.start, budget);
      // The rule for a best-effort grant ahead of a waiting deadline-bound request holds
      // for one delivered ahead too: it is charged now to the active jobs, so it must end
      // by the request's due time and leave the budget for its next unit by then.
      const bool before_due =
          c.due != kNever || waiting_bound == nullptr || a.count == 0 ||
          (a.release + e.duration_alone(a.count) <= bound_due &&
           (budget == kUnlimitedBytes ||
            ledger.time_budget_reaches(e.bytes_of(a.count) + waiting_bound->e->bytes_of(1), now) <= bound_due));
      const bool reserved = c.due != kNever || budget == kUnlimitedBytes || a.count == 0 ||
                            reserve_violated(ctx, e.bytes_of(a.count)).e == nullptr;
      if (a.count > 0 && before_due && reserved) {
        out.engine = e.id;
        out.count = a.count;
        out.not_before = a.release;
        return out;
      }
      held_for_due = a.count > 0 && !before_due;  // explained as the due time it waits for
      // Not yet within a lease of the release: wake up to deliver it ahead then.
      if (a.count == 0 && a.release > ctx.now + ctx.lease) out.wake_at = std::min(out.wake_at, a.release - ctx.lease);
    }
    // Structured only: the text is composed when someone asks (describe()), so the
    // decision path formats nothing.
    const Bytes need = e.bytes_of(1);
    WaitReason why;
    why.need = need;
    why.budget = budget;
    if (held_for_due && reserve.e != nullptr) {
      why.cause = WaitCause::kReserve;
      why.until = reserve.latest;
      why.other = reserve.e->id;
      out.wake_at = std::min(out.wake_at, reserve.reach);
    } else if (held_for_due) {
      why.cause = WaitCause::kDueTime;
      why.until = waiting_bound->due;
      why.other = waiting_bound->e->id;
    } else if (!fits_budget) {
      why.cause = WaitCause::kBudget;
      if (const pricing::JobAccount* j = ledger.binding_job(now)) why.task = j->key.task;
      why.until = ledger.time_budget_reaches(need, now);
      out.wake_at = std::min(out.wake_at, why.until);
    } else {
      why.cause = WaitCause::kCrossing;  // relaxes at a release, a completion, or a task turning idle
      why.until = ledger.next_idle(now);
      out.wake_at = std::min(out.wake_at, why.until);
    }
    if (c.due != kNever && waiting_bound == nullptr) {
      waiting_bound = &c;
      waiting_cause = why.cause;
    }
    out.waits.emplace_back(e.id, std::move(why));
  }
  return out;
}

}  // namespace ripple::policy
