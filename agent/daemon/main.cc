// ripple-agent: the co-scheduler daemon (Documentation/agent.md).
//
//   ripple-agent [--config FILE] [--policy NAME] [--engine-socket PATH]
//                [--control-socket PATH] [--check] [--check-config FILE]
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ripple/log.h"
#include "agent/config/config.h"
#include "agent/daemon/agent.h"
#include "agent/daemon/metrics.h"
#include "agent/daemon/notify.h"
#include "agent/policy/registry.h"
#include "agent/tracer/tracer.h"

int main(int argc, char** argv) {
  // A closed log pipe must not kill the agent (it would leave its sockets behind and its
  // engines unmanaged): writes get EPIPE instead, and the logger goes on without output.
  ::signal(SIGPIPE, SIG_IGN);
  // Started with stdin/stdout/stderr closed, the first sockets would take those numbers
  // and log lines would go to an engine.
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0) (void)::open("/dev/null", O_RDWR);
  std::string path = ripple::config::kDefaultPath, policy, engine_socket, control_socket, log_level;
  bool check = false;
  CLI::App app{"ripple-agent: deadline-aware CPU-GPU co-scheduler daemon"};
  app.add_option("-c,--config", path, "configuration file")->capture_default_str();
  app.add_option("--policy", policy, "override agent.policy (" + ripple::policy::policy_names() + ")");
  app.add_option("--engine-socket", engine_socket, "override agent.engine_socket");
  app.add_option("--control-socket", control_socket, "override agent.control_socket");
  app.add_option("--log-level", log_level, "override agent.log_level");
  app.add_flag("--check", check, "validate the configuration and exit");
  std::string check_config;
  app.add_option("--check-config", check_config, "validate FILE and exit (-c FILE --check)");
  CLI11_PARSE(app, argc, argv);
  if (!check_config.empty()) path = check_config, check = true;

  auto cfg = ripple::config::load(path);
  if (!cfg) {
    std::fprintf(stderr, "ripple-agent: configuration refused: %s\n", cfg.error().message.c_str());
    return 2;
  }
  if (!policy.empty()) {
    if (auto p = ripple::policy::make_policy(policy); !p) {
      std::fprintf(stderr, "ripple-agent: --policy: %s\n", p.error().message.c_str());
      return 2;
    }
    cfg->agent.policy = policy;
  }
  if (!engine_socket.empty()) {
    cfg->agent.engine_socket = engine_socket;
    cfg->where["agent.engine_socket"] = "--engine-socket";
  }
  if (!control_socket.empty()) {
    cfg->agent.control_socket = control_socket;
    cfg->where["agent.control_socket"] = "--control-socket";
  }
  if (!log_level.empty()) {
    if (!ripple::config::is_log_level(log_level)) {
      std::fprintf(stderr, "ripple-agent: --log-level: '%.60s' is not debug|info|warn|error|off\n", log_level.c_str());
      return 2;
    }
    cfg->agent.log_level = log_level;
  }
  // What the start would refuse on this machine, --check refuses too (same message).
  if (auto s = ripple::config::preflight(*cfg); !s) {
    std::fprintf(stderr, "ripple-agent: configuration refused: %s\n", s.error().message.c_str());
    return 2;
  }
  if (check) {
    std::printf("ripple-agent: %s: ok (%zu task(s), %zu engine(s), policy %s)\n", path.c_str(), cfg->tasks.size(),
                cfg->engines.size(), cfg->agent.policy.c_str());
    return 0;
  }
  const std::string metrics_file = cfg->agent.metrics_file;
  const auto metrics_interval = cfg->agent.metrics_interval;
  ripple::log::init(cfg->agent.log_level);
  ripple::tracer::route_libbpf_log();
  auto agent = ripple::daemon::Agent::create(std::move(*cfg));
  if (!agent) {
    std::fprintf(stderr, "ripple-agent: %s\n", agent.error().message.c_str());
    return 1;
  }
  // systemd (Type=notify): the sockets listen and the tracer is attached; the watchdog
  // is fed from the event loop, so a stalled loop gets the agent restarted.
  namespace notify = ripple::daemon::notify;
  if (const auto wd = notify::watchdog_interval_ns(); wd > 0)
    (*agent)->every(wd, [](ripple::daemon::Nanos) { notify::send("WATCHDOG=1"); });
  if (!metrics_file.empty())  // node_exporter textfile; removed at exit so stale state is not served
    (*agent)->every(metrics_interval, [a = agent->get(), &metrics_file, failing = false](auto now) mutable {
      const ripple::Status w = ripple::daemon::metrics::write_textfile(
          metrics_file, ripple::daemon::metrics::render(a->status_json(now)));
      if (!w && !failing) RIPPLE_LOG_WARN("metrics: {} (retrying every interval)", w.error().message);
      else if (w && failing) RIPPLE_LOG_INFO("metrics: writing {} again", metrics_file);
      failing = !w;
    });
  notify::send("READY=1\nSTATUS=running");
  const ripple::Status s = (*agent)->run();
  notify::send("STOPPING=1");
  if (!metrics_file.empty()) ::unlink(metrics_file.c_str());
  if (!s) {
    std::fprintf(stderr, "ripple-agent: %s\n", s.error().message.c_str());
    return 1;
  }
  return 0;
}
