#include "tools/cli/ripplectl/status.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/daemon/metrics.h"

namespace ripple::ctl {
namespace {

using nlohmann::json;

struct Args {
  std::string socket = "/run/ripple/control.sock";
  bool json_out = false;
  double interval_s = 1.0;
  int iterations = 0;
  double timeout_s = 5.0;  // a hung agent must not hang its monitoring
};

// One request, one reply datagram.
bool ask(int fd, const std::string& cmd, json* out, std::string* err) {
  std::vector<char> buf(4 << 20);
  ssize_t n = 0;
  if (::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) < 0) {
    const int e = errno;
    // A refusing agent answers before it closes: its reason may be queued.
    n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) {
      *err = fmt::format("failed to send '{}': {}", cmd, std::strerror(e));
      return false;
    }
  } else {
    n = ::recv(fd, buf.data(), buf.size(), 0);
  }
  if (n <= 0) {
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      *err = "no reply from the agent within the timeout (is it stopped or overloaded? --timeout S)";
    else
      *err = n == 0 ? "the agent closed the control connection" : std::strerror(errno);
    return false;
  }
  *out = json::parse(buf.data(), buf.data() + n, nullptr, false);
  if (out->is_discarded()) {
    *err = "the agent's reply is not JSON";
    return false;
  }
  if (out->contains("error")) {
    *err = (*out)["error"].get<std::string>();
    return false;
  }
  return true;
}

