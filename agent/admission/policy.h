// One small interface for every admission policy (ripple and the baselines of paper
// §5.1 / App. D), so the daemon, the bench and the tests swap them by name
// (STYLE.md: policies over a small agent library, like oomd's BasePlugin).
//
// The framework (admission.h) owns the engines, their work queues and grant slots,
// the ledger calls and the statistics; a policy only answers "which engine gets how
// many of its next units now, and if none, why and until when".
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/admission/types.h"
#include "agent/pricing/ledger.h"

namespace ripple::admission {

// An engine as the policy sees it.
struct EngineState {
  EngineId id = 0;
  EngineSpec spec;
  bool connected = true;
  // Announced, not fully granted; front is current. Shared with the grants that
  // cover them, so a refunded successor can put its units back.
  std::deque<std::shared_ptr<const Work>> queue;
  std::uint32_t cursor = 0;    // next ungranted unit of queue.front()
  int outstanding = 0;         // grants decided and not yet done: 0, 1 or 2
  Nanos busy_until = 0;        // predicted end of the last outstanding grant
  // Predicted end of its last outstanding grant that moves host bytes (>= kLinkMinBytes;
  // a late start pushes it out); 0: none outstanding. Read by Context::link_free.
  Nanos link_until = 0;
  // The same over its started host-byte grants only (0: none started and not done). One
  // at or before now is running late: it holds the link until its Done (link_free).
  Nanos link_running_until = 0;
  Nanos last_done = 0;         // when the last grant finished
  double scale = 1.0;          // measured / profiled duration, smoothed
  // A grant queued behind the one before it: its incremental time (its end minus that
  // one's end) / profiled, smoothed; 0 until one is seen. Used for successors' predicted
  // durations when queued_durations is set (Options::queued_durations).
  double queued_scale = 0.0;
  // From decision to the engine's start, for grants that found it idle (not successors,
  // not held for a CPU release), smoothed: a new grant's predicted start is now + this.
  Nanos start_lag = 0;
  // With link_by_deadline (Options::link_by_deadline): its host-byte grants' GPU time when
  // they ran mostly beside another engine's host-byte grant, over their solo prediction,
  // smoothed; 0 until one is seen. The two engines' copies share the host link, and one
  // engine's may slow while the other's do not (the H200's VLM: a median 1.39x).
  double beside_scale = 0.0;
  // With link_by_deadline: until when a host-byte grant of this engine may run beside
  // another engine's (0: none; kNever: all of it, since another engine's next host-byte
  // grant would not wait for it, Context::holds_link_for; otherwise the latest predicted
  // end of the others' outstanding host-byte grants it would not wait for). Set by the
  // admission before each pick; end_of() stretches the part of a grant before it by
  // beside_scale.
  Nanos beside_until = 0;
  // Upper quantile of how late its grants ended (end - predicted end, at least 0) over its
  // last grants (Options::end_guard_quantile, Admission::record_end_error): a policy adds
  // it to a grant's predicted end where a crossing into a CPU release is checked, so a
  // grant whose end the predictions place just before a release is not admitted when this
  // engine's grants often end after theirs. 0: off, or none ended late.
  Nanos end_guard = 0;
  std::vector<Nanos> end_errors;  // the last kEndErrorWindow errors, a ring
  std::size_t end_errors_next = 0;
  bool queued_durations = false;
  Nanos idle_since = -1;       // idle with work since (-1: not idle with work)
  // The current idle-with-work interval so far, by the cause it waited on, up to
  // wait_mark (Admission::account_wait); moved into stats.wait_by_cause at its grant.
  std::array<Nanos, kWaitCauses> idle_by_cause{};
  Nanos wait_mark = -1;
  Nanos request_start = -1;    // deadline-bound: when its latest request was announced
  // The smallest unit it has announced in a work (kUnlimitedBytes: none yet). The probe
  // unit is built from these: a catalog can hold placeholder units an engine never runs
  // (the interposer's 1-byte generic unit, its 4 KiB copy units).
  Bytes smallest_announced = kUnlimitedBytes;
  // The last work id it announced (ids increase over the session; Admission::announce).
  bool announced_any = false;
  std::uint64_t last_work_id = 0;
  WaitReason wait;             // the last reason it got no grant
  // Refunded unstarted and not yet handed back by the engine: revoked with a grant it
  // discarded, or expired (Options::expire_slack). The engine hands each back (Discard).
  struct Revoked {
    GrantId id = 0;
    bool expired = false;
  };
  std::vector<Revoked> revoked;
  // Its unstarted grants expired and were revoked: it gets no grant (Context::own_slot)
  // until it hands one back. A Discard means its client is acquiring again; before that
  // it is idle (an LLM between requests), and a grant decided for it would only be
  // charged to every CPU job until it expired in turn, over and over.
  bool handback_pending = false;
  EngineStats stats;

