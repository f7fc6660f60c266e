// ripple-sim: Ripple's agent (pricing, admission, policies) in virtual time against
// modelled tasks, engines and a platform preset. Documentation/sim.md.
//
//   ripple-sim [--mix FILE] [--preset NAME|FILE] [--policies a,b] [--k 1.1,1.5] [--runs N]
//              [--score-s S] [--prep-s S] [--seed N] [--out DIR] ...
//   ripple-sim calibrate            (not built: Documentation/sim.md says what it would do)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "agent/policy/registry.h"
#include "tools/ripple-sim/report.h"
#include "tools/ripple-sim/sweep.h"

namespace fs = std::filesystem;
using namespace ripple::sim;

namespace {

// The source tree this binary was built from: build/bin/ripple-sim -> ../..; or the
// current directory.
fs::path repo_root() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::exists(p / "tools/ripple-sim/presets")) return p;
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

}  // namespace

int main(int argc, char** argv) {
  const fs::path root = repo_root();
  CLI::App app{"ripple-sim: Ripple's agent in virtual time (SIMULATED results; Documentation/sim.md)"};
  app.require_subcommand(0, 1);
  std::string mix = (root / "tools/workloads/mixes/robotic1.toml").string();
  std::string preset = "plant", policies = "ripple,unmanaged,pause,cap-1/8,cap-1/4,cap-1/2,sigamma,sereno";
  std::string ks = "1.1,1.5,2.0", engines, out;
  std::vector<std::string> sets;
  int runs = 3;
  double eps = 0.02, prep_s = 20, ripple_prep_s = -1, score_s = 30;
  std::uint64_t seed = 1;
  bool quiet = false, claim = false, responses = false, verbose = false;
  app.add_option("--mix", mix, "ripple-mix TOML (the bench's; default robotic1)");
  app.add_option("--preset", preset, "platform preset: a name under tools/ripple-sim/presets (plant, gb10, "
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
                                      "keys), e.g. pricing.margin_clip=true; repeatable");
  app.add_option("--out", out, "write results.json and table.md here");
  app.add_flag("--responses", responses, "keep every scored job's response in results.json (_jobs)");
  app.add_flag("--check-claim", claim, "exit 1 unless, at every k, ripple meets eps and unmanaged does not");
  app.add_flag("-q,--quiet", quiet, "no progress lines");
  app.add_flag("-v,--verbose", verbose, "a line per run");
  CLI::App* cal = app.add_subcommand("calibrate", "measure a machine and write a platform preset (NOT BUILT)");
  CLI11_PARSE(app, argc, argv);
  if (cal->parsed()) {
    std::fprintf(stderr, "ripple-sim calibrate: not built. Documentation/sim.md (\"calibrate\") says what it would "
                         "measure; write a preset by hand from presets/h200-offload.toml meanwhile.\n");
    return 2;
  }

  SweepOptions o;
  auto p = load_preset(preset, (root / "tools/ripple-sim/presets").string());
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
  if (!parse_list(policies, &o.policies) || !parse_list(ks, &o.ks) ||
      (!engines.empty() && !parse_list(engines, &o.engines))) {
    std::fprintf(stderr, "ripple-sim: --policies, --k and --engines are comma-separated lists\n");
    return 2;
  }
  for (const auto& pol : o.policies)
    if (auto r = ripple::policy::make_policy(pol); !r) {
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
