// cap-x: whole forward passes; each active job accumulates exposure while any
// engine is commanded to run; once any active job has spent x times its
// task's solo median, no further pass starts until it completes
// (x in {1/8, 1/4, 1/2}).
#pragma once

#include <map>
#include <utility>

#include "agent/policy/base.h"

namespace ripple::policy {

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

}  // namespace ripple::policy
