#include "tools/bench/ripple-sim/sweep.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace ripple::sim {

using json = nlohmann::ordered_json;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::pair<double, double> mean_sd(const std::vector<double>& xs0) {
  std::vector<double> xs;
  for (double x : xs0)
    if (!std::isnan(x)) xs.push_back(x);
  if (xs.empty()) return {kNan, kNan};
  double m = 0;
  for (double x : xs) m += x;
  m /= static_cast<double>(xs.size());
  if (xs.size() < 2) return {m, 0.0};
  double v = 0;
  for (double x : xs) v += (x - m) * (x - m);
  return {m, std::sqrt(v / static_cast<double>(xs.size() - 1))};
}

bool is_ripple(const std::string& p) { return p == "ripple" || p.rfind("ripple+", 0) == 0; }

// metrics.gap_breakdown from the agent's counters at the window's start and end.
std::map<std::string, double> gaps(const EngineResult& e, double scored) {
  const auto& a = e.s0;
  const auto& b = e.s1;
  const double busy = std::min(scored, static_cast<double>(b.busy - a.busy) / 1e9);
  std::map<std::string, double> w = {{"budget", static_cast<double>(b.wait_budget - a.wait_budget) / 1e9},
                                     {"decision", static_cast<double>(b.wait_decision - a.wait_decision) / 1e9},
                                     {"delivery", static_cast<double>(b.wait_delivery - a.wait_delivery) / 1e9}};
  const double gap = std::max(0.0, scored - busy);
  double tot = 0;
  for (auto& [k, v] : w) tot += v;
  const double scale = tot > gap && gap > 0 ? gap / tot : 1.0;
  for (auto& [k, v] : w) v *= scale;
  double sum = 0;
  for (auto& [k, v] : w) sum += v;
  std::map<std::string, double> out = {{"busy", busy / scored}, {"gap", gap / scored}};
  for (auto& [k, v] : w) out[k] = v / scored;
  out["other"] = std::max(0.0, gap - sum) / scored;
  // The budget wait by the reason the agent gave, scaled as it is (metrics.gap_breakdown).
  for (std::size_t c = 0; c < admission::kWaitCauses; ++c)
    out[fmt::format("budget:{}", admission::to_string(static_cast<admission::WaitCause>(c)))] =
        static_cast<double>(b.wait_by_cause[c] - a.wait_by_cause[c]) / 1e9 * scale / scored;
  return out;
}

const EngineResult* find_kind(const RunResult& r, admission::EngineKind kind) {
  for (const auto& e : r.engines)
    if (e.kind == kind) return &e;
  return nullptr;
}

json ratios(const json& points) {
  json out = json::object();
  std::vector<double> ks;
  for (const auto& p : points) ks.push_back(p["k"].get<double>());
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  for (double k : ks) {
    std::map<std::string, const json*> at;
    std::vector<std::string> order;
    for (const auto& p : points)
      if (p["k"].get<double>() == k) {
        at[p["policy"].get<std::string>()] = &p;
        order.push_back(p["policy"].get<std::string>());
      }
    std::vector<std::string> mine;
    for (auto& n : order)
      if (is_ripple(n)) mine.push_back(n);
    if (mine.empty() || mine.size() == at.size()) continue;
    const json* u = at.count("unmanaged") ? at["unmanaged"] : nullptr;
    const json* best = nullptr;
    for (auto& n : order) {
      const json* p = at[n];
      if (is_ripple(n) || !(*p)["feasible"].get<bool>()) continue;
      if (best == nullptr || (*p)["llm_tok_s"].get<double>() > (*best)["llm_tok_s"].get<double>()) best = p;
    }
    auto entry = [&](const json& r) {
      auto over = [&](const json* q) -> json {
        if (q == nullptr || !(*q)["llm_tok_s"].is_number() || (*q)["llm_tok_s"].get<double>() <= 0) return nullptr;
        return r["llm_tok_s"].get<double>() / (*q)["llm_tok_s"].get<double>();
      };
      return json{{"ripple_feasible", r["feasible"]},
                  {"vs_unmanaged", over(u)},
                  {"best_feasible_other", best ? json((*best)["policy"]) : json(nullptr)},
                  {"vs_best_feasible_other", over(best)}};
    };
    json e = at.count("ripple") ? entry(*at["ripple"]) : json::object();
    json variants = json::object();
    for (auto& n : mine)
      if (n != "ripple") variants[n] = entry(*at[n]);
    if (!variants.empty()) e["variants"] = variants;
    out[fmt::format("{:g}", k)] = e;
  }
  return out;
}

}  // namespace

