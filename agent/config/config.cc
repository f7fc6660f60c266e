#include "agent/config/config.h"

#include <pwd.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>
#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include "ripple/toml.h"

#include "agent/config/text.h"
#include "agent/policy/registry.h"
#include "agent/pricing/config.h"
#include "agent/pricing/percentile.h"

namespace ripple::config {

using admission::kNsPerMs;
using admission::Nanos;

namespace {

// Where a node is: "FILE:LINE" (or just FILE when toml++ knows no line).
struct Where {
  const std::string& source;
  std::string at(const toml::node& n) const {
    const auto line = n.source().begin.line;
    return line == 0 ? source : fmt::format("{}:{}", source, line);
  }
};

Error error_at(const Where& w, const toml::node& n, std::string_view key, std::string_view why) {
  return make_error("{}: {}: {}", w.at(n), key, why);
}

Status known_keys(const Where& w, const toml::table& t, std::string_view section,
                  std::initializer_list<std::string_view> keys) {
  for (const auto& [k, v] : t) {
    if (std::find(keys.begin(), keys.end(), k.str()) == keys.end())
      return error_at(w, v, fmt::format("{}.{}", section, k.str()), "unknown key");
  }
  return Status::Ok();
}

Result<double> number(const Where& w, const toml::node& n, std::string_view key) {
  if (!n.is_number()) return error_at(w, n, key, "must be a number");
  const double v = *n.value<double>();
  if (!std::isfinite(v)) return error_at(w, n, key, "must be finite");
  return v;
}

Result<Nanos> positive_ms(const Where& w, const toml::node& n, std::string_view key) {
  auto v = number(w, n, key);
  if (!v) return v.error();
  if (!(*v > 0) || *v > 3.6e6) return error_at(w, n, key, fmt::format("{} ms is not in (0, 3600000]", *v));
  return static_cast<Nanos>(std::llround(*v * 1e6));
}

Result<std::string> string(const Where& w, const toml::node& n, std::string_view key) {
  if (!n.is_string()) return error_at(w, n, key, "must be a string");
  return std::string(*n.value<std::string>());
}

template <class T>
Result<std::vector<T>> id_list(const Where& w, const toml::node& n, std::string_view key) {
  const toml::array* a = n.as_array();
  if (a == nullptr) return error_at(w, n, key, "must be an array of integers");
  std::vector<T> out;
  // (uid_t)-1 is "no id" to the kernel; anything above it would wrap (4294967296 -> root).
  constexpr std::int64_t kMaxId = 4294967294;
  for (const auto& e : *a) {
    if (!e.is_integer() || *e.value<std::int64_t>() < 0 || *e.value<std::int64_t>() > kMaxId)
      return error_at(w, e, key, fmt::format("entries must be integers in [0, {}]", kMaxId));
    out.push_back(static_cast<T>(*e.value<std::int64_t>()));
  }
  return out;
}

Status parse_agent(const Where& w, const toml::table& t, AgentSection& a) {
  if (Status s = known_keys(w, t, "agent",
                            {"core", "policy", "fail_mode", "engine_socket", "control_socket", "allowed_uids",
                             "allowed_gids", "log_level", "pin_dir", "tracer_wakeup", "poll_us", "spin_us",
                             "lease_ms", "expire_slack_ms", "horizon_ms", "gamma", "end_guard_quantile", "pipelining", "queued_durations", "early_end_carries", "shared_link", "link_by_deadline", "max_sessions",
                             "max_sessions_per_uid",
                             "hello_timeout_ms", "max_queued_works", "metrics_file", "metrics_interval_s", "trace_file",
                             "unconfigured_engines"});
      !s)
    return s;
  for (const auto& [kk, n] : t) {
    const std::string key = "agent." + std::string(kk.str());
    const std::string_view k = kk.str();
    if (k == "core") {
      if (!n.is_integer() || *n.value<std::int64_t>() < -1 || *n.value<std::int64_t>() > 4095)
        return error_at(w, n, key, "must be an integer CPU number, or -1 for none");
      a.core = static_cast<int>(*n.value<std::int64_t>());
    } else if (k == "policy") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (s->size() > 60) return error_at(w, n, key, fmt::format("'{}' is not a policy name", shown(*s)));
      if (auto p = policy::make_policy(*s); !p) return error_at(w, n, key, p.error().message);
      a.policy = *s;
    } else if (k == "fail_mode") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (*s == "open") a.fail_mode = engine::FailMode::kOpen;
      else if (*s == "closed") a.fail_mode = engine::FailMode::kClosed;
      else return error_at(w, n, key, fmt::format("'{}' is neither \"open\" nor \"closed\"", shown(*s)));
    } else if (k == "engine_socket" || k == "control_socket" || k == "pin_dir" || k == "log_level") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (k != "pin_dir" && s->empty()) return error_at(w, n, key, "must not be empty");
      if (k == "engine_socket") a.engine_socket = *s;
      else if (k == "control_socket") a.control_socket = *s;
      else if (k == "pin_dir") a.pin_dir = *s;
      else {
        if (!is_log_level(*s))
          return error_at(w, n, key, fmt::format("'{}' is not debug|info|warn|error|off", shown(*s)));
        a.log_level = *s;
      }
    } else if (k == "unconfigured_engines") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (*s == "best-effort") a.refuse_unconfigured = false;
      else if (*s == "refuse") a.refuse_unconfigured = true;
      else return error_at(w, n, key, fmt::format("'{}' is neither \"best-effort\" nor \"refuse\"", shown(*s)));
    } else if (k == "allowed_uids") {
      auto v = id_list<uid_t>(w, n, key);
      if (!v) return v.error();
      a.allowed_uids = *v;
    } else if (k == "allowed_gids") {
      auto v = id_list<gid_t>(w, n, key);
      if (!v) return v.error();
      a.allowed_gids = *v;
    } else if (k == "shared_link") {
      if (n.is_boolean()) {
        a.admission.shared_link = *n.value<bool>() ? admission::LinkMode::kOn : admission::LinkMode::kOff;
      } else if (n.value<std::string>() == "auto") {
        a.admission.shared_link = admission::LinkMode::kAuto;
      } else {
        return error_at(w, n, key, "must be true, false or \"auto\"");
      }
    } else if (k == "tracer_wakeup" || k == "pipelining" || k == "queued_durations" || k == "early_end_carries" ||
               k == "link_by_deadline") {
      if (!n.is_boolean()) return error_at(w, n, key, "must be true or false");
      (k == "pipelining"          ? a.admission.pipelining
       : k == "queued_durations"  ? a.admission.queued_durations
       : k == "early_end_carries" ? a.admission.early_end_carries
       : k == "link_by_deadline"  ? a.admission.link_by_deadline
                                  : a.tracer_wakeup) = *n.value<bool>();
    } else if (k == "poll_us") {
      auto v = number(w, n, key);
      if (!v) return v.error();
      if (*v < 10 || *v > 1e6) return error_at(w, n, key, fmt::format("{} us is not in [10, 1000000]", *v));
      a.poll = static_cast<Nanos>(*v * 1e3);
    } else if (k == "spin_us") {
      auto v = number(w, n, key);
      if (!v) return v.error();
      if (*v < 0 || *v > 10000) return error_at(w, n, key, fmt::format("{} us is not in [0, 10000]", *v));
      a.spin = static_cast<Nanos>(*v * 1e3);
    } else if (k == "lease_ms" || k == "expire_slack_ms" || k == "horizon_ms") {
      auto v = positive_ms(w, n, key);
      if (!v) return v.error();
      (k == "lease_ms" ? a.admission.lease : k == "horizon_ms" ? a.admission.horizon : a.admission.expire_slack) = *v;
    } else if (k == "gamma") {
      auto v = number(w, n, key);
      if (!v) return v.error();
      if (!(*v > 0 && *v <= 1)) return error_at(w, n, key, fmt::format("{} is not in (0, 1]", *v));
      a.admission.gamma = *v;
    } else if (k == "end_guard_quantile") {
      auto v = number(w, n, key);
      if (!v) return v.error();
      if (!(*v >= 0 && *v <= 1)) return error_at(w, n, key, fmt::format("{} is not in [0, 1] (0: off)", *v));
      a.admission.end_guard_quantile = *v;
    } else if (k == "max_sessions" || k == "max_sessions_per_uid" || k == "max_queued_works") {
      constexpr std::int64_t hi = 65536;
      if (!n.is_integer() || *n.value<std::int64_t>() < 1 || *n.value<std::int64_t>() > hi)
        return error_at(w, n, key, fmt::format("must be an integer in [1, {}]", hi));
      (k == "max_sessions"           ? a.max_sessions
       : k == "max_sessions_per_uid" ? a.max_sessions_per_uid
                                     : a.max_queued_works) = static_cast<int>(*n.value<std::int64_t>());
    } else if (k == "hello_timeout_ms") {
      auto v = positive_ms(w, n, key);
      if (!v) return v.error();
      a.hello_timeout = *v;
    } else if (k == "metrics_file") {  // agent/daemon/metrics.h
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (!s->empty() && (s->front() != '/' || !s->ends_with(".prom")))
        return error_at(w, n, key,
                        fmt::format("'{}' is not an absolute path ending in .prom (node_exporter reads *.prom)", *s));
      a.metrics_file = *s;
    } else if (k == "trace_file") {  // agent/daemon/trace_file.h
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (!s->empty() && s->front() != '/') return error_at(w, n, key, fmt::format("'{}' is not an absolute path", *s));
      a.trace_file = *s;
    } else if (k == "metrics_interval_s") {
      auto v = number(w, n, key);
      if (!v) return v.error();
      if (!(*v >= 1 && *v <= 3600)) return error_at(w, n, key, fmt::format("{} s is not in [1, 3600]", *v));
      a.metrics_interval = static_cast<Nanos>(*v * 1e9);
    }
  }
  return Status::Ok();
}

