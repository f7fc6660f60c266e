// The pass learners (cuhooks/pass_learner.h).
#include "cuhooks/pass_learner.h"

#include <algorithm>

namespace ripple::cuhook {

// --- LabelPassLearner ------------------------------------------------------------------
void LabelPassLearner::observe(const std::string& label,
                               const std::function<bool(const std::vector<std::string>&)>& learn) {
  if (first_.empty()) first_ = label;
  if (cand_.empty() && label != first_) {
    // Relearning: wait for the old pass's first label, unless it does not come back.
    if (++skipped_ <= max_len_) return;
    first_ = label;
  }
  skipped_ = 0;
  if (label == first_ && !cand_.empty()) {
    if (cand_ == prev_cand_ && learn(cand_)) {
      cand_.clear();
      prev_cand_.clear();
      return;
    }
    prev_cand_ = std::move(cand_);
    cand_.clear();
  }
  cand_.push_back(label);
  if (cand_.size() > max_len_) {
    // The first label did not come back within a work's length: start over from here.
    first_ = label;
    cand_.assign(1, label);
    prev_cand_.clear();
  }
}

void LabelPassLearner::restart(const std::string& first) {
  first_ = first;
  skipped_ = 0;
  cand_.clear();
  prev_cand_.clear();
}

// --- CopyPassLearner -------------------------------------------------------------------
void CopyPassLearner::restart() {
  n_ = 0;
  std::fill(run_.begin(), run_.end(), 0);
}

void CopyPassLearner::clear() {
  std::vector<std::uint32_t>().swap(hist_);
  std::vector<std::uint32_t>().swap(run_);
  std::vector<std::uint64_t>().swap(gap_);
  ids_.clear();
  names_.clear();
  bytes_.clear();
  n_ = 0;
}

void CopyPassLearner::record(const std::string& label, std::uint64_t bytes, std::uint64_t launches, bool learning) {
  // The launches since the last boundary that was no device-to-host copy: a pass ends
  // with its read-back, so the launches before one count for the copy after it.
  const std::uint64_t gap = launches - last_launches_;
  if (label.compare(0, 4, "d2h-") != 0) last_launches_ = launches;
  if (hist_.empty()) {  // at the first bare boundary: ~115 KB no other process pays for
    hist_.assign(ring_, 0);
    gap_.assign(ring_, 0);
    run_.assign(max_pass_ + 1, 0);
  }
  // The label before it first (a short pass repeats one label: no hash per boundary).
  std::uint32_t id = last_id_;
  if (id >= names_.size() || names_[id] != label) {
    auto it = ids_.find(label);
    if (it == ids_.end()) {
      if (names_.size() >= kMaxLabels) {  // ever new sizes (a growing cache): start over
        ids_.clear();
        names_.clear();
        bytes_.clear();
        restart();
      }
      it = ids_.emplace(label, static_cast<std::uint32_t>(names_.size())).first;
      names_.push_back(label);
      bytes_.push_back(bytes);
    }
    id = last_id_ = it->second;
  }
  const std::uint64_t n = n_++;
  hist_[n % ring_] = id;
  gap_[n % ring_] = gap;
  if (learning) update_runs();
}

// run_ for the label just recorded, from run_ for the one before (while learning).
void CopyPassLearner::update_runs() {
  const std::uint64_t n = n_ - 1;
  const std::uint32_t id = hist_[n % ring_];
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n, max_pass_));
  for (std::size_t p = 1; p <= pmax; ++p) run_[p] = hist_[(n - p) % ring_] == id ? run_[p] + 1 : 0;
}

// run_ from the history (after a learned pass, when it was not kept up): zero unless
// the label just recorded equals the one p before; those runs are counted back (up to
// what learning needs).
void CopyPassLearner::rebuild() {
  std::fill(run_.begin(), run_.end(), 0);
  if (n_ == 0) return;
  const std::uint64_t n = n_ - 1;
  const std::uint64_t oldest = n_ > ring_ ? n_ - ring_ : 0;
  const std::uint32_t id = hist_[n % ring_];
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n - oldest, max_pass_));
  for (std::size_t p = 1; p <= pmax; ++p) {
    if (hist_[(n - p) % ring_] != id) continue;
    const std::size_t cap = threshold(p);
    std::size_t run = 0;
    for (std::uint64_t t = n; run < cap && t >= oldest + p && hist_[t % ring_] == hist_[(t - p) % ring_]; --t) ++run;
    run_[p] = static_cast<std::uint32_t>(run);
  }
}

std::optional<CopyPassLearner::Learned> CopyPassLearner::try_learn() const {
  if (n_ == 0) return std::nullopt;
  const std::uint64_t n = n_ - 1;
  const std::size_t pmax = static_cast<std::size_t>(std::min<std::uint64_t>(n, max_pass_));
  std::size_t p = 0;
  for (std::size_t q = 1; q <= pmax && !p; ++q)
    if (run_[q] >= threshold(q)) p = q;
  if (!p) return std::nullopt;
  // The repetition began at a (the labels a .. n are p-periodic); the phase: the offset
  // with the most launches before it over the repetition (no device-to-host copy unless
  // all are), the first one on a tie.
  const std::uint64_t a = n + 1 - std::min<std::uint64_t>(run_[p], threshold(p)) - p;
  auto d2h = [&](std::uint64_t j) { return names_[hist_[j % ring_]].compare(0, 4, "d2h-") == 0; };
  bool any_start = false;
  for (std::size_t i = 0; i < p; ++i) any_start |= !d2h(a + i);
  std::vector<std::int64_t> sum(p, 0);
  for (std::uint64_t j = a; j <= n; ++j)
    sum[(j - a) % p] = any_start && d2h(j) ? -1 : sum[(j - a) % p] + static_cast<std::int64_t>(gap_[j % ring_]);
  const std::size_t r = static_cast<std::size_t>(std::max_element(sum.begin(), sum.end()) - sum.begin());
  Learned l;
  l.ids.resize(p);
  for (std::size_t i = 0; i < p; ++i) l.ids[i] = hist_[(a + r + i) % ring_];
  l.cur = static_cast<std::size_t>((n - a - r) % p);
  return l;
}

// --- whole-pass works spanning several passes ---------------------------------------
void PassPeriod::pass_started(std::uint64_t now_ns) {
  if (last_ns_ && now_ns > last_ns_) {
    if (intervals_.size() < kIntervals) intervals_.push_back(now_ns - last_ns_);
    else intervals_[next_] = now_ns - last_ns_;
    next_ = (next_ + 1) % kIntervals;
  }
  last_ns_ = now_ns;
}

std::uint64_t PassPeriod::period_ns() const {
  if (intervals_.empty()) return 0;
  std::vector<std::uint64_t> v = intervals_;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::size_t passes_per_work(std::uint64_t min_work_ns, std::uint64_t period_ns, bool stable, std::size_t first_units,
                            std::size_t pass_units, std::size_t max_units) {
  if (!min_work_ns || !period_ns || !stable || !pass_units || first_units >= max_units) return 1;
  const std::uint64_t want = (min_work_ns + period_ns - 1) / period_ns;
  const std::size_t fit = 1 + (max_units - first_units) / pass_units;
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(want, 1, fit));
}

}  // namespace ripple::cuhook
