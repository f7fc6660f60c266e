// Admission (paper §4.1, §4.3): the engines' work queues, grant slots, pipelining and
// the ledger calls around a pluggable Policy. A pure library with an injected clock:
// every entry point takes `now`; nothing here reads a clock, sleeps or does I/O, so
// the daemon, the bench and the tests drive the same code.
//
// Scheduling points (§4.1) are the calls that change state — on_release/on_complete
// (PT jobs), announce (new engine work), on_done (grant completion) — plus the
// times decide() returns in `wake_at`: budget accrual, an unstarted grant's expiry.
// After any of them the caller runs decide(now) and delivers the grants it returns.
//
// A grant's life: decide (charged to every active job) -> on_sent -> on_start ->
// on_done (stays charged) | on_discard (stale successor, refunded) | expired (not
// started by start_by + Options::expire_slack: refunded as if discarded, at the next
// decide() or release). An engine that goes away has every outstanding grant settled
// as executed: bytes stay charged.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "agent/admission/policy.h"
#include "agent/admission/trace.h"
#include "agent/admission/types.h"
#include "ripple/status.h"
#include "agent/pricing/ledger.h"

namespace ripple::admission {

struct Options {
  double gamma = 0.95;                 // due-time fraction (App. D)
  Nanos horizon = 18 * kNsPerMs;       // H: longest predicted grant (App. D)
  Nanos lease = 20 * kNsPerMs;         // successor lease (App. D, Table 8)
  // A grant the engine has not started by start_by + expire_slack never will be: its
  // client starts none after start_by (the agent's CLOCK_MONOTONIC). Then it is revoked
  // as if the engine had discarded it, with the engine's later grants. Until then it
  // stays charged, and every job released meanwhile inherits it (Eq. 6); never revoked,
  // a grant the engine does not start (one for work announced ahead of an LLM that went
  // idle) kept B(t) at 0 for the whole idle time. The slack covers a Start sent by
  // start_by and not yet read: a Start read later ends the engine's session (it runs
  // unmanaged, fail-open, until it reconnects), so the slack is set far above how long a
  // loaded board may keep the agent from reading its sockets; the cost of a long one is
  // only that jobs released within it still inherit the dead grant. > 0.
  Nanos expire_slack = 500 * kNsPerMs;
  bool pipelining = true;              // deliver one successor ahead (§4.3)
  double scale_smoothing = 0.2;        // EWMA weight of a new measured/profiled ratio
  // Predict a successor's duration from the grants that ran queued behind another (their
  // time after the one before ended), not from grants that ran alone. A pipelined engine
  // (copy-in of the next unit overlapping the last one's copy-out) finishes a queued unit
  // sooner than a lone one, and its event pairs span the overlap. Off: the paper's single
  // measured/profiled scale. On by default since the fourteenth session's GPU A/B
  // (Documentation/results/e2e-archive.md: +9 % and +12 % tokens/s at k = 1.5 and 1.1).
  bool queued_durations = true;
  // When a grant is done, a grant the engine already started (issued ahead while this one
  // ran, queued behind it on the GPU) is predicted to end its planned duration after this
  // Done, also where that is before the end it was predicted at when decided. An engine
  // that issues ahead starts its successor long before the GPU reaches it, so that
  // prediction (the one before's predicted end + its duration) keeps every earlier end of
  // the one before; the next successor's slot then lies past the real end by as much (H200,
  // results/e2e-archive.md, thirteenth session: 8-13 ms at the median) and a successor that
  // would fit before a CPU release from the real end waits for the Done. Off: a late end
  // carries to the successors, an early one does not (the slot only ever moves out). On by
  // default since the GPU A/B of the twentieth session (results/e2e-archive.md: three H200 calls
  // at k = 1.5, 9 runs a variant): a second grant queued behind the running one for a
  // median 83 % of the time against 71 %, +3 % tokens/s.
  bool early_end_carries = true;
  // The engines' host-byte grants share one host link (PCIe): for a policy that
  // models_shared_link(), a grant whose next unit moves host bytes (>= kLinkMinBytes)
  // starts after the predicted end of every other engine's outstanding host-byte grant,
  // delivered with not_before (GrantPlan::link_held) and predicted to run alone. Off:
  // each engine's grants are predicted at solo speed whatever the others move. Auto (the
  // default): as on, but an engine whose hello reports an integrated GPU (unified memory:
  // no host link) neither waits for another's grant nor holds another's back.
  LinkMode shared_link = LinkMode::kAuto;
  // With the shared link, the link by deadlines: a deadline-bound engine's host-byte grant
  // never waits for a best-effort engine's, and a best-effort engine's waits for a
  // deadline-bound engine's only while that engine is not ahead of its due times (its
  // outstanding host-byte grants, run at half speed from now, would end after the due time
  // of its last granted unit; or nothing of its request is granted yet). Engines of one
  // kind hold each other as before. A host-byte grant that another engine's may run beside
  // (that engine's next one would not wait for it: all of it; or that engine's outstanding
  // ones, which it does not wait for: until their end) is predicted at its engine's learned
  // beside factor (EngineState::beside_scale, learned from its grants that ran mostly
  // beside another's; solo until one has). Why: on the H200 the hold cost the LLM 16-22 %
  // of its time beside a host-byte VLM, and with the link off the VLM's copies took
  // 1.06-1.54x (median 1.39) as long beside the LLM's while the LLM's were not slowed
  // (results/e2e-archive.md, twenty-third session). Off: its GPU A/B (twenty-fourth session,
  // before the beside factor) gave +12 % tokens/s at k = 1.5 and 2.0, but at k = 1.1 the
  // VLM's grants, run beside the LLM's at solo-speed predictions, ended late 3-6x as often
  // and one run lost 4 of its 5 frames; with the factor (twenty-fifth session) +33 % at
  // k = 1.5, but at k = 1.1 costmap missed 4.53 % where the hold missed 0.53 %.
  bool link_by_deadline = false;
  // The end guard (ours; Documentation/agent.md, "The end guard"): this quantile of each
  // engine's recent late grant ends (EngineState::end_guard) is added to a grant's
  // predicted end where the ripple policy checks its crossing into a CPU release. A grant
  // that ends after its prediction crosses into a job that the crossing bound thought it
  // spared (the ninth session's GPU call 4: misses while every allowance was 0). 0: off,
  // the paper's predicted end.
  double end_guard_quantile = 0.0;
  // Disconnected engines kept in engines() (the most recent; their grants are settled),
  // so the table stays bounded however many sessions come and go.
  std::size_t gone_engines_kept = 16;
};

struct Decision {
  std::vector<GrantPlan> grants;  // to deliver now, in order
  Nanos wake_at = kNever;         // next time-driven scheduling point
};

// Grant end errors kept per engine for the end guard.
inline constexpr std::size_t kEndErrorWindow = 64;

// The rank-ceil(q n) smallest of `errors` (q in (0, 1]: pricing::percentile at 100 q); 0 for
// none or q <= 0.
Nanos end_error_quantile(std::vector<Nanos> errors, double q);

// Validates a profile: a name, at least one unit, positive bytes and durations, and
// for deadline-bound engines a positive period and 0 < deadline <= period.
Status validate(const EngineSpec& spec);

class Admission {
 public:
  // `ledger` must outlive this object.
  Admission(pricing::Ledger& ledger, std::unique_ptr<Policy> policy, Options opts = {});
  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // A new engine session. Also sets the ledger's probe unit: the largest, over the
  // engines, of each one's smallest nonzero unit (App. C).
  Result<EngineId> add_engine(EngineSpec spec, Nanos now);
  // The engine disconnected: its outstanding grants are settled as executed (they
  // stay charged: the GPU may have run them), its queue is dropped.
  void remove_engine(EngineId engine, Nanos now);