Result<std::vector<Nanos>> read_profile(const Where& w, const toml::node& n, const std::string& path) {
  std::ifstream in(path);
  if (!in) return error_at(w, n, "profile", fmt::format("cannot read '{}'", path));
  std::vector<Nanos> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    char* end = nullptr;
    const double ms = std::strtod(line.c_str(), &end);
    if (end == line.c_str() || !(ms > 0) || ms > 3.6e6)
      return error_at(w, n, "profile",
                      fmt::format("{}:{}: '{}' is not a duration in (0, 3600000] ms", path, lineno, shown(line)));
    out.push_back(static_cast<Nanos>(std::llround(ms * 1e6)));
  }
  if (out.empty()) return error_at(w, n, "profile", fmt::format("'{}' holds no durations", path));
  return out;
}

Status parse_task(const Where& w, const toml::table& t, std::size_t index, const std::string& base_dir,
                  TaskSection& out) {
  const std::string sect = fmt::format("task[{}]", index);
  if (Status s = known_keys(w, t, sect,
                            {"name", "exe", "pid", "comm", "mode", "wait", "release_symbol", "complete_symbol",
                             "period_ms", "min_interarrival_ms", "deadline_ms", "deadline", "miss_tolerance",
                             "solo_ms", "profile", "prior_slope_ms_per_gb", "user"});
      !s)
    return s;
  tracer::PtSpec& pt = out.pt;
  pricing::TaskSpec& spec = out.spec;
  auto key = [&](std::string_view k) { return fmt::format("{}.{}", sect, k); };
  int matches = 0;
  const toml::node* deadline_expr = nullptr;
  bool user_set = false;
  for (const auto& [kk, n] : t) {
    const std::string_view k = kk.str();
    if (k == "name" || k == "exe" || k == "comm" || k == "mode" || k == "wait" || k == "release_symbol" ||
        k == "complete_symbol" || k == "profile" || k == "deadline") {
      auto s = string(w, n, key(k));
      if (!s) return s.error();
      if (k == "name") pt.name = spec.name = *s;
      else if (k == "exe") {
        ++matches;
        pt.match = tracer::MatchKind::kExe;
        struct stat st {};
        if (::stat(s->c_str(), &st) != 0 || !S_ISREG(st.st_mode))
          return error_at(w, n, key(k), fmt::format("'{}' is not an existing file", shown(*s)));
        pt.exe = *s;
      } else if (k == "comm") {
        ++matches;
        pt.match = tracer::MatchKind::kComm;
        if (s->empty() || s->size() > 15) return error_at(w, n, key(k), "must be 1 to 15 characters");
        pt.comm = *s;
      } else if (k == "mode") {
        if (*s == "period-wait") pt.mode = tracer::Mode::kPeriodWait;
        else if (*s == "uprobe") pt.mode = tracer::Mode::kUprobe;
        else return error_at(w, n, key(k), fmt::format("'{}' is neither \"period-wait\" nor \"uprobe\"", shown(*s)));
      } else if (k == "wait") {
        auto mask = tracer::parse_wait_list(*s);
        if (!mask) return error_at(w, n, key(k), mask.error().message);
        pt.wait_mask = *mask;
      } else if (k == "release_symbol") pt.release_symbol = *s;
      else if (k == "complete_symbol") pt.complete_symbol = *s;
      else if (k == "profile") {
        const std::string path = !s->empty() && (*s)[0] == '/' ? *s : base_dir + "/" + *s;
        auto prof = read_profile(w, n, path);
        if (!prof) return prof.error();
        spec.solo_profile = *prof;
      } else if (k == "deadline") deadline_expr = &n;
    } else if (k == "user") {
      // Who the task's threads run as (effective uid): a name, a uid, or "*" for anyone.
      user_set = true;
      if (n.is_integer()) {
        const std::int64_t v = *n.value<std::int64_t>();
        if (v < 0 || v >= 4294967295LL) return error_at(w, n, key(k), fmt::format("uid {} is not in [0, 4294967294]", v));
        pt.uid = static_cast<uid_t>(v);
      } else if (n.is_string()) {
        const std::string name = *n.value<std::string>();
        if (name == "*") {
          pt.uid.reset();
        } else {
          const passwd* pw = ::getpwnam(name.c_str());
          if (pw == nullptr) return error_at(w, n, key(k), fmt::format("no such user '{}'", name.substr(0, 64)));
          pt.uid = pw->pw_uid;
        }
      } else {
        return error_at(w, n, key(k), "must be a user name, a uid, or \"*\" for any user");
      }
    } else if (k == "pid") {
      ++matches;
      if (!n.is_integer() || *n.value<std::int64_t>() <= 0 || *n.value<std::int64_t>() > kMaxPid)
        return error_at(w, n, key(k), fmt::format("must be a pid in [1, {}]", kMaxPid));
      pt.match = tracer::MatchKind::kPid;
      pt.pid = static_cast<pid_t>(*n.value<std::int64_t>());
    } else if (k == "period_ms" || k == "min_interarrival_ms") {
      auto v = positive_ms(w, n, key(k));
      if (!v) return v.error();
      if (spec.period != 0) return error_at(w, n, key(k), "give only one of period_ms and min_interarrival_ms");
      spec.period = *v;
    } else if (k == "deadline_ms") {
      auto v = positive_ms(w, n, key(k));
      if (!v) return v.error();
      spec.deadline = *v;
    } else if (k == "miss_tolerance") {
      auto v = number(w, n, key(k));
      if (!v) return v.error();
      if (!(*v > 0 && *v < 0.5)) return error_at(w, n, key(k), fmt::format("{} is not in (0, 0.5)", *v));
      spec.miss_tolerance = *v;
    } else if (k == "solo_ms") {
      const toml::array* a = n.as_array();
      if (a == nullptr || a->empty()) return error_at(w, n, key(k), "must be a non-empty array of ms");
      for (const auto& e : *a) {
        auto v = positive_ms(w, e, key(k));
        if (!v) return v.error();
        spec.solo_profile.push_back(*v);
      }
    } else if (k == "prior_slope_ms_per_gb") {
      auto v = number(w, n, key(k));
      if (!v) return v.error();
      if (!(*v > 0 && *v <= pricing::kMaxSlopeNsPerByte * 1e3))
        return error_at(w, n, key(k), fmt::format("{} is not in (0, {:g}] ms per GB", *v, pricing::kMaxSlopeNsPerByte * 1e3));
      spec.prior_slope_ns_per_byte = *v * 1e-3;
    }
  }
  if (matches != 1)
    return make_error("{}: {}: give exactly one of exe, pid, comm (got {})", w.at(t), sect, matches);
  // A name or a file alone can be forged by any local user: by default only root's
  // threads join a task matched by exe or comm.
  if (!user_set) pt.uid = 0;
  if (pt.mode == tracer::Mode::kUprobe && pt.release_symbol.empty())
    return make_error("{}: {}.release_symbol: required in uprobe mode", w.at(t), sect);
  if (spec.period == 0) return make_error("{}: {}: period_ms (or min_interarrival_ms) is required", w.at(t), sect);
  if (deadline_expr != nullptr) {
    if (spec.deadline != 0)
      return error_at(w, *deadline_expr, key("deadline"), "give only one of deadline_ms and deadline");
    // "K x p99": K times the p99 of the solo (or co-run) profile (§5.1).
    static const std::regex re(R"(^\s*([0-9]*\.?[0-9]+)\s*[x*×]\s*p99\s*$)");
    std::smatch m;
    const std::string text = *deadline_expr->value<std::string>();
    if (!std::regex_match(text, m, re))
      return error_at(w, *deadline_expr, key("deadline"),
                      fmt::format("'{}' is not of the form \"K x p99\"", shown(text)));
    if (spec.solo_profile.empty())
      return error_at(w, *deadline_expr, key("deadline"), "\"K x p99\" needs solo_ms or profile");
    const double k = std::stod(m[1]);
    if (!(k > 0)) return error_at(w, *deadline_expr, key("deadline"), "K must be > 0");
    const double d = k * static_cast<double>(profile_p99(spec.solo_profile));
    if (!(d <= static_cast<double>(spec.period)))  // also keeps llround in range
      return error_at(w, *deadline_expr, key("deadline"),
                      fmt::format("{} x p99 = {:.6g} ms exceeds the period {:.3f} ms", m[1].str(), d / 1e6,
                                  static_cast<double>(spec.period) / 1e6));
    spec.deadline = static_cast<Nanos>(std::llround(k * static_cast<double>(profile_p99(spec.solo_profile))));
  }
  if (spec.deadline == 0) return make_error("{}: {}: deadline_ms or deadline = \"K x p99\" is required", w.at(t), sect);
  if (spec.deadline > spec.period)
    return make_error("{}: {}: deadline {:.3f} ms exceeds the period {:.3f} ms", w.at(t), sect,
                      static_cast<double>(spec.deadline) / 1e6, static_cast<double>(spec.period) / 1e6);
  if (spec.name.empty()) {
    spec.name = pt.match == tracer::MatchKind::kExe    ? pt.exe.substr(pt.exe.rfind('/') + 1)
                : pt.match == tracer::MatchKind::kComm ? pt.comm
                                                       : fmt::format("pid{}", pt.pid);
    pt.name = spec.name;
  }
  pt.deadline_ns = static_cast<std::uint64_t>(spec.deadline);
  if (auto e = pricing::validate(spec); !e.empty()) return make_error("{}: {}: {}", w.at(t), sect, e);
  return Status::Ok();
}

