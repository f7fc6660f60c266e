#include "tools/bench/ripple-sim/calibrate.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/bench/ripple-sim/preset.h"
#include "tools/bench/ripple-sim/tasks.h"

extern char** environ;

namespace ripple::sim {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The Python that runs ripple-bench: the interpreter of its #! line (Debian's python3,
// which has the bench's modules, e.g. python3-tomli-w) where it exists, else python3 from
// PATH (the GPU machine's own Python, with PYTHONPATH=/tmp/rdeps/python from the carry).
std::string bench_python(const std::string& script) {
  std::ifstream in(script);
  std::string line;
  if (std::getline(in, line) && line.rfind("#!", 0) == 0) {
    std::string interp = line.substr(2);
    interp = interp.substr(0, interp.find(' '));
    if (!interp.empty() && interp.find("/env") == std::string::npos && ::access(interp.c_str(), X_OK) == 0)
      return interp;
  }
  return "python3";
}


constexpr double kZ99 = 2.3263478740408408;  // the standard normal's 99th percentile

// "pace-20" -> 20; "pace-1/2" -> 0.5; anything else -> -1.
double pace_rate(const std::string& policy) {
  if (policy.rfind("pace-", 0) != 0) return -1;
  const std::string r = policy.substr(5);
  try {
    const auto slash = r.find('/');
    if (slash != std::string::npos) return std::stod(r.substr(0, slash)) / std::stod(r.substr(slash + 1));
    return std::stod(r);
  } catch (...) {
    return -1;
  }
}

std::string read_text(const std::string& path, bool* ok) {
  std::ifstream in(path);
  *ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A byte rate (GB/s) of one engine over the scored windows, from the bench's timeline
// samples (the agent's granted bytes every --sample-s).
double timeline_gbps(const json& point, const std::string& engine) {
  double bytes = 0, secs = 0;
  if (!point.contains("timelines")) return 0;
  for (const auto& tl : point["timelines"]) {
    const double from = tl.value("scored_from_s", 0.0);
    double b0 = -1, t0 = 0, b1 = -1, t1 = 0;
    for (const auto& s : tl.value("samples", json::array())) {
      const double t = s.value("t_s", 0.0);
      if (t < from || !s.contains("engines") || !s["engines"].contains(engine)) continue;
      const auto& e = s["engines"][engine];
      if (!e.contains("bytes") || !e["bytes"].is_number()) continue;
      const double b = e["bytes"].get<double>();
      if (b0 < 0) b0 = b, t0 = t;
      b1 = b, t1 = t;
    }
    if (b0 >= 0 && t1 > t0) bytes += b1 - b0, secs += t1 - t0;
  }
  return secs > 0 ? bytes / secs / 1e9 : 0;
}

std::string fmt_list(const std::vector<double>& xs, const char* f = "{:.2f}") {
  std::string s;
  for (double x : xs) s += (s.empty() ? "" : ", ") + fmt::format(fmt::runtime(f), x);
  return s;
}

}  // namespace

Result<CalData> read_bench_outputs(const std::string& results_text, const std::string& responses_csv) {
  json r;
  try {
    r = json::parse(json_from_python(results_text));
  } catch (const std::exception& e) {
    return make_error("results.json: not JSON ({})", e.what());
  }
  CalData d;
  d.backend = r.value("backend", std::string("?"));
  d.mix = r.value("mix", std::string("?"));
  d.command = r.value("command", std::string());
  if (!r.contains("tasks") || !r["tasks"].is_array() || r["tasks"].empty())
    return make_error("results.json: no 'tasks' list");
  for (const auto& t : r["tasks"]) d.tasks.push_back(t.get<std::string>());
  if (!r.contains("profile") || !r["profile"].is_object()) return make_error("results.json: no 'profile'");
  for (const auto& t : d.tasks) {
    const auto& p = r["profile"];
    if (!p.contains(t) || !p[t].contains("p50_ms") || !p[t]["p50_ms"].is_number() || !p[t].contains("p99_ms"))
      return make_error("results.json: profile.{}.p50_ms/p99_ms missing", t);
    d.solo_p50_ms[t] = p[t]["p50_ms"].get<double>();
    d.solo_p99_ms[t] = p[t]["p99_ms"].get<double>();
    d.solo_jobs[t] = p[t].value("jobs", 0);
    if (!(d.solo_p50_ms[t] > 0) || !(d.solo_p99_ms[t] >= d.solo_p50_ms[t]))
      return make_error("results.json: profile.{}: p50_ms {} and p99_ms {} (need 0 < p50 <= p99)", t,
                        d.solo_p50_ms[t], d.solo_p99_ms[t]);
  }
  const double score_s = r.value("score_s", 0.0);
  d.score_s = score_s;
  // Responses per (policy, task) from responses.csv: policy,k,run,task,release_ns,response_ms,deadline_ms.
  std::map<std::string, std::map<std::string, std::vector<double>>> resp;
  std::istringstream in(responses_csv);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line.rfind("policy,", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string c;
    while (std::getline(ls, c, ',')) f.push_back(c);
    if (f.size() < 6) return make_error("responses.csv:{}: expected policy,k,run,task,release_ns,response_ms,...", n);
    try {
      resp[f[0]][f[3]].push_back(std::stod(f[5]));
    } catch (...) {
      return make_error("responses.csv:{}: response_ms '{}' is not a number", n, f[5]);
    }
  }
  if (!r.contains("points") || !r["points"].is_array()) return make_error("results.json: no 'points'");
  for (const auto& p : r["points"]) {
    const std::string pol = p.value("policy", std::string());
    const double rate = pace_rate(pol);
    if (rate <= 0) continue;  // only the pace-R points measure the slowdown
    CalPoint cp;
    cp.rate_gbps = rate;
    if (!p.contains("llm_gbps") || !p["llm_gbps"].is_number())
      return make_error("results.json: point {}: llm_gbps missing", pol);
    cp.beta_gbps = p["llm_gbps"].get<double>() + timeline_gbps(p, "vlm");
    for (const auto& t : d.tasks) {
      auto& v = resp[pol][t];
      if (v.empty()) return make_error("responses.csv: no responses of {} under {}", t, pol);
      cp.p50_ms[t] = percentile(v, 50);
      {
        const double lo = percentile(v, 10), hi = percentile(v, 90);
        double sum = 0;
        std::size_t n_in = 0;
        for (double x : v)
          if (x >= lo && x <= hi) sum += x, ++n_in;
        cp.tmean_ms[t] = n_in ? sum / static_cast<double>(n_in) : cp.p50_ms[t];
      }
      cp.p99_ms[t] = percentile(v, 99);
      cp.p10_ms[t] = percentile(v, 10);
      cp.p90_ms[t] = percentile(v, 90);
      cp.jobs[t] = v.size();
    }
    const double grants = p.contains("llm_grants") ? p["llm_grants"].value("grants", 0.0) : 0.0;
    const double other = p.contains("gaps") && p["gaps"].contains("other") && p["gaps"]["other"].is_number()
                             ? p["gaps"]["other"].get<double>() : 0.0;
    if (grants > 0) cp.other_ms_per_grant = other * score_s * p.value("runs", 1) * 1e3 / grants;
    if (p.contains("other_load") && p["other_load"].is_array())
      for (const auto& l : p["other_load"]) {
        if (l.contains("share") && l["share"].is_number()) cp.other_load = std::max(cp.other_load, l["share"].get<double>());
        cp.loaded = cp.loaded || l.value("loaded", false);
      }
    d.points.push_back(std::move(cp));
  }
  if (d.points.empty()) return make_error("results.json: no pace-R point (run ripple-bench --policies pace-R,...)");
  std::sort(d.points.begin(), d.points.end(), [](const CalPoint& a, const CalPoint& b) { return a.rate_gbps < b.rate_gbps; });
  return d;
}

Result<CalTaskFit> fit_task(const CalData& d, const std::string& task) {
  CalTaskFit f;
  f.name = task;
  auto it = d.solo_p50_ms.find(task);
  if (it == d.solo_p50_ms.end()) return make_error("task {}: no solo profile", task);
  f.solo_p50_ms = it->second;
  f.solo_p99_ms = d.solo_p99_ms.at(task);
  f.solo_jobs = d.solo_jobs.count(task) ? d.solo_jobs.at(task) : 0;
  f.base_ms = f.solo_p50_ms;
  f.sigma = std::log(f.solo_p99_ms / f.solo_p50_ms) / kZ99;
  // The reference: a point at <= 1 % of the highest rate (calibrate runs one at 1/1000).
  double max_rate = 0;
  for (const CalPoint& p : d.points) max_rate = std::max(max_rate, p.rate_gbps);
  const CalPoint* ref = nullptr;
  for (const CalPoint& p : d.points)
    if (p.rate_gbps <= 0.01 * max_rate && p.tmean_ms.count(task)) ref = &p;
  f.reference = ref != nullptr;
  const double m0 = ref ? ref->tmean_ms.at(task) : f.solo_p50_ms;
  double sxy = 0, sxx = 0;
  std::vector<std::pair<double, double>> xy;
  for (const CalPoint& p : d.points) {
    if (&p == ref) continue;
    const auto& stat = ref ? p.tmean_ms : p.p50_ms;
    auto q = stat.find(task);
    if (q == stat.end() || !(p.beta_gbps > 0) || !(q->second > 0)) continue;
    const double y = 1.0 - m0 / q->second;
    xy.emplace_back(p.beta_gbps, y);
    sxy += p.beta_gbps * y;
    sxx += p.beta_gbps * p.beta_gbps;
    f.point_kappa.push_back(1e3 * y / p.beta_gbps);
  }
  if (xy.empty() || !(sxx > 0)) return make_error("task {}: no point with engine traffic (beta > 0) to fit", task);
  const double slope = std::max(0.0, sxy / sxx);  // per GB/s; a negative slope is noise: no slowdown
  f.kappa_ms_per_gb = 1e3 * slope;
  double ss = 0;
  for (auto [x, y] : xy) ss += (y - slope * x) * (y - slope * x);
  f.rms = std::sqrt(ss / static_cast<double>(xy.size()));
  // The per-job spread of the slope, against the reference's spread.
  auto spread = [&](const CalPoint& p) {
    const double lo = p.p10_ms.count(task) ? p.p10_ms.at(task) : 0, hi = p.p90_ms.count(task) ? p.p90_ms.at(task) : 0;
    return lo > 0 && hi >= lo ? std::log(hi / lo) / 2.5631031310892007 : -1.0;
  };
  if (ref != nullptr && spread(*ref) >= 0) {
    const double s0 = spread(*ref);
    double sw = 0, sws = 0;
    for (const CalPoint& p : d.points) {
      const double x = slope * p.beta_gbps;
      if (&p == ref || !(x > 0.02) || x >= 0.95 || spread(p) < 0) continue;
      const double extra = spread(p) * spread(p) - s0 * s0;
      const double s = extra > 0 ? std::sqrt(extra) / -std::log(1 - x) : 0.0;
      sw += x * x;
      sws += x * x * s;
    }
    if (sw > 0) f.slowdown_sigma = std::min(3.0, sws / sw);
  }
  return f;
}

std::string render_preset(const std::string& name, const std::string& description, const std::string& header,
                          const std::string& base_text, const std::vector<CalTaskFit>& fits) {
  std::string out;
  std::istringstream hs(header);
  std::string line;
  while (std::getline(hs, line)) out += "# " + line + "\n";
  out += fmt::format("name = \"{}\"\ndescription = \"{}\"\n", name, description);
  // The base preset's other top-level keys and tables, its [task.*] tables dropped. Its
  // opening comment block (what it was made from) is not ours: skipped.
  std::istringstream bs(base_text);
  bool in_task = false, started = false;
  auto key_is = [](const std::string& l, const char* k) {
    const auto s = l.find_first_not_of(" \t");
    if (s == std::string::npos || l.compare(s, std::strlen(k), k) != 0) return false;
    const auto e = l.find_first_not_of(" \t", s + std::strlen(k));
    return e != std::string::npos && l[e] == '=';
  };
  while (std::getline(bs, line)) {
    const auto s = line.find_first_not_of(" \t");
    const bool blank = s == std::string::npos;
    const bool comment = !blank && line[s] == '#';
    if (!started && (blank || comment)) continue;
    started = true;
    if (!blank && line[s] == '[') {
      const std::string h = line.substr(s);
      in_task = h.rfind("[task.", 0) == 0 || h.rfind("[task]", 0) == 0;
    }
    if (in_task) continue;
    if (key_is(line, "name") || key_is(line, "description")) continue;
    out += line + "\n";
  }
  out += "\n# Tasks: measured by `ripple-sim calibrate` (fit: 1 - p50_solo / p50(beta) = kappa beta;\n"
         "# solo: lognormal through the co-run profile's p50 and p99).\n";
  out += "[task.default]\nkappa_ms_per_gb = 0.0\nbase_ms = 10.0\nsigma = 0.0\nnoise_ms = 0.0\n";
  for (const CalTaskFit& f : fits) {
    out += fmt::format("\n[task.{}]\n", f.name);
    out += fmt::format("# solo p50 {:.3f} ms, p99 {:.3f} ms ({} jobs); slope per rate (ms/GB): {}; rms residual {:.4f}\n",
                       f.solo_p50_ms, f.solo_p99_ms, f.solo_jobs, fmt_list(f.point_kappa), f.rms);
    out += fmt::format("kappa_ms_per_gb = {:.4f}\nslowdown_sigma = {:.4f}\nbase_ms = {:.4f}\nsigma = {:.5f}\n",
                       f.kappa_ms_per_gb, f.slowdown_sigma, f.base_ms, f.sigma);
  }
  return out;
}

namespace {

// Runs argv with stdout to `out_path`, stderr inherited; returns the exit status (-1: not run).
int spawn(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<char*> av;
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -(rc > 0 ? rc : 1);
  int st = 0;
  if (waitpid(pid, &st, 0) < 0) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

}  // namespace

Status run_calibrate(const CalibrateOptions& o) {
  if (o.backend != "gpu" && o.backend != "plant")
    return make_error("--backend: '{}' (gpu: ripple-llm under ripple-run; plant: the emulated plant, a test double)",
                      o.backend);
  if (o.from.empty() && o.rates.empty()) return make_error("--rates: give at least one byte rate (GB/s)");
  for (double r : o.rates)
    if (!(r > 0) || !std::isfinite(r))
      return make_error("--rates: {} is not a byte rate > 0 GB/s (the solo point is the co-run profile)", r);
  if (!(o.score_s > 0)) return make_error("--score-s: {} must be > 0", o.score_s);
  if (!(o.prep_s >= 0)) return make_error("--prep-s: {} must be >= 0", o.prep_s);
  if (!(o.profile_s > 0)) return make_error("--profile-s: {} must be > 0", o.profile_s);
  if (o.out.empty()) return make_error("--out: the preset file to write is required");
  if (o.name.empty() || o.name.find('"') != std::string::npos) return make_error("--name: '{}' is not a preset name", o.name);
  bool ok = false;
  const std::string base_text = read_text(o.base_preset, &ok);
  if (!ok) return make_error("--base-preset: cannot read {}", o.base_preset);
  if (auto b = parse_preset(base_text, o.base_preset, fs::path(o.base_preset).parent_path().string()); !b)
    return make_error("--base-preset: {}", b.error().message);
  auto mix = load_mix(o.mix);
  if (!mix) return make_error("--mix: {}", mix.error().message);

  std::string dir = o.from;
  if (o.from.empty() && o.work.empty()) return make_error("--work: a folder for ripple-bench's outputs is required");
  if (!o.work.empty()) {
    std::error_code ec;
    fs::create_directories(o.work, ec);
    if (ec) return make_error("--work: cannot create {}: {}", o.work, ec.message());
  }
  if (o.from.empty()) {
    dir = o.work;
    // The reference point: the same protocol at 1/1000 of the lowest rate (~no traffic).
    std::string pols = fmt::format("pace-{:g}", *std::min_element(o.rates.begin(), o.rates.end()) / 1000);
    for (double r : o.rates) pols += fmt::format(",pace-{:g}", r);
    const std::string bench = o.repo_root + "/tools/bench/ripple-bench/ripple-bench";
    std::vector<std::string> argv = {bench_python(bench), bench, "--backend", o.backend,
                                     "--mix", o.mix, "--policies", pols, "--k", "2", "--eps", "0.2", "--runs", "1",
                                     "--prep-s", fmt::format("{:g}", o.prep_s), "--ripple-prep-s",
                                     fmt::format("{:g}", o.prep_s), "--score-s", fmt::format("{:g}", o.score_s),
                                     "--profile-s", fmt::format("{:g}", o.profile_s), "--no-plots", "--out", o.work,
                                     // a point whose window ran beside other load (a build) is run again:
                                     // one loaded window moves the slope by 2x (a loaded reference: 249 ms/GB
                                     // of the plant's 750)
                                     "--rerun-loaded", "2"};
    if (!o.build_dir.empty()) argv.insert(argv.end(), {"--build-dir", o.build_dir});
    argv.insert(argv.end(), o.bench_args.begin(), o.bench_args.end());
    const double est = o.profile_s + static_cast<double>(o.rates.size() + 1) * (o.prep_s + o.score_s + 6) +
                       (o.backend == "gpu" ? 90 : 10);
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    std::fprintf(stderr, "ripple-sim calibrate: %zu rates (+ a reference at 1/1000) x %g s scored + %g s profile on the "
                         "%s backend, about %.0f s\n"
                         "ripple-sim calibrate: %s\n",
                 o.rates.size(), o.score_s, o.profile_s, o.backend.c_str(), est, cmd.c_str());
    const int rc = spawn(argv, o.work + "/bench.out");
    if (rc < 0) return make_error("cannot start {} (ripple-bench is Python): {}", argv[0], std::strerror(-rc));
    if (rc != 0)
      return make_error("ripple-bench exited {} (its table: {}/bench.out; its progress above)", rc, o.work);
  }
  const std::string rpath = dir + "/results.json", cpath = dir + "/responses.csv";
  const std::string rtext = read_text(rpath, &ok);
  if (!ok) return make_error("cannot read {}", rpath);
  const std::string ctext = read_text(cpath, &ok);
  if (!ok) return make_error("cannot read {}", cpath);
  auto data = read_bench_outputs(rtext, ctext);
  if (!data) return make_error("{}: {}", dir, data.error().message);

  std::vector<CalTaskFit> fits;
  json j = {{"backend", data->backend}, {"mix", data->mix}, {"bench_command", data->command}, {"points", json::array()},
            {"tasks", json::object()}};
  std::fprintf(stderr, "ripple-sim calibrate: engines' byte rate per pace point (GB/s): ");
  std::vector<double> betas;
  for (const CalPoint& p : data->points) {
    betas.push_back(p.beta_gbps);
    json jp = {{"rate_gbps", p.rate_gbps}, {"beta_gbps", p.beta_gbps}, {"p50_ms", p.p50_ms}, {"p99_ms", p.p99_ms},
               {"trimmed_mean_ms", p.tmean_ms},
               {"jobs", p.jobs}, {"other_ms_per_grant", p.other_ms_per_grant}, {"other_load", p.other_load},
               {"loaded", p.loaded}};
    j["points"].push_back(jp);
  }
  std::fprintf(stderr, "%s\n", fmt_list(betas).c_str());
  std::vector<double> loads;
  bool any_loaded = false;
  for (const CalPoint& p : data->points) loads.push_back(p.other_load), any_loaded = any_loaded || p.loaded;
  if (loads.front() >= 0)
    std::fprintf(stderr, "ripple-sim calibrate: other processes' share of the CPUs beside each point's window: %s%s\n",
                 fmt_list(loads).c_str(),
                 any_loaded ? " (LOADED: a point ran beside other load in every attempt; its slope measured that "
                              "load's preemptions too)" : "");
  j["loaded"] = any_loaded;
  for (const std::string& t : data->tasks) {
    auto f = fit_task(*data, t);
    if (!f) return f.error();
    std::fprintf(stderr, "ripple-sim calibrate: %-10s solo p50 %7.2f ms p99 %7.2f ms (sigma %.3f); kappa %.3f ms/GB, "
                         "spread %.3f (per rate: %s; rms %.4f; %s)\n",
                 t.c_str(), f->solo_p50_ms, f->solo_p99_ms, f->sigma, f->kappa_ms_per_gb, f->slowdown_sigma,
                 fmt_list(f->point_kappa).c_str(), f->rms,
                 f->reference ? "trimmed means vs the reference point" : "medians vs the profile: no reference point");
    j["tasks"][t] = {{"solo_p50_ms", f->solo_p50_ms}, {"solo_p99_ms", f->solo_p99_ms}, {"base_ms", f->base_ms},
                     {"sigma", f->sigma}, {"kappa_ms_per_gb", f->kappa_ms_per_gb}, {"slowdown_sigma", f->slowdown_sigma}, {"point_kappa", f->point_kappa},
                     {"rms", f->rms}};
    fits.push_back(std::move(*f));
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  std::string header = fmt::format(
      "{}: written by `ripple-sim calibrate` on {} ({} CPUs), backend {}, mix {}.\n"
      "Command: {}\n"
      "Measured: ripple-bench with pace-R at {} GB/s (engines moved {} GB/s), {} s scored each;\n"
      "the tasks' [task.*] below are the fit; every other section is {}'s.\n",
      o.name, host, sysconf(_SC_NPROCESSORS_ONLN), data->backend, data->mix, o.command, fmt_list([&] {
        std::vector<double> v;
        for (const auto& p : data->points) v.push_back(p.rate_gbps);
        return v;
      }(), "{:g}"),
      fmt_list(betas), data->score_s, o.base_preset);
  const std::string text = render_preset(o.name, fmt::format("calibrated on {} ({} backend)", host, data->backend),
                                         header, base_text, fits);
  // It must load as a preset for the mix it was measured on.
  auto back = parse_preset(text, o.out, fs::path(o.base_preset).parent_path().string());
  if (!back) return make_error("the written preset does not parse: {}", back.error().message);
  if (auto tf = tasks_for(*back, *mix); !tf) return make_error("the written preset: {}", tf.error().message);
  {
    std::ofstream f(o.out);
    f << text;
    if (!f.flush()) return make_error("--out: cannot write {}", o.out);
  }
  if (!o.work.empty()) std::ofstream(o.work + "/calibrate.json") << j.dump(1) << "\n";
  std::fprintf(stderr, "ripple-sim calibrate: wrote %s%s%s\n", o.out.c_str(), o.work.empty() ? "" : " and ",
               o.work.empty() ? "" : (o.work + "/calibrate.json").c_str());
  return Status::Ok();
}

}  // namespace ripple::sim