int connect_to(const std::string& path, double timeout_s, std::string* err) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    *err = "socket path too long";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(timeout_s);
    tv.tv_usec = static_cast<suseconds_t>((timeout_s - static_cast<double>(tv.tv_sec)) * 1e6);
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *err = fmt::format("cannot reach ripple-agent at {}: {} (is it running? --socket PATH)", path,
                       std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

std::string gb(const json& v) {
  if (v.is_null()) return "unlimited";
  return fmt::format("{:.3f} GB", v.get<double>() / 1e9);
}
std::string num_or_dash(const json& v, const char* f) { return v.is_null() ? "-" : fmt::format(fmt::runtime(f), v.get<double>()); }

void print_status(const json& s) {
  std::printf("ripple-agent: policy %s, up %.1f s, B(t) %s, decision latency p50 %.1f us p99 %.1f us (%zu grants)\n",
              s["policy"].get<std::string>().c_str(), s["uptime_s"].get<double>(), gb(s["budget_bytes"]).c_str(),
              s["decision_latency_us"]["p50"].get<double>(), s["decision_latency_us"]["p99"].get<double>(),
              s["decision_latency_us"]["count"].get<std::size_t>());
  std::printf("tracer: %s, %llu events, %llu drops; %llu protocol errors, %llu sessions refused\n",
              s["tracer"]["attached"].get<bool>() ? "attached" : "none",
              static_cast<unsigned long long>(s["tracer"]["events"].get<std::uint64_t>()),
              static_cast<unsigned long long>(s["tracer"]["drops"].get<std::uint64_t>()),
              static_cast<unsigned long long>(s["protocol_errors"].get<std::uint64_t>()),
              static_cast<unsigned long long>(s["sessions_refused"].get<std::uint64_t>()));
  if (const json& l = s.value("limits", json()); l.is_object())
    std::printf("sessions: %llu of %llu (%llu a uid); over the limit %llu, over a uid's %llu, accept failures %llu, "
                "hello timeouts %llu, works refused %llu\n",
                static_cast<unsigned long long>(l["sessions"].get<std::uint64_t>()),
                static_cast<unsigned long long>(l["max_sessions"].get<std::uint64_t>()),
                static_cast<unsigned long long>(l.value("max_sessions_per_uid", std::uint64_t{0})),
                static_cast<unsigned long long>(l["sessions_over_limit"].get<std::uint64_t>()),
                static_cast<unsigned long long>(l.value("sessions_over_uid_limit", std::uint64_t{0})),
                static_cast<unsigned long long>(l["accept_failures"].get<std::uint64_t>()),
                static_cast<unsigned long long>(l["hello_timeouts"].get<std::uint64_t>()),
                static_cast<unsigned long long>(l["works_refused"].get<std::uint64_t>()));
  if (const json& r = s.value("refusals", json()); r.is_object()) {
    auto u = [&](const char* k) { return static_cast<unsigned long long>(r.value(k, std::uint64_t{0})); };
    std::printf("refused: uid not allowed %llu, no credentials %llu, engine identity %llu, unconfigured %llu; "
                "unconfigured admitted as best-effort %llu (deadline-bound claims %llu)\n",
                u("uid_not_allowed"), u("no_credentials"), u("engine_identity"), u("unconfigured"),
                u("unconfigured_admitted"), u("deadline_claims_downgraded"));
  }
  for (const auto& t : s["tasks"])
    if (!t.value("traced", true))
      std::printf("task %s is NOT TRACED: %s\n", t["name"].get<std::string>().c_str(),
                  t.value("untraced_reason", std::string("no tracer")).c_str());
  std::printf("\n%-12s %7s %6s %7s %9s %11s %9s %10s %7s %6s\n", "TASK", "JOBS", "MISS", "DMR%", "WIN-DMR%",
              "ALLOW(MB)", "KAPPA", "MARGIN", "A-HAT", "EXEMPT");
  std::printf("%-12s %7s %6s %7s %9s %11s %9s %10s %7s %6s\n", "", "", "", "", "(100 s)", "", "(ms/GB)", "(ms)",
              "(ms)", "");
  for (const auto& t : s["tasks"])
    std::printf("%-12s %7llu %6llu %7.2f %9.2f %11.1f %9.3f %10s %7s %6s\n", t["name"].get<std::string>().c_str(),
                static_cast<unsigned long long>(t["jobs"].get<std::uint64_t>()),
                static_cast<unsigned long long>(t["misses"].get<std::uint64_t>()), 100 * t["dmr"].get<double>(),
                100 * t["window_dmr"].get<double>(), t["allowance_bytes"].get<double>() / 1e6,
                t["kappa_ms_per_gb"].get<double>(), num_or_dash(t["margin_ms"], "{:.2f}").c_str(),
                num_or_dash(t["a_hat_ms"], "{:.2f}").c_str(), t["exempt"].get<bool>() ? "yes" : "no");
  // Misses no grant was admitted into: the host's own time unless a grant ran past its
  // predicted end (an agent that does not count them says nothing).
  for (const auto& t : s["tasks"])
    if (const auto n = t.value("untouched_misses", std::uint64_t{0}); n > 0)
      std::printf("%s: %llu of its %llu misses (%llu in the window) came in jobs no GPU byte was admitted into: "
                  "the host's own time, or a grant past its predicted end\n",
                  t["name"].get<std::string>().c_str(), static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(t["misses"].get<std::uint64_t>()),
                  static_cast<unsigned long long>(t.value("window_untouched_misses", std::uint64_t{0})));
  std::printf("\n%-12s %-15s %-10s %7s %8s %7s %6s %9s %7s %27s  %s\n", "ENGINE", "KIND", "GPU-MEMORY", "GRANTS",
              "STALE", "AHEAD", "LATE", "GB", "GB/s", "WAIT budget/decision/deliv.", "NOW");
  for (const auto& e : s["engines"]) {
    const json& w = e["wait_ms"];
    // GPU-MEMORY: as the engine's hello reported it (discrete, integrated, unknown; "-" from
    // an agent that does not say); AHEAD: grants delivered ahead for a CPU release; LATE:
    // deadline-bound requests that finished after their deadline.
    std::printf("%-12s %-15s %-10s %7llu %8llu %7llu %6llu %9.3f %7.3f %11.1f/%6.2f/%6.2f ms  %s%s\n",
                e["name"].get<std::string>().c_str(), e["kind"].get<std::string>().c_str(),
                e.value("memory", std::string("-")).c_str(),
                static_cast<unsigned long long>(e["grants"].get<std::uint64_t>()),
                static_cast<unsigned long long>(e["stale"].get<std::uint64_t>()),
                static_cast<unsigned long long>(e.value("for_release", std::uint64_t{0})),
                static_cast<unsigned long long>(e.value("deadline_misses", std::uint64_t{0})), e["bytes"].get<double>() / 1e9,
                e["throughput_gbps"].get<double>(), w["budget"].get<double>(), w["decision"].get<double>(),
                w["delivery"].get<double>(), e["connected"].get<bool>() ? "" : "(gone) ",
                e["wait"]["cause"].get<std::string>().c_str());
  }
  if (const auto more = s.value("engines_not_listed", std::uint64_t{0}); more > 0)
    std::printf("(%llu more engines not listed; %llu gone in all)\n", static_cast<unsigned long long>(more),
                static_cast<unsigned long long>(s["engines_gone"]["count"].get<std::uint64_t>()));
}

void print_explain(const json& x) {
  std::printf("policy %s, B(t) %s", x["policy"].get<std::string>().c_str(), gb(x["budget_bytes"]).c_str());
  if (!x["binding_job"].is_null()) std::printf(", set by %s", x["binding_job"].get<std::string>().c_str());
  std::printf("\n");
  for (const auto& e : x["engines"]) {
    std::printf("%s: %s", e["name"].get<std::string>().c_str(), e["cause"].get<std::string>().c_str());
    if (!e["detail"].get<std::string>().empty()) std::printf(" -- %s", e["detail"].get<std::string>().c_str());
    if (!e["until_ms"].is_null()) std::printf(" (for %.3f ms)", e["until_ms"].get<double>());
    std::printf("\n");
  }
  if (!x["active_jobs"].empty()) {
    std::printf("\n%-12s %8s %9s %12s %12s %12s %12s\n", "ACTIVE JOB", "SEQ", "AGE(ms)", "ALLOW(MB)", "RELEASED",
                "CHARGED", "BUDGET(MB)");
    for (const auto& j : x["active_jobs"])
      std::printf("%-12s %8llu %9.2f %12.1f %12.1f %12.1f %12.1f\n", j["task"].get<std::string>().c_str(),
                  static_cast<unsigned long long>(j["seq"].get<std::uint64_t>()), j["since_ms"].get<double>(),
                  j["allowance_bytes"].get<double>() / 1e6, j["released_bytes"].get<double>() / 1e6,
                  j["charged_bytes"].get<double>() / 1e6, j["budget_bytes"].get<double>() / 1e6);
  }
}

int run(const std::string& cmd, const Args& a) {
  std::string err;
  int fd = connect_to(a.socket, a.timeout_s, &err);
  if (fd < 0) {
    std::fprintf(stderr, "ripplectl %s: error: %s\n", cmd.c_str(), err.c_str());
    return 1;
  }
  int rc = 0;
  for (int k = 0; cmd != "top" || a.iterations == 0 || k < a.iterations; ++k) {
    json reply;
    if (!ask(fd, cmd == "top" || cmd == "metrics" ? "status" : cmd, &reply, &err)) {
      std::fprintf(stderr, "ripplectl %s: error: %s\n", cmd.c_str(), err.c_str());
      rc = 1;
      break;
    }
    if (cmd == "metrics") {
      std::fputs(daemon::metrics::render(reply).c_str(), stdout);
    } else if (a.json_out) {
      std::printf("%s\n", reply.dump(cmd == "top" ? -1 : 2).c_str());
    } else if (cmd == "explain") {
      print_explain(reply);
    } else {
      if (cmd == "top") std::printf("\033[H\033[2J");
      print_status(reply);
    }
    std::fflush(stdout);
    if (cmd != "top") break;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.interval_s));
  }
  ::close(fd);
  return rc;
}

}  // namespace