Status parse_engine(const Where& w, const toml::table& t, std::size_t index, EngineSection& e) {
  const std::string sect = fmt::format("engine[{}]", index);
  if (Status s = known_keys(w, t, sect, {"name", "kind", "period_ms", "deadline_ms", "uid", "exe"}); !s) return s;
  for (const auto& [kk, n] : t) {
    const std::string_view k = kk.str();
    const std::string key = fmt::format("{}.{}", sect, k);
    if (k == "name" || k == "kind") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (k == "name") {
        if (s->empty() || s->size() >= engine::kNameBytes)
          return error_at(w, n, key, fmt::format("must be 1 to {} characters", engine::kNameBytes - 1));
        e.name = *s;
      } else if (*s == "best-effort") e.kind = admission::EngineKind::kBestEffort;
      else if (*s == "deadline-bound") e.kind = admission::EngineKind::kDeadlineBound;
      else return error_at(w, n, key, fmt::format("'{}' is neither \"best-effort\" nor \"deadline-bound\"", shown(*s)));
    } else if (k == "uid") {
      if (n.is_integer()) {
        const std::int64_t v = *n.value<std::int64_t>();
        if (v < 0 || v >= 4294967295LL) return error_at(w, n, key, fmt::format("uid {} is not in [0, 4294967294]", v));
        e.uid = static_cast<uid_t>(v);
      } else if (n.is_string()) {
        const std::string name = *n.value<std::string>();
        const passwd* pw = ::getpwnam(name.c_str());
        if (pw == nullptr) return error_at(w, n, key, fmt::format("no such user '{}'", shown(name)));
        e.uid = pw->pw_uid;
      } else {
        return error_at(w, n, key, "must be a user name or a uid");
      }
    } else if (k == "exe") {
      auto s = string(w, n, key);
      if (!s) return s.error();
      if (s->empty() || (*s)[0] != '/') return error_at(w, n, key, "must be an absolute path");
      struct stat st{};
      if (::stat(s->c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return error_at(w, n, key, fmt::format("{} is not a regular file", shown(*s)));
      e.exe = *s;
    } else {
      auto v = positive_ms(w, n, key);
      if (!v) return v.error();
      (k == "period_ms" ? e.period : e.deadline) = *v;
    }
  }
  if (e.name.empty()) return make_error("{}: {}.name: required", w.at(t), sect);
  if (e.kind == admission::EngineKind::kDeadlineBound) {
    if (e.period == 0) return make_error("{}: {}.period_ms: required for a deadline-bound engine", w.at(t), sect);
    if (e.deadline == 0) e.deadline = e.period;
    if (e.deadline > e.period)
      return make_error("{}: {}: deadline {:.3f} ms exceeds the period {:.3f} ms", w.at(t), sect,
                        static_cast<double>(e.deadline) / 1e6, static_cast<double>(e.period) / 1e6);
  } else if (e.period != 0 || e.deadline != 0) {
    return make_error("{}: {}: a best-effort engine has no period or deadline", w.at(t), sect);
  }
  return Status::Ok();
}

Status parse_sereno(const Where& w, const toml::table& t, policy::SerenoParams& p) {
  if (Status s = known_keys(w, t, "sereno", {"target", "kp", "ki", "max_pause_steps"}); !s) return s;
  for (const auto& [kk, n] : t) {
    const std::string key = "sereno." + std::string(kk.str());
    auto v = number(w, n, key);
    if (!v) return v.error();
    if (*v < 0) return error_at(w, n, key, "must be >= 0");
    const std::string_view k = kk.str();
    (k == "target" ? p.target : k == "kp" ? p.kp : k == "ki" ? p.ki : p.max_pause_steps) = *v;
  }
  return Status::Ok();
}

}  // namespace

