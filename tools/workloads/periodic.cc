// Periodic driver for the robot CPU tasks. See periodic.h.
#include "tools/workloads/periodic.h"

#include "agent/pricing/percentile.h"
#include "tools/workloads/cores.h"
#include "tools/workloads/plant_mode.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <numeric>

namespace ripple::workloads {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

timespec to_timespec(int64_t ns) {
  timespec ts;
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  return ts;
}

}  // namespace

bool core_allowed(int core, std::string* allowed_list) {
  const std::vector<int> allowed = allowed_cpus();
  if (allowed_list != nullptr) *allowed_list = format_core_list(allowed);
  return core >= 0 && cores_not_in({core}, allowed).empty();
}

uint64_t digest_words(const void* data, size_t bytes, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, p + i, std::min<size_t>(8, bytes - i));
    h = (h ^ w) * 0x100000001b3ULL;
  }
  return h;
}

std::string digest_hex(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

Summary summarize(const std::vector<JobRecord>& records, double deadline_ms) {
  Summary s;
  std::vector<double> job, resp;
  for (const auto& r : records) {
    job.push_back(static_cast<double>(r.completion_ns - r.start_ns) / 1e6);
    resp.push_back(static_cast<double>(r.completion_ns - r.release_ns) / 1e6);
    if (resp.back() > deadline_ms) ++s.misses;
  }
  s.jobs = records.size();
  if (job.empty()) return s;
  s.p50_ms = pricing::percentile(job, 50);
  s.p99_ms = pricing::percentile(job, 99);
  s.max_ms = *std::max_element(job.begin(), job.end());
  s.mean_ms = std::accumulate(job.begin(), job.end(), 0.0) / static_cast<double>(job.size());
  s.resp_p99_ms = pricing::percentile(resp, 99);
  return s;
}

PeriodicProgram::PeriodicProgram(std::string name, std::string description,
                                 double default_period_ms)
    : name_(std::move(name)), app_(std::move(description), "ripple-" + name_) {
  opts_.period_ms = default_period_ms;
  app_.add_option("--period-ms", opts_.period_ms, "release period in ms")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app_.add_option("--deadline-ms", opts_.deadline_ms,
                  "relative deadline in ms for the miss count (default: the period)")
      ->check(CLI::NonNegativeNumber);
  app_.add_option("--duration-s", opts_.duration_s, "how long to run, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app_.add_option("--jobs", opts_.jobs, "stop after this many jobs (overrides --duration-s)");
  app_.add_option("--core", opts_.core, "CPU core to pin the task to (default: no pinning)");
  app_.add_option("--threads", opts_.threads,
                  "threads per job, the main thread included (default 1, or one per --cores CPU)")
      ->check(CLI::Range(1, 256));
  app_.add_option("--cores", opts_.cores_text,
                  "CPUs for the threads, one each, e.g. 4-7 or 4,5,6,7 (the first: the main thread)");
  app_.add_option("--log", opts_.log_path,
                  "ground-truth CSV: seq,release_ns,start_ns,completion_ns,plant_bytes "
                  "(CLOCK_MONOTONIC)");
  app_.add_option("--seed", opts_.seed, "seed for generated data and noise")->capture_default_str();
  app_.add_flag("--quiet", opts_.quiet, "print only the final RESULT line");
  auto* plant = app_.add_option_group("plant mode (emulated interference plant, a TEST DOUBLE)");
  plant->add_option("--plant", opts_.plant_shm,
                    "shm name of a running ripple-plant-engine; stretches each job by "
                    "kappa x the bytes it executed during the job");
  plant->add_option("--plant-kappa-ms-per-gb", opts_.plant_kappa_ms_per_gb,
                    "plant slope kappa: extra ms per GB the engine executed")
      ->check(CLI::NonNegativeNumber);
  plant->add_option("--plant-noise-ms", opts_.plant_noise_ms,
                    "Lomax (Pareto II) noise scale in ms added to each job (0: none)")
      ->check(CLI::NonNegativeNumber);
  plant->add_option("--plant-noise-alpha", opts_.plant_noise_alpha, "Lomax noise shape (> 1)")
      ->check(CLI::Range(1.01, 100.0));
}

bool PeriodicProgram::resolve_threads(std::string* err) {
  auto& o = opts_;
  const std::string threads_opt = "--threads " + std::to_string(o.threads);
  if (o.core != -1 && !o.cores_text.empty()) {
    *err = "--core and --cores are exclusive (--cores " + std::to_string(o.core) + " pins one thread too)";
    return false;
  }
  if (!o.cores_text.empty()) {
    std::string why;
    if (!parse_core_list(o.cores_text, &o.cores, &why)) {
      *err = "--cores '" + o.cores_text + "': " + why;
      return false;
    }
    if (o.threads != 0 && static_cast<size_t>(o.threads) != o.cores.size()) {
      *err = threads_opt + " needs one core per thread, --cores " + o.cores_text + " names " +
             std::to_string(o.cores.size());
      return false;
    }
    const std::vector<int> allowed = allowed_cpus();
    const std::vector<int> bad = cores_not_in(o.cores, allowed);
    if (!bad.empty()) {
      *err = "--cores " + o.cores_text + ": CPU" + (bad.size() > 1 ? "s " : " ") + format_core_list(bad) +
             " out of range (this process may run on CPUs " + format_core_list(allowed) + ")";
      return false;
    }
    if (o.threads == 0) o.threads = static_cast<int>(o.cores.size());
  } else if (o.core != -1) {
    if (o.threads > 1) {
      *err = "--core pins one thread; with " + threads_opt + " give --cores, one CPU per thread";
      return false;
    }
    o.cores = {o.core};
  }
  if (o.threads == 0) o.threads = 1;
  if (o.threads > 1 && !parallel_) {
    *err = threads_opt + ": ripple-" + name_ +
           " runs single-threaded (costmap, kdnn and sgm split their jobs over threads)";
    return false;
  }
  return true;
}

int PeriodicProgram::run(int argc, char** argv,
                         const std::function<std::unique_ptr<Job>()>& make_job) {
  const std::string prog = "ripple-" + name_;
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app_.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app_.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 2;
  }
  auto& o = opts_;
  if (o.deadline_ms == 0.0) o.deadline_ms = o.period_ms;
  std::string allowed;
  if (o.core != -1 && !core_allowed(o.core, &allowed)) {
    std::fprintf(stderr, "%s: error: --core %d is out of range (this process may run on CPUs %s)\n",
                 prog.c_str(), o.core, allowed.c_str());
    return 2;
  }
  {
    std::string err;
    if (!resolve_threads(&err)) {
      std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), err.c_str());
      return 2;
    }
  }
  if (o.plant_shm.empty() && (o.plant_kappa_ms_per_gb > 0 || o.plant_noise_ms > 0)) {
    std::fprintf(stderr, "%s: error: --plant-kappa-ms-per-gb/--plant-noise-ms need --plant NAME\n",
                 prog.c_str());
    return 2;
  }
  std::FILE* log = nullptr;
  if (!o.log_path.empty()) {
    log = std::fopen(o.log_path.c_str(), "w");
    if (log == nullptr) {
      std::fprintf(stderr, "%s: error: cannot write --log %s: %s\n", prog.c_str(),
                   o.log_path.c_str(), std::strerror(errno));
      return 2;
    }
  }
  PlantMode plant;
  if (!o.plant_shm.empty()) {
    std::string err;
    PlantModeConfig pc{o.plant_kappa_ms_per_gb, o.plant_noise_ms, o.plant_noise_alpha, o.seed};
    if (!plant.open(o.plant_shm, pc, &err)) {
      std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), err.c_str());
      if (log) std::fclose(log);
      return 2;
    }
  }
  if (!o.cores.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o.cores[0], &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::fprintf(stderr, "%s: error: cannot pin to core %d: %s\n", prog.c_str(), o.cores[0],
                   std::strerror(errno));
      return 2;
    }
  }
  // The workers exist before the job is built and live until the end: no thread is
  // created per job.
  {
    std::string err;
    if (!pool_.start(o.threads, o.cores, &err)) {
      std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), err.c_str());
      return 2;
    }
  }

  std::unique_ptr<Job> job;
  try {
    job = make_job();
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: error: %s\n", prog.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: setup failed: %s\n", prog.c_str(), e.what());
    return 1;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  if (!o.quiet) {
    std::string where = o.cores.empty() ? "core any" : "core " + format_core_list(o.cores);
    if (o.threads > 1)
      where = std::to_string(o.threads) + " threads on " +
              (o.cores.empty() ? std::string("any cores") : "cores " + format_core_list(o.cores));
    std::printf("%s: period %.1f ms, deadline %.1f ms, %s, %s%s\n", prog.c_str(), o.period_ms,
                o.deadline_ms, where.c_str(),
                o.jobs ? (std::to_string(o.jobs) + " jobs").c_str()
                       : (std::to_string(o.duration_s) + " s").c_str(),
                plant.active() ? ", PLANT MODE (emulated interference, test double)" : "");
    std::fflush(stdout);
  }

  const int64_t period_ns = static_cast<int64_t>(o.period_ms * 1e6);
  std::vector<JobRecord> records;
  records.reserve(o.jobs ? o.jobs : static_cast<size_t>(o.duration_s * 1e3 / o.period_ms) + 16);
  const int64_t t0 = monotonic_ns() + 10'000'000;  // first release 10 ms from now
  const int64_t t_end = t0 + static_cast<int64_t>(o.duration_s * 1e9);
  for (uint64_t k = 0; !g_stop; ++k) {
    if (o.jobs ? k >= o.jobs : false) break;
    const int64_t release = t0 + static_cast<int64_t>(k) * period_ns;
    if (!o.jobs && release >= t_end) break;
    // The period wait: what the tracer's period-wait mode sees. Always called, even when
    // late (it then returns at once), so every job has its own wait.
    timespec ts = to_timespec(release);
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr)) == EINTR && !g_stop) {
    }
    if (g_stop) break;
    const int64_t start = monotonic_ns();
    const uint64_t b0 = plant.active() ? plant.bytes_now() : 0;
    job->run_job(k);
    uint64_t pb = plant.active() ? plant.stretch(start, b0) : 0;
    records.push_back({k, release, start, static_cast<int64_t>(monotonic_ns()), pb});
  }

  if (log != nullptr) {
    std::fprintf(log, "seq,release_ns,start_ns,completion_ns,plant_bytes\n");
    for (const auto& r : records)
      std::fprintf(log, "%llu,%lld,%lld,%lld,%llu\n", static_cast<unsigned long long>(r.seq),
                   static_cast<long long>(r.release_ns), static_cast<long long>(r.start_ns),
                   static_cast<long long>(r.completion_ns),
                   static_cast<unsigned long long>(r.plant_bytes));
    std::fclose(log);
  }

  Summary s = summarize(records, o.deadline_ms);
  const double mb = job->bytes_per_job() / 1e6;
  if (!o.quiet) {
    std::printf("%s: %llu jobs; job time p50 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms; "
                "response p99 %.2f ms; misses %llu (deadline %.1f ms)\n",
                prog.c_str(), static_cast<unsigned long long>(s.jobs), s.p50_ms, s.p99_ms,
                s.max_ms, s.mean_ms, s.resp_p99_ms, static_cast<unsigned long long>(s.misses),
                o.deadline_ms);
    std::printf("%s: memory traffic per job ~%.1f MB (analytic estimate)%s%s\n", prog.c_str(), mb,
                job->check().empty() ? "" : "; ", job->check().c_str());
  }
  const std::string digest = job->digest();
  std::printf("RESULT task=%s jobs=%llu p50_ms=%.3f p99_ms=%.3f max_ms=%.3f mean_ms=%.3f "
              "resp_p99_ms=%.3f misses=%llu mb_per_job=%.1f threads=%d%s%s%s\n",
              name_.c_str(), static_cast<unsigned long long>(s.jobs), s.p50_ms, s.p99_ms, s.max_ms,
              s.mean_ms, s.resp_p99_ms, static_cast<unsigned long long>(s.misses), mb, o.threads,
              digest.empty() ? "" : " digest=", digest.c_str(),
              plant.active() ? " plant=test-double" : "");
  return 0;
}

}  // namespace ripple::workloads
