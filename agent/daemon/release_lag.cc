#include "agent/daemon/release_lag.h"

#include <algorithm>

namespace ripple::daemon {

ReleaseLag::Nanos ReleaseLag::on_release(pid_t tid, Nanos at, bool no_wakeup) {
  Nanos release = at;
  if (no_wakeup) {
    if (auto it = last_.find(tid); it != last_.end()) release = std::min(at, it->second + period_);
  }
  if (last_.size() >= kPruneAbove && !last_.contains(tid)) {
    const Nanos stale = at - kForgetPeriods * period_;
    std::erase_if(last_, [stale](const auto& kv) { return kv.second < stale; });
  }
  last_[tid] = release;
  return at - release;
}

}  // namespace ripple::daemon
