// Tests of the Prometheus exposition (agent/daemon/metrics.h): the text parses as the
// exposition format, every family has HELP and TYPE, counters end in _total, labels
// are escaped and read back, units are converted, unknown values are left out, and the
// textfile is replaced atomically.
#include "agent/daemon/metrics.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/config/config.h"
#include "agent/daemon/agent.h"

namespace ripple::daemon::metrics {
namespace {

using nlohmann::json;

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Parsed {
  std::map<std::string, std::string> help, type;
  std::vector<Sample> samples;
  std::vector<std::string> errors;
};

// A strict reader of the text format 0.0.4 (what node_exporter's textfile collector
// accepts): HELP then TYPE before a family's samples, a family's samples together,
// label values with \\ \" \n escapes, a float value.
Parsed parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line, current;
  std::set<std::string> closed, series;
  const std::regex name_re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  auto err = [&](const std::string& e) { p.errors.push_back(e + ": " + line); };
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::istringstream ls(line.substr(7));
      std::string name, rest;
      ls >> name;
      std::getline(ls, rest);
      if (!std::regex_match(name, name_re)) err("bad family name");
      if (name != current) {
        if (!current.empty()) closed.insert(current);
        if (closed.count(name)) err("family split");
        current = name;
      }
      if (line[2] == 'H') {
        if (p.type.count(name)) err("HELP after TYPE");
        p.help[name] = rest.empty() ? "" : rest.substr(1);
      } else {
        const std::string t = rest.empty() ? "" : rest.substr(1);
        if (t != "counter" && t != "gauge" && t != "summary" && t != "histogram" && t != "untyped") err("bad type");
        p.type[name] = t;
      }
      continue;
    }
    if (line.empty() || line[0] == '#') {
      err("stray line");
      continue;
    }
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (!std::regex_match(s.name, name_re)) err("bad sample name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
          err("bad label");
          break;
        }
        const std::string key = line.substr(i, eq - i);
        if (!std::regex_match(key, std::regex("[a-zA-Z_][a-zA-Z0-9_]*"))) err("bad label name");
        std::string v;
        std::size_t k = eq + 2;
        for (; k < line.size() && line[k] != '"'; ++k) {
          if (line[k] == '\n') err("raw newline");
          if (line[k] != '\\') {
            v += line[k];
            continue;
          }
          ++k;
          if (k >= line.size()) break;
          if (line[k] == 'n') v += '\n';
          else if (line[k] == '\\' || line[k] == '"') v += line[k];
          else err("bad escape");
        }
        s.labels[key] = v;
        i = k + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') {
      err("no value");
      continue;
    }
    const std::string v = line.substr(i + 1);
    char* end = nullptr;
    s.value = v == "+Inf" ? INFINITY : v == "-Inf" ? -INFINITY : std::strtod(v.c_str(), &end);
    if (v != "+Inf" && v != "-Inf" && (end == v.c_str() || *end != '\0')) err("bad value");
    if (s.name != current) err("sample outside its family");
    if (!p.type.count(s.name) || !p.help.count(s.name)) err("sample without HELP/TYPE");
    std::string key = s.name;
    for (const auto& [k, lv] : s.labels) key += "|" + k + "=" + lv;
    if (!series.insert(key).second) err("duplicate series");
    p.samples.push_back(std::move(s));
  }
  return p;
}

const Sample* find(const Parsed& p, const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  for (const Sample& s : p.samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) match = match && s.labels.count(k) && s.labels.at(k) == v;
    if (match) return &s;
  }
  return nullptr;
}

