// Unit tests of ripple-agent's TOML configuration (agent/config/config.h): a full file
// parses into every section; "K x p99" deadlines; every error names file, line, key.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
expire_slack_ms = 35
horizon_ms = 12
gamma = 0.9
end_guard_quantile = 0.9
queued_durations = true
early_end_carries = false
shared_link = false

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
  EXPECT_EQ(c.agent.admission.expire_slack, 35'000'000);  // 500 ms by default
  EXPECT_EQ(c.agent.admission.horizon, 12'000'000);
  EXPECT_DOUBLE_EQ(c.agent.admission.gamma, 0.9);
  EXPECT_DOUBLE_EQ(c.agent.admission.end_guard_quantile, 0.9);  // 0 (off) by default
  EXPECT_TRUE(c.agent.admission.queued_durations);
  EXPECT_FALSE(c.agent.admission.early_end_carries);  // on by default
  EXPECT_EQ(c.agent.admission.shared_link, admission::LinkMode::kOff);  // auto by default
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

// Tests that a task without its own miss_tolerance takes [pricing].miss_tolerance
// (config.md), wherever [pricing] stands in the file, that its own wins, and that a
// task's value outside (0, 0.5) is refused by name.
TEST(AgentConfig, TaskMissToleranceDefaultsToPricings) {
  const std::string tasks = R"(
[[task]]
name = "a"
comm = "a"
period_ms = 100
deadline_ms = 90

[[task]]
name = "b"
comm = "b"
period_ms = 100
deadline_ms = 90
miss_tolerance = 0.03
)";
  for (const std::string& text : {"[pricing]\nmiss_tolerance = 0.005\n" + tasks,
                                  tasks + "\n[pricing]\nmiss_tolerance = 0.005\n"}) {
    auto r = parse(text, "ripple.toml");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->tasks.size(), 2u);
    EXPECT_DOUBLE_EQ(r->tasks[0].spec.miss_tolerance, 0.005);
    EXPECT_DOUBLE_EQ(r->tasks[1].spec.miss_tolerance, 0.03);
  }
  auto r = parse(tasks, "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(r->tasks[0].spec.miss_tolerance, pricing::kDefaultMissTolerance);
  std::string bad = tasks;
  bad.replace(bad.find("0.03"), 4, "0.75");
  EXPECT_NE(error_of(bad).find("task[1].miss_tolerance: 0.75 is not in (0, 0.5)"), std::string::npos) << error_of(bad);
}

