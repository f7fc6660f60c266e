// Tests of the robot task suite's shared pieces: the periodic driver's statistics (their
// percentile routine is agent/pricing/percentile.h, tested in pricing_percentile_test), the
// CPU-list parser, the worker pool and the mixes-as-data loader.
#include "tools/workloads/cores.h"
#include "tools/workloads/mix.h"
#include "tools/workloads/periodic.h"
#include "tools/workloads/pool.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <stdexcept>

namespace ripple::workloads {
namespace {

// Tests that job time is completion - start and a miss is a response past the deadline.
TEST(Periodic, SummaryCountsMissesAgainstTheDeadline) {
  std::vector<JobRecord> r;
  for (int i = 0; i < 10; ++i) {
    int64_t rel = i * 100'000'000LL;
    // Woken 1 ms late; job takes 10 ms, except job 9 (95 ms: response 96 ms > 90 ms).
    r.push_back({static_cast<uint64_t>(i), rel, rel + 1'000'000, rel + 1'000'000 + (i == 9 ? 95'000'000 : 10'000'000), 0});
  }
  Summary s = summarize(r, 90.0);
  EXPECT_EQ(s.jobs, 10u);
  EXPECT_DOUBLE_EQ(s.p50_ms, 10.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 95.0);
  EXPECT_DOUBLE_EQ(s.resp_p99_ms, 96.0);
  EXPECT_EQ(s.misses, 1u);
}

// Tests that CPU lists parse as taskset -c writes them, in the order given.
TEST(Cores, ParsesRangesAndLists) {
  std::vector<int> c;
  std::string err;
  ASSERT_TRUE(parse_core_list("4-7", &c, &err)) << err;
  EXPECT_EQ(c, (std::vector<int>{4, 5, 6, 7}));
  ASSERT_TRUE(parse_core_list("4,5,6,7", &c, &err)) << err;
  EXPECT_EQ(c, (std::vector<int>{4, 5, 6, 7}));
  ASSERT_TRUE(parse_core_list("0-1,8,10-11", &c, &err)) << err;
  EXPECT_EQ(c, (std::vector<int>{0, 1, 8, 10, 11}));
  ASSERT_TRUE(parse_core_list("6,4-5", &c, &err)) << err;
  EXPECT_EQ(c, (std::vector<int>{6, 4, 5}));
  ASSERT_TRUE(parse_core_list("3", &c, &err)) << err;
  EXPECT_EQ(c, (std::vector<int>{3}));
  EXPECT_EQ(format_core_list({4, 5, 6, 7}), "4-7");
  EXPECT_EQ(format_core_list({0, 1, 3, 8, 9}), "0-1,3,8-9");
  EXPECT_EQ(format_core_list({6, 4, 5}), "6,4-5");
}

// Tests that a bad CPU list is refused with a reason a user can act on.
TEST(Cores, RefusesBadLists) {
  std::vector<int> c;
  std::string err;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "empty"},          {"a", "'a' is not a CPU"},   {"7-4", "runs backwards"},
      {"4,4", "listed twice"}, {"0-3,2", "CPU 2 is listed twice"}, {"3-", "'3-' is not a CPU"},
      {"1,,2", "'' is not"},  {"-1", "'-1' is not"},        {"4 ", "'4 ' is not"},
      {"99999", "beyond the largest CPU"}};
  for (const auto& [text, want] : bad) {
    EXPECT_FALSE(parse_core_list(text, &c, &err)) << text;
    EXPECT_NE(err.find(want), std::string::npos) << text << ": " << err;
  }
  EXPECT_EQ(cores_not_in({0, 5, 7}, {0, 1, 2, 3, 4, 5}), (std::vector<int>{7}));
}