double fluid_bound_gbps(const std::vector<FluidTask>& tasks, double peak_gbps, double step_ms) {
  if (tasks.empty()) return peak_gbps;
  Nanos lo = std::numeric_limits<Nanos>::max(), hi = std::numeric_limits<Nanos>::min();
  for (const auto& t : tasks)
    for (auto [s, c] : t.jobs) {
      lo = std::min(lo, s);
      hi = std::max(hi, c);
    }
  if (hi <= lo) return peak_gbps;
  const Nanos step = static_cast<Nanos>(step_ms * 1e6);
  const std::size_t nbins = static_cast<std::size_t>((hi - lo) / step + 1);
  std::vector<double> cap(nbins, peak_gbps);
  for (const auto& t : tasks) {
    std::vector<double> resp;
    for (auto [s, c] : t.jobs) resp.push_back(static_cast<double>(c - s) / 1e6);
    const double q = percentile(resp, 100.0 * (1.0 - t.eps));
    const double kappa = t.kappa_ms_per_gb / 1e3;
    if (kappa <= 0) continue;
    double r = t.deadline_ms > 0 ? std::max(0.0, (1.0 - q / t.deadline_ms) / kappa) : 0.0;
    r = std::min(r, peak_gbps);
    const double stretch = 1.0 / std::max(1e-9, 1.0 - kappa * r);
    for (auto [s, c] : t.jobs) {
      const Nanos end = s + static_cast<Nanos>(static_cast<double>(c - s) * stretch);
      const std::size_t b1 = std::min<std::size_t>(nbins, static_cast<std::size_t>((end - lo) / step + 1));
      for (std::size_t b = static_cast<std::size_t>((s - lo) / step); b < b1; ++b) cap[b] = std::min(cap[b], r);
    }
  }
  double sum = 0;
  for (double c : cap) sum += c;
  return sum / static_cast<double>(nbins);
}

