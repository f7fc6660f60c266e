// The interposer's pass learners (cuhooks/pass_learner.h): pure, no driver, no clock but
// the launch counts the test passes in.
#include "cuhooks/pass_learner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ripple::cuhook {
namespace {

using Labels = std::vector<std::string>;

// Feeds `labels` to `l`; returns every pass `learn` was called with, and at which input.
struct Feed {
  std::vector<Labels> passes;
  std::vector<std::size_t> at;
  bool accept = true;
  void run(LabelPassLearner& l, const Labels& labels) {
    for (const auto& s : labels) {
      l.observe(s, [&](const Labels& p) {
        passes.push_back(p);
        at.push_back(seen);
        return accept;
      });
      ++seen;
    }
  }
  std::size_t seen = 0;
};

// Tests that an NVTX pass is learned at the first label of its third occurrence (the same
// sequence twice in a row), and not before.
TEST(LabelPassLearner, LearnsThePassSeenTwiceInARow) {
  LabelPassLearner l(64);
  Feed f;
  f.run(l, {"a", "b", "c", "a", "b", "c"});
  EXPECT_TRUE(f.passes.empty()) << "one pass and a half is no repetition yet";
  f.run(l, {"a"});
  ASSERT_EQ(f.passes.size(), 1u);
  EXPECT_EQ(f.passes[0], (Labels{"a", "b", "c"}));
  EXPECT_EQ(f.at[0], 6u);
}

// Tests that a pass that differs from the one before is not learned, and that the learner
// keeps comparing each pass with the one before it.
TEST(LabelPassLearner, UnequalPassesAreNotLearned) {
  LabelPassLearner l(64);
  Feed f;
  f.run(l, {"a", "b", "c", "a", "b", "d", "a", "b", "c", "a"});
  EXPECT_TRUE(f.passes.empty());
  f.run(l, {"b", "c", "a"});
  ASSERT_EQ(f.passes.size(), 1u);
  EXPECT_EQ(f.passes[0], (Labels{"a", "b", "c"}));
}

// Tests that a refused pass (the catalog is full) is offered again at the next pass, and
// that an accepted one starts the learner afresh.
TEST(LabelPassLearner, RefusedPassIsOfferedAgain) {
  LabelPassLearner l(64);
  Feed f;
  f.accept = false;
  f.run(l, {"a", "b", "a", "b", "a", "b", "a"});
  EXPECT_EQ(f.passes.size(), 2u) << "offered at the 3rd and 4th 'a'";
  f.accept = true;
  f.run(l, {"b", "a"});
  ASSERT_EQ(f.passes.size(), 3u);
  f.run(l, {"b", "a", "b", "a"});
  EXPECT_EQ(f.passes.size(), 3u) << "after learning, two new passes are needed";
  f.run(l, {"b", "a"});
  EXPECT_EQ(f.passes.size(), 4u);
}

// Tests that after restart(first) the learner waits for `first` (a pass still begins where
// it did), and gives up waiting after max_len labels.
TEST(LabelPassLearner, RestartWaitsForTheOldFirstLabel) {
  LabelPassLearner l(4);
  Feed f;
  l.restart("b");
  f.run(l, {"c", "a", "b", "c", "a", "b", "c", "a", "b"});
  ASSERT_EQ(f.passes.size(), 1u);
  EXPECT_EQ(f.passes[0], (Labels{"b", "c", "a"}));
  LabelPassLearner g(4);
  Feed h;
  g.restart("z");
  h.run(g, {"a", "b", "a", "b", "a", "b"});  // 'z' never comes: from the 5th label on
  h.run(g, {"a", "b", "a", "b", "a", "b", "a"});
  ASSERT_FALSE(h.passes.empty());
  EXPECT_EQ(h.passes[0].size(), 2u);
}

// Tests that a pass longer than max_len is never learned (a work cannot hold it).
TEST(LabelPassLearner, PassLongerThanAWorkIsNotLearned) {
  LabelPassLearner l(3);
  Feed f;
  for (int k = 0; k < 5; ++k) f.run(l, {"a", "b", "c", "d"});
  EXPECT_TRUE(f.passes.empty());
}

// A copy stream: each step a label, its bytes, and the kernel launches before it.
struct Step {
  std::string label;
  std::uint64_t launches_before;
};

// Feeds `pass` `reps` times (launch counter advancing); returns the first learned pass,
// as label names, and how many labels it took.
struct CopyFeed {
  CopyPassLearner l{64};
  std::uint64_t launches = 0;
  std::size_t fed = 0;
  std::optional<CopyPassLearner::Learned> learned;
  std::size_t learned_at = 0;
  void run(const std::vector<Step>& pass, int reps) {
    for (int r = 0; r < reps && !learned; ++r)
      for (const Step& s : pass) {
        launches += s.launches_before;
        l.record(s.label, std::stoull(s.label.substr(4)), launches, true);
        ++fed;
        if (auto got = l.try_learn()) {
          learned = got;
          learned_at = fed;
          return;
        }
      }
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (auto id : learned->ids) v.push_back(l.name(id));
    return v;
  }
};

// Tests that a periodic copy stream is learned once the last max(2p, 8) labels repeat with
// period p, and that the pass starts at the copy after the most kernel launches (a
// layer's first copy after the previous layer's kernels).
TEST(CopyPassLearner, LearnsThePeriodAndPhaseFromLaunches) {
  CopyFeed f;
  // Three copies per layer; the layer's kernels run before the next layer's first copy.
  f.run({{"h2d-300", 2}, {"h2d-100", 20}, {"h2d-200", 1}}, 10);
  ASSERT_TRUE(f.learned);
  EXPECT_EQ(f.learned_at, 8u) << "period 3: 3 labels, then 5 more repeating them (max(3, 8 - 3))";
  EXPECT_EQ(f.names(), (std::vector<std::string>{"h2d-100", "h2d-200", "h2d-300"}));
  // The label just recorded (the 8th, h2d-100) is position 0 of the pass.
  EXPECT_EQ(f.learned->cur, 0u);
  EXPECT_EQ(f.l.bytes(f.learned->ids[0]), 100u);
}

// Tests that equal copies in a row are no pass of one copy until they repeat over the
// whole window (three equal MLP copies are not a pass).
TEST(CopyPassLearner, ShortRunsAreNoPass) {
  CopyFeed f;
  f.run({{"h2d-64", 1}, {"h2d-64", 1}, {"h2d-64", 1}, {"h2d-8", 5}}, 1);
  EXPECT_FALSE(f.learned);
  CopyFeed g;
  g.run({{"h2d-64", 1}}, 8);
  ASSERT_TRUE(g.learned) << "period 1 needs 1 + 7 equal labels";
  EXPECT_EQ(g.learned_at, 8u);
  EXPECT_EQ(g.learned->ids.size(), 1u);
}

// Tests that the launches before a device-to-host copy count for the copy after it: a
// pass that ends with its read-back starts at the next pass's first host-to-device copy.
TEST(CopyPassLearner, ReadBackEndsThePass) {
  CopyFeed f;
  f.run({{"h2d-10", 0}, {"h2d-20", 3}, {"d2h-30", 30}}, 10);
  ASSERT_TRUE(f.learned);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"h2d-10", "h2d-20", "d2h-30"}));
}