// Tests that the shares of n items tile [0, n) in order, differing in size by at most one.
TEST(Pool, SharesTileTheRange) {
  for (size_t n : {0, 1, 3, 7, 64, 1000, 1001}) {
    for (int parts : {1, 2, 3, 4, 11}) {
      size_t next = 0, lo_size = n, hi_size = 0;
      for (int i = 0; i < parts; ++i) {
        auto [a, b] = WorkerPool::split(n, i, parts);
        EXPECT_EQ(a, next) << n << "/" << parts;
        next = b;
        lo_size = std::min(lo_size, b - a), hi_size = std::max(hi_size, b - a);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(hi_size - lo_size, 1u);
    }
  }
}

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// Tests that every thread runs its share exactly once per job, share 0 on the caller and
// the others on the same workers every job (created once), and that no share of a job
// starts before every share of the previous job has returned.
TEST(Pool, EveryShareOncePerJobAndJobsDoNotOverlap) {
  constexpr int kThreads = 4;  // more than this VM's cores: the order must not depend on them
  constexpr int kJobs = 2000;
  WorkerPool pool;
  std::string err;
  ASSERT_TRUE(pool.start(kThreads, {}, &err)) << err;
  ASSERT_EQ(pool.threads(), kThreads);
  std::vector<std::atomic<int>> done(kJobs);  // shares of job k that have returned
  std::vector<int> runs(kThreads, 0);          // share i is only touched by its own thread
  std::vector<std::set<pid_t>> tids(kThreads);
  std::atomic<int> in_flight{0}, overlaps{0}, early{0};
  const pid_t caller = this_tid();
  for (int k = 0; k < kJobs; ++k) {
    pool.run([&](int i) {
      if (in_flight.fetch_add(1) >= kThreads) overlaps.fetch_add(1);
      if (k > 0 && done[k - 1].load() != kThreads) early.fetch_add(1);
      ++runs[i];
      tids[i].insert(this_tid());
      if (i == k % kThreads) sched_yield();  // vary who finishes last
      in_flight.fetch_sub(1);
      done[k].fetch_add(1);
    });
    ASSERT_EQ(done[k].load(), kThreads) << "run() returned before every share of job " << k;
    ASSERT_EQ(in_flight.load(), 0);
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(early.load(), 0) << "a share started before the previous job joined";
  std::set<pid_t> workers;
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(runs[i], kJobs) << "share " << i;
    ASSERT_EQ(tids[i].size(), 1u) << "share " << i << " ran on " << tids[i].size() << " threads";
    if (i == 0) {
      EXPECT_EQ(*tids[0].begin(), caller) << "share 0 runs on the caller";
    } else {
      EXPECT_NE(*tids[i].begin(), caller);
      workers.insert(*tids[i].begin());
    }
  }
  EXPECT_EQ(workers.size(), static_cast<size_t>(kThreads - 1));
}

// Tests that with cores each worker runs on its own core, and that a core the process may
// not use fails start() with the worker and core named, leaving a one-thread pool.
TEST(Pool, PinsWorkersToTheirCores) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const std::vector<int> cores = {cpus.front(), cpus.back()};
  WorkerPool pool;
  std::string err;
  ASSERT_TRUE(pool.start(2, cores, &err)) << err;
  std::atomic<int> on_cpu{-1};
  for (int k = 0; k < 20; ++k)
    pool.run([&](int i) {
      if (i == 1) on_cpu = sched_getcpu();
    });
  EXPECT_EQ(on_cpu.load(), cores[1]);

  WorkerPool bad;
  EXPECT_FALSE(bad.start(2, {cpus.front(), CPU_SETSIZE - 1}, &err));
  EXPECT_NE(err.find("cannot pin worker 1 to core " + std::to_string(CPU_SETSIZE - 1)), std::string::npos) << err;
  EXPECT_EQ(bad.threads(), 1);
  int ran = 0;
  bad.run([&](int) { ++ran; });
  EXPECT_EQ(ran, 1);
}

// Tests that an exception in a worker's share reaches the caller after the join, and the
// pool runs the next job normally.
TEST(Pool, ShareExceptionReachesTheCaller) {
  WorkerPool pool;
  std::string err;
  ASSERT_TRUE(pool.start(3, {}, &err)) << err;
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run([&](int i) {
                 ran.fetch_add(1);
                 if (i == 2) throw std::runtime_error("share 2");
               }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 3);
  pool.run([&](int) { ran.fetch_add(1); });
  EXPECT_EQ(ran.load(), 6);
}