Nanos profile_p99(std::vector<Nanos> solo) { return pricing::percentile(std::move(solo), 99); }

const EngineSection* Config::engine(std::string_view name) const {
  for (const auto& e : engines)
    if (e.name == name) return &e;
  return nullptr;
}


Result<Config> parse(std::string_view text, const std::string& source, const std::string& base_dir) {
  bool in_string = false;
  if (int line = non_ascii_outside_strings(text, &in_string))
    return in_string ? make_error("{}:{}: a character in U+00A1..U+0499, U+2D3E..U+3137 or U+FB06..U+FEFE "
                                  "in a string, which toml++ 3.3 cannot read safely (write it as a \\u escape)",
                                  source, line)
                     : make_error("{}:{}: a non-ASCII character outside a string or a comment", source, line);
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error("{}:{}: {}", source, e.source().begin.line, e.description());
  } catch (const std::logic_error& e) {  // a toml++ check that failed (include/ripple/toml.h)
    return make_error("{}: not valid TOML ({})", source, e.what());
  }
  Config c;
  c.source = source;
  const Where w{c.source};
  if (Status s = known_keys(w, doc, "(top level)", {"agent", "pricing", "sereno", "task", "engine"}); !s)
    return s.error();
  if (const toml::node* n = doc.get("agent")) {
    if (!n->is_table()) return error_at(w, *n, "agent", "must be a table [agent]");
    if (Status s = parse_agent(w, *n->as_table(), c.agent); !s) return s.error();
    for (const auto& [k, v] : *n->as_table()) c.where["agent." + std::string(k.str())] = w.at(v);
    if (c.agent.engine_socket == c.agent.control_socket)
      return make_error("{}agent.control_socket: the same path as agent.engine_socket ({})",
                        c.at("agent.control_socket"), shown(c.agent.engine_socket));
  }
  if (const toml::node* n = doc.get("pricing")) {
    if (!n->is_table()) return error_at(w, *n, "pricing", "must be a table [pricing]");
    if (auto e = pricing::apply_config(*n->as_table(), c.pricing); !e.empty())
      return make_error("{}: {}", source, e);
  }
  if (const toml::node* n = doc.get("sereno")) {
    if (!n->is_table()) return error_at(w, *n, "sereno", "must be a table [sereno]");
    if (Status s = parse_sereno(w, *n->as_table(), c.sereno); !s) return s.error();
  }
  if (const toml::node* n = doc.get("task")) {
    const toml::array* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables()) return error_at(w, *n, "task", "must be an array of tables [[task]]");
    std::set<std::string> names, comms;
    for (std::size_t k = 0; k < a->size(); ++k) {
      // The tracer takes RIPPLE_MAX_PTS; refuse more before building anything for them.
      if (k == RIPPLE_MAX_PTS)
        return make_error("{}: task[{}]: {} tasks; at most {}", w.at(*a->get(k)), k, a->size(), RIPPLE_MAX_PTS);
      TaskSection t;
      // A task without its own miss_tolerance takes [pricing]'s (parsed above, wherever
      // the table stands in the file).
      t.spec.miss_tolerance = c.pricing.default_miss_tolerance;
      if (Status s = parse_task(w, *a->get(k)->as_table(), k, base_dir, t); !s) return s.error();
      if (!names.insert(t.spec.name).second)
        return make_error("{}: task[{}].name: '{}' is used twice", w.at(*a->get(k)), k, t.spec.name);
      if (t.pt.match == tracer::MatchKind::kComm && !comms.insert(t.pt.comm).second)
        return make_error("{}: task[{}].comm: '{}' names two tasks", w.at(*a->get(k)), k, t.pt.comm);
      c.where[fmt::format("task[{}]", k)] = w.at(*a->get(k));
      c.tasks.push_back(std::move(t));
    }
  }
  if (const toml::node* n = doc.get("engine")) {
    const toml::array* a = n->as_array();
    if (a == nullptr || !a->is_array_of_tables())
      return error_at(w, *n, "engine", "must be an array of tables [[engine]]");
    for (std::size_t k = 0; k < a->size(); ++k) {
      EngineSection e;
      if (Status s = parse_engine(w, *a->get(k)->as_table(), k, e); !s) return s.error();
      if (c.engine(e.name) != nullptr)
        return make_error("{}: engine[{}].name: '{}' is used twice", w.at(*a->get(k)), k, e.name);
      c.engines.push_back(std::move(e));
    }
  }
  return c;
}

