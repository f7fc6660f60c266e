#include "agent/daemon/metrics.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ripple::daemon::metrics {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

// Metric families in first-use order; the format wants each family's samples together
// after its HELP and TYPE lines.
class Exposition {
 public:
  void add(const std::string& name, const char* type, const char* help, const Labels& labels, double value) {
    auto [it, fresh] = index_.try_emplace(name, families_.size());
    if (fresh) families_.push_back({name, type, help, {}});
    std::string s = name;
    if (!labels.empty()) {
      s += '{';
      for (std::size_t k = 0; k < labels.size(); ++k)
        s += fmt::format("{}{}=\"{}\"", k ? "," : "", labels[k].first, escape_label(labels[k].second));
      s += '}';
    }
    s += ' ';
    s += number(value);
    families_[it->second].samples.push_back(std::move(s));
  }
  // The sample if `v` is a number (true/false count as 1/0); nothing if it is null or absent.
  void add_if(const std::string& name, const char* type, const char* help, const Labels& labels, const json& v,
              double scale = 1.0) {
    if (v.is_boolean()) add(name, type, help, labels, v.get<bool>() ? 1 : 0);
    else if (v.is_number()) add(name, type, help, labels, v.get<double>() * scale);
  }
  std::string text() const {
    std::string out;
    for (const Family& f : families_) {
      out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
      for (const std::string& s : f.samples) out += s + '\n';
    }
    return out;
  }

 private:
  static std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    if (v == std::floor(v) && std::fabs(v) < 9e18) return fmt::format("{}", static_cast<long long>(v));
    return fmt::format("{:.10g}", v);  // the JSON's ms -> s scaling leaves float noise past 10 digits
  }
  struct Family {
    std::string name, type, help;
    std::vector<std::string> samples;
  };
  std::vector<Family> families_;
  std::map<std::string, std::size_t> index_;
};

const json& at(const json& j, const char* key) {
  static const json kNull;
  return j.is_object() && j.contains(key) ? j[key] : kNull;
}

