#include "tools/bench/ripple-sim/preset.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "agent/pricing/config.h"

#include <nlohmann/json.hpp>

namespace ripple::sim {

namespace {

Nanos ms_to_ns(double ms) { return static_cast<Nanos>(std::llround(ms * 1e6)); }
Nanos us_to_ns(double us) { return static_cast<Nanos>(std::llround(us * 1e3)); }

std::string join(const std::string& dir, const std::string& f) {
  if (f.empty() || f[0] == '/' || dir.empty()) return f;
  return dir + "/" + f;
}

Status check_keys(const toml::table& t, const std::string& where, std::initializer_list<std::string_view> keys) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (auto n : keys) ok = ok || k.str() == n;
    if (!ok) {
      std::string list;
      for (auto n : keys) list += (list.empty() ? "" : ", ") + std::string(n);
      return make_error("{}: unknown key '{}' (line {}; known: {})", where, k.str(), v.source().begin.line, list);
    }
  }
  return Status::Ok();
}

Status read_task(const toml::table& t, const std::string& where, const std::string& dir, TaskParams& out) {
  if (Status s = check_keys(t, where, {"kappa_ms_per_gb", "slowdown_sigma", "base_ms", "sigma", "noise_ms", "alpha", "samples",
                                       "prior_slope_ms_per_gb", "gb_per_job", "burst_factor", "source"});
      !s)
    return s;
  out.kappa_ms_per_gb = t["kappa_ms_per_gb"].value_or(out.kappa_ms_per_gb);
  out.slowdown_sigma = t["slowdown_sigma"].value_or(out.slowdown_sigma);
  out.solo.base_ms = t["base_ms"].value_or(out.solo.base_ms);
  out.solo.sigma = t["sigma"].value_or(out.solo.sigma);
  out.solo.noise_ms = t["noise_ms"].value_or(out.solo.noise_ms);
  out.solo.alpha = t["alpha"].value_or(out.solo.alpha);
  if (auto p = t["prior_slope_ms_per_gb"].value<double>()) out.prior_slope_ms_per_gb = *p;
  if (auto v = t["burst_factor"]; v) {
    auto f = v.value<double>();
    if (!f) return make_error("{}.burst_factor must be a number", where);
    if (Status s = validate_burst_factor(*f, where + ".burst_factor"); !s) return s;
    out.burst_factor = *f;
  }
  if (auto f = t["samples"].value<std::string>()) {
    auto s = load_samples(join(dir, *f));
    if (!s) return make_error("{}: samples: {}", where, s.error().message);
    out.solo.samples_ms = *s;
  }
  if (out.kappa_ms_per_gb < 0) return make_error("{}: kappa_ms_per_gb < 0", where);
  if (!(out.slowdown_sigma >= 0 && out.slowdown_sigma <= 3)) return make_error("{}: slowdown_sigma must be in [0, 3]", where);
  if (!(out.solo.base_ms > 0)) return make_error("{}: base_ms must be > 0", where);
  if (out.solo.sigma < 0 || out.solo.noise_ms < 0 || !(out.solo.alpha > 0))
    return make_error("{}: sigma and noise_ms must be >= 0, alpha > 0", where);
  return Status::Ok();
}

