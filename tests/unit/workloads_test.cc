// Tests of the robot task suite's shared pieces: the periodic driver's statistics and
// the mixes-as-data loader.
#include "tools/workloads/mix.h"
#include "tools/workloads/periodic.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

namespace ripple::workloads {
namespace {

// Tests that percentiles use the nearest rank (p99 of 100 values is the 99th smallest).
TEST(Periodic, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(percentile(v, 50), 50);
  EXPECT_EQ(percentile(v, 99), 99);
  EXPECT_EQ(percentile(v, 100), 100);
  EXPECT_EQ(percentile({7.0}, 99), 7.0);
}

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
  p = write_tmp("name = \"x\"\n[[task]\n");
  EXPECT_FALSE(load_mix(p, &m, &err));
  EXPECT_NE(err.find(":2:"), std::string::npos) << err;  // the line of the syntax error
  unlink(p.c_str());
}

// Tests that a task's command line carries its period, shifted core and deadline.
TEST(Mix, TaskCommandLine) {
  MixTask t{"sgm", "ripple-sgm", 100, 50, 2, {"--mode", "hh"}};
  auto argv = task_argv(t, "/opt/bin", 4, 30, "/tmp/logs");
  std::vector<std::string> want = {"/opt/bin/ripple-sgm", "--period-ms", "100", "--core", "6", "--duration-s", "30",
                                   "--deadline-ms", "50", "--log", "/tmp/logs/sgm.csv", "--mode", "hh"};
  EXPECT_EQ(argv, want);
}

}  // namespace
}  // namespace ripple::workloads
