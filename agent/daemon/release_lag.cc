#include "agent/daemon/release_lag.h"

namespace ripple::daemon {

ReleaseLag::Nanos ReleaseLag::on_release(pid_t tid, Nanos at, bool no_wakeup) {
  Nanos release = at;
  if (auto it = last_.find(tid); it != last_.end()) {
    const Chain& c = it->second;
    const bool slept = !no_wakeup && (c.completed < 0 || at - c.completed >= short_wait());
    if (!slept) release = std::min(at, c.release + period_);
  }
  if (last_.size() >= kPruneAbove && !last_.contains(tid)) {
    const Nanos stale = at - kForgetPeriods * period_;
    std::erase_if(last_, [stale](const auto& kv) { return kv.second.release < stale; });
  }
  last_[tid] = Chain{release, -1};
  return at - release;
}

void ReleaseLag::on_complete(pid_t tid, Nanos at) {
  if (auto it = last_.find(tid); it != last_.end()) it->second.completed = at;
}

}  // namespace ripple::daemon
