// The pass learners of the interposer (Documentation/cuhook.md, "Pass learning"): pure
// code, no driver, no lock, no clock of their own, so they are unit-tested alone
// (tests/unit/cuhook_pass_learner_test.cc). The runtime feeds them the labels of the
// boundaries it sees and builds the catalog from what they learn.
//
// LabelPassLearner (NVTX units without a profile sequence): the pass is the labels from
// one occurrence of the first label to the next, learned once the same sequence is seen
// twice in a row.
//
// CopyPassLearner (bare copies and graph launches, no NVTX or API units): labels repeat
// inside a pass, so the pass is the shortest period p such that the last
// max(2p, min_window) labels repeat with period p; its phase starts at the label with the
// most kernel launches before it. Its clock is the engine's kernel-launch count, passed
// in with each label.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ripple::cuhook {

class LabelPassLearner {
 public:
  // `max_len`: the longest pass (a work's unit limit).
  explicit LabelPassLearner(std::size_t max_len) : max_len_(max_len) {}
  // One boundary's label. When it closes the second equal pass in a row, `learn` is
  // called with that pass; it returns whether the pass was learned (then the learner
  // starts afresh: restart()) or refused (the candidates stay).
  void observe(const std::string& label, const std::function<bool(const std::vector<std::string>&)>& learn);
  // Learn again, waiting for `first` (a pass most likely still begins where it did; empty:
  // from the next label) for at most max_len labels.
  void restart(const std::string& first);

 private:
  std::size_t max_len_;
  std::string first_;
  std::size_t skipped_ = 0;  // labels seen while waiting for first_
  std::vector<std::string> cand_, prev_cand_;
};

class CopyPassLearner {
 public:
  static constexpr std::size_t kMinWindow = 8;      // labels a pass must repeat over, at least
  static constexpr std::size_t kMaxLabels = 16384;  // distinct labels interned, at most
  // `max_pass`: the longest period (a work's unit limit).
  explicit CopyPassLearner(std::size_t max_pass) : max_pass_(max_pass), ring_(2 * max_pass + 1) {}

  struct Learned {
    std::vector<std::uint32_t> ids;  // the pass, as label ids (name(), bytes())
    std::size_t cur = 0;             // the position in it of the label just recorded
  };
  // Records a boundary: its label ("h2d-BYTES", "d2h-BYTES", "graph"), bytes and the
  // engine's kernel launches so far. `learning`: no pass is learned now (the runs are
  // kept up); else call rebuild() when the learned pass is dropped.
  void record(const std::string& label, std::uint64_t bytes, std::uint64_t launches, bool learning);
  // The run lengths from the history, after a learned pass was dropped.
  void rebuild();
  // The shortest period the history ends with, if any.
  std::optional<Learned> try_learn() const;

  const std::string& name(std::uint32_t id) const { return names_[id]; }
  std::uint64_t bytes(std::uint32_t id) const { return bytes_[id]; }
  // The history starts over (kept: the labels interned, the window).
  void restart();
  // A pass dropped soon after it was learned: more repetitions needed (up to 2 max_pass).
  void widen_window() { min_window_ = std::min(2 * min_window_, 2 * max_pass_); }
  // A pass that lived long: back to kMinWindow.
  void reset_window() { min_window_ = kMinWindow; }
  std::size_t min_window() const { return min_window_; }
  // Frees the history (bare copies are not learned any more).
  void clear();

 private:
  std::size_t threshold(std::size_t p) const { return std::max(p, min_window_ > p ? min_window_ - p : 0); }
  void update_runs();

  std::size_t max_pass_, ring_;
  std::size_t min_window_ = kMinWindow;
  std::uint64_t n_ = 0;  // labels in the history
  std::uint64_t last_launches_ = 0;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::uint32_t last_id_ = UINT32_MAX;  // the last label's id (checked against names_)
  std::vector<std::string> names_;
  std::vector<std::uint64_t> bytes_;
  // The last ring_ labels and the launches before each; run_[p]: how many labels in a
  // row equal the label p before them.
  std::vector<std::uint32_t> hist_, run_;
  std::vector<std::uint64_t> gap_;
};

// --- whole-pass works spanning several passes ---------------------------------------
// A learned pass's work costs one announce -> decide -> grant round trip at its first unit
// (the agent delivers successor grants ahead only inside a work). A short pass (llama.cpp
// decoding a small model: one graph launch and two copies, ~1 ms a token) paid it every
// pass. So a work spans n passes, n = clamp(ceil(min_work_ns / period), 1, limit): the
// round trip is paid once per min_work_ns of the engine's time. A pass at least
// min_work_ns long keeps one pass a work.

// The pass period in wall time: the median of the last kIntervals intervals between pass
// starts (a median: one idle gap between requests does not make the pass look long).
// No clock of its own: the caller passes the time of each pass start.
class PassPeriod {
 public:
  static constexpr std::size_t kIntervals = 8;
  void pass_started(std::uint64_t now_ns);
  // 0 until an interval was seen.
  std::uint64_t period_ns() const;
  void reset() { last_ns_ = 0, intervals_.clear(), next_ = 0; }

 private:
  std::uint64_t last_ns_ = 0;
  std::vector<std::uint64_t> intervals_;  // a ring of up to kIntervals
  std::size_t next_ = 0;
};

// Passes a work spans: ceil(min_work_ns / period_ns), at least 1, and at most what fits
// `max_units` positions when the work starts with `first_units` (the rest of the pass it
// opens in) and each further pass takes `pass_units`. 1 when min_work_ns is 0 (off), the
// period is unknown (0), or the pass is not `stable` yet (matched many times in a row: a
// pass dropped soon after it was learned, such as a layer pass before the whole forward
// pass is learned, would drain the rest of a long work, all charged and never run).
std::size_t passes_per_work(std::uint64_t min_work_ns, std::uint64_t period_ns, bool stable, std::size_t first_units,
                            std::size_t pass_units, std::size_t max_units);

}  // namespace ripple::cuhook
