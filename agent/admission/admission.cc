// The admission framework's core (admission.h): engines and their work, the decision
// loop that asks the policy and books its grants, and the grants' Start and Done. Taking
// grants back is in revocation.cc; EngineState and Context, what a policy reads, in state.cc.
#include "agent/admission/admission.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ripple::admission {

Admission::Admission(pricing::Ledger& ledger, std::unique_ptr<Policy> policy, Options opts)
    : ledger_(ledger), policy_(std::move(policy)), opts_(opts) {
  RIPPLE_CHECK(policy_ != nullptr);
  RIPPLE_CHECK(opts_.gamma > 0 && opts_.gamma <= 1);
  RIPPLE_CHECK(opts_.horizon > 0);
  RIPPLE_CHECK(opts_.expire_slack > 0);
}

// engines_ is sorted by id (ids only grow; gone engines leave from the front half).
EngineState* Admission::slot(EngineId id) {
  auto it = std::lower_bound(engines_.begin(), engines_.end(), id,
                             [](const EngineState& e, EngineId v) { return e.id < v; });
  return it != engines_.end() && it->id == id ? &*it : nullptr;
}

EngineState* Admission::find(EngineId id) {
  EngineState* e = slot(id);
  return e != nullptr && e->connected ? e : nullptr;
}

const EngineState* Admission::engine(EngineId id) const { return const_cast<Admission*>(this)->slot(id); }

Admission::Outstanding* Admission::find_grant(EngineId engine, GrantId grant) {
  for (auto& g : grants_)
    if (g.plan.id == grant && g.plan.engine == engine) return &g;
  return nullptr;
}

Context Admission::context(Nanos now) const {
  return Context{ledger_,    engines_, now, opts_.gamma, opts_.horizon, opts_.pipelining && policy_->pipelines(),
                 opts_.lease, opts_.shared_link != LinkMode::kOff && policy_->models_shared_link(),
                 opts_.shared_link == LinkMode::kAuto, opts_.link_by_deadline};
}

void Admission::refresh_beside(Nanos now) {
  if (!opts_.link_by_deadline) return;
  std::vector<Nanos> until(engines_.size(), 0);
  {
    const Context ctx = context(now);
    if (ctx.shared_link)
      for (std::size_t i = 0; i < engines_.size(); ++i) {
        const EngineState& e = engines_[i];
        if (!e.connected || !ctx.on_link(e)) continue;
        for (const EngineState& d : engines_) {
          if (d.id == e.id || !d.connected || !ctx.on_link(d)) continue;
          // d's next host-byte grant would not wait for e's: it may run beside all of it.
          if (d.has_work() && d.unit(0).bytes >= kLinkMinBytes && !ctx.holds_link_for(e, d)) until[i] = kNever;
          // d's host-byte grants outstanding, which e's would not wait for.
          else if (d.link_until > now && !ctx.holds_link_for(d, e)) until[i] = std::max(until[i], d.link_until);
        }
      }
  }
  for (std::size_t i = 0; i < engines_.size(); ++i) engines_[i].beside_until = until[i];
}

void Admission::account_beside(Nanos now) {
  const Nanos dt = now - beside_mark_;
  beside_mark_ = now;
  if (!opts_.link_by_deadline || dt <= 0) return;
  const auto runs = [](const Outstanding& o) { return o.ran_from >= 0 && o.plan.bytes >= kLinkMinBytes; };
  for (Outstanding& o : grants_) {
    if (!runs(o)) continue;
    for (const Outstanding& x : grants_)
      if (x.plan.engine != o.plan.engine && runs(x)) {
        o.beside_ns += dt;
        break;
      }
  }
}