  // New work. Ids must increase; a work with no units or an unknown unit is refused.
  Status announce(EngineId engine, Work work, Nanos now);

  // PT job events: the ledger prices / learns, the policy is told. A release is
  // priced in `phase`, by default the one phase_at(now) derives; `now` is when the job
  // started, `lag` how long after its release (Ledger::on_release).
  pricing::Pricing on_release(TaskId task, JobSeq seq, Nanos now, std::optional<pricing::Phase> phase = {},
                              Nanos lag = 0);
  // The VLM phase of a release at `when` (App. C): kVlmHead in the first
  // vlm_head_fraction of a connected deadline-bound engine's period, which starts when
  // it announces a request (and for one period at most); otherwise kRest.
  pricing::Phase phase_at(Nanos when) const;
  std::optional<pricing::Completion> on_complete(TaskId task, JobSeq seq, Nanos now);
  std::optional<pricing::Completion> on_unfinished(TaskId task, JobSeq seq, Nanos now);

  // Runs the policy until it picks nothing; charges and returns the grants.
  Decision decide(Nanos now);

  // The daemon handed the grant to the engine's socket.
  Status on_sent(EngineId engine, GrantId grant, Nanos now);
  // The engine began executing the grant. An error for a grant that expired (the
  // engine's Start came later than start_by + expire_slack): it was refunded already.
  Status on_start(EngineId engine, GrantId grant, Nanos now);
  // The engine finished it; `measured` is its GPU time. An error for an expired grant.
  Status on_done(EngineId engine, GrantId grant, Nanos measured, Nanos now);
  // The engine dropped a stale successor unexecuted: refunded, units back in queue;
  // grants decided after it are revoked with it (the engine will hand them back too).
  // A grant revoked before (with an earlier one, or expired) is accepted once.
  Status on_discard(EngineId engine, GrantId grant, Nanos now);

