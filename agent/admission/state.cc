// EngineState and Context: what a policy reads of an engine and of the moment (policy.h),
// the predicted durations and slots, and the names and validation of the types.
#include <algorithm>
#include <cmath>

#include "agent/admission/admission.h"
#include "agent/pricing/percentile.h"

namespace ripple::admission {

std::string_view to_string(EngineKind kind) {
  return kind == EngineKind::kDeadlineBound ? "deadline-bound" : "best-effort";
}

std::string_view to_string(DeviceMemory memory) {
  switch (memory) {
    case DeviceMemory::kDiscrete: return "discrete";
    case DeviceMemory::kIntegrated: return "integrated";
    case DeviceMemory::kUnknown: break;
  }
  return "unknown";
}

std::string_view to_string(LinkMode mode) {
  switch (mode) {
    case LinkMode::kOff: return "off";
    case LinkMode::kOn: return "on";
    case LinkMode::kAuto: break;
  }
  return "auto";
}

std::string_view to_string(WaitCause cause) {
  switch (cause) {
    case WaitCause::kNone: return "none";
    case WaitCause::kNoWork: return "no-work";
    case WaitCause::kSlotsFull: return "slots-full";
    case WaitCause::kBudget: return "budget";
    case WaitCause::kCrossing: return "crossing";
    case WaitCause::kDueTime: return "due-time";
    case WaitCause::kReserve: return "reserve";
    case WaitCause::kPaused: return "paused";
    case WaitCause::kBoundary: return "boundary";
    case WaitCause::kLink: return "link";
    case WaitCause::kExpired: return "expired";
    case WaitCause::kRelease: return "release";
  }
  return "?";
}

std::string describe(const WaitReason& w, Nanos now) {
  if (!w.detail.empty()) return w.detail;
  const double in_ms = w.until == kNever ? 0 : static_cast<double>(w.until - now) / 1e6;
  switch (w.cause) {
    case WaitCause::kNone: return "granted";
    case WaitCause::kNoWork: return "nothing announced";
    case WaitCause::kSlotsFull: return "current and successor grants outstanding";
    case WaitCause::kBudget:
      if (w.until == kNever)
        return fmt::format("next unit {} B exceeds what the active jobs can release; waits for a completion", w.need);
      return fmt::format("B(t) = {} B < next unit {} B; accrues in {:.3f} ms", w.budget, w.need, in_ms);
    case WaitCause::kCrossing:
      if (w.until != kNever)
        return fmt::format("one unit ({} B) fits B(t) but its crossing into a release is not allowed; "
                           "a task that stopped releasing turns idle in {:.3f} ms", w.need, in_ms);
      return fmt::format("one unit ({} B) fits B(t) but its crossing into a release is not allowed", w.need);
    case WaitCause::kDueTime:
      return fmt::format("held for engine {}'s unit due in {:.3f} ms", w.other, in_ms);
    case WaitCause::kReserve:
      if (w.until <= now)
        return fmt::format("held for engine {}'s deadline: its remaining units need all the budget now", w.other);
      return fmt::format("held for engine {}'s deadline: its remaining units need the budget due within {:.3f} ms",
                         w.other, in_ms);
    case WaitCause::kPaused: return "paused by the policy";
    case WaitCause::kBoundary: return "waits for the grant in flight to end";
    case WaitCause::kLink:
      if (w.until == kNever)
        return fmt::format("next unit {} B waits for engine {}'s host-byte grant, past its predicted end, to end "
                           "(shared link)", w.need, w.other);
      return fmt::format("granted {} B, held {:.3f} ms for engine {}'s host-byte grant (shared link)", w.need,
                         in_ms > 0 ? in_ms : 0.0, w.other);
    case WaitCause::kExpired:
      return "a grant expired unstarted (start_by + expire_slack passed) and was refunded; "
             "waits for the engine to hand it back";
    case WaitCause::kRelease:
      return fmt::format("granted {} B ahead, held {:.3f} ms for the CPU release it was admitted against "
                         "(it would cross that release from now)", w.need, in_ms > 0 ? in_ms : 0.0);
  }
  return "?";
}

Nanos end_error_quantile(std::vector<Nanos> errors, double q) {
  if (!(q > 0)) return 0;
  return pricing::percentile(std::move(errors), std::min(q, 1.0) * 100.0);  // T{} = 0 for none
}

Bytes EngineState::bytes_of(std::uint32_t count) const {
  Bytes b = 0;
  for (std::uint32_t k = 0; k < count; ++k) b += unit(k).bytes;
  return b;
}

static Nanos predicted(const EngineState& e, std::uint32_t count, double scale) {
  Nanos d = 0;
  for (std::uint32_t k = 0; k < count; ++k) d += e.unit(k).duration;
  return e.spec.grant_overhead + static_cast<Nanos>(std::llround(scale * static_cast<double>(d)));
}

Nanos EngineState::duration_of(std::uint32_t count) const { return predicted(*this, count, slot_scale()); }

Nanos EngineState::duration_alone(std::uint32_t count) const { return predicted(*this, count, scale); }

Nanos EngineState::end_of(Nanos start, std::uint32_t count, Nanos now) const {
  // Held past its own slot (for the shared link), it finds nothing queued to overlap.
  if (start > std::max(now, busy_until)) return beside_end(start, start + duration_alone(count));
  const Nanos end = start + duration_of(count);
  return beside_end(start, queued_slot() ? std::max(end, now + duration_alone(count)) : end);
}

// Work w at rate 1/f for the first W, then at rate 1: it ends at f w when f w <= W, else
// at W + (w - W / f).
Nanos EngineState::beside_end(Nanos start, Nanos solo_end) const {
  const double f = beside_scale;
  if (!(f > 1) || beside_until <= start || solo_end <= start || !has_work() || unit(0).bytes < kLinkMinBytes)
    return solo_end;
  const double w = static_cast<double>(solo_end - start);
  const double window = beside_until == kNever ? f * w : static_cast<double>(beside_until - start);
  const double d = f * w <= window ? f * w : window + (w - window / f);
  return start + static_cast<Nanos>(std::llround(d));
}

// Unit i of n of work w is due at a + gamma (d - a) (i + 1) / n (§4.1).
static Nanos due_of(const Work& w, std::uint32_t i, double gamma) {
  if (w.deadline == kNever) return kNever;
  const double span = gamma * static_cast<double>(w.deadline - w.announced);
  const double n = static_cast<double>(w.units.size());
  return w.announced + static_cast<Nanos>(span * static_cast<double>(i + 1) / n);
}

Nanos EngineState::due_time(std::uint32_t k, double gamma) const { return due_of(*queue.front(), cursor + k, gamma); }

Nanos EngineState::granted_due(double gamma) const {
  if (!has_work() || cursor == 0) return kNever;
  return due_of(*queue.front(), cursor - 1, gamma);
}

std::optional<Nanos> Context::slot(const EngineState& e) const {
  const auto own = own_slot(e);
  if (!own) return own;
  const Nanos link = link_free(e);
  if (link == kNever) return std::nullopt;  // the link frees at a Done, not at a known time
  return std::max(*own, link);
}

// A started host-byte grant past its predicted end (link_running_until, at or before now)
// still holds the link: it runs late, and it ends at its Done. One not started holds
// nothing yet (an engine gone idle may never start it: it expires).
static bool link_late(const EngineState& d, Nanos now) {
  return d.link_running_until > 0 && d.link_running_until <= now;
}

bool Context::holds_link_for(const EngineState& d, const EngineState& e) const {
  if (d.id == e.id || !d.connected || !on_link(d)) return false;
  if (!link_by_deadline || e.spec.kind == d.spec.kind) return true;
  if (e.spec.kind == EngineKind::kDeadlineBound) return false;  // a deadline never waits for best effort
  // e best-effort, d deadline-bound: d holds the link unless its granted units still end by
  // the due time of the last of them at half speed (two grants on the link at once).
  // kNever (nothing of its request granted, or no deadline) holds.
  const Nanos due = d.granted_due(gamma);
  return due == kNever || now + 2 * (std::max(d.link_until, now) - now) > due;
}

Nanos Context::link_free(const EngineState& e) const {
  if (!on_link(e) || !e.has_work() || e.unit(0).bytes < kLinkMinBytes) return 0;
  Nanos free = 0;
  for (const EngineState& d : engines) {
    if (!holds_link_for(d, e)) continue;
    if (link_late(d, now)) return kNever;
    if (d.link_until > now) free = std::max(free, d.link_until);
  }
  return free;
}

EngineId Context::link_holder(const EngineState& e) const {
  const Nanos free = link_free(e);
  for (const EngineState& d : engines)
    if (holds_link_for(d, e) && free > 0 &&
        (free == kNever ? link_late(d, now) : d.link_until == free))
      return d.id;
  return e.id;
}

std::optional<Nanos> Context::own_slot(const EngineState& e) const {
  if (!e.connected || e.handback_pending) return std::nullopt;
  if (e.outstanding == 0) return now + e.start_lag;
  if (e.outstanding == 1 && pipelining) return std::max(now, e.busy_until);
  return std::nullopt;
}

Status validate(const EngineSpec& spec) {
  if (spec.name.empty()) return make_error("engine: name is empty");
  if (spec.catalog.empty()) return make_error("engine {}: unit catalog is empty", spec.name);
  // An hour, the protocol's bound on a unit's duration (kMaxDurationNs): the predictions
  // add a grant's overhead to its units' durations, and a larger value wraps them.
  constexpr Nanos kMaxDuration = 3600 * pricing::kNsPerSec;
  for (std::size_t k = 0; k < spec.catalog.size(); ++k) {
    const UnitSpec& u = spec.catalog[k];
    if (u.bytes <= 0) return make_error("engine {}: unit {} ({}) has bytes {} <= 0", spec.name, k, u.name, u.bytes);
    if (u.duration <= 0 || u.duration > kMaxDuration)
      return make_error("engine {}: unit {} ({}) has duration {} ns outside (0, 1 h]", spec.name, k, u.name, u.duration);
  }
  if (spec.grant_overhead < 0 || spec.grant_overhead > kMaxDuration)
    return make_error("engine {}: grant overhead {} ns outside [0, 1 h]", spec.name, spec.grant_overhead);
  if (spec.kind == EngineKind::kDeadlineBound) {
    if (spec.period <= 0) return make_error("engine {}: deadline-bound engine needs a period > 0", spec.name);
    if (spec.deadline < 0 || spec.deadline > spec.period)
      return make_error("engine {}: deadline {} ns must be in (0, period {} ns]", spec.name, spec.deadline,
                        spec.period);
  }
  return Status::Ok();
}

}  // namespace ripple::admission
