#include "agent/policy/pace.h"

#include <cmath>

#include "ripple/status.h"

namespace ripple::policy {

namespace {

constexpr std::int64_t kScale = 1'000'000;  // bytes -> ns x B/ms: a byte costs 1e6 / rate ns

// Smallest integer >= a / b, for b > 0 and any sign of a.
__int128 ceil_div(__int128 a, __int128 b) { return a >= 0 ? (a + b - 1) / b : a / b; }

}  // namespace

PacePolicy::PacePolicy(double gbps, std::string name)
    : gbps_(gbps), name_(std::move(name)), rate_(std::max<std::int64_t>(1, std::llround(gbps * 1e6))) {
  RIPPLE_CHECK(gbps >= kMinGbps && gbps <= kMaxGbps);
}

Bytes PacePolicy::tokens() const {
  if (!started_) return 0;
  const Wide t = now_scaled_ - v_;
  return static_cast<Bytes>(t >= 0 ? t / kScale : -ceil_div(-t, kScale));
}

Bytes PacePolicy::burst() const { return static_cast<Bytes>(full_scaled_ / kScale); }

void PacePolicy::on_grant_refunded(const EngineState& /*e*/, const GrantPlan& g, Nanos /*now*/) {
  // As if never granted; the next pick caps the bucket at its size again.
  if (started_) v_ -= static_cast<Wide>(g.bytes) * kScale;
}

Pick PacePolicy::pick(const Context& ctx) {
  Pick out;
  // The bucket holds at most one grant's worth at the pace: R x H.
  now_scaled_ = static_cast<Wide>(ctx.now) * rate_;
  full_scaled_ = static_cast<Wide>(ctx.horizon) * rate_;
  v_ = started_ ? std::max(v_, now_scaled_ - full_scaled_) : now_scaled_ - full_scaled_;  // starts full
  started_ = true;
  const Wide have = now_scaled_ - v_;  // the bucket now, in B x 1e6
  const bool full = have >= full_scaled_;

  // In line: the engine with work and a free slot granted least recently.
  const EngineState* head = nullptr;
  auto turn = [&](const EngineState& e) {
    auto it = served_.find(e.id);
    return it == served_.end() ? 0 : it->second;
  };
  for (const EngineState& e : ctx.engines) {
    if (!e.connected) continue;
    if (!e.has_work()) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kNoWork, 0, 0, kNever, {}});
      continue;
    }
    if (!ctx.slot(e)) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kSlotsFull, e.bytes_of(1), 0, e.busy_until, {}});
      continue;
    }
    if (head == nullptr || turn(e) < turn(*head)) head = &e;
  }
  if (head == nullptr) return out;

  // The longest run of its next units the bucket covers; a unit larger than the
  // whole bucket alone once the bucket is full (it then owes the difference).
  std::uint32_t n = 0;
  Bytes bytes = 0;
  for (std::uint32_t k = 0; k < head->remaining(); ++k) {
    const Bytes b = bytes + head->unit(k).bytes;
    if (static_cast<Wide>(b) * kScale > have) break;
    bytes = b;
    ++n;
  }
  const Bytes next = head->unit(0).bytes;
  const Wide need = std::min(static_cast<Wide>(next) * kScale, full_scaled_);
  if (n == 0 && full && static_cast<Wide>(next) * kScale > full_scaled_) {
    n = 1;
    bytes = next;
  }
  if (n > 0) {
    v_ += static_cast<Wide>(bytes) * kScale;
    served_[head->id] = ++served_seq_;
    out.engine = head->id;
    out.count = n;
    return out;
  }

  // Nothing covered: everyone waits until the bucket holds the next unit (or is full).
  const Nanos until = static_cast<Nanos>(ceil_div(v_ + need, rate_));
  RIPPLE_CHECK(until > ctx.now);
  out.wake_at = until;
  const Bytes burst_bytes = burst();
  WaitReason why{WaitCause::kBudget, next, tokens(), until, {}};
  why.detail = fmt::format(
      "waits for the grant pace of {:g} GB/s over all engines: bucket {} B of {} B, next unit {} B{}", gbps_,
      why.budget, burst_bytes, next,
      next > burst_bytes ? " (larger than the bucket: granted when it is full)"
                         : (why.budget < 0 ? " (paying off an oversized grant)" : ""));
  for (const EngineState& e : ctx.engines) {
    if (!e.connected || !e.has_work() || !ctx.slot(e)) continue;
    if (&e == head) {
      out.waits.emplace_back(e.id, why);
    } else {
      out.waits.emplace_back(
          e.id, WaitReason{WaitCause::kBudget, e.bytes_of(1), why.budget, until,
                           fmt::format("waits for the grant pace of {:g} GB/s over all engines: behind engine {} "
                                       "({}), next in line",
                                       gbps_, head->spec.name, head->id)});
    }
  }
  return out;
}

}  // namespace ripple::policy
