#include "tools/cli/ripplectl/trace.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/tracer/threads.h"
#include "agent/pricing/percentile.h"
#include "agent/tracer/tracer.h"
#include "ripple/clock.h"

namespace ripple::ctl {
namespace {

struct TraceArgs {
  std::string exe, comm, mode = "period-wait", release, complete, wait, name, pin_dir;
  pid_t pid = 0;
  double deadline_ms = 0, duration_s = 0;
  bool json = false, no_pin = false;
  size_t ring_kb = 256;
};

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

int run_trace(const TraceArgs& a) {
  auto fail = [](const std::string& msg) {
    std::fprintf(stderr, "ripplectl trace: error: %s\n", msg.c_str());
    return 1;
  };
  tracer::PtSpec spec;
  spec.name = a.name;
  int given = !a.exe.empty() + !a.comm.empty() + (a.pid != 0);
  if (given != 1) return fail("give exactly one of --exe PATH, --pid PID, --comm NAME");
  if (!a.exe.empty()) {
    spec.match = tracer::MatchKind::kExe;
    spec.exe = a.exe;
  } else if (!a.comm.empty()) {
    spec.match = tracer::MatchKind::kComm;
    spec.comm = a.comm;
  } else {
    spec.match = tracer::MatchKind::kPid;
    spec.pid = a.pid;
  }
  if (a.mode == "uprobe") {
    spec.mode = tracer::Mode::kUprobe;
    if (a.release.empty()) return fail("--mode uprobe needs --release SYM");
    if (!a.wait.empty()) return fail("--wait applies to --mode period-wait only");
  } else {
    if (!a.release.empty() || !a.complete.empty())
      return fail("--release/--complete need --mode uprobe");
  }
  spec.release_symbol = a.release;
  spec.complete_symbol = a.complete;
  if (!a.wait.empty()) {
    auto mask = tracer::parse_wait_list(a.wait);
    if (!mask) return fail("--wait: " + mask.error().message);
    spec.wait_mask = *mask;
  }
  if (a.deadline_ms < 0) return fail("--deadline must be >= 0 ms");
  spec.deadline_ns = static_cast<uint64_t>(std::llround(a.deadline_ms * 1e6));

  tracer::Options opts;
  opts.pts.push_back(spec);
  opts.ring_bytes = a.ring_kb * 1024;
  if (a.no_pin) opts.pin_dir.clear();
  else if (!a.pin_dir.empty()) opts.pin_dir = a.pin_dir;

  std::vector<uint64_t> responses;
  uint64_t misses = 0, t0 = 0;
  std::string label;
  auto on_event = [&](const tracer::JobEvent& e) {
    if (e.kind != tracer::JobEventKind::kComplete) return;
    responses.push_back(e.response_ns);
    misses += e.deadline_miss;
    if (a.json) {
      nlohmann::json j = {{"pt", label},          {"seq", e.seq},
                          {"tid", e.tid},         {"pid", e.tgid},
                          {"release_ns", e.release_ns}, {"start_ns", e.start_ns},
                          {"complete_ns", e.ts_ns},
                          {"response_ns", e.response_ns}, {"oncpu_ns", e.oncpu_ns},
                          {"preemptions", e.preemptions}, {"miss", e.deadline_miss},
                          {"no_wakeup", e.no_wakeup}};
      std::puts(j.dump().c_str());
    } else {
      std::printf("%-15s %8llu %7d %12.3f %10.3f %10.3f %6u %s\n", label.c_str(),
                  static_cast<unsigned long long>(e.seq), e.tid, ms(e.release_ns - t0),
                  ms(e.response_ns), ms(e.oncpu_ns), e.preemptions,
                  e.deadline_miss ? "MISS" : "");
    }
  };

  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  t0 = monotonic_ns();
  auto tr = tracer::Tracer::create(std::move(opts), on_event);
  if (!tr) return fail(tr.error().message);
  label = (*tr)->pts()[0].name;
  if (!a.json) {
    std::fprintf(stderr, "Tracing jobs of %s (%s)... Ctrl-C to end.\n", label.c_str(),
                 a.mode.c_str());
    std::printf("%-15s %8s %7s %12s %10s %10s %6s\n", "PT", "SEQ", "TID", "RELEASE_MS",
                "RESP_MS", "ONCPU_MS", "PREEMPT");
  }
  uint64_t end = a.duration_s > 0 ? t0 + static_cast<uint64_t>(a.duration_s * 1e9) : 0;
  while (!g_stop) {
    int wait_ms = 100;
    if (end) {
      uint64_t now = monotonic_ns();
      if (now >= end) break;
      wait_ms = static_cast<int>(std::min<uint64_t>(100, (end - now) / 1000000 + 1));
    }
    auto n = (*tr)->poll(wait_ms);
    if (!n) return fail(n.error().message);
    if (spec.match == tracer::MatchKind::kPid && !tracer::process_exists(spec.pid)) break;
    std::fflush(stdout);
  }
  (void)(*tr)->consume();

  std::sort(responses.begin(), responses.end());
  uint64_t drops = (*tr)->drops();
  if (a.json) {
    nlohmann::json s = {{"pt", label},
                        {"jobs", responses.size()},
                        {"misses", misses},
                        {"p50_ms", ms(pricing::percentile_sorted(responses, 50))},
                        {"p99_ms", ms(pricing::percentile_sorted(responses, 99))},
                        {"max_ms", responses.empty() ? 0.0 : ms(responses.back())},
                        {"drops", drops}};
    std::puts(nlohmann::json{{"summary", s}}.dump().c_str());
  } else {
    std::printf("\n%s: %zu jobs, %llu misses", label.c_str(), responses.size(),
                static_cast<unsigned long long>(misses));
    if (spec.deadline_ns) std::printf(" (deadline %.3f ms)", a.deadline_ms);
    std::printf(", response p50 %.3f ms, p99 %.3f ms, max %.3f ms, %llu drops\n",
                ms(pricing::percentile_sorted(responses, 50)),
                ms(pricing::percentile_sorted(responses, 99)),
                responses.empty() ? 0.0 : ms(responses.back()),
                static_cast<unsigned long long>(drops));
  }
  return 0;
}

}  // namespace

void add_trace_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<TraceArgs>();
  auto* sub = app.add_subcommand(
      "trace",
      "Trace the jobs of a protected task: one line per job and a closing summary.\n"
      "Design of the BPF side: bpf/tracer.bpf.c; pinned maps: Documentation/tracer.md");
  auto* exe = sub->add_option("--exe", args->exe, "match every process running this executable");
  auto* pid = sub->add_option("--pid", args->pid, "match every thread of this process")
                  ->check(CLI::Range(1, 4 * 1024 * 1024, "a process id (1 to 4194304)"));
  auto* comm = sub->add_option("--comm", args->comm, "match every thread with this name");
  exe->excludes(pid, comm);
  pid->excludes(comm);
  sub->add_option("--mode", args->mode, "how jobs are seen")
      ->check(CLI::IsMember({"period-wait", "uprobe"}));
  sub->add_option("--release", args->release, "uprobe: function whose entry releases a job (SYM or /path/lib.so:SYM)");
  sub->add_option("--complete", args->complete, "uprobe: function whose entry completes it (default: the release function's return)");
  sub->add_option("--wait", args->wait, "period-wait syscalls: clock_nanosleep,nanosleep,epoll,poll,select,futex (default clock_nanosleep,nanosleep)");
  sub->add_option("--deadline", args->deadline_ms, "relative deadline in ms; jobs over it count as misses");
  sub->add_option("--duration", args->duration_s, "seconds to trace (default: until Ctrl-C, or until --pid exits)")
      ->check(CLI::Range(0.0, 1e9, "seconds (0 to 1e9)"));
  sub->add_option("--name", args->name, "label for the task");
  sub->add_flag("--json", args->json, "JSON lines instead of a table");
  sub->add_option("--pin-dir", args->pin_dir, "where to pin the live maps (default " RIPPLE_PIN_DIR ")");
  sub->add_flag("--no-pin", args->no_pin, "do not pin the maps (lets several tracers run)");
  sub->add_option("--ring-kb", args->ring_kb, "ring buffer size in KiB")->check(CLI::Range(4, 1 << 20));
  sub->callback([args, exit_code] { *exit_code = run_trace(*args); });
}

}  // namespace ripple::ctl
