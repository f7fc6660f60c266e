// ripple-sim: Ripple's agent (pricing, admission, policies) in virtual time against
// modelled tasks, engines and a platform preset. Documentation/sim.md.
//
//   ripple-sim [--mix FILE] [--preset NAME|FILE] [--policies a,b] [--k 1.1,1.5] [--runs N]
//              [--score-s S] [--prep-s S] [--seed N] [--out DIR] ...
//   ripple-sim calibrate --backend gpu|plant --out FILE.toml [--rates 10,20,...] ...
//              (measures a machine with ripple-bench's pace-R runs and writes a preset)
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "agent/policy/registry.h"
#include "tools/bench/ripple-sim/calibrate.h"
#include "tools/bench/ripple-sim/report.h"
#include "tools/bench/ripple-sim/sweep.h"

namespace fs = std::filesystem;
using namespace ripple::sim;

namespace {

// The source tree this binary was built from: build/bin/ripple-sim -> ../..; or the
// current directory.
fs::path repo_root() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::exists(p / "tools/bench/ripple-sim/presets")) return p;
  return fs::current_path();
}

template <typename T>
bool parse_list(const std::string& text, std::vector<T>* out) {
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if constexpr (std::is_same_v<T, double>) {
      try {
        out->push_back(std::stod(item));
      } catch (...) {
        return false;
      }
    } else {
      out->push_back(item);
    }
  }
  return !out->empty();
}

