// Deterministic closed-loop test of the pricing core on an emulated interference plant
// (a TEST DOUBLE, not a model of any device): CPU job time = a + kappa(t) * GPU bytes
// executed during the job + heavy-tailed noise, beside a greedy GPU engine that takes
// every byte the ledger admits. Simulated time, event by event; no clock, no threads.
//
// The same plant, engine and noise run twice: once under the real Ledger (which must
// learn kappa, a and the noise), once under an oracle ledger that knows kappa(t), a and
// the noise distribution and prices each job exactly (Eq. 2 with the true slope and the
// true (1 - eps') noise quantile), with the same pacing, floor, charging and crossing
// rules. Documentation/results/pricing.md reports the figures.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "agent/pricing/ledger.h"

namespace ripple::pricing {
namespace {

constexpr Nanos kMs = kNsPerMs;
constexpr double kRho = 200.0;             // engine rate and peak rate: 200 GB/s = 200 B/ns
constexpr Bytes kUnit = 100'000'000;       // one layer: 100 MB, 0.5 ms at 200 GB/s
constexpr int kMaxUnits = 36;              // grants up to H = 18 ms
constexpr double kNoiseScale = 0.8 * kMs;  // Student-t(3) residuals, scaled
constexpr Nanos kScore = 100 * kNsPerSec;

struct PlantTask {
  const char* name;
  Nanos period, offset, deadline;
  double a;      // interference-free duration, ns
  double kappa;  // mean slope, ns/byte
};

using Plant = std::vector<PlantTask>;

// Three Robotic1-like tasks (Costmap, KDNN, SGM at 10 Hz with staggered phases).
const Plant kRobotic = {
    {"costmap", 100 * kMs, 0, 70 * kMs, 40.0 * kMs, 3.0e-3},
    {"kdnn", 100 * kMs, 30 * kMs, 50 * kMs, 25.0 * kMs, 1.5e-3},
    {"sgm", 100 * kMs, 60 * kMs, 75 * kMs, 45.0 * kMs, 1.0e-3},
};
// The same with tighter KDNN and SGM deadlines and a steeper SGM: two tasks bind.
const Plant kTight = {
    {"costmap", 100 * kMs, 0, 70 * kMs, 40.0 * kMs, 3.0e-3},
    {"kdnn", 100 * kMs, 30 * kMs, 40 * kMs, 25.0 * kMs, 1.5e-3},
    {"sgm", 100 * kMs, 60 * kMs, 60 * kMs, 45.0 * kMs, 2.0e-3},
};

// kappa(t): +-20 % around the mean with a 40 s period: the estimator must keep up.
double kappa_at(const PlantTask& t, Nanos now) {
  return t.kappa * (1.0 + 0.2 * std::sin(2.0 * M_PI * static_cast<double>(now) / (40.0 * kNsPerSec)));
}

// Student-t(3) CDF, closed form, and its quantile by bisection.
double t3_cdf(double x) {
  const double s = std::sqrt(3.0);
  return 0.5 + (x / (s * (1.0 + x * x / 3.0)) + std::atan(x / s)) / M_PI;
}
double t3_quantile(double p) {
  double lo = -100, hi = 100;
  for (int k = 0; k < 200; ++k) ((t3_cdf((lo + hi) / 2) < p) ? lo : hi) = (lo + hi) / 2;
  return (lo + hi) / 2;
}

// Common random numbers: job k of task i gets the same noise under both ledgers.
struct Noise {
  explicit Noise(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::student_t_distribution<double> t(3.0);
    for (auto& v : jobs) {
      v.resize(4000);
      for (auto& x : v) x = std::max(-0.3 * 40 * kMs, kNoiseScale * t(rng));
    }
    for (auto& v : profile) {
      v.resize(20);
      for (auto& x : v) x = kNoiseScale * t(rng);
    }
  }
  std::vector<double> jobs[3], profile[3];
};

// The oracle: exact prices from the true model; otherwise the ledger's own rules.
class OracleLedger {
 public:
  OracleLedger(const Plant& plant, double window_target) : plant_(plant) {
    q_ = kNoiseScale * t3_quantile(1.0 - window_target);
    last_.assign(plant_.size(), -1);
  }
  Bytes allowance(std::size_t task, Nanos at) const {
    const PlantTask& t = plant_[task];
    const double a_max = kRho * static_cast<double>(t.deadline);
    const double a = std::max(0.0, static_cast<double>(t.deadline) - t.a - q_) / kappa_at(t, at);
    return static_cast<Bytes>(std::min(a, a_max));
  }
  void on_release(TaskId task, JobSeq seq, Nanos now) {
    Job j{task, seq, now, allowance(task, now), 0};
    for (const auto& g : grants_) j.charged += g.second;
    jobs_.push_back(j);
    last_[task] = now;
  }
  void on_complete(TaskId task, JobSeq seq, Nanos) { drop(task, seq); }
  void on_unfinished(TaskId task, JobSeq seq, Nanos) { drop(task, seq); }
  Bytes budget(Nanos now) const {
    Bytes b = kUnlimitedBytes;
    for (const auto& j : jobs_) b = std::min(b, released(j, now) - j.charged);
    return b == kUnlimitedBytes ? b : std::max<Bytes>(0, b);
  }
  Nanos time_budget_reaches(Bytes bytes, Nanos now) const {
    Nanos t = now;
    for (const auto& j : jobs_) {
      const Bytes need = bytes + j.charged;
      if (need > j.allowance) return kNever;
      if (need <= kUnit) continue;  // the floor f = one unit
      const double a = plant_[j.task].a;
      t = std::max(t, j.release + static_cast<Nanos>(std::ceil(need * a / j.allowance)));
    }
    return t;
  }
  bool crossing_allowed(Bytes bytes, Nanos end, Nanos now) const {
    for (std::size_t k = 0; k < plant_.size(); ++k) {
      if (last_[k] < 0) continue;
      const PlantTask& t = plant_[k];
      const Nanos next = std::max(now, last_[k] + t.period);
      if (end <= next) continue;
      const double further = static_cast<double>(std::max<Bytes>(0, allowance(k, next) - bytes));
      if (static_cast<double>(end - next) + t.a + q_ + kappa_at(t, next) * further >
          static_cast<double>(t.deadline))
        return false;
    }
    return true;
  }
  GrantId charge(EngineId, Bytes bytes, Nanos, Nanos) {
    for (auto& j : jobs_) j.charged += bytes;
    grants_.emplace_back(++next_, bytes);
    return next_;
  }
  bool grant_executed(GrantId id) {
    std::erase_if(grants_, [id](const auto& g) { return g.first == id; });
    return true;
  }

