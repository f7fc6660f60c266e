// ripple-tracer-bench: what the job tracer costs.
//
//  1. CPU cost at a given job rate: a load process runs N threads that each
//     release a 20 us job every ms (N = rate / 1000); the tracer follows them
//     by comm for --seconds. Cost = the BPF programs' run time (kernel BPF
//     statistics) + the consumer thread's CPU time, per job and as a share of
//     one CPU.
//  2. Added latency per job: one SCHED_FIFO thread pinned to the last CPU
//     with a 2 ms period and 200 us of work, measured by its own clock
//     (nominal release -> start, nominal release -> completion), in
//     interleaved blocks: untraced, traced without consumer wake-ups, traced
//     with them. Ratios come from the same run.
//
//   ripple-tracer-bench [--seconds S] [--rates 1000,10000] [--rounds R] [--block-s S]
//                       [--markdown]
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <bpf/bpf.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "agent/pricing/percentile.h"
#include "agent/tracer/tracer.h"
#include "ripple/clock.h"

namespace {

using ripple::monotonic_ns;
using ripple::pricing::percentile;
using ripple::tracer::JobEvent;
using ripple::tracer::Tracer;

// --- the load: periodic threads in a child process -------------------------

struct LoadArgs {
  int threads = 1;
  long period_us = 1000, work_us = 20;
  double seconds = 1;
  bool fifo = false;
  int cpu = -1;
};

// Runs in the child: threads named "rtb_load" each release a job per period;
// prints "<start_lat_us p50> <p99> <response_us p50> <p99> <jobs>".
int run_load(const LoadArgs& a) {
  std::vector<std::vector<double>> start_lat(a.threads), resp(a.threads);
  std::vector<std::thread> th;
  uint64_t t0 = monotonic_ns() + 20'000'000, end = t0 + static_cast<uint64_t>(a.seconds * 1e9);
  for (int i = 0; i < a.threads; i++) {
    th.emplace_back([&, i] {
      prctl(PR_SET_NAME, "rtb_load");
      prctl(PR_SET_TIMERSLACK, 1UL);
      if (a.cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(a.cpu, &set);
        sched_setaffinity(0, sizeof(set), &set);
      }
      if (a.fifo) {
        sched_param sp{};
        sp.sched_priority = 10;
        sched_setscheduler(0, SCHED_FIFO, &sp);
      }
      // spread the threads' phases over the period
      uint64_t next = t0 + static_cast<uint64_t>(i) * static_cast<uint64_t>(a.period_us) * 1000 /
                               static_cast<uint64_t>(a.threads);
      while (next < end) {
        timespec ts{static_cast<time_t>(next / 1000000000ull),
                    static_cast<long>(next % 1000000000ull)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
        uint64_t start = monotonic_ns();
        while (monotonic_ns() < start + static_cast<uint64_t>(a.work_us) * 1000) {
        }
        uint64_t done = monotonic_ns();
        start_lat[i].push_back(static_cast<double>(start - next) / 1e3);
        resp[i].push_back(static_cast<double>(done - next) / 1e3);
        next += static_cast<uint64_t>(a.period_us) * 1000;
      }
    });
  }
  for (auto& t : th) t.join();
  std::vector<double> s, r;
  for (int i = 0; i < a.threads; i++) {
    s.insert(s.end(), start_lat[i].begin(), start_lat[i].end());
    r.insert(r.end(), resp[i].begin(), resp[i].end());
  }
  std::printf("%.2f %.2f %.2f %.2f %zu\n", percentile(s, 50), percentile(s, 99), percentile(r, 50), percentile(r, 99),
              s.size());
  return 0;
}

struct LoadResult {
  double start_p50 = 0, start_p99 = 0, resp_p50 = 0, resp_p99 = 0;
  size_t jobs = 0;
  bool ok = false;
};

// Starts this program in load mode; returns its pid and a pipe to read.
pid_t spawn_load(const LoadArgs& a, int* out_fd) {
  int fds[2];
  if (pipe(fds)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    std::string argv0 = "/proc/self/exe";
    std::vector<std::string> args = {argv0,
                                     "--load-threads", std::to_string(a.threads),
                                     "--load-period-us", std::to_string(a.period_us),
                                     "--load-work-us", std::to_string(a.work_us),
                                     "--load-seconds", fmt::format("{}", a.seconds),
                                     "--load-cpu", std::to_string(a.cpu)};
    if (a.fifo) args.push_back("--load-fifo");
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  *out_fd = fds[0];
  return pid;
}

LoadResult collect_load(pid_t pid, int fd) {
  LoadResult r;
  char buf[256] = {};
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  int st = 0;
  waitpid(pid, &st, 0);
  if (n > 0 && std::sscanf(buf, "%lf %lf %lf %lf %zu", &r.start_p50, &r.start_p99, &r.resp_p50,
                           &r.resp_p99, &r.jobs) == 5)
    r.ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return r;
}

ripple::tracer::Options tracer_options(bool wakeup) {
  ripple::tracer::Options o;
  o.pin_dir.clear();
  o.wakeup_consumer = wakeup;
  ripple::tracer::PtSpec s;
  s.match = ripple::tracer::MatchKind::kComm;
  s.comm = "rtb_load";
  o.pts.push_back(s);
  return o;
}

double thread_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

struct CostRow {
  int rate;
  bool wakeup;
  uint64_t events = 0, jobs = 0;
  double seconds = 0, bpf_ns = 0, consumer_ns = 0;
  std::vector<ripple::tracer::ProgramStats> progs;
};

int measure_cost(int rate, bool wakeup, double seconds, CostRow* row) {
  row->rate = rate;
  row->wakeup = wakeup;
  row->seconds = seconds;
  uint64_t events = 0, jobs = 0;
  auto t = Tracer::create(tracer_options(wakeup), [&](const JobEvent& e) {
    events++;
    jobs += e.kind == ripple::tracer::JobEventKind::kComplete;
  });
  if (!t) {
    std::fprintf(stderr, "ripple-tracer-bench: %s\n", t.error().message.c_str());
    return 1;
  }
  int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    std::fprintf(stderr, "ripple-tracer-bench: failed to enable BPF statistics: %d\n", stats_fd);
    return 1;
  }
  LoadArgs la;
  la.threads = std::max(1, rate / 1000);
  la.seconds = seconds;
  int fd;
  pid_t pid = spawn_load(la, &fd);
  auto before = (*t)->program_stats();
  double cpu0 = thread_cpu_s();
  int st;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (!(*t)->poll(wakeup ? 100 : 10)) break;
  }
  (void)(*t)->consume();
  double cpu1 = thread_cpu_s();
  auto after = (*t)->program_stats();
  close(stats_fd);
  close(fd);
  for (size_t i = 0; i < after.size() && i < before.size(); i++) {
    ripple::tracer::ProgramStats d{after[i].name, after[i].run_time_ns - before[i].run_time_ns,
                                   after[i].run_count - before[i].run_count};
    row->bpf_ns += static_cast<double>(d.run_time_ns);
    row->progs.push_back(d);
  }
  row->consumer_ns = (cpu1 - cpu0) * 1e9;
  row->events = events;
  row->jobs = jobs;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ripple-tracer-bench: CPU cost and added job latency of the job tracer"};
  LoadArgs load;
  bool load_mode = false;
  double seconds = 10, block_s = 2;
  int rounds = 5;
  std::vector<int> rates = {1000, 10000};
  app.add_option("--seconds", seconds, "seconds per CPU-cost measurement")->check(CLI::PositiveNumber);
  app.add_option("--rates", rates, "job rates (jobs/s) for the CPU cost")->delimiter(',');
  app.add_option("--rounds", rounds, "latency rounds (each: untraced, traced, traced+wake-ups)")
      ->check(CLI::PositiveNumber);
  app.add_option("--block-s", block_s, "seconds per latency block")->check(CLI::PositiveNumber);
  auto* lt = app.add_option("--load-threads", load.threads)->group("");
  app.add_option("--load-period-us", load.period_us)->group("");
  app.add_option("--load-work-us", load.work_us)->group("");
  app.add_option("--load-seconds", load.seconds)->group("");
  app.add_option("--load-cpu", load.cpu)->group("");
  app.add_flag("--load-fifo", load.fifo)->group("");
  CLI11_PARSE(app, argc, argv);
  load_mode = lt->count() > 0;
  if (load_mode) return run_load(load);

  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("ripple-tracer-bench on %ld CPUs\n\n", ncpu);

  // 1. CPU cost.
  std::vector<CostRow> rows;
  for (int rate : rates) {
    for (bool wakeup : {false, true}) {
      std::fprintf(stderr, "cost: %d jobs/s, wake-ups %s, %.0f s...\n", rate,
                   wakeup ? "on" : "off", seconds);
      CostRow row;
      if (measure_cost(rate, wakeup, seconds, &row)) return 1;
      rows.push_back(row);
    }
  }
  std::printf("## CPU cost of tracing (%.0f s per row)\n\n", seconds);
  std::printf("| jobs/s | consumer wake-ups | jobs seen | BPF ns/job | consumer ns/job | total %% of one CPU |\n");
  std::printf("|---:|---|---:|---:|---:|---:|\n");
  for (const auto& r : rows) {
    double jobs = static_cast<double>(std::max<uint64_t>(r.jobs, 1));
    std::printf("| %d | %s | %llu | %.0f | %.0f | %.3f |\n", r.rate, r.wakeup ? "on" : "off",
                static_cast<unsigned long long>(r.jobs), r.bpf_ns / jobs, r.consumer_ns / jobs,
                100.0 * (r.bpf_ns + r.consumer_ns) / (r.seconds * 1e9));
  }
  std::printf("\nBPF run time by program at the highest rate, wake-ups on (ns per call):\n\n");
  std::printf("| program | calls | ns/call | ns per job |\n|---|---:|---:|---:|\n");
  for (const auto& p : rows.back().progs) {
    if (p.run_count == 0) continue;
    std::printf("| %s | %llu | %.0f | %.0f |\n", p.name.c_str(),
                static_cast<unsigned long long>(p.run_count),
                static_cast<double>(p.run_time_ns) / static_cast<double>(p.run_count),
                static_cast<double>(p.run_time_ns) / static_cast<double>(std::max<uint64_t>(rows.back().jobs, 1)));
  }

  // 2. Added latency per job, interleaved blocks.
  enum Mode { kUntraced, kTracedPoll, kTracedWake };
  const char* names[] = {"untraced", "traced (default: no wake-ups)", "traced, consumer wake-ups"};
  std::vector<double> sp50[3], sp99[3], rp50[3], rp99[3];
  size_t jobs[3] = {};
  for (int round = 0; round < rounds; round++) {
    for (int m = 0; m < 3; m++) {
      std::fprintf(stderr, "latency: round %d/%d, %s...\n", round + 1, rounds, names[m]);
      std::unique_ptr<Tracer> tr;
      if (m != kUntraced) {
        auto t = Tracer::create(tracer_options(m == kTracedWake), [](const JobEvent&) {});
        if (!t) {
          std::fprintf(stderr, "ripple-tracer-bench: %s\n", t.error().message.c_str());
          return 1;
        }
        tr = std::move(*t);
      }
      LoadArgs la;
      la.threads = 1;
      la.period_us = 2000;
      la.work_us = 200;
      la.seconds = block_s;
      la.fifo = true;
      la.cpu = static_cast<int>(ncpu - 1);
      int fd;
      pid_t pid = spawn_load(la, &fd);
      // the consumer works as it would in production while the load runs
      std::thread consumer([&] {
        while (tr && kill(pid, 0) == 0) (void)tr->poll(m == kTracedWake ? 100 : 10);
      });
      LoadResult r = collect_load(pid, fd);
      consumer.join();
      if (!r.ok) {
        std::fprintf(stderr, "ripple-tracer-bench: load process failed\n");
        return 1;
      }
      sp50[m].push_back(r.start_p50);
      sp99[m].push_back(r.start_p99);
      rp50[m].push_back(r.resp_p50);
      rp99[m].push_back(r.resp_p99);
      jobs[m] += r.jobs;
    }
  }
  auto med = [](std::vector<double> v) { return percentile(std::move(v), 50); };
  std::printf("\n## Added latency per job (1 FIFO thread on CPU %ld, 2 ms period, 200 us work; "
              "median over %d interleaved %.0f-s blocks)\n\n", ncpu - 1, rounds, block_s);
  std::printf("| mode | jobs | release->start p50 us | p99 us | release->completion p50 us | p99 us | added p50 us |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (int m = 0; m < 3; m++) {
    std::printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %+.1f |\n", names[m], jobs[m],
                med(sp50[m]), med(sp99[m]), med(rp50[m]), med(rp99[m]),
                med(rp50[m]) - med(rp50[kUntraced]));
  }
  return 0;
}