// Tests that the shipped mixes say what the paper's §5.1 says.
TEST(Mix, ShippedMixesMatchThePaper) {
  Mix m;
  std::string err;
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1.toml", &m, &err)) << err;
  EXPECT_EQ(m.name, "Robotic1");
  ASSERT_EQ(m.tasks.size(), 3u);
  EXPECT_EQ(m.tasks[0].binary, "ripple-costmap");
  EXPECT_EQ(m.tasks[1].binary, "ripple-kdnn");
  EXPECT_EQ(m.tasks[2].binary, "ripple-sgm");
  for (const auto& t : m.tasks) EXPECT_EQ(t.period_ms, 100.0);
  // Costmap 4, KDNN 4, SGM 3 cores, disjoint (cores 15-18, 11-14, 7-9 in the paper's A.x).
  EXPECT_EQ(m.tasks[0].threads, 4);
  EXPECT_EQ(m.tasks[0].cores, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m.tasks[1].threads, 4);
  EXPECT_EQ(m.tasks[1].cores, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(m.tasks[2].threads, 3);
  EXPECT_EQ(m.tasks[2].cores, (std::vector<int>{8, 9, 10}));
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1-1t.toml", &m, &err)) << err;
  ASSERT_EQ(m.tasks.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(m.tasks[i].threads, 1);
    EXPECT_EQ(m.tasks[i].cores, (std::vector<int>{static_cast<int>(i)}));
  }
  // The H100 variant: robotic1.toml with KDNN at 150 ms, nothing else changed.
  Mix r1;
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1.toml", &r1, &err)) << err;
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1-kdnn150.toml", &m, &err)) << err;
  EXPECT_EQ(m.name, "Robotic1-kdnn150");
  ASSERT_EQ(m.tasks.size(), r1.tasks.size());
  for (size_t i = 0; i < m.tasks.size(); ++i) {
    EXPECT_EQ(m.tasks[i].binary, r1.tasks[i].binary);
    EXPECT_EQ(m.tasks[i].period_ms, m.tasks[i].binary == "ripple-kdnn" ? 150.0 : 100.0);
    EXPECT_EQ(m.tasks[i].threads, r1.tasks[i].threads);
    EXPECT_EQ(m.tasks[i].cores, r1.tasks[i].cores);
  }
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic2.toml", &m, &err)) << err;
  EXPECT_EQ(m.name, "Robotic2");
  ASSERT_EQ(m.tasks.size(), 3u);
  EXPECT_EQ(m.tasks[0].binary, "ripple-control");
  EXPECT_EQ(m.tasks[0].period_ms, 20.0);
  EXPECT_EQ(m.tasks[0].deadline_ms, 20.0);
  EXPECT_EQ(m.tasks[1].binary, "ripple-orb");
  EXPECT_EQ(m.tasks[2].binary, "ripple-sgm");
}

std::string write_tmp(const std::string& text) {
  std::string path = "/tmp/ripple-mix-test-" + std::to_string(getpid()) + ".toml";
  std::ofstream(path) << text;
  return path;
}

// Tests that a bad mix file gets one error naming the file, the task and the problem.
TEST(Mix, BadMixesAreClearErrors) {
  Mix m;
  std::string err;
  EXPECT_FALSE(load_mix("/nonexistent/mix.toml", &m, &err));
  EXPECT_NE(err.find("/nonexistent/mix.toml"), std::string::npos) << err;
  std::string p = write_tmp("name = \"x\"\n[[task]]\nname = \"a\"\nbinary = \"b\"\nperiod_ms = 10\ndeadline_ms = 20\ncore = 0\n");
  EXPECT_FALSE(load_mix(p, &m, &err));
  EXPECT_NE(err.find("task 1 (a): deadline_ms must be in [0, period_ms]"), std::string::npos) << err;
  p = write_tmp("name = \"x\"\n[[task]]\nname = \"a\"\nbinary = \"b\"\nperiod_ms = 10\ncore = 0\n"
                "[[task]]\nname = \"c\"\nbinary = \"b\"\nperiod_ms = 10\ncore = 0\n");
  EXPECT_FALSE(load_mix(p, &m, &err));
  EXPECT_NE(err.find("core 0 used twice"), std::string::npos) << err;
  const std::string head = "name = \"x\"\n[[task]]\nname = \"a\"\nbinary = \"b\"\nperiod_ms = 10\n";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"threads = 4\ncore = 0\n", "task 1 (a): threads = 4 needs cores (one per thread), e.g. cores = \"0-3\""},
      {"threads = 4\ncores = \"0-2\"\n", "threads = 4 but cores '0-2' names 3"},
      {"cores = \"0-x\"\n", "cores '0-x': '0-x' is not a CPU"},
      {"cores = [0, 1]\n", "cores must be a string"},
      {"core = 2\ncores = \"0-1\"\n", "core 2 is not the first of cores '0-1'"},
      {"cores = \"0-3\"\n[[task]]\nname = \"c\"\nbinary = \"b\"\nperiod_ms = 10\ncore = 3\n",
       "task 2 (c): core 3 used twice"}};
  for (const auto& [body, want] : bad) {
    p = write_tmp(head + body);
    EXPECT_FALSE(load_mix(p, &m, &err)) << body;
    EXPECT_NE(err.find(want), std::string::npos) << body << ": " << err;
  }
  p = write_tmp(head + "cores = \"0-3\"\n");
  ASSERT_TRUE(load_mix(p, &m, &err)) << err;
  EXPECT_EQ(m.tasks[0].threads, 4);  // threads defaults to one per core
  EXPECT_EQ(m.tasks[0].core, 0);
  p = write_tmp("name = \"x\"\n[[task]\n");
  EXPECT_FALSE(load_mix(p, &m, &err));
  EXPECT_NE(err.find(":2:"), std::string::npos) << err;  // the line of the syntax error
  unlink(p.c_str());
}