Result<SweepResult> sweep(const SweepOptions& o) {
  const Preset& pr = o.preset;
  auto mix = load_mix(o.mix_path, pr.period_scale);
  if (!mix) return mix.error();
  auto models = tasks_for(pr, *mix);
  if (!models) return models.error();
  std::vector<EngineModel> engines;
  for (const std::string& n : o.engines.empty() ? pr.default_engines : o.engines) {
    auto it = pr.engines.find(n);
    if (it == pr.engines.end()) return make_error("--engines: no [engine.{}] in preset {}", n, pr.name);
    engines.push_back(it->second);
  }
  if (o.runs < 1 || !(o.score_s > 0) || o.prep_s < 0) return make_error("--runs >= 1, --score-s > 0, --prep-s >= 0");
  if (!(o.eps > 0 && o.eps < 1)) return make_error("--eps must be in (0, 1)");
  const double ripple_prep = o.ripple_prep_s >= 0 ? o.ripple_prep_s : o.prep_s;

  // The co-run profile (engines idle): each task's solo draws on its own release lattice,
  // on the same noisy host (one burst process for all tasks, its own stream).
  BurstProcess host(pr.bursts, Rng::stream(o.seed ^ 0x50524f46ULL, 0x42555253ULL));
  std::vector<std::vector<double>> prof(models->size());
  std::vector<std::vector<std::pair<Nanos, Nanos>>> prof_jobs(models->size());
  json profile = json::object();
  for (std::size_t i = 0; i < models->size(); ++i) {
    const TaskModel& t = (*models)[i];
    Rng rng = Rng::stream(o.seed ^ 0x50524f46ULL, i);
    const int n = std::max(10, static_cast<int>(pr.profile_s * 1e9 / static_cast<double>(t.period)));
    prof[i] = profile_jobs(t, n, rng, &host);
    Nanos free_at = 0;
    for (int j = 0; j < n; ++j) {
      const Nanos rel = static_cast<Nanos>(j) * t.period;
      const Nanos s = std::max(rel, free_at);
      free_at = s + static_cast<Nanos>(prof[i][static_cast<std::size_t>(j)] * 1e6);
      prof_jobs[i].emplace_back(s, free_at);
    }
    profile[t.name] = {{"jobs", n}, {"p50_ms", percentile(prof[i], 50)}, {"p99_ms", percentile(prof[i], 99)}};
  }
  auto deadline_ms = [&](std::size_t i, double k) {
    const TaskModel& t = (*models)[i];
    if (t.fixed_deadline > 0) return static_cast<double>(t.fixed_deadline) / 1e6;
    const auto it = pr.tasks.find(t.name);
    const double p99 = it != pr.tasks.end() && it->second.profile_p99_ms ? *it->second.profile_p99_ms
                                                                          : percentile(prof[i], 99);
    return std::min(k * p99, static_cast<double>(t.period) / 1e6);
  };

  SweepResult out;
  const std::clock_t c0 = std::clock();
  json points = json::array();
  const int total = static_cast<int>(o.ks.size() * o.policies.size()) * o.runs;
  int done = 0;
  for (double k : o.ks) {
    for (const std::string& pol : o.policies) {
      std::vector<RunResult> runs;
      json dl = json::object();
      RunConfig rc;
      rc.platform = pr.platform;
      rc.engines = engines;
      rc.policy = pol.substr(0, pol.find('+'));
      rc.params = pr.params;
      rc.options = pr.options;
      if (auto v = o.variants.find(pol); v != o.variants.end()) {
        Preset vp = pr;
        for (const std::string& kv : v->second) {
          if (kv.rfind("bursts.", 0) == 0)
            return make_error("--variant {}: {}: the host's bursts are the same for every policy (--bursts)", pol, kv);
          if (Status st = apply_setting(vp, kv); !st) return make_error("--variant {}: {}", pol, st.error().message);
        }
        rc.params = vp.params;
        rc.options = vp.options;
      } else if (pol.find('+') != std::string::npos) {
        return make_error("--policies: {} is a variant, but no --variant {}:SECTION.KEY=VALUE defines it", pol, pol);
      }
      rc.delays = pr.delays;
      rc.bursts = pr.bursts;
      rc.prep = static_cast<Nanos>((is_ripple(pol) ? ripple_prep : o.prep_s) * 1e9);
      rc.score = static_cast<Nanos>(o.score_s * 1e9);
      rc.keep_responses = o.keep_responses;
      for (std::size_t i = 0; i < models->size(); ++i) {
        RunTask t;
        t.model = (*models)[i];
        const double d = deadline_ms(i, k);
        dl[t.model.name] = d;
        t.deadline = static_cast<Nanos>(std::llround(d * 1e6));
        t.miss_tolerance = o.eps;
        for (double ms : prof[i]) t.solo_profile.push_back(static_cast<Nanos>(std::llround(ms * 1e6)));
        const auto it = pr.tasks.find(t.model.name);
        const TaskParams& tp = it != pr.tasks.end() ? it->second : pr.task_default;
        if (tp.prior_slope_ms_per_gb) t.prior_slope_ms_per_gb = tp.prior_slope_ms_per_gb;
        else if (pr.prior_slope_factor > 0 && t.model.kappa_ms_per_gb > 0)
          t.prior_slope_ms_per_gb = pr.prior_slope_factor * t.model.kappa_ms_per_gb;
        rc.tasks.push_back(std::move(t));
      }
      for (int rep = 0; rep < o.runs; ++rep) {
        // The same seed for every policy at a run index: common random numbers.
        rc.seed = o.seed * 1000003ULL + static_cast<std::uint64_t>(rep);
        if (!o.trace_dir.empty()) rc.trace_path = fmt::format("{}/trace-{}-k{:g}-run{}.jsonl", o.trace_dir, pol, k, rep + 1);
        auto r = run(rc);
        if (!r) return make_error("{} k={:g} run {}: {}", pol, k, rep + 1, r.error().message);
        out.virtual_s += static_cast<double>(rc.prep + rc.score) / 1e9 + 1.0;
        out.events += r->events;
        out.protocol_errors += r->protocol_errors;
        ++done;
        if (o.progress) {
          double worst = 0;
          for (const auto& t : r->tasks) worst = std::max(worst, t.jobs ? double(t.misses) / double(t.jobs) : kNan);
          const EngineResult* llm = find_kind(*r, admission::EngineKind::kBestEffort);
          const EngineResult* vlm = find_kind(*r, admission::EngineKind::kDeadlineBound);
          o.progress(done, total,
                     fmt::format("{} k={:g} run {}: worst DMR {:.1f} %, LLM {:.2f} tok/s, VLM misses {}{}{}", pol, k,
                                 rep + 1, 100 * worst, llm ? double(llm->passes) / r->scored_s : 0.0,
                                 vlm ? vlm->frames_late : 0,
                                 pr.bursts.on() ? fmt::format(", host in bursts {:.0f} %", 100 * r->burst_share)
                                                : std::string(),
                                 r->protocol_errors ? fmt::format(", {} protocol errors ({})", r->protocol_errors,
                                                                  r->first_error)
                                                    : std::string()));
        }
        runs.push_back(std::move(*r));
      }
      // Pool the runs (report.summarize).
      json tasks = json::object();
      double worst = 0;
      for (std::size_t i = 0; i < models->size(); ++i) {
        std::uint64_t jobs = 0, misses = 0;
        std::vector<double> resp;
        for (const auto& r : runs) {
          jobs += r.tasks[i].jobs;
          misses += r.tasks[i].misses;
          resp.insert(resp.end(), r.tasks[i].responses_ms.begin(), r.tasks[i].responses_ms.end());
        }
        const double dmr = jobs ? static_cast<double>(misses) / static_cast<double>(jobs) : kNan;
        worst = std::isnan(dmr) || std::isnan(worst) ? kNan : std::max(worst, dmr);
        tasks[(*models)[i].name] = {{"jobs", jobs}, {"misses", misses}, {"dmr", num(dmr)},
                                    {"p99_ms", resp.empty() ? json(nullptr) : num(percentile(resp, 99))}};
      }
      std::uint64_t vlm_misses = 0, vlm_frames = 0;
      std::vector<double> tok, gbps, vlm_gbps;
      double llm_bytes = 0, vlm_bytes = 0;  // over the scored windows, for the LLM's share
      std::map<std::string, std::vector<double>> gp;
      json grants = {{"grants", 0}, {"successors", 0}, {"stale", 0}, {"late_ends", 0}, {"queued", 0}};
      json vlm_grants = nullptr;  // the VLM's grants and late ends, where there is a VLM
      for (const auto& r : runs) {
        // The VLM's granted bytes a second and both engines' bytes, as ripple-bench reports
        // them (report.summarize: vlm_gbps, llm_byte_share).
        const EngineResult* v = find_kind(r, admission::EngineKind::kDeadlineBound);
        const double vb = v ? static_cast<double>(v->s1.bytes - v->s0.bytes) : 0.0;
        vlm_gbps.push_back(vb / 1e9 / r.scored_s);
        vlm_bytes += vb;
        if (v) {
          vlm_misses += v->frames_late;
          vlm_frames += v->frames_judged;
          if (vlm_grants.is_null()) vlm_grants = {{"grants", 0}, {"late_ends", 0}};
          vlm_grants["grants"] = vlm_grants["grants"].get<std::uint64_t>() + (v->s1.grants - v->s0.grants);
          vlm_grants["late_ends"] = vlm_grants["late_ends"].get<std::uint64_t>() + (v->s1.late_ends - v->s0.late_ends);
        }
        const EngineResult* l = find_kind(r, admission::EngineKind::kBestEffort);
        if (l == nullptr) continue;
        tok.push_back(static_cast<double>(l->passes) / r.scored_s);
        gbps.push_back(static_cast<double>(l->s1.bytes - l->s0.bytes) / 1e9 / r.scored_s);
        llm_bytes += static_cast<double>(l->s1.bytes - l->s0.bytes);
        for (auto& [key, v] : gaps(*l, r.scored_s)) gp[key].push_back(v);
        for (const auto& t : r.tasks)  // ripple-bench's budget@TASK (metrics.budget_wait_by_task)
          gp["budget@" + t.name].push_back(static_cast<double>(t.budget_wait1 - t.budget_wait0) / 1e9 / r.scored_s);
        grants["grants"] = grants["grants"].get<std::uint64_t>() + (l->s1.grants - l->s0.grants);
        grants["successors"] = grants["successors"].get<std::uint64_t>() + (l->s1.successors - l->s0.successors);
        grants["stale"] = grants["stale"].get<std::uint64_t>() + (l->s1.stale - l->s0.stale);
        grants["late_ends"] = grants["late_ends"].get<std::uint64_t>() + (l->s1.late_ends - l->s0.late_ends);
        grants["queued"] = grants["queued"].get<std::uint64_t>() + (l->s1.queued - l->s0.queued);
      }
      const auto [tok_m, tok_sd] = mean_sd(tok);
      json g = json::object();
      for (const auto& [key, v] : gp) g[key] = num(mean_sd(v).first);  // budget:CAUSE too
      const bool feasible = !std::isnan(worst) && worst <= o.eps && vlm_misses == 0;
      json pt = {{"policy", pol}, {"k", k}, {"runs", o.runs}, {"deadlines_ms", dl}, {"tasks", tasks},
                 {"worst_dmr", num(worst)}, {"vlm_misses", vlm_misses}, {"vlm_frames", vlm_frames},
                 {"llm_tok_s", num(tok_m)}, {"llm_tok_s_sd", num(tok_sd)}, {"llm_tok_s_granted", nullptr},
                 {"llm_gbps", num(mean_sd(gbps).first)}, {"vlm_gbps", num(mean_sd(vlm_gbps).first)},
                 {"llm_byte_share", num(llm_bytes + vlm_bytes > 0 ? llm_bytes / (llm_bytes + vlm_bytes) : kNan)},
                 {"llm_grants", grants}, {"gaps", g},
                 {"feasible", feasible}, {"timelines", json::array()}};
      if (!vlm_grants.is_null()) pt["vlm_grants"] = vlm_grants;
      if (pr.bursts.on()) {  // only then: results without bursts stay as they were
        json share = json::array();
        for (const auto& r : runs) share.push_back(r.burst_share);
        pt["burst_share"] = share;
      }
      if (o.keep_responses) {
        json jobs = json::array();
        for (const auto& r : runs) {
          json per = json::object();
          for (const auto& t : r.tasks) {
            json v = json::array();
            for (auto [rel, ms] : t.responses) v.push_back({rel, num(ms)});
            per[t.name] = v;
          }
          jobs.push_back(per);
        }
        pt["_jobs"] = jobs;
      }
      points.push_back(std::move(pt));
    }
  }
  out.cpu_s = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;

  // The fluid bound: the LLM alone at its nominal rate (capped by the platform), less the
  // VLM's average byte rate, in tokens.
  json bound = json::object();
  const EngineModel* llm = nullptr;
  const EngineModel* vlm = nullptr;
  for (const auto& e : engines) {
    if (e.kind == admission::EngineKind::kBestEffort && !llm) llm = &e;
    if (e.kind == admission::EngineKind::kDeadlineBound && !vlm) vlm = &e;
  }
  for (double k : o.ks) {
    if (llm == nullptr) {
      bound[fmt::format("{:g}", k)] = nullptr;
      continue;
    }
    std::vector<FluidTask> ft;
    for (std::size_t i = 0; i < models->size(); ++i)
      ft.push_back({prof_jobs[i], deadline_ms(i, k), (*models)[i].kappa_ms_per_gb, o.eps});
    const double peak = std::min(llm->gbps(), pr.platform.peak_gbps);
    const double g = fluid_bound_gbps(ft, peak);
    const double vg = vlm ? static_cast<double>(vlm->pass_bytes()) / static_cast<double>(vlm->period) : 0.0;
    bound[fmt::format("{:g}", k)] = std::max(0.0, g - vg) / (static_cast<double>(llm->pass_bytes()) / 1e9);
  }

  json periods = json::object();
  json names = json::array();
  for (const auto& t : *models) {
    names.push_back(t.name);
    periods[t.name] = static_cast<double>(t.period) / 1e6;
  }
  std::string eng_desc;
  for (const auto& e : engines)
    eng_desc += fmt::format("{}{} ({}, {} units, {:.3g} GB/pass, {:.3g} GB/s)", eng_desc.empty() ? "" : "; ", e.name,
                            admission::to_string(e.kind), e.pass.size(), static_cast<double>(e.pass_bytes()) / 1e9,
                            e.gbps());
  json& s = out.summary;
  s["backend"] = "sim";
  s["note"] = fmt::format("SIMULATED by ripple-sim (preset {}): the agent's own pricing, admission and policy code "
                          "in virtual time against modelled tasks and engines. Not a measurement.",
                          pr.name);
  s["command"] = o.command;
  s["mix"] = mix->name;
  s["tasks"] = names;
  s["periods_ms"] = periods;
  s["variants"] = json::object();
  for (const auto& [k, v] : o.variants) s["variants"][k] = v;
  s["eps"] = o.eps;
  s["runs"] = o.runs;
  s["prep_s"] = o.prep_s;
  s["ripple_prep_s"] = ripple_prep;
  s["score_s"] = o.score_s;
  s["layout"] = "simulated: every task on its own core; engines " + eng_desc;
  s["profile"] = profile;
  s["bound_tok_s"] = bound;
  s["points"] = points;
  s["ratios"] = ratios(points);
  s["sim"] = {{"preset", pr.name}, {"preset_file", pr.path}, {"seed", o.seed}, {"engines", eng_desc},
              {"cpu_s", out.cpu_s}, {"virtual_s", out.virtual_s}, {"events", out.events},
              {"protocol_errors", out.protocol_errors}};
  if (pr.bursts.on()) {
    json factors = json::object();
    for (const auto& t : *models) factors[t.name] = t.burst_factor;
    Nanos prof_end = 0;
    for (const auto& pj : prof_jobs)
      if (!pj.empty()) prof_end = std::max(prof_end, pj.back().first);
    s["sim"]["bursts"] = {{"every_s", pr.bursts.every_s}, {"burst_s", pr.bursts.burst_s},
                          {"duty", pr.bursts.duty()}, {"factors", factors},
                          {"profile_share", host.share(0, prof_end)}};
  }
  return out;
}

}  // namespace ripple::sim