Result<EngineModel> read_engine(const toml::table& t, const std::string& name, const std::string& dir) {
  const std::string where = "engine." + name;
  if (Status s = check_keys(t, where, {"kind", "units", "unit_mb", "unit_ms", "gbps", "profile", "period_ms",
                                       "deadline_ms", "first_release_ms", "grant_overhead_us", "repeat",
                                       "hidden_overhead_us", "time_sigma", "chunk_mb", "issue_ahead", "h2d_fraction", "source"});
      !s)
    return s.error();
  const std::string kind_s = t["kind"].value_or(std::string("best-effort"));
  if (kind_s != "best-effort" && kind_s != "deadline-bound")
    return make_error("{}: kind '{}' (best-effort or deadline-bound)", where, kind_s);
  const auto kind = kind_s == "deadline-bound" ? admission::EngineKind::kDeadlineBound
                                               : admission::EngineKind::kBestEffort;
  const double gbps = t["gbps"].value_or(0.0);
  EngineModel m;
  if (auto prof = t["profile"].value<std::string>()) {
    auto r = engine_from_profile(join(dir, *prof), name, kind, gbps);
    if (!r) return make_error("{}: {}", where, r.error().message);
    m = std::move(*r);
  } else {
    const auto units = t["units"].value<std::int64_t>();
    const auto unit_mb = t["unit_mb"].value<double>();
    if (!units || *units < 1 || !unit_mb || !(*unit_mb > 0))
      return make_error("{}: needs profile = FILE, or units >= 1 and unit_mb > 0", where);
    double unit_ms = t["unit_ms"].value_or(0.0);
    if (!(unit_ms > 0)) {
      if (!(gbps > 0)) return make_error("{}: needs unit_ms or gbps", where);
      unit_ms = *unit_mb * 1e6 / gbps / 1e6;  // MB / (GB/s) = ms
    }
    m = uniform_engine(name, kind, static_cast<std::uint32_t>(*units), static_cast<Bytes>(std::llround(*unit_mb * 1e6)),
                       std::max<Nanos>(1, ms_to_ns(unit_ms)));
  }
  // repeat: the pass is the catalog's sequence this many times (a VLM frame decoding N tokens).
  if (auto rep = t["repeat"].value<std::int64_t>(); rep && *rep > 1) {
    const auto one = m.pass;
    for (std::int64_t i = 1; i < *rep; ++i) m.pass.insert(m.pass.end(), one.begin(), one.end());
  }
  // chunk_mb: sub-layer grants, the units split as the interposer splits them.
  if (auto c = t["chunk_mb"].value<double>()) {
    if (!(*c > 0)) return make_error("{}: chunk_mb must be > 0", where);
    m = chunked_engine(m, static_cast<Bytes>(std::llround(*c * 1e6)));
  }
  m.grant_overhead = us_to_ns(t["grant_overhead_us"].value_or(0.0));
  m.hidden_overhead = us_to_ns(t["hidden_overhead_us"].value_or(0.0));
  m.time_sigma = t["time_sigma"].value_or(0.0);
  if (auto v = t["h2d_fraction"]; v) {
    auto f = v.value<double>();
    if (!f) return make_error("{}.h2d_fraction must be a number", where);
    m.h2d_fraction = *f;
  }
  if (!(m.time_sigma >= 0 && m.time_sigma <= 2)) return make_error("{}: time_sigma must be in [0, 2]", where);
  if (auto v = t["issue_ahead"]; v && !v.is_boolean()) return make_error("{}: issue_ahead must be true or false", where);
  m.issue_ahead = t["issue_ahead"].value_or(false);
  if (kind == admission::EngineKind::kDeadlineBound) {
    m.period = ms_to_ns(t["period_ms"].value_or(0.0));
    m.deadline = ms_to_ns(t["deadline_ms"].value_or(t["period_ms"].value_or(0.0)));
    m.first_release = ms_to_ns(t["first_release_ms"].value_or(0.0));
  }
  if (Status s = validate(m); !s) return make_error("{}: {}", where, s.error().message);
  return m;
}

// One key of [bursts] (or --agent-set bursts.KEY=VALUE); the caller validates the whole.
Status apply_bursts_key(Preset& p, const std::string& key, const toml::node& n) {
  if (key == "source") return Status::Ok();
  if (key != "every_s" && key != "burst_s" && key != "factor")
    return make_error("bursts.{}: unknown key (every_s, burst_s, factor)", key);
  auto v = n.value<double>();
  if (!v) return make_error("bursts.{} must be a number", key);
  (key == "every_s" ? p.bursts.every_s : key == "burst_s" ? p.bursts.burst_s : p.burst_factor) = *v;
  return Status::Ok();
}

