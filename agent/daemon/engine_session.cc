#include "agent/daemon/engine_session.h"

#include <limits>

#include "agent/pricing/chunk.h"
#include "ripple/log.h"

namespace ripple::daemon {

using namespace engine;

EngineSessions::EngineSessions(const config::Config& cfg, admission::Admission& adm, ExeOf exe_of,
                               StartOf start_of)
    : cfg_(cfg), adm_(adm), exe_of_(std::move(exe_of)), start_of_(std::move(start_of)) {}

void EngineSessions::joined(EngineId id, const EngineSession& s) {
  const std::uint64_t start = start_of_(s.cred.pid).value_or(0);
  auto it = processes_.begin();
  while (it != processes_.end() &&
         !(it->second.pid == s.cred.pid && it->second.start_time == start && it->second.name == s.name))
    ++it;
  if (it == processes_.end()) {
    EngineProcess np;
    np.name = s.name;
    np.pid = s.cred.pid;
    np.start_time = start;
    it = processes_.emplace(next_process_++, std::move(np)).first;
  }
  EngineProcess& p = it->second;
  ++p.sessions;
  ++p.open;
  origins_[id] = Origin{it->first, p.pid, p.sessions, p.closed};
}

void EngineSessions::left(EngineId id, const admission::EngineStats& stats, Nanos now) {
  if (auto o = origins_.find(id); o != origins_.end()) {
    if (auto p = processes_.find(o->second.process); p != processes_.end()) {
      admission::accumulate(p->second.closed, stats);
      --p->second.open;
      p->second.last_closed = now;
    }
  }
  // Bounded: an entry admission no longer keeps is never reported; a process none of
  // whose sessions is connected is forgotten once more than kProcessesKept are (oldest
  // closed first), and its next session, if any, starts its counters afresh.
  std::erase_if(origins_, [this](const auto& o) { return adm_.engine(o.first) == nullptr; });
  std::size_t idle = 0;
  for (const auto& [key, p] : processes_) idle += p.open == 0;
  while (idle > kProcessesKept) {
    auto oldest = processes_.end();
    for (auto it = processes_.begin(); it != processes_.end(); ++it)
      if (it->second.open == 0 && (oldest == processes_.end() || it->second.last_closed < oldest->second.last_closed))
        oldest = it;
    processes_.erase(oldest);
    --idle;
  }
}

std::optional<EngineTotals> EngineSessions::totals(EngineId id) const {
  const auto o = origins_.find(id);
  const admission::EngineState* e = adm_.engine(id);
  if (o == origins_.end() || e == nullptr) return std::nullopt;
  EngineTotals t{o->second.pid, o->second.session, o->second.before};
  admission::accumulate(t.stats, e->stats);
  return t;
}

std::string EngineSessions::refuse_hello(Throttle& t, std::uint64_t id, EngineSession& s, const std::string& why,
                                         Nanos now, const Send& send) {
  if (t.note(now))
    RIPPLE_LOG_WARN("refused engine session {} (pid {} uid {}): {} ({} more refused since last said)", id,
                    s.cred.pid, s.cred.uid, why, t.suppressed());
  ++hellos_refused_;
  s.refused = true;
  send(ByeMsg{ByeReason::kRefused, why.substr(0, kByeTextBytes - 1)});
  return why;
}

EngineSessions::Outcome EngineSessions::hello(std::uint64_t id, EngineSession& s, const Hello& h, Nanos now,
                                              const Send& send) {
  admission::EngineSpec spec;
  spec.name = h.name;
  spec.kind = h.kind == Kind::kDeadlineBound ? admission::EngineKind::kDeadlineBound
                                             : admission::EngineKind::kBestEffort;
  spec.period = static_cast<Nanos>(h.period_ns);
  spec.deadline = static_cast<Nanos>(h.deadline_ns);
  spec.grant_overhead = static_cast<Nanos>(h.grant_overhead_ns);
  spec.memory = static_cast<admission::DeviceMemory>(h.memory);  // the same values; decode() checked the range
  for (const auto& u : h.units)
    spec.catalog.push_back({u.name, static_cast<pricing::Bytes>(u.bytes), static_cast<Nanos>(u.duration_ns)});
  // Who the peer is decides, not what it declares: a configured name is claimed only by
  // the uid/executable its [[engine]] names, and only a configured engine may be
  // deadline-bound (Documentation/agent.md, "Engine identity and access").
  if (const config::EngineSection* e = cfg_.engine(h.name)) {  // the configuration wins
    if (!e->exe.empty()) s.peer.exe = exe_of_(s.cred.pid);
    if (std::string why = engine_mismatch(*e, s.peer); !why.empty())
      return {refuse_hello(identity_refused_, id, s, why, now, send)};
    spec.kind = e->kind;
    spec.period = e->period;
    spec.deadline = e->deadline;
  } else if (cfg_.agent.refuse_unconfigured) {
    return {refuse_hello(unconfigured_refused_, id, s,
                         fmt::format("engine {} is not configured ([[engine]]) and agent.unconfigured_engines "
                                     "is \"refuse\"", h.name.substr(0, kNameBytes - 1)),
                         now, send)};
  } else {
    const bool claimed = spec.kind == admission::EngineKind::kDeadlineBound;
    spec.kind = admission::EngineKind::kBestEffort;
    spec.period = spec.deadline = 0;
    ++unconfigured_admitted_;
    if (claimed) ++deadline_claims_downgraded_;
    if (!std::exchange(said_unconfigured_, true))
      RIPPLE_LOG_INFO("engine {} (pid {}, uid {}) is not configured: admitted as best-effort{} "
                      "(agent.unconfigured_engines; said once, counted in status)",
                      h.name, s.cred.pid, s.cred.uid, claimed ? " although it declared deadline-bound" : "");
  }
  auto eid = adm_.add_engine(std::move(spec), now);
  if (!eid) return {eid.error().message};
  s.welcomed = true;
  s.engine = *eid;
  s.name = h.name;
  joined(*eid, s);
  RIPPLE_LOG_INFO("engine {} (pid {}, uid {}) joined as {} with {} unit(s)", h.name, s.cred.pid, s.cred.uid,
                  admission::to_string(adm_.engine(*eid)->spec.kind), h.units.size());
  const config::AgentSection& a = cfg_.agent;
  Welcome welcome{*eid, a.policy.substr(0, kNameBytes - 1), static_cast<std::uint64_t>(a.admission.lease),
                  a.fail_mode};
  // The chunk size for sub-layer grants (none until a job is priced: every Grant carries it too).
  welcome.chunk_bytes = static_cast<std::uint64_t>(pricing::suggest_chunk_bytes(adm_.ledger()));
  if (!send(welcome)) return {"failed to send welcome"};
  return {};
}

EngineSessions::Outcome EngineSessions::handle(std::uint64_t id, EngineSession& s, const Message& msg, Nanos now,
                                               const Send& send) {
  if (!s.welcomed) {
    const auto* h = std::get_if<Hello>(&msg);
    if (h == nullptr) return {fmt::format("expected hello, got {}", type_name(msg))};
    return hello(id, s, *h, now, send);
  }
  Status st;
  if (const auto* w = std::get_if<WorkMsg>(&msg)) {
    // A bound on what one engine can make the agent hold (a Work is up to 4096 units).
    if (const admission::EngineState* e = adm_.engine(s.engine);
        e != nullptr && e->queue.size() >= static_cast<std::size_t>(cfg_.agent.max_queued_works)) {
      works_refused_.note(now);
      return {fmt::format("work {}: {} works queued, at most {} (agent.max_queued_works)", w->work_id,
                          e->queue.size(), cfg_.agent.max_queued_works)};
    }
    // A wire time is unsigned; one past Nanos' range would turn negative in the cast, a
    // deadline long past whose due times are all missed: malformed, like a bad unit.
    if (w->deadline_ns > static_cast<std::uint64_t>(std::numeric_limits<Nanos>::max()))
      return {fmt::format("work {}: deadline_ns {} is past the largest time, 2^63 - 1 ns", w->work_id,
                          w->deadline_ns)};
    admission::Work work;
    work.id = w->work_id;
    work.units = w->units;
    if (w->deadline_ns != 0) work.deadline = static_cast<Nanos>(w->deadline_ns);
    st = adm_.announce(s.engine, std::move(work), now);
  } else if (const auto* g = std::get_if<StartMsg>(&msg)) {
    st = adm_.on_start(s.engine, g->grant_id, now);
  } else if (const auto* d = std::get_if<DoneMsg>(&msg)) {
    st = adm_.on_done(s.engine, d->grant_id, static_cast<Nanos>(d->measured_ns), now);
  } else if (const auto* x = std::get_if<DiscardMsg>(&msg)) {
    st = adm_.on_discard(s.engine, x->grant_id, now);
  } else if (const auto* b = std::get_if<ByeMsg>(&msg)) {
    return {fmt::format("bye: {}", b->text.empty() ? "no reason" : b->text)};
  } else {
    return {fmt::format("unexpected {} from an engine", type_name(msg))};
  }
  if (!st) return {st.error().message};
  return {{}, true};
}

bool EngineSessions::close(const EngineSession& s, Nanos now) {
  if (!s.welcomed) return false;
  adm_.remove_engine(s.engine, now);  // outstanding grants stay charged
  if (const admission::EngineState* e = adm_.engine(s.engine)) {
    ++gone_.count;
    gone_.grants += e->stats.grants;
    gone_.bytes += static_cast<std::uint64_t>(e->stats.bytes);
    gone_.works_done += e->stats.works_done;
    left(s.engine, e->stats, now);
  }
  return true;
}

}  // namespace ripple::daemon