  const std::vector<EngineState>& engines() const { return engines_; }
  const EngineState* engine(EngineId id) const;
  struct Outstanding {
    GrantPlan plan;
    std::shared_ptr<const Work> work;
    Nanos sent = -1, started = -1;
    EngineId link_holder = 0;  // link_held: the engine whose host-byte grant it waits for
    // With link_by_deadline, for learning beside_scale: when it began to run (started, and
    // its engine's oldest grant: the GPU is on it), how long another engine's host-byte
    // grant ran meanwhile (by the agent's events), and its duration predicted solo.
    Nanos ran_from = -1, beside_ns = 0, solo = 0;
    // Its predicted end, moved out by a late start.
    Nanos expected_end() const {
      return started > plan.predicted_start ? started + (plan.predicted_end - plan.predicted_start) : plan.predicted_end;
    }
  };
  const std::vector<Outstanding>& outstanding() const { return grants_; }
  const pricing::Ledger& ledger() const { return ledger_; }
  // How long engines waited on B(t) (WaitCause::kBudget) while this task's job bound it,
  // summed over the engines, counted at each decision as the wait passes (so a wait that
  // ends in an expiry or a disconnect counts too, unlike EngineStats::wait_by_cause).
  Nanos budget_wait_by_task(TaskId task) const {
    return task < budget_wait_by_task_.size() ? budget_wait_by_task_[task] : 0;
  }
  const Policy& policy() const { return *policy_; }
  const Options& options() const { return opts_; }
  // Why the engine's next grant waits, refreshed at the last decide().
  WaitReason explain(EngineId engine) const;
  // Every release, completion and grant event from now on goes to `sink` (agent/admission/
  // trace.h); an empty sink turns the trace off.
  void set_trace(TraceSink sink) { trace_ = std::move(sink); }

 private:
  void trace_completion(const std::optional<pricing::Completion>& c, TaskId task, JobSeq seq, Nanos now);
  EngineState* find(EngineId id);  // connected engines only
  EngineState* slot(EngineId id);  // any kept engine
  Outstanding* find_grant(EngineId engine, GrantId grant);
  void update_probe_unit();
  void finish_grant(std::size_t index, Nanos now);
  // Refunds the engine's grants from `from` on (none started), last first, putting their
  // units back in front of its queue in order.
  void revoke(EngineState& e, GrantId from, bool expired, Nanos now);
  // Revokes every engine's grants from its first one past start_by + expire_slack on.
  void expire(Nanos now);
  Nanos expires_at(const GrantPlan& g) const;
  // start_by of a grant just decided: predicted start + lease, no later than the start
  // that keeps its end within every release's bound (before a release it ends before;
  // past one it crosses within the crossing bound, no further: Estimator::max_into_release).
  Nanos start_limit(const EngineState& e, const GrantPlan& g, Nanos now) const;
  void handed_back(EngineState& e, Nanos now);
  void refresh_link(EngineState& e);
  Context context(Nanos now) const;
  // With link_by_deadline: sets every engine's beside_until (EngineState) from the others'
  // host-byte work and grants outstanding.
  void refresh_beside(Nanos now);
  // With link_by_deadline: adds the time since the last call to beside_ns of each running
  // host-byte grant that another engine's running host-byte grant ran beside. Called before
  // any event that changes which grants run.
  void account_beside(Nanos now);

  pricing::Ledger& ledger_;
  std::unique_ptr<Policy> policy_;
  Options opts_;
  TraceSink trace_;
  std::vector<EngineState> engines_;  // sorted by id
  EngineId next_engine_ = 0;
  std::vector<Outstanding> grants_;
  Nanos beside_mark_ = 0;  // account_beside's last call
  std::vector<Nanos> budget_wait_by_task_;  // by TaskId: budget_wait_by_task()
};

}  // namespace ripple::admission