  bool has_work() const { return !queue.empty() && cursor < queue.front()->units.size(); }
  std::uint32_t remaining() const {
    return has_work() ? static_cast<std::uint32_t>(queue.front()->units.size()) - cursor : 0;
  }
  const UnitSpec& unit(std::uint32_t k) const { return spec.catalog[queue.front()->units[cursor + k]]; }
  // Bytes and predicted duration (overhead included) of the next `count` units, for a
  // grant that starts at this engine's slot (Context::slot): a successor, queued behind
  // the grant outstanding, takes the queued scale when queued_durations is set.
  Bytes bytes_of(std::uint32_t count) const;
  // Idle with work from `now`: a new interval, nothing counted in it yet.
  void start_idle(Nanos now) {
    idle_since = wait_mark = now;
    idle_by_cause.fill(0);
  }
  // No longer idle with work; the interval's time is dropped (a grant moves it first).
  void end_idle() {
    idle_since = -1;
    idle_by_cause.fill(0);
  }
  // Counts the idle time since the last mark against the cause it waits on now (the
  // last decision's); returns the time counted.
  Nanos account_wait(Nanos now) {
    if (idle_since < 0) return 0;
    const Nanos from = std::max(idle_since, wait_mark);
    const Nanos counted = std::max<Nanos>(0, now - from);
    idle_by_cause[static_cast<std::size_t>(wait.cause)] += counted;
    wait_mark = std::max(from, now);
    return counted;
  }
  Nanos duration_of(std::uint32_t count) const;
  // The same for a grant that runs alone (nothing queued before it; e.g. one that waits
  // for a CPU release).
  Nanos duration_alone(std::uint32_t count) const;
  // A grant at the slot now would be a successor predicted from queued grants.
  bool queued_slot() const { return queued_durations && outstanding > 0 && queued_scale > 0; }
  double slot_scale() const { return queued_slot() ? queued_scale : scale; }
  // Predicted end of the next `count` units granted `now` to start at `start` (the slot).
  // A queued successor ends its queued duration after the grant before it, but never
  // before it could end alone from now: decided late, it finds nothing left to overlap.
  // A host-byte grant that another engine's may run beside runs at 1 / beside_scale of its
  // rate until beside_until (beside_end).
  Nanos end_of(Nanos start, std::uint32_t count, Nanos now) const;
  // The end of a grant from `start` that ends at `solo_end` alone, its first beside_until
  // - start run beside another engine's host-byte grant at beside_scale (> 1; otherwise,
  // or with nothing beside or a unit under kLinkMinBytes, solo_end).
  Nanos beside_end(Nanos start, Nanos solo_end) const;
  // Due time of unit `cursor + k` of a deadline-bound request: its units are spread
  // evenly over gamma of the interval from announcement to deadline (§4.1).
  Nanos due_time(std::uint32_t k, double gamma) const;
  // Due time of the last granted unit of queue.front() (unit cursor - 1); kNever when none
  // of it is granted yet or it has no deadline.
  Nanos granted_due(double gamma) const;
};

// What the policy may read when it picks.
struct Context {
  const pricing::Ledger& ledger;
  const std::vector<EngineState>& engines;
  Nanos now;
  double gamma;        // due-time fraction (App. D: 0.95)
  Nanos horizon;       // longest grant, H (App. D: 18 ms)
  bool pipelining;     // successors allowed (framework option and policy agree)
  Nanos lease = 20 * kNsPerMs;  // how long ahead a grant may be delivered (App. D)
  // The engines' host-byte grants share one link (Options::shared_link, for a policy
  // that models_shared_link()): see link_free.
  bool shared_link = false;
  // LinkMode::kAuto: an engine on an integrated GPU is not on the link (link_free).
  bool link_auto = false;
  // Options::link_by_deadline: see holds_link_for.
  bool link_by_deadline = false;
  bool on_link(const EngineState& e) const {
    return shared_link && !(link_auto && e.spec.memory == DeviceMemory::kIntegrated);
  }
  // Whether d's host-byte grants hold e's (both on the link, d another engine): always, but
  // with link_by_deadline a best-effort engine's never hold a deadline-bound engine's, and a
  // deadline-bound engine's hold a best-effort engine's only while they are not predicted
  // to end, at half speed, by the due time of its last granted unit (EngineState::granted_due).
  bool holds_link_for(const EngineState& d, const EngineState& e) const;

