// A line-for-line port of tools/bench/ripple-bench/benchlib/report.py markdown_table and
// check_claim, so a simulated sweep prints the table a bench run prints.
// tests/unit/sim_runner_test.cc (SimPlantValidation) pins the format; tools/bench/ripple-sim/render.py renders the
// same results.json with the bench's own Python code.
#include "tools/bench/ripple-sim/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace ripple::sim {

using json = nlohmann::ordered_json;

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

double d(const json& v) { return v.is_number() ? v.get<double>() : kNan; }
std::string pct(double x) { return std::isnan(x) ? "n/a" : fmt::format("{:.2f}", 100 * x); }
std::string g(double x) { return fmt::format("{:g}", x); }

// report.budget_causes_table: the budget wait by cause and by binding task, the causes and
// tasks some point spent >= 0.05 % of its scored time in (ripple-bench's rendering, byte for byte).
std::vector<std::string> budget_causes_table(const json& points) {
  constexpr double kMin = 0.0005;  // report.BUDGET_CAUSES_MIN
  const auto shown = [&](const std::string& prefix) {
    std::set<std::string> out;
    for (const auto& p : points)
      for (const auto& [k, v] : p["gaps"].items())
        if (k.rfind(prefix, 0) == 0 && v.is_number() && !std::isnan(v.get<double>()) && v.get<double>() >= kMin)
          out.insert(k.substr(prefix.size()));
    return out;
  };
  const std::set<std::string> causes = shown("budget:"), tasks = shown("budget@");
  if (causes.empty() && tasks.empty()) return {};
  std::vector<std::string> cols;
  std::string head = "| policy | k | ";
  bool first = true;
  for (const auto& c : causes) {
    cols.push_back("budget:" + c);
    head += (first ? "" : " | ") + c;
    first = false;
  }
  for (const auto& t : tasks) {
    cols.push_back("budget@" + t);
    head += (first ? "" : " | ") + ("B(t) bound by " + t);
    first = false;
  }
  std::vector<std::string> out = {
      "",
      "The LLM's budget wait by the reason the agent gave (% of the scored time; the parts sum to the budget "
      "column): budget = B(t) below the next unit, crossing = a release the crossing bound forbids crossing, "
      "link = held for the other engine's host-byte grant, release = granted ahead, held for the CPU release it "
      "was admitted against (Documentation/agent.md, `ripplectl explain`). "
      "\"B(t) bound by TASK\": every engine's wait on B(t) while that task's job bound it (the VLM's too).",
      "", head + " |", "|---|---|"};
  for (std::size_t i = 0; i < cols.size(); ++i) out.back() += "---|";
  for (const auto& p : points) {
    bool any = false;
    for (const auto& [k, v] : p["gaps"].items()) any = any || k.rfind("budget:", 0) == 0 || k.rfind("budget@", 0) == 0;
    if (!any) continue;
    std::string l = fmt::format("| {} | {} | ", p["policy"].get<std::string>(), g(d(p["k"])));
    for (std::size_t i = 0; i < cols.size(); ++i)
      l += (i ? " | " : "") + pct(p["gaps"].contains(cols[i]) ? d(p["gaps"][cols[i]]) : 0.0);
    out.push_back(l + " |");
  }
  return out;
}
std::string row_name(const std::string& pol) { return pol.rfind("cap-", 0) == 0 ? "cap-x" : pol; }

std::vector<double> ks_of(const json& s) {
  std::vector<double> ks;
  for (const auto& p : s["points"]) ks.push_back(d(p["k"]));
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

}  // namespace