void add_agent_commands(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<Args>();
  auto common = [&](CLI::App* sub) {
    sub->add_option("--socket", args->socket, "the agent's control socket")->capture_default_str();
    sub->add_flag("--json", args->json_out, "print the agent's JSON reply");
    sub->add_option("--timeout", args->timeout_s, "seconds to wait for the agent's reply")
        ->check(CLI::Range(0.001, 3600.0))
        ->capture_default_str();
  };
  auto* status = app.add_subcommand("status", "per task jobs, DMR, allowance, kappa, margin; per engine grants");
  common(status);
  status->callback([args, exit_code] { *exit_code = run("status", *args); });
  auto* top = app.add_subcommand("top", "status, refreshed");
  common(top);
  top->add_option("--interval", args->interval_s, "seconds between refreshes")
      ->check(CLI::Range(0.001, 86400.0, "seconds (0.001 to 86400)"));
  top->add_option("-n,--iterations", args->iterations, "stop after N refreshes (0: never)")
      ->check(CLI::Range(0, 1'000'000'000, "a count (0 to 1000000000)"));
  top->callback([args, exit_code] { *exit_code = run("top", *args); });
  auto* explain = app.add_subcommand("explain", "why each engine's next grant waits, and which job sets B(t)");
  common(explain);
  explain->callback([args, exit_code] { *exit_code = run("explain", *args); });
  auto* metrics = app.add_subcommand("metrics", "the agent's state in the Prometheus text format (as agent.metrics_file)");
  common(metrics);
  metrics->callback([args, exit_code] { *exit_code = run("metrics", *args); });
}

}  // namespace ripple::ctl