// Tests that a widened window needs more repetitions, restart() forgets the history, and
// reset_window() goes back to kMinWindow.
TEST(CopyPassLearner, WindowAndRestart) {
  CopyFeed f;
  f.l.widen_window();
  EXPECT_EQ(f.l.min_window(), 16u);
  f.run({{"h2d-1", 1}, {"h2d-2", 9}}, 20);
  ASSERT_TRUE(f.learned);
  EXPECT_EQ(f.learned_at, 16u) << "period 2 over a window of 16: 2 + 14";
  f.l.restart();
  f.learned.reset();
  f.fed = 0;
  f.l.reset_window();
  f.run({{"h2d-1", 1}, {"h2d-2", 9}}, 20);
  ASSERT_TRUE(f.learned);
  EXPECT_EQ(f.learned_at, 8u) << "history forgotten, window back to 8";
}

// Tests that rebuild() recomputes the runs from the history after a learned pass was
// followed (runs not kept up): a stream that left the pass is no pass any more, and one
// that followed it is found again at once.
TEST(CopyPassLearner, RebuildRecomputesTheRuns) {
  CopyFeed f;
  f.run({{"h2d-1", 1}, {"h2d-2", 9}}, 10);
  ASSERT_TRUE(f.learned);
  for (int k = 0; k < 3; ++k) f.l.record("h2d-9", 9, 200 + k, false);  // off the pass
  EXPECT_TRUE(f.l.try_learn()) << "stale runs (not kept up while a pass is learned) still say period 2";
  f.l.rebuild();
  EXPECT_FALSE(f.l.try_learn()) << "rebuilt: three equal labels are no pass";
  CopyFeed g;
  g.run({{"h2d-1", 1}, {"h2d-2", 9}}, 10);
  ASSERT_TRUE(g.learned);
  for (int k = 0; k < 4; ++k) g.l.record(k % 2 ? "h2d-2" : "h2d-1", 1, 100 + k, false);  // followed the pass
  g.l.rebuild();
  auto again = g.l.try_learn();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->ids.size(), 2u);
}

