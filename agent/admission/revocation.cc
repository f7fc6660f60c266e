// Taking grants back: a Discard (the engine drops a grant and the ones after it), an
// expiry (a grant not started by its start_by + expire_slack), the refund and the units
// put back (App. C, "Charging"), and the start limit that the expiry reads.
#include <algorithm>

#include "agent/admission/admission.h"

namespace ripple::admission {

Status Admission::on_discard(EngineId engine, GrantId grant, Nanos now) {
  EngineState* e = find(engine);
  if (e == nullptr) return make_error("discard: unknown engine {}", engine);
  // A grant already revoked (with an earlier discard, or expired): the engine hands it
  // back as well.
  if (std::erase_if(e->revoked, [grant](const EngineState::Revoked& r) { return r.id == grant; }) > 0) {
    handed_back(*e, now);
    return Status::Ok();
  }
  Outstanding* g = find_grant(engine, grant);
  if (g == nullptr) return make_error("discard: engine {} holds no grant {}", engine, grant);
  if (g->started >= 0) return make_error("discard: grant {} of engine {} already started", grant, engine);
  // Grants decided after it follow it in the engine's order, so they are stale too and
  // are revoked with it; checked first, so that a refused discard changes nothing.
  for (const Outstanding& o : grants_)
    if (o.plan.engine == engine && o.plan.id > grant && o.started >= 0)
      return make_error("discard: a grant after {} of engine {} already started", grant, engine);
  revoke(*e, grant, /*expired=*/false, now);
  handed_back(*e, now);
  return Status::Ok();
}

void Admission::revoke(EngineState& e, GrantId from, bool expired, Nanos now) {
  // Last one first, so that each one's units go back in front in order.
  for (;;) {
    std::size_t last = grants_.size();
    for (std::size_t i = 0; i < grants_.size(); ++i)
      if (grants_[i].plan.engine == e.id && (last == grants_.size() || grants_[i].plan.id > grants_[last].plan.id))
        last = i;
    RIPPLE_CHECK(last < grants_.size());
    Outstanding& o = grants_[last];
    RIPPLE_CHECK(o.started < 0);
    const GrantId id = o.plan.id;
    ledger_.refund(id);  // returned unexecuted: refunded (App. C, "Charging")
    if (!e.queue.empty() && e.queue.front() == o.work) {
      e.cursor = o.plan.first;
    } else {
      RIPPLE_CHECK(e.cursor == 0);
      e.queue.push_front(o.work);
      e.cursor = o.plan.first;
    }
    ++(expired ? e.stats.expired : e.stats.stale);
    if (trace_) trace_({TraceKind::kDiscard, now, e.id, id, o.plan.bytes, 0, 0, 0, false});
    const GrantPlan plan = o.plan;
    // Nothing ended at an expiry or a discard: the last end stays (on_done reads it to
    // tell whether the grant still running ran queued behind another; a discard while
    // the grant before it ran late made that grant's Done read as queued, its GPU time
    // lost to the scales).
    const Nanos last_done = e.last_done;
    finish_grant(last, now);
    e.last_done = last_done;
    policy_->on_grant_refunded(e, plan, now);
    // The engine still holds it (an expired one, or one after the one it discarded).
    if (expired || id != from) e.revoked.push_back({id, expired});
    if (id == from) break;
  }
}

Nanos Admission::start_limit(const EngineState& e, const GrantPlan& g, Nanos now) const {
  Nanos by = g.predicted_start + opts_.lease;
  const Nanos end = g.predicted_end + e.end_guard;  // as the crossing check saw it
  const Nanos dur = end - g.predicted_start;
  for (TaskId k = 0; k < ledger_.task_count(); ++k) {
    const pricing::Estimator& est = ledger_.task(k);
    const auto next = ledger_.next_release(k, now);
    // A release at or before its start (one it waits for: not_before) is the job it
    // runs in, not one it crosses into.
    if (!next || *next <= g.predicted_start || est.exempt()) continue;
    if (*next >= end) {
      by = std::min(by, *next - dur);
    } else if (const auto into = est.max_into_release(g.bytes); into && end - *next <= *into) {
      // Only a crossing the bound admitted (a policy that does not check it, pause or
      // unmanaged, keeps its lease: the bound is not its rule).
      by = std::min(by, *next + *into - dur);
    }
  }
  // Admitted now, it may start as predicted (rounding never makes it dead on arrival).
  return std::max(by, g.predicted_start);
}

Nanos Admission::expires_at(const GrantPlan& g) const {
  return g.start_by > kNever - opts_.expire_slack ? kNever : g.start_by + opts_.expire_slack;
}

void Admission::expire(Nanos now) {
  for (EngineState& e : engines_) {
    if (!e.connected || e.outstanding == 0) continue;
    // grants_ keeps decision order. The engine starts its grants in that order, so after
    // the first one it can no longer start, it can start none: its position stays that
    // grant's (work, first), which no later grant covers.
    GrantId from = 0;
    bool later_started = false;
    for (const Outstanding& o : grants_) {
      if (o.plan.engine != e.id) continue;
      if (from != 0) later_started = later_started || o.started >= 0;
      else if (o.started < 0 && now >= expires_at(o.plan)) from = o.plan.id;
    }
    // A later grant started: the engine dropped this one, and its Discard is in flight.
    if (from == 0 || later_started) continue;
    revoke(e, from, /*expired=*/true, now);
    e.handback_pending = true;
    e.end_idle();
  }
}

void Admission::handed_back(EngineState& e, Nanos now) {
  if (!std::exchange(e.handback_pending, false)) return;
  if (e.outstanding == 0 && e.has_work() && e.idle_since < 0) e.start_idle(now);
}

}  // namespace ripple::admission
