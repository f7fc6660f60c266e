// Unit tests of ripple-agent's TOML configuration (agent/config/config.h): a full file
// parses into every section; "K x p99" deadlines; every error names file, line, key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "agent/config/config.h"

namespace ripple::config {
namespace {

constexpr const char* kFull = R"(
[agent]
core = 1
policy = "cap-1/4"
fail_mode = "closed"
engine_socket = "/tmp/e.sock"
control_socket = "/tmp/c.sock"
allowed_uids = [0, 1000]
tracer_wakeup = false
poll_us = 500
spin_us = 40
lease_ms = 26
horizon_ms = 12
gamma = 0.9
queued_durations = true

[pricing]
peak_rate_gbps = 200.0

[[task]]
name = "costmap"
comm = "costmap"
period_ms = 100
deadline = "1.5 x p99"
solo_ms = [40, 42, 44, 50]
miss_tolerance = 0.01

[[task]]
pid = 4242
min_interarrival_ms = 200
deadline_ms = 150

[[engine]]
name = "vlm"
kind = "deadline-bound"
period_ms = 5000
)";

std::string error_of(const std::string& text) {
  auto r = parse(text, "ripple.toml");
  return r.ok() ? std::string("(parsed)") : r.error().message;
}

// Tests that a full file sets every section: agent options, pricing, tasks (with
// K x p99 = 1.5 x 50 ms = 75 ms) and a deadline-bound engine whose deadline defaults
// to its period.
TEST(AgentConfig, ParsesFullFile) {
  auto r = parse(kFull, "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Config& c = *r;
  EXPECT_EQ(c.agent.core, 1);
  EXPECT_EQ(c.agent.policy, "cap-1/4");
  EXPECT_EQ(c.agent.fail_mode, engine::FailMode::kClosed);
  EXPECT_EQ(c.agent.allowed_uids, (std::vector<uid_t>{0, 1000}));
  EXPECT_EQ(c.agent.poll, 500'000);
  EXPECT_EQ(c.agent.spin, 40'000);
  EXPECT_EQ(c.agent.admission.lease, 26'000'000);
  EXPECT_EQ(c.agent.admission.horizon, 12'000'000);
  EXPECT_DOUBLE_EQ(c.agent.admission.gamma, 0.9);
  EXPECT_TRUE(c.agent.admission.queued_durations);
  EXPECT_DOUBLE_EQ(c.pricing.peak_rate_bytes_per_ns, 200.0);
  ASSERT_EQ(c.tasks.size(), 2u);
  EXPECT_EQ(c.tasks[0].spec.deadline, 75'000'000);
  EXPECT_EQ(c.tasks[0].pt.deadline_ns, 75'000'000u);
  EXPECT_EQ(c.tasks[0].pt.match, tracer::MatchKind::kComm);
  EXPECT_DOUBLE_EQ(c.tasks[0].spec.miss_tolerance, 0.01);
  EXPECT_EQ(c.tasks[1].spec.name, "pid4242");
  EXPECT_EQ(c.tasks[1].spec.period, 200'000'000);
  ASSERT_EQ(c.engines.size(), 1u);
  EXPECT_EQ(c.engines[0].deadline, 5'000'000'000);
  EXPECT_EQ(c.engines[0].kind, admission::EngineKind::kDeadlineBound);
}

// Tests that each kind of error is refused with the file, the line (of the key, or of
// the [[table]] for whole-table errors) and the key.
TEST(AgentConfig, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(error_of("[agent]\ncores = 2\n"), "ripple.toml:2: agent.cores: unknown key");
  EXPECT_EQ(error_of("[agent]\nspin_us = 20000\n"), "ripple.toml:2: agent.spin_us: 20000 us is not in [0, 10000]");
  EXPECT_EQ(error_of("[agent]\npolicy = \"fifo\"\n").rfind("ripple.toml:2: agent.policy: unknown policy 'fifo'", 0),
            0u);
  EXPECT_EQ(error_of("[[task]]\ncomm = \"a\"\nperiod_ms = 100\ndeadline_ms = 120\n"),
            "ripple.toml:1: task[0]: deadline 120.000 ms exceeds the period 100.000 ms");
  EXPECT_EQ(error_of("[[task]]\nexe = \"/no/such/robot\"\nperiod_ms = 100\ndeadline_ms = 50\n"),
            "ripple.toml:2: task[0].exe: '/no/such/robot' is not an existing file");
  EXPECT_EQ(error_of("[[task]]\ncomm = \"a\"\npid = 3\nperiod_ms = 100\ndeadline_ms = 50\n"),
            "ripple.toml:1: task[0]: give exactly one of exe, pid, comm (got 2)");
  EXPECT_EQ(error_of("[[task]]\ncomm = \"a\"\nperiod_ms = 100\ndeadline = \"2 x p99\"\n"),
            "ripple.toml:4: task[0].deadline: \"K x p99\" needs solo_ms or profile");
  EXPECT_EQ(error_of("[[task]]\ncomm = \"a\"\nperiod_ms = 100\ndeadline = \"soon\"\nsolo_ms = [1]\n"),
            "ripple.toml:4: task[0].deadline: 'soon' is not of the form \"K x p99\"");
  EXPECT_EQ(error_of("[[engine]]\nname = \"vlm\"\nkind = \"urgent\"\n"),
            "ripple.toml:3: engine[0].kind: 'urgent' is neither \"best-effort\" nor \"deadline-bound\"");
  EXPECT_EQ(error_of("[[engine]]\nname = \"vlm\"\nkind = \"deadline-bound\"\n"),
            "ripple.toml:1: engine[0].period_ms: required for a deadline-bound engine");
  EXPECT_EQ(error_of("[pricing]\neta = \"x\"\n").rfind("ripple.toml: pricing key 'eta' (line 2) must be a number", 0),
            0u);
  EXPECT_EQ(error_of("[agent\n").rfind("ripple.toml:1: ", 0), 0u);
}

// Tests that a profile file resolves relative to the configuration's directory and
// gives the p99 for "K x p99": 100 durations 1..100 ms, p99 = 99 ms, x 1.2 = 118.8 ms.
TEST(AgentConfig, ProfileFileRelativeToConfig) {
  char dir[] = "/tmp/ripple-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    std::ofstream p(std::string(dir) + "/kdnn.prof");
    p << "# solo job durations, ms\n";
    for (int k = 100; k >= 1; --k) p << k << "\n";
    std::ofstream c(std::string(dir) + "/ripple.toml");
    c << "[[task]]\ncomm = \"kdnn\"\nperiod_ms = 200\ndeadline = \"1.2 x p99\"\nprofile = \"kdnn.prof\"\n";
  }
  auto r = load(std::string(dir) + "/ripple.toml");
  std::remove((std::string(dir) + "/kdnn.prof").c_str());
  std::remove((std::string(dir) + "/ripple.toml").c_str());
  rmdir(dir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tasks[0].spec.solo_profile.size(), 100u);
  EXPECT_EQ(r->tasks[0].spec.deadline, 118'800'000);
  EXPECT_EQ(load("/no/such/ripple.toml").error().message, "cannot read configuration '/no/such/ripple.toml'");
}

}  // namespace
}  // namespace ripple::config