void Admission::update_probe_unit() {
  // App. C: the probe is the largest, over the engines, of each one's smallest unit: the
  // smallest it has announced in a work, or, before its first work, of its catalog. (The
  // catalog alone can make the probe 1 byte: the interposer's placeholder units. Then the
  // allowance, which grows from zero by a fraction of the probe per release, never grows.)
  Bytes probe = 0;
  for (const auto& e : engines_) {
    if (!e.connected) continue;
    Bytes smallest = e.smallest_announced;
    if (smallest == kUnlimitedBytes)
      for (const auto& u : e.spec.catalog) smallest = std::min(smallest, u.bytes);
    probe = std::max(probe, smallest);
  }
  if (probe > 0) ledger_.set_probe_unit(probe);
}

Result<EngineId> Admission::add_engine(EngineSpec spec, Nanos now) {
  if (Status s = validate(spec); !s) return s.error();
  if (spec.kind == EngineKind::kDeadlineBound && spec.deadline == 0) spec.deadline = spec.period;
  EngineState e;
  e.id = next_engine_++;
  e.spec = std::move(spec);
  e.last_done = now;
  e.queued_durations = opts_.queued_durations;
  e.wait = {WaitCause::kNoWork, 0, 0, kNever, {}};
  engines_.push_back(std::move(e));
  update_probe_unit();
  return engines_.back().id;
}