constexpr double kMs = 1e-3;
constexpr double kMsPerGbToSPerByte = 1e-12;  // ms/GB -> s/B

}  // namespace

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string render(const json& s) {
  Exposition e;
  const Labels none;
  const char* gauge = "gauge";
  const char* counter = "counter";
  if (at(s, "policy").is_string())
    e.add("ripple_agent_info", gauge, "The agent's policy (value is always 1).", {{"policy", s["policy"].get<std::string>()}}, 1);
  e.add_if("ripple_agent_uptime_seconds", gauge, "Seconds since the agent started.", none, at(s, "uptime_s"));
  {
    const json& b = at(s, "budget_bytes");
    // null: no active job limits the GPU (B(t) unlimited).
    if (b.is_null() && s.contains("budget_bytes"))
      e.add("ripple_budget_bytes", gauge, "Global GPU-byte budget B(t) now (+Inf: no active job limits it).", none,
            INFINITY);
    e.add_if("ripple_budget_bytes", gauge, "Global GPU-byte budget B(t) now (+Inf: no active job limits it).", none, b);
  }
  const json& lat = at(s, "decision_latency_us");
  for (const auto& [q, key] : {std::pair{"0.5", "p50"}, {"0.99", "p99"}, {"1", "max"}})
    e.add_if("ripple_decision_latency_seconds", gauge,
             "Scheduling point to grant sent, over the last 65536 decisions (quantile 1: max).", {{"quantile", q}},
             at(lat, key), 1e-6);
  e.add_if("ripple_decisions_total", counter, "Decisions whose latency was measured.", none, at(lat, "count"));
  e.add_if("ripple_grants_sent_total", counter, "Grants sent to engines.", none, at(s, "grants_sent"));
  e.add_if("ripple_protocol_errors_total", counter, "Engine sessions closed for a malformed or unexpected message.",
           none, at(s, "protocol_errors"));
  e.add_if("ripple_sessions_refused_total", counter,
           "Engine or control connections refused (peer not allowed or not identified, engine not its "
           "configured uid/exe, or unconfigured under agent.unconfigured_engines = refuse).",
           none, at(s, "sessions_refused"));
  // Each limit's hits (Documentation/agent.md, "Limits"): a flood of connections, one uid's
  // share of them, descriptors, silent peers and queued works are each told apart.
  const json& lim = at(s, "limits");
  e.add_if("ripple_engine_sessions", gauge, "Engine sessions open now.", none, at(lim, "sessions"));
  for (const auto& [key, label] : {std::pair{"sessions_over_limit", "max_sessions"},
                                   {"sessions_over_uid_limit", "max_sessions_per_uid"},
                                   {"accept_failures", "accept_failures"},
                                   {"hello_timeouts", "hello_timeout"},
                                   {"works_refused", "max_queued_works"}})
    e.add_if("ripple_limit_hits_total", counter,
             "Connections refused at agent.max_sessions or agent.max_sessions_per_uid, accepts that failed "
             "(descriptors), sessions closed for no Hello in time, works refused past agent.max_queued_works.",
             {{"limit", label}}, at(lim, key));

  const json& tr = at(s, "tracer");
  e.add_if("ripple_tracer_attached", gauge, "1 if the BPF job tracer is loaded and attached.", none,
           at(tr, "attached"));
  e.add_if("ripple_tracer_events_total", counter, "Job events read from the tracer's ring buffer.", none,
           at(tr, "events"));
  e.add_if("ripple_tracer_drops_total", counter, "Job events lost (ring buffer full), all tasks.", none,
           at(tr, "drops"));
  e.add_if("ripple_tracer_jobs_aborted_total", counter, "Jobs whose thread exited or exec'd mid-job.", none,
           at(tr, "jobs_aborted"));
  e.add_if("ripple_tracer_jobs_reaped_total", counter,
           "Jobs closed as unfinished because the kernel no longer had them open and no event said so.", none,
           at(tr, "jobs_reaped"));

  if (at(s, "tasks").is_array()) {
    for (const json& t : s["tasks"]) {
      if (!at(t, "name").is_string()) continue;
      const Labels l{{"task", t["name"].get<std::string>()}};
      e.add_if("ripple_task_releases_total", counter, "Job releases seen.", l, at(t, "releases"));
      e.add_if("ripple_task_jobs_total", counter, "Jobs completed.", l, at(t, "jobs"));
      e.add_if("ripple_task_misses_total", counter, "Completed jobs that missed their deadline.", l, at(t, "misses"));
      e.add_if("ripple_task_unfinished_total", counter, "Jobs that ended without completing.", l,
               at(t, "unfinished"));
      e.add_if("ripple_task_late_starts_total", counter,
               "Jobs that started after their release because the one before overran.", l, at(t, "late_starts"));
      e.add_if("ripple_task_level_skips_total", counter,
               "Jobs no GPU byte reached that left the conformal level alone (pricing.untouched_level = false).", l,
               at(t, "level_skips"));
      e.add_if("ripple_task_untouched_jobs_total", counter, "Completed jobs no GPU byte was admitted into.", l,
               at(t, "untouched_jobs"));
      e.add_if("ripple_task_untouched_misses_total", counter,
               "Completed jobs no GPU byte was admitted into that missed their deadline: the host's own time, "
               "or a grant that ran past its predicted end.",
               l, at(t, "untouched_misses"));
      e.add_if("ripple_task_budget_wait_seconds_total", counter,
               "Time engines waited on the budget B(t) while this task's job bound it (summed over engines).", l,
               at(t, "budget_wait_ms"), kMs);
      e.add_if("ripple_task_drops_total", counter, "This task's job events lost in the tracer.", l, at(t, "drops"));
      e.add_if("ripple_task_dmr", gauge, "Deadline miss ratio since the agent started.", l, at(t, "dmr"));
      e.add_if("ripple_task_window_jobs", gauge, "Jobs completed in the current 100 s contract window.", l,
               at(t, "window_jobs"));
      e.add_if("ripple_task_window_misses", gauge, "Misses in the current 100 s contract window.", l,
               at(t, "window_misses"));
      e.add_if("ripple_task_window_dmr", gauge, "Deadline miss ratio in the current 100 s contract window.", l,
               at(t, "window_dmr"));
      e.add_if("ripple_task_miss_tolerance", gauge, "Configured miss tolerance eps.", l, at(t, "miss_tolerance"));
      e.add_if("ripple_task_deadline_seconds", gauge, "Configured relative deadline.", l, at(t, "deadline_ms"), kMs);
      e.add_if("ripple_task_period_seconds", gauge, "Configured period.", l, at(t, "period_ms"), kMs);
      e.add_if("ripple_task_allowance_bytes", gauge, "GPU-byte allowance given to the last released job.", l,
               at(t, "allowance_bytes"));
      e.add_if("ripple_task_kappa_seconds_per_byte", gauge, "Held slope kappa-hat: delay per GPU byte.", l,
               at(t, "kappa_ms_per_gb"), kMsPerGbToSPerByte);
      e.add_if("ripple_task_kappa_upper_seconds_per_byte", gauge, "Upper confidence bound of the slope.", l,
               at(t, "kappa_upper_ms_per_gb"), kMsPerGbToSPerByte);
      e.add_if("ripple_task_a_hat_seconds", gauge, "Estimated solo response time a-hat (the fit's intercept).", l,
               at(t, "a_hat_ms"), kMs);
      e.add_if("ripple_task_margin_seconds", gauge, "Adaptive conformal margin q.", l, at(t, "margin_ms"), kMs);
      e.add_if("ripple_task_last_response_seconds", gauge, "Response time of the last completed job.", l,
               at(t, "last_response_ms"), kMs);
      e.add_if("ripple_task_exempt", gauge, "1 if the task is certified exempt from pricing.", l, at(t, "exempt"));
      e.add_if("ripple_task_active", gauge, "1 if the task has a job running now.", l, at(t, "active"));
    }
  }

  if (at(s, "engines").is_array()) {
    std::set<std::string> named;
    for (const json& e_x : s["engines"]) {
      if (!at(e_x, "name").is_string()) continue;
      // One series per engine name: the first listed (connected first, then the most
      // recently gone), with its process's counters over all its sessions ("total"), so
      // a counter does not fall back to zero when the engine renews its session.
      if (!named.insert(e_x["name"].get<std::string>()).second) continue;
      json x = e_x;
      if (at(e_x, "total").is_object()) x.update(e_x["total"]);
      const Labels l{{"engine", x["name"].get<std::string>()}, {"kind", at(x, "kind").is_string() ? x["kind"].get<std::string>() : ""}};
      e.add_if("ripple_engine_connected", gauge, "1 if the engine is connected.", l, at(x, "connected"));
      e.add_if("ripple_engine_grants_total", counter, "Grants given.", l, at(x, "grants"));
      e.add_if("ripple_engine_successors_total", counter, "Successor grants delivered ahead (pipelining).", l,
               at(x, "successors"));
      e.add_if("ripple_engine_stale_total", counter, "Successor grants found stale at the boundary.", l,
               at(x, "stale"));
      e.add_if("ripple_engine_expired_total", counter,
               "Grants revoked unstarted past start_by + agent.expire_slack_ms.", l, at(x, "expired"));
      e.add_if("ripple_engine_for_release_total", counter, "Grants ahead of a predicted release.", l,
               at(x, "for_release"));
      e.add_if("ripple_engine_link_held_total", counter,
               "Grants held for another engine's host-byte grant (shared link).", l, at(x, "link_held"));
      e.add_if("ripple_engine_units_total", counter, "Units granted.", l, at(x, "units"));
      e.add_if("ripple_engine_bytes_total", counter, "GPU bytes granted.", l, at(x, "bytes"));
      e.add_if("ripple_engine_works_done_total", counter, "Work items the engine finished.", l, at(x, "works_done"));
      e.add_if("ripple_engine_deadline_misses_total", counter, "Deadline-bound work finished after its deadline.", l,
               at(x, "deadline_misses"));
      e.add_if("ripple_engine_late_ends_total", counter, "Grants that ended more than 1 ms after their predicted end.",
               l, at(x, "late_ends"));
      e.add_if("ripple_engine_queued_total", counter, "Grants that ran queued behind the one before.", l,
               at(x, "queued"));
      e.add_if("ripple_engine_busy_seconds_total", counter, "GPU time of the engine's grants (their union).", l,
               at(x, "busy_s"));
      const json& span = at(x, "grant_span");
      e.add_if("ripple_engine_done_bytes_total", counter,
               "GPU bytes of the grants reported done (bytes_total less grants settled at disconnect).", l,
               at(span, "done_bytes"));
      e.add_if("ripple_engine_grant_span_seconds", gauge,
               "From the engine's first grant to its last reported Done (done bytes / this: its paced rate).", l,
               at(span, "s"));
      const json& w = at(x, "wait_ms");
      for (const char* cause : {"budget", "decision", "delivery"}) {
        Labels lc = l;
        lc.emplace_back("cause", cause);
        e.add_if("ripple_engine_wait_seconds_total", counter, "Time the engine's work waited, by cause.", lc,
                 at(w, cause), kMs);
      }
      if (const json& wc = at(x, "wait_causes_ms"); wc.is_object()) {
        for (const auto& [cause, v] : wc.items()) {
          Labels lc = l;
          lc.emplace_back("cause", cause);
          e.add_if("ripple_engine_budget_wait_seconds_total", counter,
                   "The engine's budget wait (idle with work until a grant), by the reason it waited.", lc, v, kMs);
        }
      }
      if (const json& c = at(at(x, "wait"), "cause"); c.is_string()) {
        Labels lc = l;
        lc.emplace_back("cause", c.get<std::string>());
        e.add("ripple_engine_waiting", gauge, "Why the engine's next grant waits now (value is always 1).", lc, 1);
      }
    }
  }
  return e.text();
}

Status write_textfile(const std::string& path, std::string_view text) {
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());  // node_exporter reads *.prom only
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return make_errno_error(-errno, "failed to create {}: {}", tmp, std::strerror(errno));
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_errno_error(-err, "failed to write {}: {}", tmp, std::strerror(err));
    }
    off += static_cast<std::size_t>(n);
  }
  ::fchmod(fd, 0644);  // whatever the umask
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_errno_error(-err, "failed to rename {} to {}: {}", tmp, path, std::strerror(err));
  }
  return Status::Ok();
}

}  // namespace ripple::daemon::metrics
