#include "agent/admission/ripple_policy.h"

#include <algorithm>


namespace ripple::admission {

namespace {

struct Candidate {
  const EngineState* e;
  Nanos start;
  Nanos due;  // kNever for best-effort
};

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
  for (const Candidate& c : cands) {
    const EngineState& e = *c.e;
    // Longest run that fits B(t) and the horizon (at least one unit for the horizon).
    std::uint32_t n = 0;
    Bytes bytes = 0;
    Nanos units_ns = 0;
    const double scale = e.scale;
    for (std::uint32_t k = 0; k < e.remaining(); ++k) {
      const UnitSpec& u = e.unit(k);
      const Nanos dur = e.spec.grant_overhead +
                        static_cast<Nanos>(scale * static_cast<double>(units_ns + u.duration));
      if (bytes + u.bytes > budget) break;
      if (n >= 1 && dur > ctx.horizon) break;
      bytes += u.bytes;
      units_ns += u.duration;
      ++n;
    }
    // The crossing bound: shrink until every crossing it makes is allowed.
    while (n > 0 && !ledger.crossing_allowed(e.bytes_of(n), c.start + e.duration_of(n), now)) --n;
    const bool fits_budget = e.bytes_of(1) <= budget;
    // A best-effort grant ahead of a waiting deadline-bound request must end by that
    // request's next due time and leave budget for its next unit.
    bool held_for_due = false;
    if (n > 0 && c.due == kNever && waiting_bound != nullptr) {
      const Nanos due = waiting_bound->due;
      const Bytes need = waiting_bound->e->bytes_of(1);
      while (n > 0 && (c.start + e.duration_of(n) > due ||
                       (budget != kUnlimitedBytes && ledger.time_budget_reaches(e.bytes_of(n) + need, now) > due)))
        --n;
      held_for_due = n == 0;
    }
    if (n > 0) {
      out.engine = e.id;
      out.count = n;
      return out;
    }
    // Structured only: the text is composed when someone asks (describe()), so the
    // decision path formats nothing.
    const Bytes need = e.bytes_of(1);
    WaitReason why;
    why.need = need;
    why.budget = budget;
    if (held_for_due) {
      why.cause = WaitCause::kDueTime;
      why.until = waiting_bound->due;
      why.other = waiting_bound->e->id;
    } else if (!fits_budget) {
      why.cause = WaitCause::kBudget;
      why.until = ledger.time_budget_reaches(need, now);
      out.wake_at = std::min(out.wake_at, why.until);
    } else {
      why.cause = WaitCause::kCrossing;  // relaxes only at a release or completion
    }
    if (c.due != kNever && waiting_bound == nullptr) waiting_bound = &c;
    out.waits.emplace_back(e.id, std::move(why));
  }
  return out;
}

}  // namespace ripple::admission