Status validate_bursts(const Preset& p) {
  if (Status s = validate(p.bursts); !s) return s;
  return validate_burst_factor(p.burst_factor, "bursts.factor");
}

}  // namespace

Status apply_agent_key(Preset& p, const std::string& key, const toml::node& n);

Result<Preset> parse_preset(const std::string& text, const std::string& origin, const std::string& dir) {
  toml::table doc;
  try {
    doc = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return make_error("{}: {} (line {})", origin, std::string(e.description()), e.source().begin.line);
  }
  Preset p;
  p.path = origin;
  if (Status s = check_keys(doc, origin, {"name", "description", "period_scale", "profile_s", "prior_slope_factor",
                                          "engines", "platform", "delays", "bursts", "agent", "pricing", "task", "engine"});
      !s)
    return s.error();
  p.name = doc["name"].value_or(std::string("custom"));
  p.description = doc["description"].value_or(std::string());
  p.period_scale = doc["period_scale"].value_or(1.0);
  p.profile_s = doc["profile_s"].value_or(20.0);
  p.prior_slope_factor = doc["prior_slope_factor"].value_or(0.0);
  if (!(p.period_scale > 0) || !(p.profile_s > 0)) return make_error("{}: period_scale, profile_s must be > 0", origin);
  p.platform.name = p.name;
  if (const toml::table* t = doc["platform"].as_table()) {
    if (Status s = check_keys(*t, "platform", {"peak_gbps", "model", "max_stall", "min_rate", "h2d_gbps", "d2h_gbps", "source"}); !s)
      return s.error();
    p.platform.peak_gbps = (*t)["peak_gbps"].value_or(p.platform.peak_gbps);
    bool ok = true;
    p.platform.model = parse_slowdown((*t)["model"].value_or(std::string("linear")), &ok);
    if (!ok) return make_error("platform.model: linear or saturating");
    p.platform.max_stall = (*t)["max_stall"].value_or(p.platform.max_stall);
    p.platform.min_rate = (*t)["min_rate"].value_or(p.platform.min_rate);
    for (auto [key, field] : {std::pair{"h2d_gbps", &p.platform.h2d_gbps}, std::pair{"d2h_gbps", &p.platform.d2h_gbps}}) {
      if (auto v = (*t)[key]; v) {
        auto g = v.value<double>();
        if (!g) return make_error("platform.{} must be a number", key);
        *field = *g;
      }
    }
  }
  if (Status s = validate(p.platform); !s) return s.error();
  if (const toml::table* t = doc["delays"].as_table()) {
    if (Status s = check_keys(*t, "delays", {"tracer_us", "decision_us", "delivery_us", "start_us", "report_us", "source"});
        !s)
      return s.error();
    p.delays.tracer = us_to_ns((*t)["tracer_us"].value_or(20.0));
    p.delays.decision = us_to_ns((*t)["decision_us"].value_or(20.0));
    p.delays.delivery = us_to_ns((*t)["delivery_us"].value_or(50.0));
    p.delays.start = us_to_ns((*t)["start_us"].value_or(10.0));
    p.delays.report = us_to_ns((*t)["report_us"].value_or(30.0));
  }
  if (const toml::table* t = doc["bursts"].as_table()) {
    for (const auto& [k, v] : *t)
      if (Status s = apply_bursts_key(p, std::string(k.str()), v); !s)
        return make_error("{} (line {})", s.error().message, v.source().begin.line);
    if (Status s = validate_bursts(p); !s) return s.error();
  }
  if (const toml::table* t = doc["agent"].as_table()) {
    for (const auto& [k, v] : *t)
      if (Status s = apply_agent_key(p, std::string(k.str()), v); !s) return s.error();
  }
  if (const toml::table* t = doc["pricing"].as_table()) {
    if (std::string e = pricing::apply_config(*t, p.params); !e.empty()) return make_error("pricing: {}", e);
  }
  if (const toml::table* t = doc["task"].as_table()) {
    if (const toml::table* d = (*t)["default"].as_table())
      if (Status s = read_task(*d, "task.default", dir, p.task_default); !s) return s.error();
    for (const auto& [k, v] : *t) {
      if (k.str() == "default") continue;
      const toml::table* tt = v.as_table();
      if (tt == nullptr) return make_error("task.{}: not a table", k.str());
      TaskParams tp = p.task_default;
      tp.solo.samples_ms.clear();
      if (Status s = read_task(*tt, "task." + std::string(k.str()), dir, tp); !s) return s.error();
      p.tasks[std::string(k.str())] = tp;
    }
  }
  if (const toml::table* t = doc["engine"].as_table()) {
    for (const auto& [k, v] : *t) {
      const toml::table* et = v.as_table();
      if (et == nullptr) return make_error("engine.{}: not a table", k.str());
      auto m = read_engine(*et, std::string(k.str()), dir);
      if (!m) return m.error();
      p.engines[std::string(k.str())] = std::move(*m);
    }
  }
  if (const toml::array* a = doc["engines"].as_array()) {
    for (const auto& n : *a) {
      auto s = n.value<std::string>();
      if (!s || !p.engines.count(*s)) return make_error("engines: '{}' is not an [engine.NAME] of the preset", s.value_or("?"));
      p.default_engines.push_back(*s);
    }
  } else {
    for (const auto& [k, v] : p.engines) p.default_engines.push_back(k);
  }
  return p;
}