// Tests agent.shared_link's three values: "auto" (the default: engines on an integrated
// GPU are off the link), true (every engine on it) and false.
TEST(AgentConfig, SharedLinkModes) {
  const auto mode_of = [](const std::string& text) {
    auto r = parse(text, "ripple.toml");
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->agent.admission.shared_link : admission::LinkMode::kOff;
  };
  EXPECT_EQ(mode_of(""), admission::LinkMode::kAuto);
  EXPECT_EQ(mode_of("[agent]\nshared_link = \"auto\"\n"), admission::LinkMode::kAuto);
  EXPECT_EQ(mode_of("[agent]\nshared_link = true\n"), admission::LinkMode::kOn);
  EXPECT_EQ(mode_of("[agent]\nshared_link = false\n"), admission::LinkMode::kOff);
  // link_by_deadline: off by default, a boolean.
  auto r = parse("", "ripple.toml");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->agent.admission.link_by_deadline);
  r = parse("[agent]\nlink_by_deadline = true\n", "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->agent.admission.link_by_deadline);
  r = parse("[agent]\nlink_by_deadline = 1\n", "ripple.toml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "ripple.toml:2: agent.link_by_deadline: must be true or false");
}

// Tests that each kind of error is refused with the file, the line (of the key, or of
// the [[table]] for whole-table errors) and the key.
TEST(AgentConfig, ErrorsNameFileLineAndKey) {
  EXPECT_EQ(error_of("[agent]\ncores = 2\n"), "ripple.toml:2: agent.cores: unknown key");
  EXPECT_EQ(error_of("[agent]\nspin_us = 20000\n"), "ripple.toml:2: agent.spin_us: 20000 us is not in [0, 10000]");
  EXPECT_EQ(error_of("[agent]\ntrace_file = \"t.jsonl\"\n"),
            "ripple.toml:2: agent.trace_file: 't.jsonl' is not an absolute path");
  EXPECT_EQ(error_of("[agent]\nexpire_slack_ms = 0\n"),
            "ripple.toml:2: agent.expire_slack_ms: 0 ms is not in (0, 3600000]");
  EXPECT_EQ(error_of("[agent]\nend_guard_quantile = 1.5\n"),
            "ripple.toml:2: agent.end_guard_quantile: 1.5 is not in [0, 1] (0: off)");
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
  EXPECT_EQ(error_of("[agent]\nshared_link = 1\n"), "ripple.toml:2: agent.shared_link: must be true, false or \"auto\"");
  EXPECT_EQ(error_of("[agent]\nshared_link = \"yes\"\n"), "ripple.toml:2: agent.shared_link: must be true, false or \"auto\"");
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
  EXPECT_EQ(load("/no/such/ripple.toml").error().message, "cannot read configuration '/no/such/ripple.toml': No such file or directory");
}

// Tests that ids and pids that would wrap around are refused, naming the key
// (4294967296 was uid 0, pid 4294967297 was pid 1: init traced).
TEST(AgentConfig, RefusesIdsAndPidsThatWrap) {
  EXPECT_EQ(error_of("[agent]\nallowed_uids = [4294967296]\n"),
            "ripple.toml:2: agent.allowed_uids: entries must be integers in [0, 4294967294]");
  EXPECT_EQ(error_of("[agent]\nallowed_gids = [0, 4294967295]\n"),
            "ripple.toml:2: agent.allowed_gids: entries must be integers in [0, 4294967294]");
  EXPECT_EQ(error_of("[[task]]\npid = 4294967297\nperiod_ms = 100\ndeadline_ms = 50\n"),
            "ripple.toml:2: task[0].pid: must be a pid in [1, 4194304]");
  EXPECT_EQ(error_of("[[task]]\npid = 1099511627776\nperiod_ms = 100\ndeadline_ms = 50\n"),
            "ripple.toml:2: task[0].pid: must be a pid in [1, 4194304]");
  auto r = parse("[agent]\nallowed_uids = [4294967294]\n", "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->agent.allowed_uids, (std::vector<uid_t>{4294967294u}));
}

// Tests that an [[engine]] names who may claim it (uid by name or number, exe as an
// absolute path to a regular file) and that agent.unconfigured_engines takes its two values.
TEST(AgentConfig, EngineIdentityAndUnconfiguredEngines) {
  auto r = parse("[agent]\nunconfigured_engines = \"refuse\"\n[[engine]]\nname = \"a\"\nuid = \"nobody\"\n"
                 "exe = \"/bin/sh\"\n[[engine]]\nname = \"b\"\nuid = 1234\n",
                 "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->agent.refuse_unconfigured);
  ASSERT_EQ(r->engines.size(), 2u);
  EXPECT_EQ(r->engines[0].uid, std::optional<uid_t>(65534));
  EXPECT_EQ(r->engines[0].exe, "/bin/sh");
  EXPECT_EQ(r->engines[1].uid, std::optional<uid_t>(1234));
  EXPECT_FALSE(parse("[agent]\n", "ripple.toml")->agent.refuse_unconfigured);
  EXPECT_EQ(error_of("[agent]\nunconfigured_engines = \"deny\"\n"),
            "ripple.toml:2: agent.unconfigured_engines: 'deny' is neither \"best-effort\" nor \"refuse\"");
  EXPECT_EQ(error_of("[[engine]]\nname = \"a\"\nuid = \"no-such-user-here\"\n"),
            "ripple.toml:3: engine[0].uid: no such user 'no-such-user-here'");
  EXPECT_EQ(error_of("[[engine]]\nname = \"a\"\nuid = -1\n"), "ripple.toml:3: engine[0].uid: uid -1 is not in [0, 4294967294]");
  EXPECT_EQ(error_of("[[engine]]\nname = \"a\"\nexe = \"bin/sh\"\n"), "ripple.toml:3: engine[0].exe: must be an absolute path");
  EXPECT_EQ(error_of("[[engine]]\nname = \"a\"\nexe = \"/tmp\"\n"), "ripple.toml:3: engine[0].exe: /tmp is not a regular file");
}

// Tests that the engine and control sockets on one path, a comm named twice and more
// than 64 tasks are refused by the parser (not first at start, after building them).
TEST(AgentConfig, RefusesWhatTheStartWouldRefuse) {
  EXPECT_EQ(error_of("[agent]\nengine_socket = \"/tmp/x.sock\"\ncontrol_socket = \"/tmp/x.sock\"\n"),
            "ripple.toml:3: agent.control_socket: the same path as agent.engine_socket (/tmp/x.sock)");
  EXPECT_EQ(error_of("[[task]]\nname = \"a\"\ncomm = \"c\"\nperiod_ms = 9\ndeadline_ms = 5\n"
                     "[[task]]\nname = \"b\"\ncomm = \"c\"\nperiod_ms = 9\ndeadline_ms = 5\n"),
            "ripple.toml:6: task[1].comm: 'c' names two tasks");
  std::string many;
  for (int k = 0; k < 70; ++k) many += fmt::format("[[task]]\ncomm = \"t{}\"\nperiod_ms = 9\ndeadline_ms = 5\n", k);
  EXPECT_EQ(error_of(many), "ripple.toml:257: task[64]: 70 tasks; at most 64");
  EXPECT_EQ(error_of("[agent]\nmax_sessions = 0\n"), "ripple.toml:2: agent.max_sessions: must be an integer in [1, 65536]");
  EXPECT_EQ(error_of("[agent]\nmax_queued_works = 1.5\n"),
            "ripple.toml:2: agent.max_queued_works: must be an integer in [1, 65536]");
  EXPECT_EQ(error_of("[agent]\nmax_sessions_per_uid = 0\n"),
            "ripple.toml:2: agent.max_sessions_per_uid: must be an integer in [1, 65536]");
  EXPECT_EQ(error_of("[agent]\nmax_sessions_per_uid = 65537\n"),
            "ripple.toml:2: agent.max_sessions_per_uid: must be an integer in [1, 65536]");
  EXPECT_EQ(parse("", "ripple.toml")->agent.max_sessions_per_uid, 16);
  auto r = parse("[agent]\nmax_sessions = 40\nmax_sessions_per_uid = 3\nhello_timeout_ms = 250\nmax_queued_works = 8\n",
                 "ripple.toml");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->agent.max_sessions, 40);
  EXPECT_EQ(r->agent.max_sessions_per_uid, 3);
  EXPECT_EQ(r->agent.hello_timeout, 250'000'000);
  EXPECT_EQ(r->agent.max_queued_works, 8);
  EXPECT_TRUE(is_log_level("warn"));
  EXPECT_FALSE(is_log_level("loud"));
}

// Tests that a long or binary value is cut in the message (a 10 MB value gave a 10 MB
// line), and that a huge K in "K x p99" is refused against the period instead of
// overflowing to a negative deadline.
TEST(AgentConfig, MessagesStayShort) {
  const std::string msg = error_of("[agent]\nfail_mode = \"" + std::string(10'000'000, 'a') + "\"\n");
  EXPECT_LT(msg.size(), 200u) << msg.substr(0, 300);
  EXPECT_NE(msg.find("... (10000000 bytes)"), std::string::npos) << msg;
  EXPECT_EQ(error_of("[agent]\nfail_mode = \"a\\u0001b\"\n"),
            "ripple.toml:2: agent.fail_mode: 'a\\x01b' is neither \"open\" nor \"closed\"");
  EXPECT_EQ(error_of("[[task]]\ncomm = \"a\"\nperiod_ms = 100\nsolo_ms = [10]\n"
                     "deadline = \"100000000000000000000000 x p99\"\n"),
            "ripple.toml:5: task[0].deadline: 100000000000000000000000 x p99 = 1e+24 ms exceeds the period 100.000 ms");
}

// Tests that only a regular file of at most 1 MiB is read: a directory (was an empty
// configuration), /dev/zero (was bad_alloc), /dev/urandom (was read forever) and a
// 2 MiB file are refused with one line, and quickly.
TEST(AgentConfig, LoadsOnlyABoundedRegularFile) {
  char dir[] = "/tmp/ripple-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string big = std::string(dir) + "/big.toml";
  {
    std::ofstream f(big);
    f << std::string(2 << 20, '#') << "\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(load(dir).error().message, fmt::format("cannot read configuration '{}': it is a directory", dir));
  EXPECT_EQ(load("/dev/zero").error().message, "cannot read configuration '/dev/zero': it is not a regular file");
  EXPECT_EQ(load("/dev/urandom").error().message, "cannot read configuration '/dev/urandom': it is not a regular file");
  EXPECT_EQ(load(big).error().message, fmt::format("cannot read configuration '{}': 2097153 bytes; at most 1048576", big));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  std::remove(big.c_str());
  rmdir(dir);
}

// Tests that preflight refuses, with the task's or key's file:line, what the start
// refuses on this machine and the parser cannot know: a pid that does not exist, an
// executable that is not ELF, the same executable twice, a CPU this process may not use,
// a socket path too long for sockaddr_un, a socket directory whose parent is missing.
TEST(AgentConfig, PreflightRefusesWhatTheStartRefuses) {
  char dir[] = "/tmp/ripple-config-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string d(dir), script = d + "/robot.sh";
  { std::ofstream(script) << "#!/bin/sh\n"; }
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // reaped: the pid names no process now
  const std::string sockets =
      fmt::format("[agent]\nengine_socket = \"{0}/e.sock\"\ncontrol_socket = \"{0}/c.sock\"\npin_dir = \"\"\n", d);
  auto pre = [&](const std::string& text) {
    auto c = parse(text, "ripple.toml");
    if (!c) return "parse: " + c.error().message;
    Status s = preflight(*c);
    return s ? std::string("(ok)") : s.error().message;
  };
  const std::string task = "period_ms = 100\ndeadline_ms = 50\n";
  EXPECT_EQ(pre(sockets), "(ok)");
  EXPECT_EQ(pre(sockets + "[[task]]\nself = 1\n").rfind("parse: ", 0), 0u);
  EXPECT_EQ(pre(sockets + fmt::format("[[task]]\npid = {}\n", child) + task),
            fmt::format("ripple.toml:5: task[0]: no such process: pid {}", child));
  EXPECT_EQ(pre(sockets + "[[task]]\nexe = \"" + script + "\"\n" + task).rfind("ripple.toml:5: task[0]: ", 0), 0u);
  EXPECT_EQ(pre(sockets + "[[task]]\nexe = \"/proc/self/exe\"\nname = \"a\"\n" + task +
                "[[task]]\nexe = \"/proc/self/exe\"\nname = \"b\"\n" + task)
                .rfind("ripple.toml:10: task[1].exe: ", 0),
            0u);
  EXPECT_EQ(pre(sockets + "core = 4095\n"),
            fmt::format("ripple.toml:5: agent.core: CPU 4095 is not one this process may run on ({} CPU(s) allowed)",
                        sysconf(_SC_NPROCESSORS_ONLN)));
  const std::string longp = d + "/" + std::string(120, 's') + ".sock";
  EXPECT_EQ(pre(fmt::format("[agent]\nengine_socket = \"{}\"\n", longp)).rfind("ripple.toml:2: agent.engine_socket: '", 0),
            0u);
  EXPECT_EQ(pre(fmt::format("[agent]\ncontrol_socket = \"{}/no/such/c.sock\"\n", d)),
            fmt::format("ripple.toml:2: agent.control_socket: directory '{}/no' does not exist", d));
  std::remove(script.c_str());
  rmdir(dir);
}

// Tests that a table header toml++ 3.3 asserts on ("[`gent]") is refused with the file's
// name instead of aborting the agent (found by tests/fuzz/fuzz_config).
TEST(AgentConfig, MalformedHeaderIsAnErrorNotAnAbort) {
  EXPECT_EQ(error_of("[`gent]\n*pin_us = 20000\n").rfind("ripple.toml", 0), 0u);
  EXPECT_EQ(error_of("[[`x]]\n").rfind("ripple.toml", 0), 0u);
}

// Tests that a non-ASCII character where toml++ 3.3 looks for whitespace is refused with
// file:line before toml++ sees it (there it reaches __builtin_unreachable, found by
// tests/fuzz/fuzz_config), and so is, inside a string, a code point of the ranges it
// cannot classify (U+00A1..U+0499, U+FB06..U+FEFE); other UTF-8 in strings, and any in
// comments, is accepted.
TEST(AgentConfig, NonAsciiOutsideStringsIsRefusedInStringsAccepted) {
  EXPECT_EQ(error_of("[agent]\nSt\xc8\x9a = 1\n"), "ripple.toml:2: a non-ASCII character outside a string or a comment");
  EXPECT_EQ(error_of("[agent] \xc2\xa1\n"), "ripple.toml:1: a non-ASCII character outside a string or a comment");
  EXPECT_EQ(error_of("t = 4\".\".tm+p/989\xdb\x8d\xc8\xab\".:)32li\n").rfind("ripple.toml:1: a character in U+00A1", 0), 0u);
  EXPECT_EQ(error_of("[agent]\npin_dir = \"/sys/fs/bpf/caf\xc3\xa9\"\n").rfind("ripple.toml:2: a character in U+00A1", 0),
            0u);
  EXPECT_EQ(error_of("x = \"\"\"\\ \xe2\xbd\x8a").rfind("ripple.toml:1: a character in U+00A1", 0), 0u);
  const std::string ok = "# caf\xc3\xa9 \xce\xba\n[[engine]] # \xc8\x9a\nname = \"v\xe4\xb8\xadlm \\\" #\"\n"
                         "kind = 'best-effort'\nperiod_ms = 100\n[agent]\npolicy = \"\"\"ripple\"\"\"\n"
                         "pin_dir = '''/sys/fs/bpf/\xe2\x80\x94'''\n";
  EXPECT_EQ(error_of(ok).find("U+"), std::string::npos) << error_of(ok);
  EXPECT_EQ(error_of(ok).find("non-ASCII"), std::string::npos) << error_of(ok);
}

}  // namespace
}  // namespace ripple::config
