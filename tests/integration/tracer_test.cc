// Integration tests of the tracer library (agent/tracer) with the real BPF
// program and real, unmodified test programs (tests/progs/periodic), each of
// which logs its own ground truth. Needs root, BTF and tracefs.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent/tracer/tracer.h"
#include "tests/lib/groundtruth.h"

namespace ripple::tracer {
namespace {

constexpr uint64_t kLimitNs = 50000;  // start/completion vs the program's own clock
constexpr int kMajorityPct = 50;       // see tests/bpf/tracer_test.c
// RIPPLE_BPFTEST_TIMING=0: the CPU is emulated (tests/cross/bpf_arm64_vm.sh boots an arm64
// kernel under qemu's TCG): check what the tracer saw, not how close its timestamps are.
const bool kCheckTiming = [] {
  const char* v = std::getenv("RIPPLE_BPFTEST_TIMING");
  return v == nullptr || std::strcmp(v, "0") != 0;
}();

std::string test_dir() {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  self[n > 0 ? n : 0] = 0;
  std::string p(self);
  p = p.substr(0, p.rfind('/'));  // .../tests/integration
  return p.substr(0, p.rfind('/'));
}

// A private copy of tests/progs/periodic: tracing by executable matches its
// inode, so other runs of the shared binary (another suite running at the
// same time) stay out of these tests.
std::string periodic() {
  static const std::string path = [] {
    std::string dst = "/tmp/ripple-it-periodic-" + std::to_string(getpid());
    std::ifstream in(test_dir() + "/progs/periodic", std::ios::binary);
    std::ofstream(dst, std::ios::binary) << in.rdbuf();
    chmod(dst.c_str(), 0755);
    std::atexit([] { unlink(("/tmp/ripple-it-periodic-" + std::to_string(getpid())).c_str()); });
    return dst;
  }();
  return path;
}

// A comm no other run of these tests uses at the same time (at most 15 chars).
std::string unique_comm(const std::string& tag) {
  return ("r" + std::to_string(getpid() % 100000) + "_" + tag).substr(0, 15);
}

std::string tmp_log(const std::string& tag) {
  return "/tmp/ripple-it-" + std::to_string(getpid()) + "-" + tag + ".log";
}

// A child process running periodic with args; reaped on destruction.
class Child {
 public:
  explicit Child(std::vector<std::string> args, bool pipe_stdout = false) {
    args.insert(args.begin(), periodic());
    int fds[2] = {-1, -1};
    if (pipe_stdout && pipe(fds) != 0) fds[0] = fds[1] = -1;
    pid_ = fork();
    if (pid_ == 0) {
      if (fds[1] >= 0) dup2(fds[1], 1);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (fds[1] >= 0) close(fds[1]);
    out_ = fds[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  pid_t pid() const { return pid_; }
  // Reads stdout until "ready" (periodic --wait-start).
  bool wait_ready() {
    char buf[16] = {};
    return out_ >= 0 && read(out_, buf, sizeof(buf) - 1) > 0 && std::strstr(buf, "ready");
  }
  bool done() {
    int st;
    if (reaped_) return true;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      reaped_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    }
    return reaped_;
  }
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  int status_ = -1;
};

// Collects events per PT.
struct Sink {
  std::map<uint32_t, gt_collector> by_pt;
  ~Sink() {
    for (auto& [pt, c] : by_pt) gt_collector_free(&c);
  }
  Callback callback() {
    return [this](const JobEvent& e) {
      auto& c = by_pt[e.pt];
      if (e.kind == JobEventKind::kRelease)
        gt_collect_release(&c, e.seq, e.release_ns, e.start_ns, e.tid);
      else if (e.kind == JobEventKind::kComplete)
        gt_collect_complete(&c, e.seq, e.ts_ns, e.oncpu_ns, e.preemptions, e.tid);
    };
  }
};

// Timing tests run without consumer wake-ups (the library's default): a
// wake-up is an irq_work on the traced task's CPU, paid after the tracer's
// timestamp and before the program's own (~20 us in a nested VM), so it would
// blur what these tests measure. The stress and live-deadline tests run with
// wake-ups, so that path is covered too.
Options test_options(bool wakeup = false) {
  Options o;
  o.pin_dir.clear();  // do not disturb a running agent's pins, take no lock
  o.wakeup_consumer = wakeup;
  return o;
}

PtSpec exe_spec(const std::string& name = "periodic") {
  PtSpec s;
  s.name = name;
  s.match = MatchKind::kExe;
  s.exe = periodic();
  return s;
}

// Polls the tracer until every child has exited, then drains.
void run_until_done(Tracer& t, std::vector<Child*> children) {
  for (;;) {
    bool all = true;
    for (auto* c : children) all &= c->done();
    if (all) break;
    ASSERT_TRUE(t.poll(20).ok());
  }
  ASSERT_TRUE(t.consume().ok());
}

std::vector<gt_job> load_log(const std::string& path) {
  gt_job* jobs = nullptr;
  int n = gt_load(path.c_str(), &jobs);
  std::vector<gt_job> v(jobs, jobs + (n > 0 ? n : 0));
  free(jobs);
  unlink(path.c_str());
  return v;
}

// Compares and checks what every ground-truth test checks: causality (the tracer's start
// before the program's own release reading, its completion after the program's own
// completion reading), and the medians of |start - own release| and |completion - own
// completion| within the 50 us bound (load delays the program's readings, and only ever
// later: tests/bpf/tracer_test.c). The per-job bound, for most jobs, is checked by each test.
gt_report compare(const std::vector<gt_job>& jobs, const gt_collector& c) {
  gt_report r;
  gt_compare(jobs.data(), static_cast<int>(jobs.size()), c.jobs, c.n, kLimitNs, &r);
  char line[512];
  gt_format(&r, line, sizeof(line));
  std::printf("    %s\n", line);
  if (kCheckTiming) {
    EXPECT_EQ(0, r.sign_errors);
    EXPECT_LE(r.start_p50_us, kLimitNs / 1000.0);
    EXPECT_LE(r.complete_p50_us, kLimitNs / 1000.0);
  }
  return r;
}

class TracerIT : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the tracer needs root";
  }
};

// One ground-truth run: trace `spec`, run periodic with `args` (plus --log)
// to completion, and check what every such run must show: each of the
// program's `jobs` jobs seen exactly once, in order, on the program's thread,
// start and completion within 50 us (noise allowance as above), no drops.
struct GroundTruthRun {
  std::vector<gt_job> jobs;
  gt_report report{};
  Sink sink;
  pid_t pid = 0;
  size_t threads_after = 0;
  const gt_collector& traced() { return sink.by_pt[0]; }
};

void run_ground_truth(PtSpec spec, std::vector<std::string> args, size_t njobs,
                      GroundTruthRun* out) {
  auto log = tmp_log(spec.name + std::to_string(njobs));
  Options o = test_options();
  o.pts.push_back(spec);
  auto t = Tracer::create(o, out->sink.callback());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(0u, (*t)->thread_count(0));  // nothing runs before the child starts
  args.insert(args.end(), {"--jobs", std::to_string(njobs), "--log", log});
  Child c(args);
  out->pid = c.pid();
  run_until_done(**t, {&c});
  ASSERT_EQ(0, c.status());
  out->jobs = load_log(log);
  ASSERT_EQ(njobs, out->jobs.size());
  const auto& col = out->traced();
  out->report = compare(out->jobs, col);
  EXPECT_EQ(static_cast<int>(njobs), col.n);
  EXPECT_EQ(0, col.order_errors);
  EXPECT_EQ(0, out->report.order_errors);
  EXPECT_EQ(0, out->report.tid_errors);  // every job on the program's job thread
  if (kCheckTiming) {
    EXPECT_LE(out->report.over_limit, static_cast<int>(njobs) * kMajorityPct / 100);
  }
  EXPECT_EQ(0u, (*t)->drops());
  out->threads_after = (*t)->thread_count(0);
}

PtSpec uprobe_spec(const std::string& release, const std::string& complete = "") {
  PtSpec s = exe_spec("uprobe");
  s.mode = Mode::kUprobe;
  s.release_symbol = release;
  s.complete_symbol = complete;
  return s;
}

// Tests that uprobe mode (release = function entry, completion = its return)
// sees every job exactly once, in order, within 50 us of the program's clock.
TEST_F(TracerIT, UprobeEntryAndReturn) {
  GroundTruthRun run;
  ASSERT_NO_FATAL_FAILURE(run_ground_truth(uprobe_spec("ripple_test_job"),
                   {"--func", "--period-us", "4000", "--work-us", "200", "--fifo"}, 200, &run));
}

// Tests that the two-function uprobe mode completes a job at the entry of
// the second function.
TEST_F(TracerIT, UprobeTwoFunctions) {
  GroundTruthRun run;
  ASSERT_NO_FATAL_FAILURE(run_ground_truth(uprobe_spec("ripple_test_job", "ripple_test_job_done"),
                   {"--func", "--period-us", "4000", "--work-us", "300", "--fifo"}, 100, &run));
  // the response covers the 300 us of work
  const auto& col = run.traced();
  for (int i = 0; i < col.n; i++) EXPECT_GE(col.jobs[i].complete - col.jobs[i].release, 300000u);
}

// Tests that in a multi-threaded process only the thread named by the PT's
// comm is traced, though a sibling ("noise") sleeps with the same syscall.
TEST_F(TracerIT, OnlyThePtThreadOfAMultiThreadedProcess) {
  PtSpec s;
  s.match = MatchKind::kComm;
  s.comm = unique_comm("pt");
  GroundTruthRun run;
  ASSERT_NO_FATAL_FAILURE(run_ground_truth(s, {"--thread", "--noise", "--comm", s.comm, "--period-us", "3000", "--fifo"},
                   100, &run));
  EXPECT_NE(run.pid, run.jobs[0].tid);  // the jobs ran on the second thread
}

// Tests that a process started after the tracer (matched by executable) is
// picked up at exec and every one of its jobs is seen.
TEST_F(TracerIT, ProcessStartedAfterTracer) {
  GroundTruthRun run;
  ASSERT_NO_FATAL_FAILURE(run_ground_truth(exe_spec(), {"--period-us", "3000", "--fifo"}, 150, &run));
  EXPECT_EQ(0u, run.threads_after);  // exited threads are removed
}

// Tests that a running process matched by pid is traced, including a thread
// it creates after the tracer attached.
TEST_F(TracerIT, PidMatchFollowsNewThreads) {
  auto log = tmp_log("pid");
  Child c({"--wait-start", "--thread", "--jobs", "80", "--period-us", "3000", "--log", log},
          true);
  ASSERT_TRUE(c.wait_ready());
  Options o = test_options();
  PtSpec s;
  s.match = MatchKind::kPid;
  s.pid = c.pid();
  o.pts.push_back(s);
  Sink sink;
  auto t = Tracer::create(o, sink.callback());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(1u, (*t)->thread_count(0));  // only the main thread exists yet
  kill(c.pid(), SIGUSR1);
  run_until_done(**t, {&c});
  auto jobs = load_log(log);
  ASSERT_EQ(80u, jobs.size());
  auto r = compare(jobs, sink.by_pt[0]);
  EXPECT_EQ(80, sink.by_pt[0].n);
  EXPECT_EQ(0, r.tid_errors);
  EXPECT_NE(c.pid(), jobs[0].tid);  // the jobs ran on the new thread
  auto st = (*t)->stats(0);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(80u, st->jobs);
  EXPECT_GE(st->threads, 2u);
}

// Tests that a job whose process is killed mid-job is reported as aborted (the
// consumer that holds it must not wait for its completion), and that job_open()
// reports it closed; while the job ran, job_open() said it was open.
TEST_F(TracerIT, KilledMidJobIsReportedAborted) {
  Options o = test_options();
  o.pts.push_back(exe_spec());
  struct Seen {
    uint64_t last_release = 0, aborted_seq = 0;
    pid_t tid = 0;
    int aborts = 0;
  } seen;
  auto t = Tracer::create(o, [&](const JobEvent& e) {
    if (e.kind == JobEventKind::kRelease) {
      seen.last_release = e.seq;
      seen.tid = e.tid;
    } else if (e.kind == JobEventKind::kAbort) {
      ++seen.aborts;
      seen.aborted_seq = e.seq;
    }
  });
  ASSERT_TRUE(t.ok()) << t.error().message;
  // Jobs of 200 ms every 250 ms: a kill lands inside a job with a wide margin.
  Child c({"--period-us", "250000", "--work-us", "200000", "--jobs", "100"});
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.last_release < 2 && std::chrono::steady_clock::now() < until) ASSERT_TRUE((*t)->poll(5).ok());
  ASSERT_GE(seen.last_release, 2u) << "no job released within 10 s";
  const uint64_t seq = seen.last_release;
  EXPECT_TRUE((*t)->job_open(seen.tid, seq));  // released < 5 ms ago, runs 200 ms
  kill(c.pid(), SIGKILL);
  while (!c.done()) ASSERT_TRUE((*t)->poll(5).ok());
  ASSERT_TRUE((*t)->consume().ok());
  EXPECT_EQ(1, seen.aborts);
  EXPECT_EQ(seq, seen.aborted_seq);
  EXPECT_FALSE((*t)->job_open(seen.tid, seq));
  auto st = (*t)->stats(0);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(1u, st->aborted);
}

// Tests that 8 PTs at 1 kHz for 10 s lose no event: every job of every task
// is delivered, in order, and the drop counters stay at zero.
TEST_F(TracerIT, EightTasksAt1kHzLoseNothing) {
  constexpr int kTasks = 8, kJobs = 10000;
  Options o = test_options(/*wakeup=*/true);
  for (int i = 0; i < kTasks; i++) {
    PtSpec s;
    s.match = MatchKind::kComm;
    s.comm = unique_comm("st" + std::to_string(i));
    o.pts.push_back(s);
  }
  Sink sink;
  auto t = Tracer::create(o, sink.callback());
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::vector<std::unique_ptr<Child>> kids;
  std::vector<Child*> raw;
  std::vector<std::string> logs;
  for (int i = 0; i < kTasks; i++) {
    logs.push_back(tmp_log("stress" + std::to_string(i)));
    kids.push_back(std::make_unique<Child>(std::vector<std::string>{
        "--comm", unique_comm("st" + std::to_string(i)), "--jobs", std::to_string(kJobs),
        "--period-us", "1000", "--work-us", "20", "--log", logs.back()}));
    raw.push_back(kids.back().get());
  }
  run_until_done(**t, raw);
  for (int i = 0; i < kTasks; i++) {
    auto jobs = load_log(logs[i]);
    EXPECT_EQ(static_cast<size_t>(kJobs), jobs.size()) << "task " << i;
    auto& col = sink.by_pt[static_cast<uint32_t>(i)];
    EXPECT_EQ(kJobs, col.n) << "task " << i;
    EXPECT_EQ(static_cast<uint64_t>(kJobs), col.completes) << "task " << i;
    EXPECT_EQ(0, col.order_errors) << "task " << i;
    auto st = (*t)->stats(static_cast<uint32_t>(i));
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(0u, st->drops);
    EXPECT_EQ(static_cast<uint64_t>(kJobs), st->jobs);
  }
  EXPECT_EQ(0u, (*t)->drops());
}

// Tests that with the consumer stalled and a tiny ring, every event is either
// delivered or counted: delivered + dropped == 2 x jobs, per PT and in total.
TEST_F(TracerIT, StalledConsumerCountsDropsExactly) {
  Options o = test_options();
  o.ring_bytes = 4096;
  for (int i = 0; i < 2; i++) {
    PtSpec s;
    s.match = MatchKind::kComm;
    s.comm = unique_comm("sl" + std::to_string(i));
    o.pts.push_back(s);
  }
  Sink sink;
  auto t = Tracer::create(o, sink.callback());
  ASSERT_TRUE(t.ok()) << t.error().message;
  Child a({"--comm", unique_comm("sl0"), "--jobs", "300", "--period-us", "1000"});
  Child b({"--comm", unique_comm("sl1"), "--jobs", "500", "--period-us", "1000"});
  while (!a.done() || !b.done()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE((*t)->consume().ok());
  uint64_t delivered_total = 0, drops_pt = 0;
  const uint64_t jobs[2] = {300, 500};
  for (uint32_t i = 0; i < 2; i++) {
    auto& col = sink.by_pt[i];
    auto st = (*t)->stats(i);
    ASSERT_TRUE(st.has_value());
    uint64_t delivered = col.releases + col.completes;
    EXPECT_EQ(2 * jobs[i], delivered + st->drops) << "pt " << i;
    EXPECT_EQ(jobs[i], st->jobs);
    delivered_total += delivered;
    drops_pt += st->drops;
  }
  EXPECT_GT(drops_pt, 0u);
  EXPECT_EQ(drops_pt, (*t)->drops());
  EXPECT_EQ(1600u, delivered_total + (*t)->drops());
}

// Tests that a deadline changed while running is applied to later jobs.
TEST_F(TracerIT, DeadlineChangesLive) {
  Options o = test_options(/*wakeup=*/true);
  PtSpec s = exe_spec();
  s.deadline_ns = 1'000'000'000;  // 1 s: nothing misses
  o.pts.push_back(s);
  uint64_t misses = 0, completes = 0;
  auto t = Tracer::create(o, [&](const JobEvent& e) {
    if (e.kind != JobEventKind::kComplete) return;
    completes++;
    misses += e.deadline_miss;
  });
  ASSERT_TRUE(t.ok()) << t.error().message;
  Child c({"--jobs", "100", "--period-us", "4000", "--work-us", "500"});
  while (completes < 30 && !c.done()) ASSERT_TRUE((*t)->poll(20).ok());
  EXPECT_EQ(0u, misses);
  ASSERT_TRUE((*t)->set_deadline(0, 100'000).ok());  // 100 us: every 500 us job misses
  run_until_done(**t, {&c});
  auto st = (*t)->stats(0);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(100u, completes);
  EXPECT_GE(misses, 60u);
  EXPECT_EQ(misses, st->misses);
}

// Tests that the live maps are pinned where bpftool looks, reflect the jobs,
// and are removed when the tracer goes away; a second tracer is refused
// while the first holds the lock.
TEST_F(TracerIT, PinnedMapsAndLock) {
  Options o;
  o.pin_dir = "/sys/fs/bpf/ripple-test-" + std::to_string(getpid());
  o.lock_path = "/tmp/ripple-test-" + std::to_string(getpid()) + ".lock";
  o.pts.push_back(exe_spec());
  auto t = Tracer::create(o, [](const JobEvent&) {});
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto second = Tracer::create(o, [](const JobEvent&) {});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(std::string::npos, second.error().message.find("another Ripple tracer is running"));
  Child c({"--jobs", "40", "--period-us", "2000"});
  run_until_done(**t, {&c});
  int fd = bpf_obj_get((o.pin_dir + "/pt_stats").c_str());
  ASSERT_GE(fd, 0);
  uint32_t key = 0;
  ripple_pt_stats st{};
  ASSERT_EQ(0, bpf_map_lookup_elem(fd, &key, &st));
  close(fd);
  EXPECT_EQ(40u, st.jobs);
  for (const char* m : {"pt_config", "pt_threads", "drops"})
    EXPECT_EQ(0, access((o.pin_dir + "/" + m).c_str(), F_OK)) << m;
  t->reset();
  EXPECT_NE(0, access((o.pin_dir + "/pt_stats").c_str(), F_OK));
  EXPECT_NE(0, access(o.pin_dir.c_str(), F_OK));  // the directory too
  unlink(o.lock_path.c_str());
}

// Tests that bad input is refused before anything loads, with a message that
// names the offending pid, file or symbol.
TEST_F(TracerIT, BadInputNamesTheProblem) {
  auto expect_error = [](PtSpec s, const std::string& needle) {
    Options o = test_options();
    o.pts.push_back(s);
    auto t = Tracer::create(o, [](const JobEvent&) {});
    ASSERT_FALSE(t.ok()) << "expected: " << needle;
    EXPECT_NE(std::string::npos, t.error().message.find(needle)) << t.error().message;
  };
  PtSpec pid;
  pid.match = MatchKind::kPid;
  pid.pid = 0x3ffffff0;
  expect_error(pid, "no such process: pid 1073741808");

  PtSpec missing = exe_spec();
  missing.exe = "/nonexistent/robot";
  expect_error(missing, "/nonexistent/robot");

  std::string script = "/tmp/ripple-it-script-" + std::to_string(getpid());
  std::ofstream(script) << "#!/bin/sh\necho hi\n";
  chmod(script.c_str(), 0755);
  PtSpec notelf = exe_spec();
  notelf.exe = script;
  expect_error(notelf, "not an ELF file");
  unlink(script.c_str());

  PtSpec nosym = exe_spec();
  nosym.mode = Mode::kUprobe;
  nosym.release_symbol = "no_such_function_here";
  expect_error(nosym, "symbol 'no_such_function_here' not found in " + periodic());

  PtSpec longcomm;
  longcomm.match = MatchKind::kComm;
  longcomm.comm = "a_name_longer_than_15";
  expect_error(longcomm, "longer than 15 characters");

  PtSpec norelease = exe_spec();
  norelease.mode = Mode::kUprobe;
  expect_error(norelease, "uprobe mode needs a release symbol");
}

}  // namespace
}  // namespace ripple::tracer