// A status_json() reply with one task and one engine, the keys as Agent::status_json writes them.
json status_with(const std::string& task_name) {
  json j = json::parse(R"({
    "policy": "ripple", "uptime_s": 12.5, "budget_bytes": null,
    "decision_latency_us": {"p50": 21.0, "p99": 80.5, "max": 120.0, "count": 345},
    "tracer": {"attached": true, "drops": 2, "events": 1000, "jobs_aborted": 1, "jobs_reaped": 0},
    "grants_sent": 345, "protocol_errors": 0, "sessions_refused": 3,
    "limits": {"sessions": 2, "control_sessions": 1, "max_sessions": 512, "sessions_over_limit": 0,
               "max_sessions_per_uid": 16, "sessions_over_uid_limit": 5, "accept_failures": 0,
               "hello_timeouts": 1, "max_queued_works": 256, "works_refused": 0},
    "tasks": [{"name": "TASK", "deadline_ms": 70.0, "period_ms": 100.0, "miss_tolerance": 0.02,
               "releases": 121, "jobs": 120, "misses": 3, "unfinished": 1, "dmr": 0.025,
               "untouched_jobs": 70, "untouched_misses": 2, "budget_wait_ms": 900.0,
               "window_jobs": 40, "window_misses": 1, "window_dmr": 0.025, "allowance_bytes": 1500000000,
               "kappa_ms_per_gb": 2.5, "kappa_upper_ms_per_gb": null, "a_hat_ms": 31.5, "margin_ms": null,
               "exempt": false, "last_response_ms": 40.25, "active": true, "drops": 2}],
    "engines": [{"name": "llm", "id": 1, "kind": "best-effort", "connected": true, "grants": 300,
                 "successors": 20, "stale": 4, "for_release": 2, "units": 900, "bytes": 270000000000,
                 "works_done": 30, "deadline_misses": 0, "late_ends": 5, "late_max_ms": 3.0, "busy_s": 8.5,
                 "queued": 7, "scale": 1.0, "queued_scale": 1.0, "start_lag_ms": 0.1, "throughput_gbps": 21.6,
                 "wait_ms": {"budget": 1500.0, "decision": 2.5, "delivery": 0.75},
                 "wait_causes_ms": {"budget": 1200.0, "crossing": 300.0, "link": 0.0},
                 "grant_span": {"first_grant_ns": 2000000000, "last_done_ns": 12250000000, "s": 10.25,
                                "done_bytes": 269000000000, "gbps": 26.24},
                 "wait": {"cause": "budget", "detail": "needs 0.3 GB"}}]
  })");
  j["tasks"][0]["name"] = task_name;
  return j;
}

// Tests that a full status renders to text a strict exposition-format reader accepts,
// with HELP and TYPE for every family and counters named *_total.
TEST(MetricsTest, RendersValidExposition) {
  const Parsed p = parse(render(status_with("kdnn")));
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  EXPECT_GE(p.samples.size(), 40u);
  for (const auto& [name, type] : p.type) {
    EXPECT_EQ(name.rfind("ripple_", 0), 0u) << name;
    EXPECT_FALSE(p.help.at(name).empty()) << name;
    const bool total = name.size() > 6 && name.compare(name.size() - 6, 6, "_total") == 0;
    EXPECT_EQ(type == "counter", total) << name << " is a " << type;
  }
}

// Tests that the reader above rejects what node_exporter would: a sample without HELP and
// TYPE, an unescaped quote in a label, a family split in two, a value that is no number.
TEST(MetricsTest, ReaderRejectsBrokenText) {
  EXPECT_FALSE(parse("ripple_x 1\n").errors.empty());
  const std::string head = "# HELP ripple_x x\n# TYPE ripple_x gauge\n";
  EXPECT_TRUE(parse(head + "ripple_x{task=\"a\"} 1\n").errors.empty());
  EXPECT_FALSE(parse(head + "ripple_x{task=\"a\"b\"} 1\n").errors.empty());
  EXPECT_FALSE(parse(head + "ripple_x 1\n# HELP ripple_y y\n# TYPE ripple_y gauge\nripple_y 1\n" + head).errors.empty());
  EXPECT_FALSE(parse(head + "ripple_x one\n").errors.empty());
  EXPECT_FALSE(parse(head + "ripple_x 1\nripple_x 2\n").errors.empty());
}

