// Periodic driver shared by the robot CPU tasks (costmap, kdnn, sgm, orb, control).
//
// The tasks are ordinary periodic programs that know nothing of Ripple: a loop that
// sleeps to an absolute release time with clock_nanosleep(CLOCK_MONOTONIC,
// TIMER_ABSTIME) and runs one job per period. That sleep is exactly what the tracer's
// period-wait mode watches (DESIGN.md §4), so nothing here links to Ripple.
//
// The driver owns the common options (period, duration, core(s), threads, deadline,
// ground-truth log, plant mode), pins the threads, runs the loop and prints a solo p50/p99
// summary. A task only supplies a Job: one call per release, plus an estimate of the bytes
// of memory traffic one job moves.
//
// Multi-threaded tasks (--threads N, paper §5.1): the driver starts a WorkerPool of N
// threads once (pool.h); the job's release and completion stay on the main thread, which
// sleeps in the period wait, wakes, hands the job's shares to the pool (doing one itself)
// and joins before it records the completion and waits again.
#pragma once

#include "ripple/clock.h"
#include "tools/workloads/pool.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ripple::workloads {

// One robot task's work. Constructed once (allocation, scene generation), then
// run_job() is called once per release on the main thread; a parallel task splits it over
// the program's pool() (the same result for any thread count).
class Job {
 public:
  virtual ~Job() = default;
  // Runs one job. `seq` counts jobs from 0.
  virtual void run_job(uint64_t seq) = 0;
  // Estimated memory traffic of one job in bytes (analytic, from data sizes and passes;
  // the machines we measure on expose no bus counters). Printed in the summary.
  virtual double bytes_per_job() const = 0;
  // One line that shows the result is real (e.g. "disparity error 0.4 px"), for the summary.
  virtual std::string check() const { return {}; }
  // A digest of the task's output (hex), the same for any --threads at one seed; printed
  // as `digest=` in the RESULT line. Computed once, after the last job.
  virtual std::string digest() const { return {}; }
};

// 64-bit FNV-1a over 8-byte words (the tail bytes zero-padded), continuing from h.
uint64_t digest_words(const void* data, size_t bytes, uint64_t h = 0xcbf29ce484222325ULL);
std::string digest_hex(uint64_t h);

struct PeriodicOptions {
  double period_ms = 100.0;
  double deadline_ms = 0.0;  // 0: equal to the period
  double duration_s = 10.0;
  uint64_t jobs = 0;  // 0: run for duration_s
  int core = -1;      // -1: leave affinity alone
  int threads = 0;    // 0: one, or one per --cores entry
  std::string cores_text;  // --cores as given
  std::vector<int> cores;  // parsed: cores[0] the main thread's, cores[i] worker i's
  std::string log_path;
  uint64_t seed = 1;
  bool quiet = false;
  // Emulated interference plant (test double): see plant_mode.h.
  std::string plant_shm;
  double plant_kappa_ms_per_gb = 0.0;
  double plant_noise_ms = 0.0;
  double plant_noise_alpha = 2.5;
};

// One job's ground truth, CLOCK_MONOTONIC nanoseconds.
struct JobRecord {
  uint64_t seq;
  int64_t release_ns;     // the absolute time the loop slept to
  int64_t start_ns;       // when the thread actually woke
  int64_t completion_ns;  // when run_job returned (plus plant stretch, if any)
  uint64_t plant_bytes;   // bytes the plant engine executed during the job (0 without plant)
};

struct Summary {
  uint64_t jobs = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0, mean_ms = 0;  // job time: completion - start
  double resp_p99_ms = 0;                                  // response: completion - release
  uint64_t misses = 0;                                     // completion - release > deadline
};

Summary summarize(const std::vector<JobRecord>& records, double deadline_ms);

// The common program: build with the task's name and help text, let the task add its
// own options to app(), then run(). run() parses, validates (one clear error line and
// exit status 2 on bad input), constructs the job through `make_job` (an exception
// from it becomes an error line, exit 1), runs the loop and prints the summary.
class PeriodicProgram {
 public:
  PeriodicProgram(std::string name, std::string description, double default_period_ms);
  CLI::App& app() { return app_; }
  const PeriodicOptions& options() const { return opts_; }
  // A task whose job splits over pool() calls this before run(); the others refuse
  // --threads above 1.
  void allow_threads() { parallel_ = true; }
  // The job's threads, started before make_job is called; valid until run() returns.
  WorkerPool& pool() { return pool_; }
  int run(int argc, char** argv, const std::function<std::unique_ptr<Job>()>& make_job);

 private:
  // Checks --core/--cores/--threads; on a problem returns false with one line in *err.
  bool resolve_threads(std::string* err);

  std::string name_;
  CLI::App app_;
  PeriodicOptions opts_;
  bool parallel_ = false;
  WorkerPool pool_;
};

// Thrown by a task's constructor for bad input (unreadable image, bad size...).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether this process may run on `core`; *allowed_list gets the allowed CPUs ("0-3,8").
bool core_allowed(int core, std::string* allowed_list);

}  // namespace ripple::workloads
