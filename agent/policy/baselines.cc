#include "agent/policy/baselines.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "agent/common/status.h"

namespace ripple::policy {

using admission::EngineKind;
using admission::kNever;
using admission::WaitCause;
using admission::WaitReason;

namespace {

// Shared shape of the baselines: walk the engines, grant the first one `allow` lets
// through (with `count` units), record why the others wait.
template <class Allow, class Count>
Pick first_allowed(const Context& ctx, Allow allow, Count count) {
  Pick out;
  for (const EngineState& e : ctx.engines) {
    if (!e.connected) continue;
    if (!e.has_work()) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kNoWork, 0, 0, kNever, "nothing announced"});
      continue;
    }
    if (!ctx.slot(e)) {
      out.waits.emplace_back(e.id, WaitReason{WaitCause::kBoundary, e.bytes_of(1), 0, e.busy_until,
                                              "waits for the grant in flight to end"});
      continue;
    }
    WaitReason why{WaitCause::kPaused, e.bytes_of(1), 0, kNever, {}};
    if (allow(e, why)) {
      out.engine = e.id;
      out.count = count(e);
      return out;
    }
    out.wake_at = std::min(out.wake_at, why.until);
    out.waits.emplace_back(e.id, std::move(why));
  }
  return out;
}

std::uint32_t whole_pass(const EngineState& e) { return e.remaining(); }

std::string active_jobs_line(const Context& ctx) {
  return fmt::format("paused: {} PT job(s) active", ctx.ledger.active_jobs().size());
}

}  // namespace

Pick UnmanagedPolicy::pick(const Context& ctx) {
  return first_allowed(ctx, [](const EngineState&, WaitReason&) { return true; }, whole_pass);
}

Pick PausePolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (!ctx.any_job_active()) return true;
        why.detail = active_jobs_line(ctx);
        return false;
      },
      whole_pass);
}

Pick SigammaPolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (!ctx.any_job_active()) return true;
        why.detail = "suppressed: " + active_jobs_line(ctx);
        return false;
      },
      [](const EngineState&) { return 1u; });
}

// --- cap-x -------------------------------------------------------------------

CapPolicy::CapPolicy(double fraction, std::string name) : fraction_(fraction), name_(std::move(name)) {}

Nanos CapPolicy::budget_of(const pricing::Estimator& task, double fraction) {
  std::vector<Nanos> solo = task.spec().solo_profile;
  double median = 0;
  if (!solo.empty()) {
    std::sort(solo.begin(), solo.end());
    median = static_cast<double>(solo[(solo.size() - 1) / 2]);
  } else if (task.fit().has_data()) {
    median = task.intercept();
  } else {
    median = static_cast<double>(task.spec().deadline);  // nothing known yet
  }
  return static_cast<Nanos>(fraction * median);
}

void CapPolicy::advance(Nanos now) {
  // Exposure accumulates while the job is active and the engines are commanded to run.
  if (running_ && now > last_)
    for (auto& [key, job] : jobs_) job.exposure += now - last_;
  last_ = std::max(last_, now);
}

void CapPolicy::on_release(admission::TaskId task, admission::JobSeq seq, Nanos now) {
  advance(now);
  jobs_[{task, seq}] = Job{};
}

void CapPolicy::on_complete(admission::TaskId task, admission::JobSeq seq, Nanos now) {
  advance(now);
  jobs_.erase({task, seq});
}

Nanos CapPolicy::exposure(admission::TaskId task, admission::JobSeq seq) const {
  auto it = jobs_.find({task, seq});
  return it == jobs_.end() ? 0 : it->second.exposure;
}

Pick CapPolicy::pick(const Context& ctx) {
  advance(ctx.now);
  const pricing::JobAccount* spent = nullptr;
  for (const auto& j : ctx.ledger.active_jobs()) {
    const Nanos cap = budget_of(*j.task, fraction_);
    if (exposure(j.key.task, j.key.seq) >= cap) {
      spent = &j;
      break;
    }
  }
  Pick out = first_allowed(
      ctx,
      [&](const EngineState&, WaitReason& why) {
        if (spent == nullptr) return true;
        why.detail = fmt::format("paused: job {} of {} spent its exposure cap {:.3f} ms", spent->key.seq,
                                 spent->task->spec().name,
                                 static_cast<double>(budget_of(*spent->task, fraction_)) / 1e6);
        return false;
      },
      whole_pass);
  bool running = out.engine.has_value();
  for (const EngineState& e : ctx.engines) running = running || (e.connected && e.outstanding > 0);
  running_ = running;
  return out;
}

// --- sereno ------------------------------------------------------------------

SerenoPolicy::SerenoPolicy(SerenoParams params, std::string name) : p_(params), name_(std::move(name)) {}

Nanos SerenoPolicy::resume_at(admission::EngineId engine) const {
  auto it = loops_.find(engine);
  return it == loops_.end() ? 0 : it->second.resume_at;
}

void SerenoPolicy::on_grant_done(const EngineState& e, const GrantPlan& g, Nanos measured, Nanos profiled,
                                 Nanos now) {
  if (e.spec.kind != EngineKind::kBestEffort || profiled <= 0) return;
  // The contention score compares the step time with its solo median (App. D).
  const double score = static_cast<double>(measured) / static_cast<double>(profiled) - 1.0;
  const double err = score - p_.target;
  Loop& loop = loops_[e.id];
  loop.integral = std::max(0.0, loop.integral + err);  // no wind-up below zero
  const double steps = std::clamp(p_.kp * err + p_.ki * loop.integral, 0.0, p_.max_pause_steps);
  loop.resume_at = now + static_cast<Nanos>(std::llround(steps * static_cast<double>(profiled)));
  (void)g;
}

Pick SerenoPolicy::pick(const Context& ctx) {
  return first_allowed(
      ctx,
      [&](const EngineState& e, WaitReason& why) {
        if (e.spec.kind != EngineKind::kBestEffort) return true;
        const Nanos resume = resume_at(e.id);
        if (resume <= ctx.now) return true;
        why.until = resume;
        why.detail = fmt::format("paused between steps by the PI controller for {:.3f} ms",
                                 static_cast<double>(resume - ctx.now) / 1e6);
        return false;
      },
      whole_pass);
}

// --- pace-R ------------------------------------------------------------------

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