 private:
  struct Job {
    TaskId task;
    JobSeq seq;
    Nanos release;
    Bytes allowance, charged;
  };
  Bytes released(const Job& j, Nanos now) const {
    const double paced = static_cast<double>(j.allowance) * static_cast<double>(now - j.release) /
                         plant_[j.task].a;
    return std::min<Bytes>(j.allowance, static_cast<Bytes>(std::max(paced, double(kUnit))));
  }
  void drop(TaskId task, JobSeq seq) {
    std::erase_if(jobs_, [&](const Job& j) { return j.task == task && j.seq == seq; });
  }
  const Plant& plant_;
  double q_;
  std::vector<Nanos> last_;
  std::vector<Job> jobs_;
  std::vector<std::pair<GrantId, Bytes>> grants_;
  GrantId next_ = 0;
};

struct RunResult {
  std::vector<int> jobs, misses;
  double bytes = 0;  // executed by the engine in the scored window
};

// Runs the plant for `prep` + 100 s under `ledger`; scores the last 100 s.
template <class L>
RunResult run_plant(const Plant& tasks, L& ledger, const Noise& noise, Nanos prep) {
  const std::size_t n = tasks.size();
  const Nanos horizon = prep + kScore;
  const Nanos unit_ns = static_cast<Nanos>(static_cast<double>(kUnit) / kRho);
  struct Active {
    bool on = false;
    JobSeq seq = 0;
    Nanos release = 0;
    double remaining = 0;  // solo work left, ns
  };
  std::vector<Active> job(n);
  std::vector<Nanos> next_release(n);
  std::vector<JobSeq> seq(n, 0);
  for (std::size_t k = 0; k < n; ++k) next_release[k] = tasks[k].offset;
  RunResult res;
  res.jobs.assign(n, 0);
  res.misses.assign(n, 0);
  bool busy = false;
  Nanos grant_end = 0, retry_at = kNever, now = 0;
  GrantId grant = 0;
  Bytes grant_bytes = 0;

  auto progress_rate = [&](std::size_t k) {
    return busy ? std::max(0.05, 1.0 - kappa_at(tasks[k], now) * kRho) : 1.0;
  };
  auto score = [&](std::size_t k, bool missed) {
    if (now < prep) return;
    ++res.jobs[k];
    res.misses[k] += missed;
  };

  while (now < horizon) {
    Nanos t = horizon;
    for (std::size_t k = 0; k < n; ++k) {
      t = std::min(t, next_release[k]);
      if (job[k].on)
        t = std::min(t, now + static_cast<Nanos>(std::ceil(job[k].remaining / progress_rate(k))));
    }
    if (busy) t = std::min(t, grant_end);
    if (!busy) t = std::min(t, std::max(retry_at, now));
    const double dt = static_cast<double>(t - now);
    for (std::size_t k = 0; k < n; ++k)
      if (job[k].on) job[k].remaining -= dt * progress_rate(k);
    now = t;

    if (busy && now >= grant_end) {
      ledger.grant_executed(grant);
      if (now >= prep) res.bytes += static_cast<double>(grant_bytes);
      busy = false;
    }
    for (std::size_t k = 0; k < n; ++k) {
      if (job[k].on && job[k].remaining <= 1e-6) {
        ledger.on_complete(static_cast<TaskId>(k), job[k].seq, now);
        score(k, now - job[k].release > tasks[k].deadline);
        job[k].on = false;
      }
      if (now >= next_release[k]) {
        if (job[k].on) {  // overran its period: dropped, a miss
          ledger.on_unfinished(static_cast<TaskId>(k), job[k].seq, now);
          score(k, true);
        }
        job[k] = {true, seq[k], now, tasks[k].a + noise.jobs[k][seq[k] % 4000]};
        ledger.on_release(static_cast<TaskId>(k), seq[k]++, now);
        next_release[k] += tasks[k].period;
      }
    }
    if (!busy) {
      // Greedy engine: the longest run of units the ledger admits.
      retry_at = kNever;
      const Bytes b = ledger.budget(now);
      const int fit = b == kUnlimitedBytes ? kMaxUnits
                                           : static_cast<int>(std::min<Bytes>(kMaxUnits, b / kUnit));
      for (int u = fit; u >= 1; --u) {
        const Nanos end = now + u * unit_ns;
        if (ledger.crossing_allowed(u * kUnit, end, now)) {
          grant_bytes = u * kUnit;
          grant = ledger.charge(0, grant_bytes, end, now);
          grant_end = end;
          busy = true;
          break;
        }
      }
      if (!busy && fit == 0) retry_at = ledger.time_budget_reaches(kUnit, now);
      if (!busy && retry_at <= now) retry_at = now + 100 * kNsPerUs;
    }
  }
  return res;
}

Params plant_params() {
  Params p;
  p.peak_rate_bytes_per_ns = kRho;
  p.probe_unit_bytes = kUnit;
  p.pacing_floor_bytes = kUnit;
  return p;
}

void add_tasks(const Plant& plant, Ledger& ledger, const Noise& noise) {
  for (std::size_t k = 0; k < plant.size(); ++k) {
    const PlantTask& t = plant[k];
    TaskSpec s;
    s.name = t.name;
    s.period = t.period;
    s.deadline = t.deadline;
    s.miss_tolerance = 0.02;
    for (double e : noise.profile[k]) s.solo_profile.push_back(static_cast<Nanos>(t.a + e));
    ledger.add_task(s);
  }
}

struct LoopResult {
  RunResult ripple, oracle, loose;
  double ratio = 0;
};

// One plant, one seed: Ripple, the eps' oracle and the eps oracle, figures printed.
LoopResult closed_loop(const char* label, const Plant& plant, std::uint64_t seed) {
  constexpr Nanos kPrep = 0;  // scored from the first release: warm-up included
  const Noise noise(seed);
  Ledger ripple(plant_params());
  add_tasks(plant, ripple, noise);
  LoopResult res;
  res.ripple = run_plant(plant, ripple, noise, kPrep);
  OracleLedger oracle(plant, ripple.task(0).window_target());
  res.oracle = run_plant(plant, oracle, noise, kPrep);
  OracleLedger loose(plant, 0.02);  // prices at eps itself rather than eps'
  res.loose = run_plant(plant, loose, noise, kPrep);
  res.ratio = res.ripple.bytes / res.oracle.bytes;
  for (std::size_t k = 0; k < plant.size(); ++k) {
    const RunResult& r = res.ripple;
    const RunResult& o = res.oracle;
    std::printf("%s seed %lu %-8s ripple %d/%d missed (%.2f %%), oracle %d/%d (%.2f %%)\n", label,
                static_cast<unsigned long>(seed), plant[k].name, r.misses[k], r.jobs[k],
                100.0 * r.misses[k] / r.jobs[k], o.misses[k], o.jobs[k],
                100.0 * o.misses[k] / o.jobs[k]);
  }
  std::printf("%s seed %lu bytes: ripple %.1f GB, oracle(eps') %.1f GB, ratio %.3f; "
              "oracle(eps) %.1f GB, ratio %.3f\n",
              label, static_cast<unsigned long>(seed), res.ripple.bytes / 1e9,
              res.oracle.bytes / 1e9, res.ratio, res.loose.bytes / 1e9,
              res.ripple.bytes / res.loose.bytes);
  return res;
}

void expect_miss_rates(const Plant& plant, const RunResult& r, std::uint64_t seed) {
  for (std::size_t k = 0; k < plant.size(); ++k)
    EXPECT_LE(static_cast<double>(r.misses[k]) / r.jobs[k], 0.02) << plant[k].name << " seed " << seed;
}

// Seeds 7 and 8 on one plant: every task within eps, and the engine executes at least
// min_ratio of the oracle's bytes (recorded as the test's bytes_ratio_seed<N> properties).
void expect_target_and_bytes(const char* label, const Plant& plant, double min_ratio) {
  for (std::uint64_t seed : {7u, 8u}) {
    const LoopResult res = closed_loop(label, plant, seed);
    expect_miss_rates(plant, res.ripple, seed);
    testing::Test::RecordProperty("bytes_ratio_seed" + std::to_string(seed), std::to_string(res.ratio));
    EXPECT_GE(res.ratio, min_ratio) << label << " seed " << seed;
  }
}

// Tests that over 100 s at eps = 2 % every task misses <= 2 % of its deadlines while
// the greedy engine executes >= 80 % of the bytes the kappa-knowing oracle admits.
TEST(PricingClosedLoop, MeetsMissTargetAndTracksOracle) { expect_target_and_bytes("robotic", kRobotic, 0.80); }

// Tests that the run is deterministic: the same seed gives the same bytes and misses.
TEST(PricingClosedLoop, IsDeterministic) {
  const LoopResult a = closed_loop("robotic", kRobotic, 7);
  const LoopResult b = closed_loop("robotic", kRobotic, 7);
  EXPECT_EQ(a.ripple.bytes, b.ripple.bytes);
  EXPECT_EQ(a.ripple.misses, b.ripple.misses);
}

// Tests that with two binding tasks the miss target still holds, and not by granting
// little: the engine executes >= 70 % of the oracle's bytes (0.877 and 0.839 at seeds 7
// and 8, min 0.772 over seeds 1-12: Documentation/results/pricing.md), so an estimator
// that grants nothing, or half, fails it.
TEST(PricingClosedLoop, TightPlantMeetsMissTarget) { expect_target_and_bytes("tight", kTight, 0.70); }

}  // namespace
}  // namespace ripple::pricing