std::string markdown_table(const json& s) {
  const auto ks = ks_of(s);
  const std::string unit = s["backend"] == "plant" ? "stand-in tokens/s" : "LLM tokens/s";
  std::vector<std::string> out;
  out.push_back(fmt::format("### {}: {} / worst-task DMR (%) by deadline factor k", s["mix"].get<std::string>(), unit));
  out.push_back("");
  out.push_back(fmt::format("_{}_", s["note"].get<std::string>()));
  out.push_back("");
  const double prep = d(s["prep_s"]), rprep = s.contains("ripple_prep_s") ? d(s["ripple_prep_s"]) : prep;
  out.push_back(fmt::format("eps = {} %; {} run(s) per point, {} s preparation", g(100 * d(s["eps"])),
                            s["runs"].get<int>(), g(prep)) +
                (rprep != prep ? fmt::format(" ({} s for ripple)", g(rprep)) : "") + " + " +
                fmt::format("{} s scored; ✗ = a CPU task above eps or a VLM deadline missed.", g(d(s["score_s"]))));
  out.push_back("");
  std::string head = "| policy | ", sep = "|---|";
  for (std::size_t i = 0; i < ks.size(); ++i) {
    head += (i ? " | " : "") + fmt::format("k = {}", g(ks[i]));
    sep += "---|";
  }
  out.push_back(head + " |");
  out.push_back(sep);
  // Rows in order of first appearance; cap-* levels fold into cap-x (Table 7's rule).
  std::vector<std::string> rows;
  std::map<std::string, std::map<double, const json*>> cells;
  auto key = [](const json& q) {
    const bool f = q["feasible"].get<bool>();
    return std::make_pair(f, f ? d(q["llm_tok_s"]) : -d(q["worst_dmr"]));
  };
  for (const auto& p : s["points"]) {
    const std::string r = row_name(p["policy"].get<std::string>());
    if (!cells.count(r)) rows.push_back(r);
    auto& row = cells[r];
    const double k = d(p["k"]);
    if (!row.count(k) || key(p) > key(*row[k])) row[k] = &p;
  }
  for (const auto& r : rows) {
    std::string line = fmt::format("| {} | ", r);
    for (std::size_t i = 0; i < ks.size(); ++i) {
      if (i) line += " | ";
      auto it = cells[r].find(ks[i]);
      if (it == cells[r].end()) continue;
      const json& p = *it->second;
      line += fmt::format("{:.2f} / {}{}{}", d(p["llm_tok_s"]), pct(d(p["worst_dmr"])), p["feasible"].get<bool>() ? "" : " ✗",
                          r == "cap-x" ? fmt::format(" ({})", p["policy"].get<std::string>()) : "");
    }
    out.push_back(line + " |");
  }
  std::string b = "| bound (fluid) | ";
  for (std::size_t i = 0; i < ks.size(); ++i) {
    const std::string kk = g(ks[i]);
    b += (i ? " | " : "") + fmt::format("{:.2f}", s["bound_tok_s"].contains(kk) ? d(s["bound_tok_s"][kk]) : kNan);
  }
  out.push_back(b + " |");
  const json& rs = s["ratios"];
  if (!rs.empty()) {
    auto f = [](const json& x) { return x.is_number() ? fmt::format("{:.2f}", x.get<double>()) : std::string("n/a"); };
    // The policy's tokens/s over the fluid bound at k (report.py's vs_bound); NaN without either.
    auto vs_bound = [&](const std::string& policy, const std::string& k) {
      const double b = s["bound_tok_s"].contains(k) ? d(s["bound_tok_s"][k]) : kNan;
      for (const auto& p : s["points"])
        if (p["policy"].get<std::string>() == policy && g(d(p["k"])) == k && std::isfinite(b) && b > 0)
          return d(p["llm_tok_s"]) / b;
      return kNan;
    };
    auto line = [&](const std::string& who, const std::string& policy,
                    const std::vector<std::pair<std::string, const json*>>& items) {
      std::string l = who + "'s LLM tokens/s as a ratio: ";
      for (std::size_t i = 0; i < items.size(); ++i) {
        const json& v = *items[i].second;
        if (i) l += "; ";
        l += fmt::format("k = {}: {} of unmanaged, ", items[i].first, f(v["vs_unmanaged"]));
        l += v["best_feasible_other"].is_string()
                 ? fmt::format("{} of {} (the best other policy meeting every target)", f(v["vs_best_feasible_other"]),
                               v["best_feasible_other"].get<std::string>())
                 : std::string("no other policy met every target");
        if (const double r = vs_bound(policy, items[i].first); std::isfinite(r))
          l += fmt::format(", {:.2f} of the fluid bound", r);
        if (!v["ripple_feasible"].get<bool>()) l += fmt::format(" ({} itself missed a target)", who);
      }
      return l + ".";
    };
    std::vector<std::pair<std::string, const json*>> main;
    for (const auto& [k, v] : rs.items())
      if (v.contains("ripple_feasible")) main.emplace_back(k, &v);
    if (!main.empty()) {
      out.push_back("");
      out.push_back(line("Ripple", "ripple", main));
    }
    // Each ripple variant's line, by name (report.py sorts them the same way).
    std::set<std::string> names;
    for (const auto& [k, v] : rs.items())
      if (v.contains("variants"))
        for (const auto& [n, _] : v["variants"].items()) names.insert(n);
    for (const std::string& n : names) {
      std::vector<std::pair<std::string, const json*>> items;
      for (const auto& [k, v] : rs.items())
        if (v.contains("variants") && v["variants"].contains(n)) items.emplace_back(k, &v["variants"][n]);
      out.push_back("");
      out.push_back(line(n, n, items));
    }
  }
  out.push_back("");
  out.push_back("Per point: per-task DMR (%), VLM frames late/judged, LLM tokens/s and GB/s, VLM GB/s, the LLM's "
                "share of both engines' granted bytes (%), and the LLM's scored time (Fig. 9): busy, budget wait, "
                "decision, delivery, other gap (%).");
  out.push_back("");
  std::string h2 = "| policy | k | ", s2 = "|---|---|";
  for (std::size_t i = 0; i < s["tasks"].size(); ++i) h2 += (i ? " | " : "") + s["tasks"][i].get<std::string>() + " DMR";
  for (std::size_t i = 0; i < s["tasks"].size() + 10; ++i) s2 += "---|";
  out.push_back(h2 + " | VLM late | tok/s | GB/s | VLM GB/s | LLM share | busy | budget | decision | delivery | other |");
  out.push_back(s2);
  for (const auto& p : s["points"]) {
    std::string l = fmt::format("| {} | {} | ", p["policy"].get<std::string>(), g(d(p["k"])));
    for (std::size_t i = 0; i < s["tasks"].size(); ++i) {
      const json& t = p["tasks"][s["tasks"][i].get<std::string>()];
      l += (i ? " | " : "") + fmt::format("{} ({}/{})", pct(d(t["dmr"])), t["misses"].get<std::uint64_t>(),
                                          t["jobs"].get<std::uint64_t>());
    }
    l += fmt::format(" | {}/{} | {:.2f} | {:.3f} | ", p["vlm_misses"].get<std::uint64_t>(),
                     p["vlm_frames"].get<std::uint64_t>(), d(p["llm_tok_s"]), d(p["llm_gbps"]));
    l += fmt::format("{:.3f} | {} | ", p.contains("vlm_gbps") ? d(p["vlm_gbps"]) : kNan,
                     pct(p.contains("llm_byte_share") ? d(p["llm_byte_share"]) : kNan));
    int i = 0;
    for (const char* c : {"busy", "budget", "decision", "delivery", "other"})
      l += (i++ ? " | " : "") + pct(p["gaps"].contains(c) ? d(p["gaps"][c]) : kNan);
    out.push_back(l + " |");
  }
  for (std::string& l : budget_causes_table(s["points"])) out.push_back(std::move(l));
  out.push_back("");
  std::string dl = "Deadlines (ms, k x co-run p99 with engines idle): ";
  bool first = true;
  const std::string pol0 = s["points"].empty() ? "" : s["points"][0]["policy"].get<std::string>();
  for (const auto& p : s["points"]) {
    if (p["policy"] != pol0) continue;
    dl += (first ? "" : "; ") + fmt::format("k={}: ", g(d(p["k"])));
    first = false;
    bool f2 = true;
    for (const auto& [t, v] : p["deadlines_ms"].items()) {
      dl += (f2 ? "" : ", ") + fmt::format("{} {:.1f}", t, d(v));
      f2 = false;
    }
  }
  out.push_back(dl);
  std::string pr = "Co-run profile p99 (ms): ";
  bool f3 = true;
  for (const auto& [t, v] : s["profile"].items()) {
    pr += (f3 ? "" : ", ") + fmt::format("{} {:.2f}", t, d(v["p99_ms"]));
    f3 = false;
  }
  out.push_back(pr);
  out.push_back("");
  std::string text;
  for (std::size_t i = 0; i < out.size(); ++i) text += (i ? "\n" : "") + out[i];
  return text;
}

