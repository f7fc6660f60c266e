// Vocabulary of the admission layer (paper §4.1, §4.3): GPU engines, the units of
// work they announce, the grants admission issues, and why an engine waits.
//
// Pure data: no clock, no I/O. Times are integer ns on the caller's clock, volumes
// integer bytes (the pricing core's units, agent/pricing/types.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/pricing/types.h"

namespace ripple::admission {

using pricing::Bytes;
using pricing::EngineId;
using pricing::GrantId;
using pricing::JobSeq;
using pricing::kNever;
using pricing::kNsPerMs;
using pricing::kNsPerUs;
using pricing::kUnlimitedBytes;
using pricing::Nanos;
using pricing::TaskId;

// Best-effort engines (the LLM) make as much progress as the budgets allow;
// deadline-bound ones (a VLM frame every 5 s) must finish each request by its
// deadline and are served first (§3, objectives 2 and 3).
enum class EngineKind : std::uint8_t { kBestEffort = 0, kDeadlineBound = 1 };
std::string_view to_string(EngineKind kind);
// The engine's GPU memory, as its hello reports it: discrete (host bytes cross a host
// link) or integrated (unified memory); unknown from an engine that does not say.
enum class DeviceMemory : std::uint8_t { kUnknown = 0, kDiscrete = 1, kIntegrated = 2 };
std::string_view to_string(DeviceMemory memory);
// Options::shared_link: off, on (every engine), or auto (engines whose GPU is not
// integrated: unified memory has no host link to share).
enum class LinkMode : std::uint8_t { kOff = 0, kOn = 1, kAuto = 2 };
std::string_view to_string(LinkMode mode);

// One entry of an engine's unit catalog: a pausable piece of a forward pass (a
// decoder layer, the output head, a vision block) with its profiled volume and solo
// duration (§4.1; App. B "Byte charges").
struct UnitSpec {
  std::string name;
  Bytes bytes = 0;
  Nanos duration = 0;  // solo, from the engine's profile
};

// An engine's profile (§3: "profiled once per device and model").
struct EngineSpec {
  std::string name;
  EngineKind kind = EngineKind::kBestEffort;
  std::vector<UnitSpec> catalog;
  Nanos grant_overhead = 0;  // per-grant fixed cost (launch, sync, report)
  DeviceMemory memory = DeviceMemory::kUnknown;
  // Deadline-bound engines: request period and relative deadline (0: the period).
  Nanos period = 0;
  Nanos deadline = 0;
};

// Work an engine announces: one forward pass (a decode step, a frame) as a sequence
// of catalog indices. A grant covers a contiguous run of one work item's units.
struct Work {
  std::uint64_t id = 0;            // the engine's request id, increasing
  std::vector<std::uint32_t> units;
  Nanos deadline = kNever;         // absolute; deadline-bound engines only
  Nanos announced = 0;             // set by admission: the due times' origin
};

// A grant admission has decided. `successor` grants are delivered ahead while the
// engine's current grant runs (§4.3, grant pipelining); the engine starts one only if
// its work position still equals (work, first) and it is not later than `start_by`.
// A grant delivered ahead *for a CPU release* (`not_before` > 0) was admitted against
// the entry budget of the job that release opens, so it waits until that release
// before it can start (§4.3, "Grant pipelining").
struct GrantPlan {
  GrantId id = 0;  // the ledger's grant id
  EngineId engine = 0;
  std::uint64_t work = 0;
  std::uint32_t first = 0;  // index into the work's unit list
  std::uint32_t count = 0;
  Bytes bytes = 0;
  Nanos decided = 0;
  Nanos predicted_start = 0;
  Nanos predicted_end = 0;
  Nanos start_by = kNever;  // lease and CPU-release limit together
  Nanos not_before = 0;     // the CPU release it waits for (0: none), or the link (link_held)
  bool successor = false;
  // Held for the shared host link (Options::shared_link): not_before is when another
  // engine's host-byte grant is predicted to end, not a CPU release.
  bool link_held = false;
};

// The host link (Options::shared_link): a unit or grant of at least this many bytes moves
// host bytes over the PCIe link. Below it (an HBM-resident engine's 1-byte units, the
// interposer's placeholder units) it is never held for the link and never holds it: 1 MiB
// is ~20 us of a 55 GB/s link.
inline constexpr Bytes kLinkMinBytes = 1 << 20;

// Why an engine with work has no grant (paper Fig. 9 breaks gap time down the
// same way): what `ripplectl explain` prints.
enum class WaitCause : std::uint8_t {
  kNone = 0,       // it has a grant, or was just given one
  kNoWork,         // nothing announced
  kSlotsFull,      // current and successor grant both outstanding
  kBudget,         // B(t) below the next unit (Eq. 4)
  kCrossing,       // fits B(t) but would cross a release the crossing bound forbids
  kDueTime,        // best-effort held back for a deadline-bound due time
  kReserve,        // best-effort held so a deadline-bound request can pay all its units in time
  kPaused,         // a baseline policy pauses it (PT job active, cap spent, PI pause)
  kBoundary,       // a policy that acts at boundaries waits for the grant in flight
  kLink,           // granted, held (not_before) until another engine's host-byte grant ends
  kExpired,        // its grant expired unstarted; waits for the engine to hand it back
  kRelease,        // granted ahead, held (not_before) until the CPU release it was admitted against
};
inline constexpr std::size_t kWaitCauses = static_cast<std::size_t>(WaitCause::kRelease) + 1;
std::string_view to_string(WaitCause cause);

struct WaitReason {
  WaitCause cause = WaitCause::kNoWork;
  Bytes need = 0;       // bytes of the smallest grant it could take
  Bytes budget = 0;     // B(t) when it was decided
  Nanos until = kNever; // when it is expected to end (kNever: at an event)
  std::string detail;   // a policy's own line; empty: describe() composes one
  EngineId other = 0;   // kDueTime, kReserve: the deadline-bound engine it is held for; kLink: the link's holder
  // kBudget: the task whose active job binds B(t) (Ledger::binding_job); none otherwise.
  std::optional<TaskId> task;
};
// One human line for a wait, from its detail or its structured fields.
std::string describe(const WaitReason& why, Nanos now);

// Per-engine counters, kept by admission for status/top.
struct EngineStats {
  std::uint64_t grants = 0, units = 0, successors = 0, stale = 0, works_done = 0;
  std::uint64_t for_release = 0;  // grants delivered ahead for a CPU release
  std::uint64_t link_held = 0;    // grants held for another engine's host-byte grant (shared link)
  // Grants revoked unstarted at start_by + Options::expire_slack (the engine can no longer
  // start them), with the later grants revoked with them. Not counted in `stale`.
  std::uint64_t expired = 0;
  Bytes bytes = 0;           // granted bytes that executed
  // GPU time the engine's grants occupied: the union of the intervals [done - measured,
  // done]. A grant queued behind the one before it (pipelined) adds only its time after
  // that one's end, so overlapping grants are not counted twice.
  Nanos busy = 0;
  std::uint64_t queued = 0;  // grants that ran queued behind the one before (see on_done)
  // Idle with work until a grant is decided, and then, for a grant the policy held
  // (not_before: delivered ahead for a CPU release, or held for the shared link), from its
  // sending (or the engine's previous Done) until not_before: a wait the policy chose,
  // not a slow delivery.
  Nanos wait_budget = 0;
  // wait_budget split by the cause the engine waited on (WaitCause, as the policy gave it
  // at each decision while the engine was idle with work; kRelease or kLink for a held
  // grant's hold): the parts sum to wait_budget. The time is counted when the wait ends
  // in a grant (a hold: in its Start), as wait_budget is.
  std::array<Nanos, kWaitCauses> wait_by_cause{};
  Nanos wait_decision = 0;   // decided -> sent (daemon reports it)
  Nanos wait_delivery = 0;   // sent (or not_before, if later) -> engine started it
  std::uint64_t deadline_misses = 0;  // deadline-bound works finished late
  // Grants whose end (the Done's arrival: the interposer reports a grant once the GPU has
  // passed its end) came more than kLateEndSlack after the predicted end that
  // the budget and crossing checks relied on, and the largest such overrun.
  std::uint64_t late_ends = 0;
  Nanos late_max = 0;
  // The span the engine's grants were paced over: from its first grant's decision (when
  // a pacing policy charges it) to the arrival of its last Done, and the bytes of the
  // grants reported done (`bytes` less those settled when an engine leaves, which may
  // not have run). Every one of these bytes was decided and completed inside the span,
  // so done_bytes / span is the engine's byte rate over exactly the interval a pace
  // applies to: without the start-up before the first grant, with the CPU time between
  // grants (pace-R, Documentation/agent.md). kNever / -1: no grant, no Done yet.
  Nanos first_grant = kNever;
  Nanos last_done = -1;
  Bytes done_bytes = 0;
};
inline constexpr Nanos kLateEndSlack = 1'000'000;  // 1 ms

// `to` += `from`, field by field (late_max and last_done: the larger; first_grant: the
// smaller): the daemon sums an engine process's sessions (daemon/engine_session.h,
// EngineProcess). Beside the struct so that a new counter is added here too.
static_assert(sizeof(EngineStats) == (20 + kWaitCauses) * 8, "a new EngineStats field: add it to accumulate()");
inline void accumulate(EngineStats& to, const EngineStats& from) {
  to.grants += from.grants;
  to.units += from.units;
  to.successors += from.successors;
  to.stale += from.stale;
  to.works_done += from.works_done;
  to.for_release += from.for_release;
  to.link_held += from.link_held;
  to.expired += from.expired;
  to.bytes += from.bytes;
  to.busy += from.busy;
  to.queued += from.queued;
  to.wait_budget += from.wait_budget;
  for (std::size_t c = 0; c < kWaitCauses; ++c) to.wait_by_cause[c] += from.wait_by_cause[c];
  to.wait_decision += from.wait_decision;
  to.wait_delivery += from.wait_delivery;
  to.deadline_misses += from.deadline_misses;
  to.late_ends += from.late_ends;
  to.late_max = to.late_max > from.late_max ? to.late_max : from.late_max;
  to.first_grant = to.first_grant < from.first_grant ? to.first_grant : from.first_grant;
  to.last_done = to.last_done > from.last_done ? to.last_done : from.last_done;
  to.done_bytes += from.done_bytes;
}

}  // namespace ripple::admission