// Tests that agent.metrics_file and agent.metrics_interval_s are read and checked.
TEST(MetricsTest, ConfigKeys) {
  auto c = config::parse("[agent]\nmetrics_file = \"/var/lib/prometheus/node-exporter/ripple.prom\"\n"
                         "metrics_interval_s = 2.5\n",
                         "m.toml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->agent.metrics_file, "/var/lib/prometheus/node-exporter/ripple.prom");
  EXPECT_EQ(c->agent.metrics_interval, 2'500'000'000);
  auto d = config::parse("", "empty.toml");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->agent.metrics_file.empty());  // off by default
  EXPECT_EQ(d->agent.metrics_interval, 10'000'000'000);
  auto rel = config::parse("[agent]\nmetrics_file = \"ripple.prom\"\n", "rel.toml");
  ASSERT_FALSE(rel.ok());
  EXPECT_NE(rel.error().message.find("rel.toml:2: agent.metrics_file: 'ripple.prom' is not an absolute path"),
            std::string::npos)
      << rel.error().message;
  EXPECT_FALSE(config::parse("[agent]\nmetrics_file = \"/tmp/ripple.txt\"\n", "t.toml").ok());
  auto fast = config::parse("[agent]\nmetrics_interval_s = 0.1\n", "f.toml");
  ASSERT_FALSE(fast.ok());
  EXPECT_NE(fast.error().message.find("agent.metrics_interval_s: 0.1 s is not in [1, 3600]"), std::string::npos)
      << fast.error().message;
}

// Tests that per-task and per-engine values arrive under their labels, in base units.
TEST(MetricsTest, ValuesAndUnits) {
  const Parsed p = parse(render(status_with("kdnn")));
  const Sample* s = find(p, "ripple_task_jobs_total", {{"task", "kdnn"}});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, 120);
  ASSERT_NE(s = find(p, "ripple_task_misses_total", {{"task", "kdnn"}}), nullptr);
  EXPECT_EQ(s->value, 3);
  ASSERT_NE(s = find(p, "ripple_task_untouched_misses_total", {{"task", "kdnn"}}), nullptr);
  EXPECT_EQ(s->value, 2);
  ASSERT_NE(s = find(p, "ripple_task_untouched_jobs_total", {{"task", "kdnn"}}), nullptr);
  EXPECT_EQ(s->value, 70);
  ASSERT_NE(s = find(p, "ripple_task_window_dmr", {{"task", "kdnn"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 0.025);
  ASSERT_NE(s = find(p, "ripple_task_allowance_bytes", {{"task", "kdnn"}}), nullptr);
  EXPECT_EQ(s->value, 1.5e9);
  ASSERT_NE(s = find(p, "ripple_task_kappa_seconds_per_byte", {{"task", "kdnn"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 2.5e-12);  // 2.5 ms/GB
  ASSERT_NE(s = find(p, "ripple_task_deadline_seconds", {{"task", "kdnn"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 0.07);
  ASSERT_NE(s = find(p, "ripple_task_active", {{"task", "kdnn"}}), nullptr);
  EXPECT_EQ(s->value, 1);
  ASSERT_NE(s = find(p, "ripple_engine_grants_total", {{"engine", "llm"}, {"kind", "best-effort"}}), nullptr);
  EXPECT_EQ(s->value, 300);
  ASSERT_NE(s = find(p, "ripple_engine_bytes_total", {{"engine", "llm"}}), nullptr);
  EXPECT_EQ(s->value, 2.7e11);
  ASSERT_NE(s = find(p, "ripple_engine_stale_total", {{"engine", "llm"}}), nullptr);
  EXPECT_EQ(s->value, 4);
  ASSERT_NE(s = find(p, "ripple_engine_done_bytes_total", {{"engine", "llm"}}), nullptr);
  EXPECT_EQ(s->value, 2.69e11);
  ASSERT_NE(s = find(p, "ripple_engine_grant_span_seconds", {{"engine", "llm"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 10.25);
  EXPECT_EQ(p.type.at("ripple_engine_grant_span_seconds"), "gauge");
  ASSERT_NE(s = find(p, "ripple_engine_wait_seconds_total", {{"engine", "llm"}, {"cause", "budget"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 1.5);
  ASSERT_NE(s = find(p, "ripple_engine_waiting", {{"engine", "llm"}, {"cause", "budget"}}), nullptr);
  ASSERT_NE(s = find(p, "ripple_task_budget_wait_seconds_total", {{"task", "kdnn"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 0.9);
  ASSERT_NE(s = find(p, "ripple_engine_budget_wait_seconds_total", {{"engine", "llm"}, {"cause", "crossing"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 0.3);
  ASSERT_NE(s = find(p, "ripple_engine_budget_wait_seconds_total", {{"engine", "llm"}, {"cause", "budget"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 1.2);
  ASSERT_NE(s = find(p, "ripple_tracer_drops_total"), nullptr);
  EXPECT_EQ(s->value, 2);
  ASSERT_NE(s = find(p, "ripple_decision_latency_seconds", {{"quantile", "0.99"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 80.5e-6);
  ASSERT_NE(s = find(p, "ripple_sessions_refused_total"), nullptr);
  EXPECT_EQ(s->value, 3);
  ASSERT_NE(s = find(p, "ripple_limit_hits_total", {{"limit", "max_sessions_per_uid"}}), nullptr);
  EXPECT_EQ(s->value, 5);
  ASSERT_NE(s = find(p, "ripple_limit_hits_total", {{"limit", "hello_timeout"}}), nullptr);
  EXPECT_EQ(s->value, 1);
  ASSERT_NE(s = find(p, "ripple_engine_sessions"), nullptr);
  EXPECT_EQ(s->value, 2);
}

// Tests that an engine listed twice (a renewed session and the gone one before it) is
// one series, the connected entry's, and that its counters are its process's totals over
// both sessions, so they do not fall back when the engine renews its session.
TEST(MetricsTest, RenewedEngineIsOneSeriesOfItsTotals) {
  json j = status_with("kdnn");
  json gone = j["engines"][0];
  gone["connected"] = false;
  gone["id"] = 0;
  j["engines"][0]["total"] = {{"grants", 420}, {"bytes", 3.0e11}, {"busy_s", 9.5},
                              {"wait_ms", {{"budget", 2500.0}, {"decision", 3.0}, {"delivery", 1.0}}}};
  j["engines"].push_back(gone);
  const Parsed p = parse(render(j));
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  const Sample* s = find(p, "ripple_engine_grants_total", {{"engine", "llm"}});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, 420);
  ASSERT_NE(s = find(p, "ripple_engine_busy_seconds_total", {{"engine", "llm"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 9.5);
  ASSERT_NE(s = find(p, "ripple_engine_wait_seconds_total", {{"engine", "llm"}, {"cause", "budget"}}), nullptr);
  EXPECT_DOUBLE_EQ(s->value, 2.5);
  ASSERT_NE(s = find(p, "ripple_engine_stale_total", {{"engine", "llm"}}), nullptr);
  EXPECT_EQ(s->value, 4);  // not in "total" here: the entry's own
  ASSERT_NE(s = find(p, "ripple_engine_connected", {{"engine", "llm"}}), nullptr);
  EXPECT_EQ(s->value, 1);
}

// Tests that what the agent does not know yet is left out, not exported as 0, and that
// an unlimited budget is +Inf.
TEST(MetricsTest, UnknownValuesAreLeftOut) {
  const Parsed p = parse(render(status_with("kdnn")));
  EXPECT_EQ(find(p, "ripple_task_margin_seconds"), nullptr);
  EXPECT_EQ(find(p, "ripple_task_kappa_upper_seconds_per_byte"), nullptr);
  EXPECT_NE(find(p, "ripple_task_a_hat_seconds"), nullptr);
  json idle = status_with("kdnn");
  idle["engines"][0]["grant_span"] = nullptr;  // no grant done yet
  const Parsed i = parse(render(idle));
  EXPECT_EQ(find(i, "ripple_engine_done_bytes_total"), nullptr);
  EXPECT_EQ(find(i, "ripple_engine_grant_span_seconds"), nullptr);
  EXPECT_NE(find(i, "ripple_engine_bytes_total"), nullptr);
  const Sample* b = find(p, "ripple_budget_bytes");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(std::isinf(b->value) && b->value > 0);
  json s = status_with("kdnn");
  s["budget_bytes"] = 4096;
  const Parsed q = parse(render(s));
  ASSERT_NE(b = find(q, "ripple_budget_bytes"), nullptr);
  EXPECT_EQ(b->value, 4096);
}

// Tests that a task name with a quote, a backslash and a newline is escaped and reads back.
TEST(MetricsTest, LabelsAreEscaped) {
  const std::string weird = "cam \"left\"\\raw\nv2";
  const std::string text = render(status_with(weird));
  EXPECT_NE(text.find(R"(task="cam \"left\"\\raw\nv2")"), std::string::npos);
  const Parsed p = parse(text);
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  const Sample* s = find(p, "ripple_task_jobs_total", {{"task", weird}});
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->value, 120);
  EXPECT_EQ(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

// Tests that the status of a real agent (no task: no BPF needed) renders, so the keys the
// renderer reads are the keys status_json writes.
TEST(MetricsTest, RendersARealAgentsStatus) {
  char dir[] = "/tmp/ripple-metrics-test.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto cfg = config::parse(std::string("[agent]\nengine_socket = \"") + dir + "/e.sock\"\ncontrol_socket = \"" + dir +
                               "/c.sock\"\n",
                           "test.toml");
  ASSERT_TRUE(cfg.ok()) << cfg.error().message;
  auto agent = Agent::create(std::move(*cfg));
  // qemu-user (the arm64 suites; tests/run-suites sets RIPPLE_FOREIGN_ARCH) has no io_uring:
  // the agent cannot run there at all. Natively it must.
  const char* foreign = getenv("RIPPLE_FOREIGN_ARCH");
  if (!agent.ok() && foreign && *foreign &&
      agent.error().message.find("io_uring: Function not implemented") != std::string::npos)
    GTEST_SKIP() << "no io_uring here (user-mode emulation?): " << agent.error().message;
  ASSERT_TRUE(agent.ok()) << agent.error().message;
  const Parsed p = parse(render((*agent)->status_json(monotonic_now())));
  EXPECT_TRUE(p.errors.empty()) << p.errors.front();
  for (const char* name : {"ripple_agent_info", "ripple_agent_uptime_seconds", "ripple_budget_bytes",
                           "ripple_decisions_total", "ripple_grants_sent_total", "ripple_protocol_errors_total",
                           "ripple_sessions_refused_total", "ripple_tracer_attached", "ripple_tracer_events_total",
                           "ripple_tracer_drops_total", "ripple_tracer_jobs_aborted_total", "ripple_engine_sessions",
                           "ripple_limit_hits_total"})
    EXPECT_NE(find(p, name), nullptr) << name;
  const Sample* info = find(p, "ripple_agent_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->labels.at("policy"), "ripple");
  EXPECT_EQ(find(p, "ripple_tracer_attached")->value, 0);
  agent->reset();
  std::filesystem::remove_all(dir);
}

// Tests that the textfile is replaced whole (mode 0644, no temporary left) and that a
// missing directory is an error naming the file.
TEST(MetricsTest, WritesTextfileAtomically) {
  char dir[] = "/tmp/ripple-metrics-file.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/ripple.prom";
  const mode_t old = umask(077);
  ASSERT_TRUE(write_textfile(path, "first 1\n").ok());
  ASSERT_TRUE(write_textfile(path, "second 2\n").ok());
  umask(old);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), "second 2\n");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1);
  const Status bad = write_textfile(std::string(dir) + "/missing/ripple.prom", "x 1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("missing/ripple.prom"), std::string::npos) << bad.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ripple::daemon::metrics