// Tests that a task's command line carries its period, shifted core and deadline.
TEST(Mix, TaskCommandLine) {
  MixTask t{"sgm", "ripple-sgm", 100, 50, 2, {"--mode", "hh"}, 1, {2}};
  auto argv = task_argv(t, "/opt/bin", 4, 30, "/tmp/logs");
  std::vector<std::string> want = {"/opt/bin/ripple-sgm", "--period-ms", "100", "--core", "6", "--duration-s", "30",
                                   "--deadline-ms", "50", "--log", "/tmp/logs/sgm.csv", "--mode", "hh"};
  EXPECT_EQ(argv, want);
  MixTask mt{"kdnn", "ripple-kdnn", 100, 0, 4, {}, 4, {4, 5, 6, 7}};
  argv = task_argv(mt, "/opt/bin", 2, 30, "");
  want = {"/opt/bin/ripple-kdnn", "--period-ms", "100", "--threads", "4", "--cores", "6-9", "--duration-s", "30"};
  EXPECT_EQ(argv, want);
}

// Tests that a mix whose cores (shifted by --first-core) this machine lacks is named,
// task and CPUs, before anything starts.
TEST(Mix, CoresTheMachineLacksAreNamed) {
  Mix m;
  std::string err;
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1.toml", &m, &err)) << err;
  EXPECT_EQ(mix_cores_problem(m, 0, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}), "");
  EXPECT_EQ(mix_cores_problem(m, 5, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}), "");
  EXPECT_EQ(mix_cores_problem(m, 0, {0, 1}),
            "task costmap needs CPUs 0-3 (4 threads at --first-core 0), but this process may run on CPUs 0-1 only");
  EXPECT_NE(mix_cores_problem(m, 6, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}).find("task sgm needs CPUs 14-16"),
            std::string::npos);
  ASSERT_TRUE(load_mix("tools/workloads/mixes/robotic1-1t.toml", &m, &err)) << err;
  EXPECT_EQ(mix_cores_problem(m, 0, {0, 1, 2}), "");
  EXPECT_EQ(mix_cores_problem(m, 0, {0, 1}), "task sgm needs CPU 2 (1 thread at --first-core 0), but this process may run on CPUs 0-1 only");
}

}  // namespace
}  // namespace ripple::workloads