// Tests that a label repeated right after the label table started over (kMaxLabels
// distinct sizes) is its own label: record() checks the label before it first (no hash
// for a repeated label), and that id then names another label.
TEST(CopyPassLearner, RepeatedLabelAfterTheTableStartsOver) {
  CopyPassLearner l{64};
  std::uint64_t launches = 0;
  for (std::uint64_t i = 0; i <= CopyPassLearner::kMaxLabels; ++i)  // the last one starts it over
    l.record("h2d-" + std::to_string(100000 + i), 100000 + i, ++launches, true);
  for (int k = 0; k < 8; ++k) l.record("d2h-7", 7, ++launches, true);
  auto got = l.try_learn();
  ASSERT_TRUE(got);
  ASSERT_EQ(got->ids.size(), 1u);
  EXPECT_EQ(l.name(got->ids[0]), "d2h-7");
  EXPECT_EQ(l.bytes(got->ids[0]), 7u);
}

constexpr std::uint64_t kMs = 1'000'000;

// Tests that a work spans ceil(min_work / period) passes: a ~1 ms llama.cpp token gets
// 10 a work, a pass of min_work or longer (ripple-llm: ~0.7 s a token) keeps one, and
// off (0), an unknown period or a pass not yet stable keeps one.
TEST(PassesPerWork, FollowsThePeriod) {
  EXPECT_EQ(passes_per_work(10 * kMs, 1 * kMs, true, 3, 3, 4096), 10u);
  EXPECT_EQ(passes_per_work(10 * kMs, 950'000, true, 3, 3, 4096), 11u) << "rounded up: at least min_work";
  EXPECT_EQ(passes_per_work(10 * kMs, 3 * kMs, true, 3, 3, 4096), 4u);
  EXPECT_EQ(passes_per_work(10 * kMs, 10 * kMs, true, 3, 3, 4096), 1u);
  EXPECT_EQ(passes_per_work(10 * kMs, 12 * kMs, true, 1, 1, 4096), 1u);
  EXPECT_EQ(passes_per_work(10 * kMs, 700 * kMs, true, 814, 814, 4096), 1u);
  EXPECT_EQ(passes_per_work(0, 1 * kMs, true, 3, 3, 4096), 1u) << "off";
  EXPECT_EQ(passes_per_work(10 * kMs, 0, true, 3, 3, 4096), 1u) << "period not known yet";
  EXPECT_EQ(passes_per_work(10 * kMs, 1 * kMs, false, 3, 3, 4096), 1u) << "pass not stable yet";
}

// Tests that the passes of a work never exceed the work's position limit, counting the
// rest of the pass the work opens in, and that a pass too long for two keeps one.
TEST(PassesPerWork, StaysWithinTheWorkLimit) {
  const std::size_t n = passes_per_work(10 * kMs, 1'000, true, 2, 3, 4096);  // 1 us a pass: 10,000 wanted
  EXPECT_EQ(n, 1365u);
  EXPECT_LE(2 + (n - 1) * 3, 4096u);
  EXPECT_GT(2 + n * 3, 4096u) << "one more pass would not fit";
  EXPECT_EQ(passes_per_work(10 * kMs, 1'000, true, 1, 1, 4096), 4096u);
  EXPECT_EQ(passes_per_work(10 * kMs, 1 * kMs, true, 3000, 3000, 4096), 1u) << "two passes do not fit";
  EXPECT_EQ(passes_per_work(10 * kMs, 1 * kMs, true, 4096, 4096, 4096), 1u);
  EXPECT_EQ(passes_per_work(10 * kMs, 1 * kMs, true, 5000, 5000, 4096), 1u) << "more than a work: still one";
}

// Tests that the period is the median of the recent intervals between pass starts:
// unknown until two starts, unmoved by one idle gap between requests, following a
// changed pace, and unknown again after reset().
TEST(PassPeriod, IsTheMedianOfRecentIntervals) {
  PassPeriod p;
  EXPECT_EQ(p.period_ns(), 0u);
  std::uint64_t t = 100 * kMs;
  p.pass_started(t);
  EXPECT_EQ(p.period_ns(), 0u) << "one start is no interval";
  for (int i = 0; i < 5; ++i) p.pass_started(t += kMs);
  EXPECT_EQ(p.period_ns(), kMs);
  p.pass_started(t += 5000 * kMs);  // idle between two requests
  EXPECT_EQ(p.period_ns(), kMs);
  for (int i = 0; i < 5; ++i) p.pass_started(t += 20 * kMs);  // a slower pace
  EXPECT_EQ(p.period_ns(), 20 * kMs) << "the last 8 intervals: 1 ms x2, the gap, 20 ms x5";
  p.pass_started(t);  // no time passed: no interval
  EXPECT_EQ(p.period_ns(), 20 * kMs);
  p.reset();
  EXPECT_EQ(p.period_ns(), 0u);
  p.pass_started(t += kMs);
  EXPECT_EQ(p.period_ns(), 0u);
}

}  // namespace
}  // namespace ripple::cuhook