std::string Config::at(const std::string& key) const {
  auto it = where.find(key);
  return (it == where.end() ? source : it->second) + ": ";
}

bool is_log_level(std::string_view level) {
  return level == "debug" || level == "info" || level == "warn" || level == "error" || level == "off";
}

Result<Config> load(const std::string& path) {
  // A device (/dev/zero, /dev/urandom) would be read forever, a directory as nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return make_error("cannot read configuration '{}': {}", path, std::strerror(errno));
  struct stat st {};
  std::string text;
  std::string why;
  if (::fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (S_ISDIR(st.st_mode)) why = "it is a directory";
  else if (!S_ISREG(st.st_mode)) why = "it is not a regular file";
  else if (static_cast<std::uint64_t>(st.st_size) > kMaxFileBytes)
    why = fmt::format("{} bytes; at most {}", st.st_size, kMaxFileBytes);
  else {
    text.resize(kMaxFileBytes + 1);
    std::size_t got = 0;
    for (ssize_t n; got < text.size() && (n = ::read(fd, text.data() + got, text.size() - got)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = std::strerror(errno);
        break;
      }
      got += static_cast<std::size_t>(n);
    }
    if (why.empty() && got > kMaxFileBytes) why = fmt::format("more than {} bytes", kMaxFileBytes);
    text.resize(got);
  }
  ::close(fd);
  if (!why.empty()) return make_error("cannot read configuration '{}': {}", path, why);
  const auto slash = path.rfind('/');
  return parse(text, path, slash == std::string::npos ? "." : path.substr(0, slash));
}

}  // namespace ripple::config
