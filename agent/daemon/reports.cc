#include "agent/daemon/reports.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "agent/pricing/chunk.h"
#include "agent/pricing/percentile.h"

namespace ripple::daemon {

using admission::kNever;
using nlohmann::json;

namespace {

double ms(Nanos ns) { return static_cast<double>(ns) / 1e6; }
double us(Nanos ns) { return static_cast<double>(ns) / 1e3; }

// An engine's counters, as status lists them (per entry, and per process in "total").
void put_counters(json& x, const admission::EngineStats& s) {
  x["grants"] = s.grants;
  x["successors"] = s.successors;
  x["stale"] = s.stale;
  x["expired"] = s.expired;  // grants revoked unstarted at start_by + expire_slack
  x["for_release"] = s.for_release;
  x["link_held"] = s.link_held;  // grants held for another engine's host-byte grant
  x["units"] = s.units;
  x["bytes"] = s.bytes;
  x["works_done"] = s.works_done;
  x["deadline_misses"] = s.deadline_misses;
  x["late_ends"] = s.late_ends;  // grants that ended > 1 ms after their predicted end
  x["late_max_ms"] = ms(s.late_max);
  x["busy_s"] = static_cast<double>(s.busy) / 1e9;  // union of the grants' GPU intervals
  x["queued"] = s.queued;  // grants that ran queued behind the one before
  x["wait_ms"] = {{"budget", ms(s.wait_budget)}, {"decision", ms(s.wait_decision)}, {"delivery", ms(s.wait_delivery)}};
  // wait_ms.budget by the cause the engine waited on (the parts sum to it).
  json causes = json::object();
  for (std::size_t c = 0; c < admission::kWaitCauses; ++c)
    causes[std::string(admission::to_string(static_cast<admission::WaitCause>(c)))] = ms(s.wait_by_cause[c]);
  x["wait_causes_ms"] = std::move(causes);
  // From the first grant's decision to the last Done, and the bytes done inside it: the
  // interval a pace applies over (pace-R's rate without the engine's start-up). Null
  // until a grant is done. Times on the agent's monotonic clock.
  if (s.first_grant != kNever && s.last_done >= s.first_grant) {
    const Nanos span = s.last_done - s.first_grant;
    x["grant_span"] = {{"first_grant_ns", s.first_grant},
                       {"last_done_ns", s.last_done},
                       {"s", static_cast<double>(span) / 1e9},
                       {"done_bytes", s.done_bytes},
                       {"gbps", span > 0 ? json(static_cast<double>(s.done_bytes) / static_cast<double>(span))
                                         : json(nullptr)}};  // B/ns = GB/s
  } else {
    x["grant_span"] = nullptr;
  }
}

}  // namespace

void Samples::add(Nanos v) {
  if (v_.size() < kCapacity) {
    v_.push_back(v);
  } else {
    v_[next_] = v;
    next_ = (next_ + 1) % kCapacity;
  }
  ++total_;
}

Nanos Samples::percentile(double p) const { return pricing::percentile(v_, p); }

json status_json(const StatusInputs& in, Nanos now) {
  json j;
  const pricing::Ledger& ledger = in.adm.ledger();
  const SessionCounters& c = in.sessions;
  j["policy"] = in.cfg.agent.policy;
  j["uptime_s"] = static_cast<double>(now - in.started) / 1e9;
  const pricing::Bytes b = ledger.budget(now);
  j["budget_bytes"] = b == admission::kUnlimitedBytes ? json(nullptr) : json(b);
  // What the Welcome and every Grant carry now (0: no suggestion yet; pricing.chunk_bytes).
  j["chunk_bytes"] = pricing::suggest_chunk_bytes(ledger);
  j["decision_latency_us"] = {{"p50", us(in.decision_latency.percentile(50))},
                              {"p99", us(in.decision_latency.percentile(99))},
                              {"max", us(in.decision_latency.percentile(100))},
                              {"count", in.decision_latency.count()}};
  j["tracer"] = {{"attached", in.tracer.attached}, {"drops", in.tracer.drops}, {"events", in.tasks.events()},
                 {"jobs_aborted", in.tasks.jobs_aborted()}, {"jobs_reaped", in.tasks.jobs_reaped()}};
  j["grants_sent"] = c.grants_sent;
  j["protocol_errors"] = c.protocol_errors;
  j["sessions_refused"] = c.sessions_refused + in.engines.hellos_refused();
  // Each refusal by its reason (Documentation/agent.md, "Engine identity and access").
  j["refusals"] = {{"uid_not_allowed", c.refused.total()},
                   {"no_credentials", c.no_credentials.total()},
                   {"engine_identity", in.engines.identity_refused().total()},
                   {"unconfigured", in.engines.unconfigured_refused().total()},
                   {"unconfigured_admitted", in.engines.unconfigured_admitted()},
                   {"deadline_claims_downgraded", in.engines.deadline_claims_downgraded()}};
  // Each limit: its value and how often it was hit (Documentation/agent.md, "Limits").
  j["limits"] = {{"sessions", c.engine_sessions},
                 {"control_sessions", c.control_sessions},
                 {"max_sessions", c.max_sessions},
                 {"sessions_over_limit", c.over_limit.total()},
                 {"max_sessions_per_uid", c.max_sessions_per_uid},
                 {"sessions_over_uid_limit", c.uid_over_limit.total()},
                 {"accept_failures", c.accept_failed.total()},
                 {"hello_timeouts", c.hello_timeouts.total()},
                 {"max_queued_works", in.cfg.agent.max_queued_works},
                 {"works_refused", in.engines.works_refused().total()}};
  json tasks = json::array();
  for (pricing::TaskId k = 0; k < ledger.task_count(); ++k) {
    const pricing::Estimator& est = ledger.task(k);
    const TaskStats& ts = in.tasks.stats(k);
    const auto [wj, wm] = in.tasks.window_counts(k, now);
    json t;
    t["name"] = est.spec().name;
    t["deadline_ms"] = ms(est.spec().deadline);
    t["period_ms"] = ms(est.spec().period);
    t["miss_tolerance"] = est.spec().miss_tolerance;
    t["releases"] = ts.releases;
    t["jobs"] = ts.jobs;
    t["misses"] = ts.misses;
    t["unfinished"] = ts.unfinished;  // aborted, or lost and closed by the sweep
    t["late_starts"] = ts.late_starts;  // started after an overrun, past their release
    t["max_lag_ms"] = ms(ts.max_lag);
    t["level_skips"] = ts.level_skips;  // untouched jobs that left the conformal level alone
    t["untouched_jobs"] = ts.untouched_jobs;      // no GPU byte admitted while they ran
    t["untouched_misses"] = ts.untouched_misses;  // ... and missed: the host's, or a late grant's
    // Engines' time waiting on B(t) while this task's job bound it (agent.md, "budget wait").
    t["budget_wait_ms"] = ms(in.adm.budget_wait_by_task(k));
    t["dmr"] = ts.jobs ? static_cast<double>(ts.misses) / static_cast<double>(ts.jobs) : 0.0;
    t["window_jobs"] = wj;
    t["window_misses"] = wm;
    t["window_dmr"] = wj ? static_cast<double>(wm) / static_cast<double>(wj) : 0.0;
    t["window_untouched_misses"] = in.tasks.window_untouched_misses(k, now);
    t["allowance_bytes"] = ts.last_allowance;
    // The line the last job was priced on (Documentation/estimator.md, "Lines at fixed slopes").
    t["priced_slope_ms_per_gb"] = ts.last_priced_slope * 1e3;
    t["fixed_line"] = ts.last_fixed_line;
    t["kappa_ms_per_gb"] = est.held_slope() * 1e3;
    const auto upper = est.slope_upper();
    t["kappa_upper_ms_per_gb"] = upper ? json(*upper * 1e3) : json(nullptr);
    t["a_hat_ms"] = est.fit().has_data() ? json(ms(static_cast<Nanos>(est.intercept()))) : json(nullptr);
    const auto q = est.margin().margin(pricing::Phase::kRest);
    t["margin_ms"] = q ? json(*q / 1e6) : json(nullptr);
    t["exempt"] = est.exempt();
    t["last_response_ms"] = ms(ts.last_response);
    bool active = false;
    for (const auto& jb : ledger.active_jobs()) active = active || jb.key.task == k;
    t["active"] = active;
    if (in.tracer.attached) {
      if (const auto& st = in.tracer.stats.at(k)) {
        t["drops"] = st->drops;
        t["uid_refused"] = st->uid_refused;  // matched by exe/comm, ran as another user
      }
      t["threads"] = in.tracer.threads.at(k);
    }
    t["traced"] = in.tracer.attached && in.untraced[k].empty();
    if (!in.untraced[k].empty()) t["untraced_reason"] = in.untraced[k];
    tasks.push_back(std::move(t));
  }
  j["tasks"] = std::move(tasks);
  json engines = json::array();
  // Bounded: a reply must fit one datagram however many engines have come and gone.
  const auto& all = in.adm.engines();
  std::vector<bool> connected(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) connected[i] = all[i].connected;
  const std::vector<std::size_t> listed = listed_engines(connected, kStatusEngines);
  j["engines_not_listed"] = all.size() - listed.size();
  const GoneEngines& gone = in.engines.gone();
  j["engines_gone"] = {{"count", gone.count}, {"grants", gone.grants}, {"bytes", gone.bytes}, {"works_done", gone.works_done}};
  for (std::size_t i : listed) {
    const admission::EngineState& e = all[i];
    const admission::EngineStats& s = e.stats;
    const double alive_s = static_cast<double>(now - in.started) / 1e9;
    json x;
    x["name"] = e.spec.name;
    x["id"] = e.id;
    x["kind"] = std::string(admission::to_string(e.spec.kind));
    x["memory"] = std::string(admission::to_string(e.spec.memory));
    x["connected"] = e.connected;
    put_counters(x, s);  // this session's
    x["scale"] = e.scale;
    x["queued_scale"] = e.queued_scale;
    x["beside_scale"] = e.beside_scale;  // agent.link_by_deadline: beside another engine's host-byte grant
    x["start_lag_ms"] = ms(e.start_lag);  // decision -> start of a grant to an idle engine
    x["end_guard_ms"] = ms(e.end_guard);  // added to predicted ends at crossing checks (agent.end_guard_quantile)
    x["throughput_gbps"] = alive_s > 0 ? static_cast<double>(s.bytes) / 1e9 / alive_s : 0.0;
    // The engine process's counters over its sessions so far, this one included: an
    // interposer renews its session (new catalog, new chunk size) and each session is a
    // new entry whose own counters start at zero. A reader that differences two status
    // replies takes "total" of the same pid (Documentation/agent.md, "Control").
    if (const auto t = in.engines.totals(e.id)) {
      x["pid"] = t->pid;
      x["session"] = t->session;
      json total;
      put_counters(total, t->stats);
      x["total"] = std::move(total);
    }
    x["wait"] = {{"cause", std::string(admission::to_string(e.wait.cause))}, {"detail", admission::describe(e.wait, now)}};
    engines.push_back(std::move(x));
  }
  j["engines"] = std::move(engines);
  return j;
}

json explain_json(std::string_view policy, const admission::Admission& adm, Nanos now) {
  const pricing::Ledger& ledger = adm.ledger();
  json j;
  j["policy"] = policy;
  const pricing::Bytes b = ledger.budget(now);
  j["budget_bytes"] = b == admission::kUnlimitedBytes ? json(nullptr) : json(b);
  json jobs = json::array();
  const pricing::JobAccount* binding = ledger.binding_job(now);
  for (const auto& jb : ledger.active_jobs()) {
    jobs.push_back({{"task", jb.task->spec().name},
                    {"seq", jb.key.seq},
                    {"since_ms", ms(now - jb.release)},
                    {"allowance_bytes", jb.allowance},
                    {"released_bytes", jb.released(now)},
                    {"charged_bytes", jb.charged},
                    {"budget_bytes", jb.budget(now)},
                    {"exempt", jb.task->exempt()}});
  }
  j["active_jobs"] = std::move(jobs);
  j["binding_job"] = binding ? json(fmt::format("{} #{}", binding->task->spec().name, binding->key.seq)) : json(nullptr);
  json engines = json::array();
  for (const admission::EngineState& e : adm.engines()) {
    if (!e.connected) continue;
    const admission::WaitReason& w = e.wait;
    engines.push_back({{"name", e.spec.name},
                       {"cause", std::string(admission::to_string(w.cause))},
                       {"detail", admission::describe(w, now)},
                       {"need_bytes", w.need},
                       {"pending_units", e.remaining()},
                       {"outstanding", e.outstanding},
                       {"until_ms", w.until == kNever ? json(nullptr) : json(ms(w.until - now))}});
  }
  j["engines"] = std::move(engines);
  return j;
}

}  // namespace ripple::daemon