// A number the user typed, or an error line naming the option.
bool parse_number(const std::string& opt, const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(*out)) {
    std::fprintf(stderr, "ripple-sim calibrate: %s: '%s' is not a number\n", opt.c_str(), text.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = repo_root();
  CLI::App app{"ripple-sim: Ripple's agent in virtual time (SIMULATED results; Documentation/sim.md)"};
  app.require_subcommand(0, 1);
  std::string mix = (root / "tools/workloads/mixes/robotic1.toml").string();
  std::string preset = "plant", policies = "ripple,unmanaged,pause,cap-1/8,cap-1/4,cap-1/2,sigamma,sereno";
  std::string ks = "1.1,1.5,2.0", engines, out;
  std::vector<std::string> sets, variants;
  std::string solo_from, bursts;
  double profile_s = -1;
  int runs = 3;
  double eps = 0.02, prep_s = 20, ripple_prep_s = -1, score_s = 30;
  std::uint64_t seed = 1;
  bool quiet = false, claim = false, responses = false, verbose = false;
  app.add_option("--mix", mix, "ripple-mix TOML (the bench's; default robotic1)");
  app.add_option("--preset", preset, "platform preset: a name under tools/bench/ripple-sim/presets (plant, gb10, "
                                     "h200-offload) or a TOML file (default plant)");
  app.add_option("--policies", policies, "comma-separated: " + ripple::policy::policy_names());
  app.add_option("--k", ks, "deadline factors, comma-separated (default 1.1,1.5,2.0)");
  app.add_option("--runs", runs, "runs per point, pooled (default 3)")->check(CLI::Range(1, 1000));
  app.add_option("--eps", eps, "per-task DMR limit (default 0.02)");
  app.add_option("--prep-s", prep_s, "preparation window, virtual s (default 20)");
  app.add_option("--ripple-prep-s", ripple_prep_s, "ripple's preparation window (default --prep-s)");
  app.add_option("--score-s", score_s, "scored window, virtual s (default 30)");
  app.add_option("--seed", seed, "random seed: the same seed gives the same results (default 1)");
  app.add_option("--engines", engines, "engines of the preset to run, comma-separated (default: its `engines`)");
  app.add_option("--agent-set", sets, "SECTION.KEY=VALUE on top of the preset ([agent] admission keys, [pricing] "
                                      "keys, [bursts] keys), e.g. pricing.margin_clip=true; repeatable");
  app.add_option("--bursts", bursts, "EVERY_S,BURST_S[,FACTOR]: clustered host noise, the preset's [bursts] "
                                     "(mean quiet gap and mean burst length, s, exponential; a job released in a "
                                     "burst has FACTOR x its solo work); 0,0: off");
  app.add_option("--variant", variants, "POLICY+TAG:SECTION.KEY=VALUE: a named variant of a policy with a setting "
                                        "(ripple-bench's), e.g. ripple+clip:pricing.margin_clip=true; repeatable");
  app.add_option("--solo-from", solo_from, "a ripple-bench results.json: each task's solo model from its co-run "
                                           "profile (p50, p99), to replay that run's tasks");
  app.add_option("--profile-s", profile_s, "co-run profile length, virtual s (default: the preset's profile_s)");
  app.add_option("--out", out, "write results.json and table.md here");
  app.add_flag("--responses", responses, "keep every scored job's response in results.json (_jobs)");
  std::string trace_dir;
  app.add_option("--trace", trace_dir, "write each run's admission trace as DIR/trace-POLICY-kK-runR.jsonl "
                                       "(agent.trace_file's format; tools/bench/ripple-bench/trace_report.py reads it)");
  app.add_flag("--check-claim", claim, "exit 1 unless, at every k, ripple meets eps and unmanaged does not");
  app.add_flag("-q,--quiet", quiet, "no progress lines");
  app.add_flag("-v,--verbose", verbose, "a line per run");
  CLI::App* cal = app.add_subcommand(
      "calibrate", "measure this machine (ripple-bench with pace-R at several byte rates) and write a platform preset");
  CalibrateOptions co;
  std::string c_rates, c_score = "30", c_prep = "3", c_profile = "20", c_base, c_mix;
  co.name = "calibrated";
  cal->add_option("--backend", co.backend, "gpu (ripple-llm under ripple-run) or plant (the emulated plant, a TEST "
                                           "DOUBLE: CI's traffic source) (default gpu)");
  cal->add_option("--mix", c_mix, "ripple-mix TOML (default robotic1-1t)");
  cal->add_option("--rates", c_rates, "engine byte rates to measure at, GB/s, comma-separated (default gpu "
                                      "10,20,35,50,70; plant 0.2,0.4,0.6)");
  cal->add_option("--score-s", c_score, "scored window per rate, s (default 30)");
  cal->add_option("--prep-s", c_prep, "settling before each window, s (default 3)");
  cal->add_option("--profile-s", c_profile, "co-run profile (engines idle), s (default 20)");
  cal->add_option("--base-preset", c_base, "preset whose platform, delays, agent and engine sections are kept "
                                           "(default gpu: h200-offload; plant: plant)");
  cal->add_option("--name", co.name, "the new preset's name (default calibrated)");
  cal->add_option("--out", co.out, "the preset TOML to write (required)");
  cal->add_option("--work", co.work, "ripple-bench's output folder, kept (default OUT.d)");
  cal->add_option("--from", co.from, "fit an earlier calibration's bench folder (results.json, responses.csv); run nothing");
  cal->add_option("--build-dir", co.build_dir, "ripple-bench --build-dir (default: its own)");
  cal->add_option("--bench-arg", co.bench_args, "one more ripple-bench argument, repeatable (e.g. --bench-arg=--no-pin)");
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + "\n"; });
  CLI11_PARSE(app, argc, argv);
  if (cal->parsed()) {
    const bool plant = co.backend == "plant";
    if (c_rates.empty()) c_rates = plant ? "0.2,0.4,0.6" : "10,20,35,50,70";
    std::stringstream rs(c_rates);
    std::string item;
    while (std::getline(rs, item, ',')) {
      double r = 0;
      if (!parse_number("--rates", item, &r)) return 2;
      co.rates.push_back(r);
    }
    if (!parse_number("--score-s", c_score, &co.score_s) || !parse_number("--prep-s", c_prep, &co.prep_s) ||
        !parse_number("--profile-s", c_profile, &co.profile_s))
      return 2;
    co.mix = c_mix.empty() ? (root / "tools/workloads/mixes/robotic1-1t.toml").string() : c_mix;
    if (c_base.empty()) c_base = plant ? "plant" : "h200-offload";
    co.base_preset = c_base.find('/') == std::string::npos && c_base.find(".toml") == std::string::npos
                         ? (root / "tools/bench/ripple-sim/presets" / (c_base + ".toml")).string()
                         : c_base;
    if (co.work.empty() && co.from.empty() && !co.out.empty()) co.work = co.out + ".d";
    co.repo_root = root.string();
    co.command = "ripple-sim";
    for (int i = 1; i < argc; ++i) co.command += std::string(" ") + argv[i];
    if (ripple::Status s = run_calibrate(co); !s) {
      std::fprintf(stderr, "ripple-sim calibrate: %s\n", s.error().message.c_str());
      return 2;
    }
    return 0;
  }

  SweepOptions o;
  auto p = load_preset(preset, (root / "tools/bench/ripple-sim/presets").string());
  if (!p) {
    std::fprintf(stderr, "ripple-sim: %s\n", p.error().message.c_str());
    return 2;
  }
  o.preset = std::move(*p);
  for (const auto& s : sets)
    if (auto st = apply_setting(o.preset, s); !st) {
      std::fprintf(stderr, "ripple-sim: --agent-set: %s\n", st.error().message.c_str());
      return 2;
    }
  if (!bursts.empty()) {
    std::vector<std::string> f;
    parse_list(bursts, &f);
    if (f.size() < 2 || f.size() > 3) {
      std::fprintf(stderr, "ripple-sim: --bursts: '%s' is not EVERY_S,BURST_S[,FACTOR]\n", bursts.c_str());
      return 2;
    }
    const char* keys[] = {"every_s", "burst_s", "factor"};
    for (std::size_t i = 0; i < f.size(); ++i)
      if (auto st = apply_setting(o.preset, fmt::format("bursts.{}={}", keys[i], f[i])); !st) {
        std::fprintf(stderr, "ripple-sim: --bursts: %s\n", st.error().message.c_str());
        return 2;
      }
  }
  if (!solo_from.empty()) {
    std::ifstream in(solo_from);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "ripple-sim: --solo-from: cannot read %s\n", solo_from.c_str());
      return 2;
    }
    if (auto r = apply_bench_profile(o.preset, ss.str(), solo_from); !r) {
      std::fprintf(stderr, "ripple-sim: --solo-from: %s\n", r.error().message.c_str());
      return 2;
    }
  }
  if (profile_s > 0) o.preset.profile_s = profile_s;
  for (const auto& v : variants) {
    const auto colon = v.find(':');
    if (colon == std::string::npos || v.find('+') == std::string::npos || v.find('+') > colon) {
      std::fprintf(stderr, "ripple-sim: --variant: '%s' is not POLICY+TAG:SECTION.KEY=VALUE\n", v.c_str());
      return 2;
    }
    const std::string name = v.substr(0, colon);
    if (v.compare(colon + 1, 7, "bursts.") == 0) {
      std::fprintf(stderr, "ripple-sim: --variant: '%s': the host's bursts are the same for every policy (--bursts)\n",
                   v.c_str());
      return 2;
    }
    Preset probe = o.preset;
    if (auto st = apply_setting(probe, v.substr(colon + 1)); !st) {
      std::fprintf(stderr, "ripple-sim: --variant: %s\n", st.error().message.c_str());
      return 2;
    }
    o.variants[name].push_back(v.substr(colon + 1));
  }
  if (!parse_list(policies, &o.policies) || !parse_list(ks, &o.ks) ||
      (!engines.empty() && !parse_list(engines, &o.engines))) {
    std::fprintf(stderr, "ripple-sim: --policies, --k and --engines are comma-separated lists\n");
    return 2;
  }
  for (const auto& pol : o.policies)
    if (auto r = ripple::policy::make_policy(pol.substr(0, pol.find('+'))); !r) {
      std::fprintf(stderr, "ripple-sim: --policies: %s\n", r.error().message.c_str());
      return 2;
    }
  o.mix_path = mix;
  o.runs = runs;
  o.eps = eps;
  o.prep_s = prep_s;
  o.ripple_prep_s = ripple_prep_s;
  o.score_s = score_s;
  o.seed = seed;
  o.keep_responses = responses;
  if (!trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(trace_dir, ec);
    if (ec) {
      std::fprintf(stderr, "ripple-sim: --trace: cannot create '%s': %s\n", trace_dir.c_str(), ec.message().c_str());
      return 2;
    }
    o.trace_dir = trace_dir;
  }
  std::string cmd = "ripple-sim";
  for (int i = 1; i < argc; ++i) cmd += std::string(" ") + argv[i];
  o.command = cmd;
  const auto t_start = std::chrono::steady_clock::now();
  auto last = t_start;
  if (!quiet) {
    o.progress = [&](int done, int total, const std::string& line) {
      const auto now = std::chrono::steady_clock::now();
      const double el = std::chrono::duration<double>(now - t_start).count();
      if (!verbose && done != total && std::chrono::duration<double>(now - last).count() < 1.0) return;
      last = now;
      std::fprintf(stderr, "ripple-sim: [%d/%d, %.1f s, ~%.0f s left] %s\n", done, total, el,
                   done ? el * (total - done) / done : 0.0, line.c_str());
    };
  }
  auto r = sweep(o);
  if (!r) {
    std::fprintf(stderr, "ripple-sim: %s\n", r.error().message.c_str());
    return 2;
  }
  const std::string table = markdown_table(r->summary);
  std::printf("%s\n", table.c_str());
  if (!quiet)
    std::fprintf(stderr, "ripple-sim: SIMULATED %.0f virtual s in %.2f s CPU (%.1f virtual s per CPU s, %llu events)%s\n",
                 r->virtual_s, r->cpu_s, r->cpu_s > 0 ? r->virtual_s / r->cpu_s : 0.0,
                 static_cast<unsigned long long>(r->events),
                 r->protocol_errors ? fmt::format("; {} protocol errors", r->protocol_errors).c_str() : "");
  if (!out.empty()) {
    std::error_code ec;
    fs::create_directories(out, ec);
    std::ofstream(fs::path(out) / "results.json") << r->summary.dump(1) << "\n";
    std::ofstream(fs::path(out) / "table.md") << table;
    if (!quiet) std::fprintf(stderr, "ripple-sim: wrote %s/results.json, table.md\n", out.c_str());
  }
  if (r->protocol_errors) return 3;
  if (claim) {
    std::vector<std::string> lines;
    const bool ok = check_claim(r->summary, &lines);
    for (const auto& l : lines) std::printf("%s\n", l.c_str());
    return ok ? 0 : 1;
  }
  return 0;
}
