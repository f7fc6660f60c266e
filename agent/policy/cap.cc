#include "agent/policy/cap.h"

#include <vector>

namespace ripple::policy {

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

}  // namespace ripple::policy
