// Microbenchmark of the pricing core (issue 3): the per-completion update and the
// per-query budget B(t) with 8 protected tasks and 64 active jobs.
//
//   build/bin/ripple-pricing-bench --benchmark_repetitions=1
//
// The *Latency benchmarks time every call with steady_clock and report p50/p99 (ns)
// as counters; the clock's own back-to-back cost is reported as ClockOverhead and is
// included in those figures. The plain benchmarks report Google Benchmark's mean.
#include <algorithm>
#include <optional>
#include <string>
#include <chrono>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "agent/pricing/ledger.h"

namespace ripple::pricing {
namespace {

constexpr int kTasks = 8;
constexpr int kJobsPerTask = 8;  // 64 active jobs
constexpr Nanos kMs = kNsPerMs;

// A ledger with 8 tasks whose estimators have seen `warm` jobs each (full residual
// windows, estimable slopes), then 64 jobs active and a few grants in flight.
struct Fixture {
  Fixture() : ledger(make_params()), rng(42) {
    for (int k = 0; k < kTasks; ++k) {
      TaskSpec t;
      t.name = "t" + std::to_string(k);
      t.period = (50 + 10 * k) * kMs;
      t.deadline = t.period * 8 / 10;
      for (int s = 0; s < 20; ++s) t.solo_profile.push_back((10 + k) * kMs + s * 10'000);
      ledger.add_task(t);
    }
    for (int j = 0; j < 400; ++j)
      for (int k = 0; k < kTasks; ++k) warm(static_cast<TaskId>(k));
    for (int j = 0; j < kJobsPerTask; ++j)
      for (int k = 0; k < kTasks; ++k) release(static_cast<TaskId>(k));
  }
  static Params make_params() {
    Params p;
    p.peak_rate_bytes_per_ns = 200;
    p.certification = true;
    return p;
  }
  void release(TaskId k) {
    now += 50'000;
    ledger.on_release(k, seq[k]++, now);
  }
  // One whole job of task k: released, charged a random grant, completed after
  // a + kappa C + noise with kappa = 4 ms/GB (sensitive: no task gets certified, so
  // every active job counts in B(t), the costly case).
  void warm(TaskId k) {
    release(k);
    const auto bytes = std::uniform_int_distribution<Bytes>(0, 2'000'000'000)(rng);
    if (bytes) ledger.grant_executed(ledger.charge(0, bytes, now + kMs, now));
    now += (10 + k) * kMs + static_cast<Nanos>(4e-3 * static_cast<double>(bytes)) +
           std::uniform_int_distribution<Nanos>(0, 2 * kMs)(rng);
    ledger.on_complete(k, done[k]++, now);
  }
  int exempt_tasks() const {
    int n = 0;
    for (TaskId k = 0; k < kTasks; ++k) n += ledger.task(k).exempt();
    return n;
  }
  Ledger ledger;
  std::mt19937_64 rng;
  Nanos now = 0;
  JobSeq seq[kTasks] = {};
  JobSeq done[kTasks] = {};
};

void report(benchmark::State& state, std::vector<double>& ns) {
  std::sort(ns.begin(), ns.end());
  if (ns.empty()) return;
  state.counters["p50_ns"] = ns[ns.size() / 2];
  state.counters["p99_ns"] = ns[ns.size() * 99 / 100];
  state.counters["max_ns"] = ns.back();
}

using Clock = std::chrono::steady_clock;
double elapsed_ns(Clock::time_point a, Clock::time_point b) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// Per-completion update: Ledger::on_complete (close the account, score err, residual,
// RLS update, held slope, certification bookkeeping), one call per iteration.
void BM_CompletionLatency(benchmark::State& state) {
  Fixture f;
  std::vector<double> ns;
  ns.reserve(1 << 20);
  TaskId k = 0;
  for (auto _ : state) {
    state.PauseTiming();
    f.now += (10 + k) * kMs;
    const JobSeq s = f.done[k]++;
    state.ResumeTiming();
    const auto t0 = Clock::now();
    auto c = f.ledger.on_complete(k, s, f.now);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(c);
    ns.push_back(elapsed_ns(t0, t1));
    state.PauseTiming();
    f.release(k);  // keep 64 active
    k = (k + 1) % kTasks;
    state.ResumeTiming();
  }
  report(state, ns);
}
BENCHMARK(BM_CompletionLatency)->Iterations(200'000);

// Pricing at a release: Estimator::price + opening the account (the other half of the
// per-job work), timed per call.
void BM_ReleaseLatency(benchmark::State& state) {
  Fixture f;
  std::vector<double> ns;
  ns.reserve(1 << 20);
  TaskId k = 0;
  for (auto _ : state) {
    state.PauseTiming();
    f.now += (10 + k) * kMs;
    f.ledger.on_complete(k, f.done[k]++, f.now);
    const JobSeq s = f.seq[k]++;
    state.ResumeTiming();
    const auto t0 = Clock::now();
    auto p = f.ledger.on_release(k, s, f.now);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(p);
    ns.push_back(elapsed_ns(t0, t1));
    k = (k + 1) % kTasks;
  }
  report(state, ns);
}
BENCHMARK(BM_ReleaseLatency)->Iterations(200'000);

// B(t) over 64 active jobs, timed per call at advancing times.
void BM_BudgetLatency(benchmark::State& state) {
  Fixture f;
  std::vector<double> ns;
  ns.reserve(1 << 21);
  Nanos t = f.now;
  for (auto _ : state) {
    t += 1'000;
    const auto t0 = Clock::now();
    const Bytes b = f.ledger.budget(t);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(b);
    ns.push_back(elapsed_ns(t0, t1));
  }
  state.counters["active_jobs"] = static_cast<double>(f.ledger.active_jobs().size());
  state.counters["exempt_tasks"] = f.exempt_tasks();
  report(state, ns);
}
BENCHMARK(BM_BudgetLatency)->Iterations(1'000'000);

// B(t) over 64 active jobs: Google Benchmark's mean, no per-call clock.
void BM_Budget(benchmark::State& state) {
  Fixture f;
  Nanos t = f.now;
  for (auto _ : state) {
    t += 1'000;
    benchmark::DoNotOptimize(f.ledger.budget(t));
  }
}
BENCHMARK(BM_Budget);

// admits(): B(t) plus the crossing bound over the 8 tasks.
void BM_Admits(benchmark::State& state) {
  Fixture f;
  Nanos t = f.now;
  for (auto _ : state) {
    t += 1'000;
    benchmark::DoNotOptimize(f.ledger.admits(100'000'000, t + 5 * kMs, t));
  }
}
BENCHMARK(BM_Admits);

// The cost of the two steady_clock reads that bracket each timed call.
void BM_ClockOverhead(benchmark::State& state) {
  std::vector<double> ns;
  ns.reserve(1 << 21);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto t1 = Clock::now();
    ns.push_back(elapsed_ns(t0, t1));
  }
  report(state, ns);
}
BENCHMARK(BM_ClockOverhead)->Iterations(1'000'000);

}  // namespace
}  // namespace ripple::pricing

BENCHMARK_MAIN();