Result<Preset> load_preset(const std::string& name, const std::string& presets_dir) {
  std::string path = name;
  if (name.find('/') == std::string::npos && name.find(".toml") == std::string::npos)
    path = presets_dir + "/" + name + ".toml";
  std::ifstream in(path);
  if (!in) return make_error("--preset: cannot read {} (a preset name under {} or a file)", path, presets_dir);
  std::stringstream ss;
  ss << in.rdbuf();
  const auto slash = path.rfind('/');
  return parse_preset(ss.str(), path, slash == std::string::npos ? "." : path.substr(0, slash));
}

Status apply_setting(Preset& p, const std::string& kv) {
  const auto eq = kv.find('=');
  const auto dot = kv.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq)
    return make_error("'{}' is not SECTION.KEY=VALUE", kv);
  const std::string sec = kv.substr(0, dot), key = kv.substr(dot + 1, eq - dot - 1), val = kv.substr(eq + 1);
  toml::table t;
  try {
    t = toml::parse(key + " = " + val);
  } catch (const toml::parse_error& e) {
    return make_error("'{}': {}", kv, std::string(e.description()));
  }
  if (sec == "pricing") {
    if (std::string e = pricing::apply_config(t, p.params); !e.empty()) return make_error("{}", e);
    return Status::Ok();
  }
  if (sec != "agent" && sec != "bursts") return make_error("'{}': section must be agent, pricing or bursts", kv);
  const toml::node* n = t.get(key);
  if (n == nullptr) return make_error("'{}' is not SECTION.KEY=VALUE", kv);
  if (sec == "bursts") {
    if (Status s = apply_bursts_key(p, key, *n); !s) return s;
    return validate_bursts(p);
  }
  return apply_agent_key(p, key, *n);
}