bool check_claim(const json& s, std::vector<std::string>* lines) {
  bool ok = true;
  const double eps = d(s["eps"]);
  for (double k : ks_of(s)) {
    const json *r = nullptr, *u = nullptr;
    for (const auto& p : s["points"]) {
      if (d(p["k"]) != k) continue;
      if (p["policy"] == "ripple") r = &p;
      if (p["policy"] == "unmanaged") u = &p;
    }
    if (r == nullptr || u == nullptr) {
      lines->push_back(fmt::format("k={}: ripple or unmanaged missing", g(k)));
      return false;
    }
    const double rw = d((*r)["worst_dmr"]), uw = d((*u)["worst_dmr"]);
    const bool r_ok = !std::isnan(rw) && rw <= eps, u_ok = !std::isnan(uw) && uw > eps;
    ok = ok && r_ok && u_ok;
    lines->push_back(fmt::format("{}: k={}: ripple worst DMR {} % {} eps {} %, unmanaged {} % {} eps; VLM misses ripple "
                                 "{}, unmanaged {}",
                                 r_ok && u_ok ? "ok" : "FAIL", g(k), pct(rw), r_ok ? "<=" : ">", g(100 * eps), pct(uw),
                                 u_ok ? ">" : "<=", (*r)["vlm_misses"].get<std::uint64_t>(),
                                 (*u)["vlm_misses"].get<std::uint64_t>()));
  }
  return ok;
}

}  // namespace ripple::sim
