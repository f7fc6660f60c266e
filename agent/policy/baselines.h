// The baseline policies of paper §5.1 and App. D, on the same admission framework as
// `ripple`, so every comparison is one run apart. None of them reads a deadline.
//
//   unmanaged  every announced forward pass is granted at once, pipelined.
//   pause      whole forward passes, none started while any PT job is active; the
//              pass in flight runs on (SGLang's pause takes effect after it).
//   cap-x      whole forward passes; each active job accumulates exposure while any
//              engine is commanded to run; once any active job has spent x times its
//              task's solo median, no further pass starts until it completes
//              (x in {1/8, 1/4, 1/2}).
//   sigamma    GPU work suppressed while a PT job is active, at the finest
//              granularity there is (one unit: the blocking kernel preempts within a
//              kernel); one unit per grant otherwise.
//   sereno     the best-effort engine is paused between decode steps for a time set
//              by a PI controller on its contention score (step time / solo median - 1)
//              against a target (0.07 UI-First, 0.15 Balanced); deadline-bound
//              engines run unmanaged.
//
// Not a paper baseline, a known load for checks (the interposer's "with a grant pace
// imposed, the engine's byte rate follows it"):
//
//   pace-R     every engine's units granted whatever the PT jobs (like unmanaged,
//              pipelined), but no faster than R GB/s of granted bytes summed over all
//              engines: a token bucket of one grant's worth at the pace, R x H bytes
//              (H the horizon, the longest grant). A grant is the longest run of the
//              next units the bucket covers; a unit larger than the bucket is granted
//              alone once the bucket is full and its debt is paid off before the next
//              grant. Engines take turns, least recently granted first; the others
//              wait behind the one in line, so none starves.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/admission/policy.h"

namespace ripple::policy {

using admission::Bytes;
using admission::Context;
using admission::EngineState;
using admission::GrantPlan;
using admission::Nanos;
using admission::Pick;
using admission::Policy;

class UnmanagedPolicy final : public Policy {
 public:
  std::string_view name() const override { return "unmanaged"; }
  bool pipelines() const override { return true; }
  Pick pick(const Context& ctx) override;
};

class PausePolicy final : public Policy {
 public:
  std::string_view name() const override { return "pause"; }
  Pick pick(const Context& ctx) override;
};

class CapPolicy final : public Policy {
 public:
  // `fraction` is x; the name is "cap-1/8" etc.
  CapPolicy(double fraction, std::string name);
  std::string_view name() const override { return name_; }
  Pick pick(const Context& ctx) override;
  void on_release(admission::TaskId task, admission::JobSeq seq, Nanos now) override;
  void on_complete(admission::TaskId task, admission::JobSeq seq, Nanos now) override;
  // Exposure of an active job so far (tests, status).
  Nanos exposure(admission::TaskId task, admission::JobSeq seq) const;
  // x times the task's solo median: the profile's median, else the fitted intercept.
  static Nanos budget_of(const pricing::Estimator& task, double fraction);

 private:
  void advance(Nanos now);
  double fraction_;
  std::string name_;
  struct Job {
    Nanos exposure = 0;
  };
  std::map<std::pair<admission::TaskId, admission::JobSeq>, Job> jobs_;
  bool running_ = false;
  Nanos last_ = 0;
};

class SigammaPolicy final : public Policy {
 public:
  std::string_view name() const override { return "sigamma"; }
  Pick pick(const Context& ctx) override;
};

struct SerenoParams {
  double target = 0.15;       // contention target (Balanced; UI-First 0.07)
  double kp = 1.0;            // pause per unit error, in solo step times
  double ki = 0.25;           // per accumulated unit error, in solo step times
  double max_pause_steps = 20;  // pause cap, in solo step times
};

class SerenoPolicy final : public Policy {
 public:
  SerenoPolicy(SerenoParams params, std::string name);
  std::string_view name() const override { return name_; }
  Pick pick(const Context& ctx) override;
  void on_grant_done(const EngineState& e, const GrantPlan& g, Nanos measured, Nanos profiled,
                     Nanos now) override;
  // When the engine may start its next step (tests, status).
  Nanos resume_at(admission::EngineId engine) const;

 private:
  SerenoParams p_;
  std::string name_;
  struct Loop {
    double integral = 0;
    Nanos resume_at = 0;
  };
  std::map<admission::EngineId, Loop> loops_;
};

class PacePolicy final : public Policy {
 public:
  // `gbps` is R, in [kMinGbps, kMaxGbps]; the name is "pace-2" etc.
  static constexpr double kMinGbps = 1e-6;  // 1 KB/s: one byte per ms
  static constexpr double kMaxGbps = 1e6;
  PacePolicy(double gbps, std::string name);
  std::string_view name() const override { return name_; }
  bool pipelines() const override { return true; }
  Pick pick(const Context& ctx) override;
  double gbps() const { return gbps_; }
  // The pace in bytes per ms (R GB/s = R x 1e6 B/ms), rounded to a whole byte.
  std::int64_t bytes_per_ms() const { return rate_; }
  // The bucket's content at the last pick, in bytes (negative: a debt), and its size.
  Bytes tokens() const;
  Bytes burst() const;

 private:
  using Wide = __int128;
  double gbps_;
  std::string name_;
  std::int64_t rate_;  // bytes per ms
  // The bucket as a virtual time: it held nothing at v_ / rate_ ns, and fills at
  // rate_ bytes per ms since, up to rate_ x H. Kept exact: times in ns x rate_, bytes
  // in B x 1e6 (both are ns x B/ms), so no rounding drifts over a long run.
  bool started_ = false;
  Wide v_ = 0;
  Wide now_scaled_ = 0, full_scaled_ = 0;  // at the last pick
  std::uint64_t served_seq_ = 0;
  std::map<admission::EngineId, std::uint64_t> served_;  // last grant's turn, per engine
};

}  // namespace ripple::policy