Status apply_agent_key(Preset& p, const std::string& key, const toml::node& n) {
  admission::Options& o = p.options;
  if (key == "lease_ms" || key == "expire_slack_ms" || key == "horizon_ms") {
    auto v = n.value<double>();
    if (!v || !(*v > 0)) return make_error("agent.{} must be a number > 0", key);
    (key == "lease_ms" ? o.lease : key == "horizon_ms" ? o.horizon : o.expire_slack) = ms_to_ns(*v);
  } else if (key == "gamma") {
    auto v = n.value<double>();
    if (!v || !(*v > 0 && *v <= 1)) return make_error("agent.gamma must be in (0, 1]");
    o.gamma = *v;
  } else if (key == "end_guard_quantile") {
    auto v = n.value<double>();
    if (!v || !(*v >= 0 && *v <= 1)) return make_error("agent.end_guard_quantile must be in [0, 1] (0: off)");
    o.end_guard_quantile = *v;
  } else if (key == "shared_link") {
    if (auto v = n.value<bool>()) {
      o.shared_link = *v ? admission::LinkMode::kOn : admission::LinkMode::kOff;
    } else if (n.value<std::string>() == "auto") {
      o.shared_link = admission::LinkMode::kAuto;
    } else {
      return make_error("agent.shared_link must be true, false or \"auto\"");
    }
  } else if (key == "pipelining" || key == "queued_durations" || key == "early_end_carries" ||
             key == "link_by_deadline") {
    auto v = n.value<bool>();
    if (!v) return make_error("agent.{} must be true or false", key);
    (key == "pipelining"         ? o.pipelining
     : key == "queued_durations" ? o.queued_durations
     : key == "early_end_carries" ? o.early_end_carries
                                  : o.link_by_deadline) = *v;
  } else if (key == "source") {
  } else {
    return make_error("agent.{}: not an admission key (lease_ms, expire_slack_ms, horizon_ms, gamma, end_guard_quantile, pipelining, queued_durations, early_end_carries, shared_link, link_by_deadline)", key);
  }
  return Status::Ok();
}

std::string json_from_python(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_str = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_str) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    bool hit = false;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN"})
      if (text.compare(i, lit.size(), lit) == 0) {
        out += "null";
        i += lit.size() - 1;
        hit = true;
        break;
      }
    if (!hit) out += c;
  }
  return out;
}

Result<std::vector<std::string>> apply_bench_profile(Preset& p, const std::string& text, const std::string& origin) {
  nlohmann::json r;
  try {
    r = nlohmann::json::parse(json_from_python(text));
  } catch (const std::exception& e) {
    return make_error("{}: not JSON ({})", origin, e.what());
  }
  if (!r.contains("profile") || !r["profile"].is_object() || r["profile"].empty())
    return make_error("{}: no 'profile' (a ripple-bench results.json has one)", origin);
  std::vector<std::string> set;
  for (const auto& [name, v] : r["profile"].items()) {
    if (!v.contains("p50_ms") || !v["p50_ms"].is_number() || !v.contains("p99_ms") || !v["p99_ms"].is_number())
      return make_error("{}: profile.{}.p50_ms/p99_ms missing", origin, name);
    const double p50 = v["p50_ms"].get<double>(), p99 = v["p99_ms"].get<double>();
    if (!(p50 > 0) || !(p99 >= p50)) return make_error("{}: profile.{}: need 0 < p50_ms <= p99_ms", origin, name);
    auto it = p.tasks.find(name);
    TaskParams tp = it != p.tasks.end() ? it->second : p.task_default;
    tp.solo = SoloModel{};
    tp.solo.base_ms = p50;
    tp.solo.sigma = std::log(p99 / p50) / 2.3263478740408408;
    tp.profile_p99_ms = p99;
    p.tasks[name] = tp;
    set.push_back(name);
  }
  return set;
}

Result<std::vector<TaskModel>> tasks_for(const Preset& p, const Mix& mix) {
  std::vector<TaskModel> out;
  for (const MixTask& mt : mix.tasks) {
    auto it = p.tasks.find(mt.name);
    const TaskParams& tp = it != p.tasks.end() ? it->second : p.task_default;
    TaskModel t;
    t.name = mt.name;
    t.period = ms_to_ns(mt.period_ms);
    t.fixed_deadline = ms_to_ns(mt.deadline_ms);
    t.kappa_ms_per_gb = tp.kappa_ms_per_gb;
    t.slowdown_sigma = tp.slowdown_sigma;
    t.solo = tp.solo;
    t.burst_factor = tp.burst_factor.value_or(p.burst_factor);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace ripple::sim
