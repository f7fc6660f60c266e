// The job tracer: loads bpf/tracer.bpf.c, attaches it to the protected tasks
// (PTs) and hands each job's release and completion to a callback.
//
// Thin adapter around the BPF program; the design is described at the top of
// bpf/tracer.bpf.c. The daemon polls ring_fd() from its event loop; ripplectl
// trace and the tests call poll().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/tracer/spec.h"
#include "ripple/bpf/tracer.h"
#include "ripple/status.h"

namespace ripple::tracer {

struct Options {
  std::vector<PtSpec> pts;
  size_t ring_bytes = 256 * 1024;       // rounded up to a power of two pages
  std::string pin_dir = RIPPLE_PIN_DIR;  // empty: do not pin (and take no lock)
  std::string lock_path = "/run/ripple/tracer.lock";
  // false (default): no wake-ups; poll() sleeps its timeout, then drains, so
  // the consumer sees an event at most one poll interval late.
  // true: each event wakes a consumer sleeping in poll()/epoll on ring_fd().
  // A wake-up is an irq_work (a self-IPI) on the traced task's CPU, paid by
  // the task on its way back to user space: measured +25 us per job and 10x
  // the BPF cost in a nested VM (Documentation/results/tracer.md), so the
  // protected tasks are better served by a consumer that polls.
  bool wakeup_consumer = false;
};

// kAbort: the job's thread exited (or exec'd, was detached, or released again) before
// completing it; the job will never complete. Only seq, tid, release_ns and ts_ns are set.
enum class JobEventKind : uint8_t { kRelease, kComplete, kAbort };

struct JobEvent {
  JobEventKind kind;
  uint32_t pt;
  pid_t tid;
  pid_t tgid;
  uint64_t seq;          // per-PT, from 1
  uint64_t ts_ns;        // CLOCK_MONOTONIC: release (wake-up) or completion
  uint64_t release_ns;   // the job's release: the wake-up that ended the wait
  uint64_t start_ns;     // when the job began executing (wait exit, probe hit);
                         // start_ns - release_ns is the wake-up latency
  uint64_t response_ns;  // kComplete: ts_ns - release_ns
  uint64_t oncpu_ns;     // kComplete: on-CPU time during the job
  uint32_t preemptions;  // kComplete: involuntary context switches
  bool deadline_miss;    // kComplete: response_ns > the PT's deadline
  bool no_wakeup;        // kRelease: the wait returned without sleeping
};

using Callback = std::function<void(const JobEvent&)>;

// Run-time statistics of one loaded BPF program (counted only while BPF
// statistics are enabled: sysctl kernel.bpf_stats_enabled or bpf_enable_stats()).
struct ProgramStats {
  std::string name;
  uint64_t run_time_ns = 0;
  uint64_t run_count = 0;
};

// Sends libbpf's messages through the logger (include/ripple/log.h): warnings at warn,
// the rest at debug. Tracer::create() calls it; a program may call it earlier.
void route_libbpf_log();

class Tracer {
 public:
  // Probes kernel features, validates every spec, loads and attaches the BPF
  // programs, pins the maps and seeds the thread map from /proc.
  static Result<std::unique_ptr<Tracer>> create(Options opts, Callback cb);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // The ring buffer's epoll fd: readable when events are pending.
  int ring_fd() const;
  // Delivers pending events; returns how many. With wake-ups it returns as
  // soon as events are pending (or after timeout_ms, -1: forever); without,
  // it sleeps timeout_ms first. An interrupting signal returns 0.
  Result<int> poll(int timeout_ms);
  // Delivers whatever is pending without waiting.
  Result<int> consume();

  // Events lost to a full ring buffer (sum of the per-CPU counters).
  uint64_t drops() const;
  std::optional<ripple_pt_stats> stats(uint32_t pt) const;
  // Changes a PT's deadline while running (misses are counted against it).
  Status set_deadline(uint32_t pt, uint64_t deadline_ns);
  // Threads currently attached to a PT.
  size_t thread_count(uint32_t pt) const;
  // Whether thread `tid` is, in the kernel's view, still inside job `seq` of its PT.
  // False once the thread is gone or has moved on (completed, aborted, released again):
  // a consumer that holds the job and saw no event for it lost that event.
  bool job_open(pid_t tid, uint64_t seq) const;
  // The loaded programs' run time and count: the tracer's in-kernel cost.
  std::vector<ProgramStats> program_stats() const;
  const std::vector<PtSpec>& pts() const { return opts_.pts; }
  const std::string& pin_dir() const { return opts_.pin_dir; }

 private:
  struct Impl;
  Tracer(Options opts, Callback cb);
  Options opts_;
  Callback cb_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ripple::tracer