  // Earliest time a new grant of `e` could start: now plus its start lag, or after its
  // outstanding grant, and, with shared_link, not before link_free(e); nullopt when
  // both slots are taken, it may not take a successor, it owes a hand-back of expired
  // grants (EngineState::handback_pending), or the link is held past its predicted end.
  std::optional<Nanos> slot(const EngineState& e) const;
  // The same without the link: when the engine itself could start it.
  std::optional<Nanos> own_slot(const EngineState& e) const;
  // With shared_link, when e's next unit moves host bytes: the latest predicted end of
  // every other engine's outstanding host-byte grant (0: none, or e's unit moves none);
  // kNever while a started one runs past its predicted end (the link frees at its Done,
  // which wakes the agent; one not started holds nothing yet). Two engines' copies at once each run
  // at about half their solo rate, so a grant predicted at solo speed beside another
  // must instead start after it.
  Nanos link_free(const EngineState& e) const;
  // The engine whose host-byte grant ends at link_free(e).
  EngineId link_holder(const EngineState& e) const;
  bool any_job_active() const { return !ledger.active_jobs().empty(); }
};

// A policy's answer: a grant (engine + unit count), and for every engine that gets
// nothing, why. `wake_at` is the next time-driven scheduling point it wants (budget
// accrual, a pause ending); events (releases, completions, done, work) always wake it.
struct Pick {
  std::optional<EngineId> engine;
  std::uint32_t count = 0;
  // > 0: the grant is for the CPU release at this time and may not start before it.
  Nanos not_before = 0;
  std::vector<std::pair<EngineId, WaitReason>> waits;
  Nanos wake_at = kNever;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  // Whether it delivers a successor grant ahead (§4.3). Policies that act at
  // forward-pass boundaries decide at the boundary instead.
  virtual bool pipelines() const { return false; }
  // Whether its predictions assume the shared host link (Options::shared_link): ripple,
  // whose crossing bound and charges rely on predicted ends. The baselines grant whole
  // passes without predicting ends, and unmanaged must stay unmanaged: they do not.
  virtual bool models_shared_link() const { return false; }
  // Picks at most one grant. Called repeatedly until it picks none.
  virtual Pick pick(const Context& ctx) = 0;

  // Notifications; `now` on the caller's clock.
  virtual void on_release(TaskId /*task*/, JobSeq /*seq*/, Nanos /*now*/) {}
  virtual void on_complete(TaskId /*task*/, JobSeq /*seq*/, Nanos /*now*/) {}
  virtual void on_grant_start(const EngineState& /*e*/, const GrantPlan& /*g*/, Nanos /*now*/) {}
  // `measured` is the engine's GPU time for the grant, `profiled` its solo prediction.
  virtual void on_grant_done(const EngineState& /*e*/, const GrantPlan& /*g*/, Nanos /*measured*/,
                             Nanos /*profiled*/, Nanos /*now*/) {}
  // The engine handed the grant back unexecuted (a stale successor, or one revoked with
  // it): the ledger refunded it, and a policy that counts granted bytes itself gives
  // them back too. Never called for a grant that may have run (done, or settled when
  // its engine left).
  virtual void on_grant_refunded(const EngineState& /*e*/, const GrantPlan& /*g*/, Nanos /*now*/) {}
};

}  // namespace ripple::admission
