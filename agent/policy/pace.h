// Not a paper baseline, a known load for checks (the interposer's "with a grant pace
// imposed, the engine's byte rate follows it").
//
// pace-R: every engine's units granted whatever the PT jobs (like unmanaged,
// pipelined), but no faster than R GB/s of granted bytes summed over all
// engines: a token bucket of one grant's worth at the pace, R x H bytes
// (H the horizon, the longest grant). A grant is the longest run of the
// next units the bucket covers; a unit larger than the bucket is granted
// alone once the bucket is full and its debt is paid off before the next
// grant. Engines take turns, least recently granted first; the others
// wait behind the one in line, so none starves. A grant handed back unexecuted
// (a stale successor) is refunded to the bucket, as the ledger refunds it.
#pragma once

#include <map>

#include "agent/policy/base.h"

namespace ripple::policy {

class PacePolicy final : public Policy {
 public:
  // `gbps` is R, in [kMinGbps, kMaxGbps]; the name is "pace-2" etc.
  static constexpr double kMinGbps = 1e-6;  // 1 KB/s: one byte per ms
  static constexpr double kMaxGbps = 1e6;
  PacePolicy(double gbps, std::string name);
  std::string_view name() const override { return name_; }
  bool pipelines() const override { return true; }
  Pick pick(const Context& ctx) override;
  // A grant handed back unexecuted gives its bytes back to the bucket: they never moved,
  // so the pace would otherwise fall short of R by every discarded successor.
  void on_grant_refunded(const EngineState& e, const GrantPlan& g, Nanos now) override;
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