void Admission::remove_engine(EngineId id, Nanos now) {
  EngineState* e = find(id);
  if (e == nullptr) return;
  account_beside(now);
  // Outstanding grants stay charged: the GPU may have run them (issue 5, faults).
  for (std::size_t i = grants_.size(); i-- > 0;) {
    if (grants_[i].plan.engine != id) continue;
    ledger_.grant_executed(grants_[i].plan.id);
    e->stats.bytes += grants_[i].plan.bytes;
    grants_.erase(grants_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  e->connected = false;
  e->outstanding = 0;
  e->revoked.clear();
  e->handback_pending = false;
  e->link_until = e->link_running_until = 0;
  e->queue.clear();
  e->cursor = 0;
  e->end_idle();
  e->last_done = now;
  e->wait = {WaitCause::kNoWork, 0, 0, kNever, "disconnected"};
  update_probe_unit();
  // The table is bounded: a gone engine's grants are settled, so nothing refers to it;
  // only the most recent opts_.gone_engines_kept stay (for status), oldest out first.
  std::size_t gone = 0;
  for (const auto& x : engines_) gone += !x.connected;
  for (auto it = engines_.begin(); gone > opts_.gone_engines_kept && it != engines_.end();) {
    if (!it->connected && it->id != id) {
      it = engines_.erase(it);
      --gone;
    } else {
      ++it;
    }
  }
}

Status Admission::announce(EngineId id, Work work, Nanos now) {
  EngineState* e = find(id);
  if (e == nullptr) return make_error("announce: unknown engine {}", id);
  if (work.units.empty()) return make_error("engine {}: work {} has no units", e->spec.name, work.id);
  for (std::uint32_t u : work.units)
    if (u >= e->spec.catalog.size())
      return make_error("engine {}: work {} names unit {} outside its catalog of {}", e->spec.name, work.id, u,
                        e->spec.catalog.size());
  // Ids increase over the session, not only over the queue: a revoked grant goes back to
  // the work it came from, and an old id announced again once its work left the queue
  // would take its place.
  if (e->announced_any && work.id <= e->last_work_id)
    return make_error("engine {}: work id {} does not increase (last {})", e->spec.name, work.id, e->last_work_id);
  e->announced_any = true;
  e->last_work_id = work.id;
  work.announced = now;
  if (e->spec.kind == EngineKind::kDeadlineBound) {
    if (work.deadline == kNever) work.deadline = now + e->spec.deadline;
  } else {
    work.deadline = kNever;
  }
  if (e->spec.kind == EngineKind::kDeadlineBound) e->request_start = now;
  Bytes smallest = e->smallest_announced;
  for (std::uint32_t u : work.units) smallest = std::min(smallest, e->spec.catalog[u].bytes);
  if (smallest != e->smallest_announced) {
    e->smallest_announced = smallest;
    update_probe_unit();
  }
  const bool was_idle = !e->has_work();
  e->queue.push_back(std::make_shared<const Work>(std::move(work)));
  if (was_idle && e->outstanding == 0 && e->idle_since < 0) e->start_idle(now);
  return Status::Ok();
}

pricing::Phase Admission::phase_at(Nanos when) const {
  // App. C: a release in the first head_fraction (10 %) of a deadline-bound engine's
  // period is priced in the head phase (vision encoder and prefill stream the most
  // bytes there). A period starts when the engine announces a request.
  for (const auto& e : engines_) {
    if (!e.connected || e.spec.kind != EngineKind::kDeadlineBound || e.request_start < 0) continue;
    if (when < e.request_start) continue;
    if (pricing::phase_of(when, e.request_start, e.spec.period, ledger_.params().vlm_head_fraction) ==
        pricing::Phase::kVlmHead && when - e.request_start < e.spec.period)
      return pricing::Phase::kVlmHead;
  }
  return pricing::Phase::kRest;
}

pricing::Pricing Admission::on_release(TaskId task, JobSeq seq, Nanos now, std::optional<pricing::Phase> phase,
                                       Nanos lag) {
  // A job released after a grant expired must not inherit it, whether or not decide()
  // ran at the expiry time first.
  expire(now);
  // The phase is the release's (App. C), not the late start's.
  pricing::Pricing p = ledger_.on_release(task, seq, now, phase ? *phase : phase_at(now - lag), lag);
  policy_->on_release(task, seq, now);
  if (trace_) trace_({TraceKind::kRelease, now, task, seq, p.allowance, 0, 0, 0, false});
  return p;
}

void Admission::trace_completion(const std::optional<pricing::Completion>& c, TaskId task, JobSeq seq, Nanos now) {
  if (!trace_ || !c) return;
  trace_({TraceKind::kComplete, now, task, seq, c->charged, c->early, 0, c->response, c->outcome.missed});
}

std::optional<pricing::Completion> Admission::on_complete(TaskId task, JobSeq seq, Nanos now) {
  auto c = ledger_.on_complete(task, seq, now);
  policy_->on_complete(task, seq, now);
  trace_completion(c, task, seq, now);
  return c;
}

std::optional<pricing::Completion> Admission::on_unfinished(TaskId task, JobSeq seq, Nanos now) {
  auto c = ledger_.on_unfinished(task, seq, now);
  policy_->on_complete(task, seq, now);
  trace_completion(c, task, seq, now);
  return c;
}

Decision Admission::decide(Nanos now) {
  Decision d;
  expire(now);  // before picking: an expired grant's units and budget are free again
  // The time since the last decision went to the causes that decision gave, and a budget
  // wait to the task that bound B(t).
  for (EngineState& x : engines_) {
    const Nanos counted = x.account_wait(now);
    if (counted > 0 && x.wait.cause == WaitCause::kBudget && x.wait.task) {
      if (budget_wait_by_task_.size() <= *x.wait.task) budget_wait_by_task_.resize(*x.wait.task + 1, 0);
      budget_wait_by_task_[*x.wait.task] += counted;
    }
  }
  // Every pick either grants (an engine's outstanding count rises, bounded by 2) or
  // ends the loop, so this terminates; the bound guards against a faulty policy.
  const std::size_t max_picks = 2 * engines_.size() + 1;
  for (std::size_t round = 0; round <= max_picks; ++round) {
    refresh_beside(now);
    const Context ctx = context(now);
    Pick pick = policy_->pick(ctx);
    for (auto& [id, why] : pick.waits)
      if (EngineState* w = slot(id)) w->wait = std::move(why);
    if (!pick.engine) {
      d.wake_at = pick.wake_at;
      break;
    }
    EngineState* picked = find(*pick.engine);
    RIPPLE_CHECK(picked != nullptr);
    EngineState& e = *picked;
    const auto start = ctx.slot(e);
    RIPPLE_CHECK(start.has_value());
    const Nanos own = *ctx.own_slot(e);
    EngineId holder = e.id;
    RIPPLE_CHECK(pick.count >= 1 && pick.count <= e.remaining());
    GrantPlan g;
    g.engine = e.id;
    g.work = e.queue.front()->id;
    g.first = e.cursor;
    g.count = pick.count;
    g.bytes = e.bytes_of(pick.count);
    g.decided = now;
    g.predicted_start = *start;
    if (pick.not_before > 0) {
      // Delivered ahead for the CPU release at not_before: it starts there (§4.3).
      RIPPLE_CHECK(pick.not_before >= *start);
      g.predicted_start = pick.not_before;
      g.not_before = pick.not_before;
      ++e.stats.for_release;
    } else if (*start > own) {
      // Held for the shared link: another engine's host-byte grant is predicted to run
      // until *start, and the two at once would each run at about half speed. The
      // engine's client holds it until then (not_before), so it runs alone as predicted.
      g.not_before = *start;
      g.link_held = true;
      holder = ctx.link_holder(e);
      ++e.stats.link_held;
    }
    // Delivered ahead for a release or held for the link, it may find the engine idle:
    // it runs alone.
    g.predicted_end = g.not_before > 0
                          ? e.beside_end(g.predicted_start, g.predicted_start + e.duration_alone(pick.count))
                          : e.end_of(g.predicted_start, pick.count, now);
    // Its duration predicted alone, against which a run beside another's is measured.
    const Nanos solo = g.not_before > 0 || !e.queued_slot() ? e.duration_alone(pick.count) : e.duration_of(pick.count);
    g.successor = e.outstanding > 0;
    // The engine may start it only while the checks that admitted it hold: within
    // the lease, and not so late that it would cross a release it was admitted not
    // to cross (§4.3, "lease and CPU-release limit"), nor cross one it was admitted to
    // cross further than the crossing bound allows (a late start moves its end).
    g.start_by = start_limit(e, g, now);
    g.id = ledger_.charge(e.id, g.bytes, g.predicted_end, now);
    grants_.push_back({g, e.queue.front(), -1, -1, e.id});
    grants_.back().solo = solo;
    if (e.outstanding == 0 && e.idle_since >= 0) {
      e.account_wait(now);
      e.stats.wait_budget += now - e.idle_since;
      for (std::size_t c = 0; c < kWaitCauses; ++c) e.stats.wait_by_cause[c] += e.idle_by_cause[c];
      e.end_idle();
    }
    ++e.outstanding;
    e.busy_until = g.predicted_end;
    ++e.stats.grants;
    e.stats.first_grant = std::min(e.stats.first_grant, now);
    if (g.successor) ++e.stats.successors;
    e.cursor += pick.count;
    if (e.cursor >= e.queue.front()->units.size()) {
      e.queue.pop_front();
      e.cursor = 0;
    }
    grants_.back().link_holder = holder;
    if (trace_) trace_({TraceKind::kGrant, now, e.id, g.id, g.bytes, g.predicted_start, g.predicted_end, g.not_before,
                        g.successor});
    refresh_link(e);
    e.wait = {WaitCause::kNone, 0, 0, kNever, {}};
    d.grants.push_back(g);
  }
  // An engine whose next grant is held (for the link, or delivered ahead for a CPU
  // release) waits for that, whatever else (slots full, nothing more announced) the
  // policy said.
  for (const Outstanding& o : grants_) {
    if (o.plan.not_before <= now || o.started >= 0) continue;
    EngineState& x = *slot(o.plan.engine);
    const WaitCause c = x.wait.cause;
    if (c == WaitCause::kNone || c == WaitCause::kSlotsFull || c == WaitCause::kNoWork)
      x.wait = o.plan.link_held ? WaitReason{WaitCause::kLink, o.plan.bytes, 0, o.plan.not_before, {}, o.link_holder}
                                : WaitReason{WaitCause::kRelease, o.plan.bytes, 0, o.plan.not_before, {}};
  }
  // An engine whose next host-byte unit waits for a link held past its predicted end.
  {
    const Context ctx = context(now);
    for (EngineState& x : engines_) {
      if (!x.connected || !x.has_work() || !ctx.own_slot(x) || ctx.link_free(x) != kNever) continue;
      const WaitCause c = x.wait.cause;
      if (c == WaitCause::kNone || c == WaitCause::kSlotsFull || c == WaitCause::kBoundary)
        x.wait = {WaitCause::kLink, x.bytes_of(1), 0, kNever, {}, ctx.link_holder(x)};
    }
  }
  for (EngineState& x : engines_)
    if (x.connected && x.handback_pending) x.wait = {WaitCause::kExpired, x.has_work() ? x.bytes_of(1) : 0, 0, kNever, {}};
  // An expiry is a time-driven scheduling point like budget accrual: it must happen at
  // its time even when no event wakes the agent (an idle engine sends none). A grant past
  // its time that is still here waits for a Discard in flight (expire() skipped it).
  for (const Outstanding& o : grants_)
    if (o.started < 0 && expires_at(o.plan) > now) d.wake_at = std::min(d.wake_at, expires_at(o.plan));
  return d;
}

Status Admission::on_sent(EngineId engine, GrantId grant, Nanos now) {
  Outstanding* g = find_grant(engine, grant);
  if (g == nullptr) return make_error("sent: engine {} holds no grant {}", engine, grant);
  g->sent = now;
  // Pipelined successors wait by design; only a grant for an idle engine is delayed
  // by the decision itself.
  if (!g->plan.successor) slot(engine)->stats.wait_decision += now - g->plan.decided;
  return Status::Ok();
}

// A Start or Done for a grant that was revoked: the message is refused, and the session
// ends (the engine reconnects). An expired grant's bytes were refunded to the jobs and
// its units put back; accepting that it ran after all would need its charges back on
// jobs that were released (and priced) since, so it is not attempted.
static Status revoked_error(const char* what, const EngineState* e, EngineId engine, GrantId grant) {
  const EngineState::Revoked* r = nullptr;
  if (e != nullptr)
    for (const auto& x : e->revoked)
      if (x.id == grant) r = &x;
  if (r != nullptr && r->expired)
    return make_error("{}: grant {} of engine {} expired: not started by its start_by + expire_slack, so it was "
                      "refunded and its units put back", what, grant, engine);
  if (r != nullptr)
    return make_error("{}: grant {} of engine {} was revoked with an earlier grant the engine discarded", what, grant,
                      engine);
  return make_error("{}: engine {} holds no grant {}", what, engine, grant);
}

Status Admission::on_start(EngineId engine, GrantId grant, Nanos now) {
  Outstanding* g = find_grant(engine, grant);
  if (g == nullptr) return revoked_error("start", find(engine), engine, grant);
  if (g->started >= 0) return make_error("start: grant {} of engine {} started twice", grant, engine);
  account_beside(now);
  g->started = now;
  // The engine's oldest grant: the GPU is on it from now (a successor's starts at the
  // Done of the one before, finish_grant).
  if (std::none_of(grants_.begin(), grants_.end(), [&](const Outstanding& o) {
        return o.plan.engine == engine && o.plan.id < grant;
      }))
    g->ran_from = now;
  if (trace_) trace_({TraceKind::kStart, now, engine, grant, g->plan.bytes, g->sent, 0, 0, false});
  EngineState& e = *slot(engine);
  // Delivery gap: from the later of sending and the previous grant's end; for a held
  // grant (not_before), the part before not_before is the hold the policy chose: budget
  // wait, by its cause (the link, or the CPU release it was delivered ahead for).
  const GrantPlan& p = g->plan;
  if (g->sent >= 0) {
    const Nanos from = std::max(g->sent, e.last_done);
    const Nanos held = p.not_before > from ? std::min(now, p.not_before) - from : 0;
    if (held > 0) {
      e.stats.wait_budget += held;
      e.stats.wait_by_cause[static_cast<std::size_t>(p.link_held ? WaitCause::kLink : WaitCause::kRelease)] += held;
    }
    e.stats.wait_delivery += std::max<Nanos>(0, now - from - std::max<Nanos>(0, held));
  }
  // Started later than predicted: a successor decided from now on starts after its
  // later end (one decided before keeps the prediction it was admitted with).
  // (The engine's last grant: a Done that came late has already moved busy_until past
  // its predicted end, so the plan's end no longer tells which grant is the last.)
  const bool last = std::none_of(grants_.begin(), grants_.end(), [&](const Outstanding& o) {
    return o.plan.engine == engine && o.plan.id > grant;
  });
  if (last && now > p.predicted_start) e.busy_until = std::max(e.busy_until, now + (p.predicted_end - p.predicted_start));
  refresh_link(e);
  if (!p.successor && p.not_before == 0) {
    // Bounded by the lease: a grant not started within it is stale anyway.
    const double lag = static_cast<double>(std::clamp<Nanos>(now - p.decided, 0, opts_.lease));
    e.start_lag = static_cast<Nanos>(std::llround((1 - opts_.scale_smoothing) * static_cast<double>(e.start_lag) +
                                                  opts_.scale_smoothing * lag));
  }
  policy_->on_grant_start(e, p, now);
  return Status::Ok();
}

void Admission::refresh_link(EngineState& e) {
  e.link_until = e.link_running_until = 0;
  for (const Outstanding& o : grants_) {
    if (o.plan.engine != e.id || o.plan.bytes < kLinkMinBytes) continue;
    e.link_until = std::max(e.link_until, o.expected_end());
    if (o.started >= 0) e.link_running_until = std::max(e.link_running_until, o.expected_end());
  }
}

void Admission::finish_grant(std::size_t index, Nanos now) {
  EngineState& e = *slot(grants_[index].plan.engine);
  grants_.erase(grants_.begin() + static_cast<std::ptrdiff_t>(index));
  // The engine's next grant, started and queued behind it, runs from here on.
  for (Outstanding& o : grants_)
    if (o.plan.engine == e.id) {
      if (o.started >= 0 && o.ran_from < 0) o.ran_from = now;
      break;
    }
  refresh_link(e);
  --e.outstanding;
  e.last_done = now;
  // The grants left end its busy time (none: now); a revoked later grant's end no longer does.
  e.busy_until = now;
  for (const Outstanding& o : grants_)
    if (o.plan.engine == e.id) e.busy_until = std::max(e.busy_until, o.expected_end());
  // Owing a hand-back it is not waiting for budget: its idle time starts at the hand-back.
  if (e.outstanding == 0 && e.has_work() && !e.handback_pending) e.start_idle(now);
}

Status Admission::on_done(EngineId engine, GrantId grant, Nanos measured, Nanos now) {
  Outstanding* g = find_grant(engine, grant);
  if (g == nullptr) return revoked_error("done", find(engine), engine, grant);
  if (measured < 0) return make_error("done: grant {} of engine {} reports negative time", grant, engine);
  account_beside(now);
  EngineState& e = *slot(engine);
  const GrantPlan plan = g->plan;
  const std::shared_ptr<const Work> work = g->work;
  Nanos profiled = 0;
  for (std::uint32_t k = 0; k < plan.count; ++k) profiled += e.spec.catalog[work->units[plan.first + k]].duration;
  // Queued: the engine started it before the grant before it was done, and its measured
  // time reaches back past that one's end (a pipelined engine's event pair spans the
  // overlap). Its own share is then its time after that end.
  const Nanos since_prev = now - e.last_done;
  const bool queued = g->started >= 0 && g->started < e.last_done && measured > since_prev;
  const Nanos own = queued ? std::max<Nanos>(0, since_prev) : measured;
  if (profiled > 0 && measured > 0) {
    // Each learned scale is an EWMA of its ratios; the first ratio seeds it.
    const auto ewma = [&](double cur, double ratio) {
      return cur <= 0 ? ratio : (1 - opts_.scale_smoothing) * cur + opts_.scale_smoothing * ratio;
    };
    const auto smooth = [&](double cur, Nanos t) {
      return ewma(cur, std::clamp(static_cast<double>(t) / static_cast<double>(profiled), 0.05, 20.0));
    };
    // With link_by_deadline, a host-byte grant that ran mostly beside another engine's
    // (by the agent's events) teaches the beside factor only: its time over its solo
    // prediction. Its time is not its solo time, so the other scales do not learn from it.
    const Nanos ran = g->ran_from >= 0 ? now - g->ran_from : 0;
    const bool beside = opts_.link_by_deadline && plan.bytes >= kLinkMinBytes && ran > 0 && 2 * g->beside_ns >= ran;
    if (beside && g->solo > 0 && own > 0) {
      const double ratio = std::clamp(static_cast<double>(own) / static_cast<double>(g->solo), 0.5, 4.0);
      e.beside_scale = ewma(e.beside_scale, ratio);
    } else if (!beside) {
      if (queued && own > 0) e.queued_scale = smooth(e.queued_scale, own);
      // With queued durations on, the solo scale learns from grants that ran alone only.
      if (!(queued && opts_.queued_durations)) e.scale = smooth(e.scale, measured);
    }
  }
  ledger_.grant_executed(plan.id);  // executed bytes stay charged (App. C, "Charging")
  e.stats.units += plan.count;
  e.stats.bytes += plan.bytes;
  e.stats.done_bytes += plan.bytes;
  e.stats.last_done = std::max(e.stats.last_done, now);
  e.stats.busy += own;
  if (queued) ++e.stats.queued;
  // The GPU's end is the Done's arrival (the interposer reports a grant once its end event
  // has passed, within its poll), not started + measured: a successor is started (taken in
  // hand) while its predecessor still runs, and its start event waits behind that one on the
  // stream, so its measured time begins up to a whole grant after its Start (H200 traces:
  // its Done came a median 2-9 ms, p90 15-34 ms, after started + measured). Its GPU time is
  // the measured time before the Done, and no earlier than its Start.
  const Nanos end = now;
  if (trace_)
    trace_({TraceKind::kDone, now, engine, grant, plan.bytes,
            g->started >= 0 ? std::max(g->started, now - measured) : now - measured, end, measured, queued});
  if (opts_.end_guard_quantile > 0) {
    const Nanos err = std::max<Nanos>(0, end - plan.predicted_end);
    if (e.end_errors.size() < kEndErrorWindow) e.end_errors.push_back(err);
    else e.end_errors[e.end_errors_next] = err;
    e.end_errors_next = (e.end_errors_next + 1) % kEndErrorWindow;
    e.end_guard = end_error_quantile(e.end_errors, opts_.end_guard_quantile);
  }
  if (end - plan.predicted_end > kLateEndSlack) {
    ++e.stats.late_ends;
    e.stats.late_max = std::max(e.stats.late_max, end - plan.predicted_end);
  }
  if (plan.first + plan.count == work->units.size()) {
    ++e.stats.works_done;
    if (now > work->deadline) ++e.stats.deadline_misses;
  }
  finish_grant(static_cast<std::size_t>(g - grants_.data()), now);
  // The grant behind it ends no earlier than its planned duration after this end: a late
  // end carries to the successors decided from now on (this is when the slot frees). With
  // early_end_carries, one already started ends that duration after this end, also where
  // that is earlier than its prediction: it has waited behind this one on the GPU, so it
  // runs from here on (an upper bound: the Done comes after the GPU's end).
  if (opts_.early_end_carries) e.busy_until = now;
  for (const Outstanding& o : grants_) {
    if (o.plan.engine != engine) continue;
    const Nanos planned = now + (o.plan.predicted_end - o.plan.predicted_start);
    e.busy_until = std::max(e.busy_until, opts_.early_end_carries && o.started < 0 ? std::max(o.expected_end(), planned)
                                                                                    : planned);
  }
  policy_->on_grant_done(e, plan, measured, profiled, now);
  return Status::Ok();
}

WaitReason Admission::explain(EngineId engine) const {
  const EngineState* e = this->engine(engine);
  if (e == nullptr) return {WaitCause::kNoWork, 0, 0, kNever, "unknown engine"};
  return e->wait;
}

}  // namespace ripple::admission
