"""ripple-bench's outputs: the summary (pure), results.json / results.csv / responses.csv and
the Table-7-style markdown table; the profiles' notes are profile_notes', the PNG plots
plots' (matplotlib, optional)."""
from __future__ import annotations

import csv
import json
import math
import statistics
import sys
from pathlib import Path

from . import metrics, plots, profile_notes

PLANT_NOTE = ("Backend: the emulated interference plant, a TEST DOUBLE (tests/plant/plant.h): "
              "stand-in engines, plant-mode tasks stretched by kappa x bytes. Not a GPU measurement.")


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return math.nan, math.nan
    return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else 0.0)


def _share(llm: float, vlm: float) -> float:
    """The LLM's share of the two engines' bytes (nan with none, or unknown)."""
    tot = llm + vlm
    return llm / tot if tot > 0 else math.nan


def summarize(b, is_plant: bool, llm_label: str = "ripple-llm") -> dict:
    """Pools the runs of every (policy, k) point. `b` is the Bench (ripple-bench)."""
    o = b.o
    points = []
    responses = []
    for k in o.ks:
        for pol in o.policies:
            runs = [r for r in b.results if r.policy == pol and r.k == k]
            if not runs:
                continue
            pooled = {t.name: metrics.Pooled() for t in b.tasks}
            for r in runs:
                for name, js in r.jobs.items():
                    pooled[name].add(js, r.deadlines_ms[name])
                    responses += [(pol, k, r.rep, name, j.release_ns, j.response_ms, r.deadlines_ms[name]) for j in js]
            worst = metrics.worst_dmr(pooled)
            vlm_misses = sum(r.vlm["deadline_misses"] for r in runs)
            tok, tok_sd = _mean_sd([r.llm_tok_s for r in runs])
            gaps = {}
            for key in ("busy", "gap", "budget", "decision", "delivery", "other"):
                gaps[key] = _mean_sd([r.gaps.get(key, math.nan) for r in runs])[0]
            causes = sorted({key for r in runs for key in r.gaps if key.startswith(("budget:", "budget@"))})
            for key in ("hook_chunk_wait", "hook_boundary_wait", *causes):   # GPU: the interposer's own waits
                vals = [r.gaps[key] for r in runs if key in r.gaps]
                if vals:
                    gaps[key] = _mean_sd(vals)[0]
            points.append({
                "policy": pol, "k": k, "runs": len(runs),
                "deadlines_ms": runs[0].deadlines_ms,
                "tasks": {n: {"jobs": p.jobs, "misses": p.misses, "dmr": p.dmr,
                              "p99_ms": metrics.percentile(p.responses_ms, 99)} for n, p in pooled.items()},
                "worst_dmr": worst,
                "vlm_misses": vlm_misses,
                "vlm_frames": sum(r.vlm["works_done"] for r in runs),
                "llm_tok_s": tok, "llm_tok_s_sd": tok_sd,
                # GPU: tokens/s from the granted bytes (a cross-check of the engine's own count)
                "llm_tok_s_granted": _mean_sd([r.llm.get("tok_s_granted", math.nan) for r in runs])[0],
                "llm_gbps": _mean_sd([r.llm_gbps for r in runs])[0],
                # the VLM's granted bytes per s (GPU: its units' host<->device copies, as recorded)
                # and the LLM's share of both engines' granted bytes, over the scored windows
                "vlm_gbps": _mean_sd([r.vlm["bytes"] / 1e9 / r.score_s for r in runs])[0],
                "llm_byte_share": _share(sum(r.llm["bytes"] for r in runs), sum(r.vlm["bytes"] for r in runs)),
                # the LLM's grants in the scored windows, summed over runs
                "llm_grants": {k: sum(r.llm.get(k, 0) for r in runs) for k in ("grants", "successors", "stale", "late_ends", "queued",
                                                                               "for_release", "link_held", "expired")},
                "gaps": gaps,
                # GPU: the LLM interposer's own counters in the scored windows, summed over
                # the runs that have them (metrics.hook_counters)
                "llm_hook": {c: sum(r.hook.get(c, 0) for r in runs)
                             for c in metrics.HOOK_COUNTERS if any(c in r.hook for r in runs)},
                "feasible": metrics.feasible(worst, o.eps, vlm_misses),
                # per run: the other processes' share of the CPUs beside its scored window (a
                # loaded one measured their preemptions too), and the runs made (--rerun-loaded)
                "other_load": [dict(getattr(r, "other_load", {}), attempts=getattr(r, "attempts", 1)) for r in runs],
                # per run, per core group (tasks, agent, engines; "all" unpinned): the scored
                # window's busy share, stolen share and mean MHz (procs.HostSampler: cpufreq, else cpuinfo)
                "host": [getattr(r, "host", {}) for r in runs],
                # per task, pooled over the runs whose agent counts them: jobs, those no GPU
                # byte was admitted into, those of them that missed, and that share of all jobs
                # (metrics.untouched_share): above eps, those misses alone broke eps
                "untouched": metrics.untouched_share([getattr(r, "untouched", {}) for r in runs]),
                "timelines": [{"run": r.rep, "scored_from_s": r.t0_rel_s, "perturbations_s": r.perturbations,
                               "samples": [{k: v for k, v in row.items() if k != "_ns"} for row in r.timeline]}
                              for r in runs],
                "_jobs": [{n: [(j.release_ns, j.response_ms) for j in js] for n, js in r.jobs.items()} for r in runs],
            })
    bounds = {f"{k:g}": b.bound(k) for k in o.ks}
    notes = bound_notes(points, bounds)
    for k, why in notes.items():
        print(f"ripple-bench: warning: k={k}: the fluid bound {bounds[k]:.2f} is no bound here: {why}", file=sys.stderr)
    return {
        "backend": "plant" if is_plant else "gpu",
        "note": PLANT_NOTE if is_plant else f"Backend: engines under ripple-run on a GPU (LLM: {llm_label}; VLM: ripple-llm).",
        "command": "ripple-bench " + " ".join(sys.argv[1:]),
        "mix": b.mix_name, "tasks": [t.name for t in b.tasks],
        "periods_ms": {t.name: t.period_ms for t in b.tasks},
        "variants": o.variants,
        "eps": o.eps, "runs": o.runs, "policy_runs": o.policy_runs, "order": getattr(o, "order", "interleaved"), "prep_s": o.prep_s, "ripple_prep_s": o.ripple_prep_s, "score_s": o.score_s, "layout": b.layout,
        "profile": profile_notes.summary(b.profile),
        # every profile job (release, start, completion ns): with responses.csv a bound can be
        # recomputed offline (metrics.fluid_bound_gbps, unmanaged_kappas)
        "profile_jobs": {n: [[j.release_ns, j.start_ns, j.completion_ns] for j in js] for n, js in b.profile.items()},
        # the closing co-run profile after the last run (the same shape; {} when skipped) and
        # each task's p99 drift over the sweep: p99 at the end / p99 at the start - 1
        "profile_end": profile_notes.summary(getattr(b, "profile_end", {}) or {}),
        "profile_drift": profile_notes.profile_drift(b.profile, getattr(b, "profile_end", {}) or {}),
        # the other processes' CPU use beside the kept profile (shares of the machine's CPUs),
        # every attempt's, and whether even the kept one was loaded (its deadlines may be loose)
        "profile_load": getattr(b, "profile_load", {}),
        # per core group, the opening and closing profiles' busy share, stolen share and MHz (procs.HostSampler)
        "profile_host": getattr(b, "profile_host", {}),
        "profile_end_host": getattr(b, "profile_end_host", {}),
        "bound_tok_s": bounds,
        # the same bound with each task's kappa as the unmanaged runs at k measured it
        # (metrics.unmanaged_kappas: the policy under test does not set it), and those kappas;
        # on the plant, whose kappa is known, a check of the method
        "bound_measured_tok_s": {f"{k:g}": b.bound_measured(k) for k in o.ks} if hasattr(b, "bound_measured") else {},
        "measured_kappas_ms_per_gb": {f"{k:g}": b.measured_kappas(k) for k in o.ks} if hasattr(b, "measured_kappas") else {},
        # k -> why the bound contradicts a measured point (GPU: kappa is the agent's estimate)
        "bound_notes": notes,
        # GPU: the host<->device copy bytes of the VLM's recorded units, each once
        "vlm_profile_unit_bytes": getattr(b.gpu, "vlm_unit_bytes", None) if b.gpu else None,
        "points": points,
        "ratios": ratios(points),
        "_responses": responses,
    }


def bound_notes(points: list[dict], bounds: dict[str, float]) -> dict[str, str]:
    """Per k, why the fluid bound contradicts what was measured, if it does: a policy met
    every target above it (2 % of slack), or it reaches the tokens/s of an unmanaged run that
    missed (the bound streams at the peak rate only where every task keeps eps). On the GPU
    the bound uses the agent's learned kappa; where a task's slowdown is not linear in its
    job's bytes, that is no bound (results/e2e-archive.md, ninth session, call 4)."""
    out = {}
    for key, bound in bounds.items():
        if bound is None or not math.isfinite(bound):
            continue
        at = [p for p in points if f"{p['k']:g}" == key]
        over = [p for p in at if p["feasible"] and p["llm_tok_s"] > 1.02 * bound]
        un = [p for p in at if p["policy"] == "unmanaged" and not p["feasible"] and bound >= 0.98 * p["llm_tok_s"]]
        if over:
            p = max(over, key=lambda p: p["llm_tok_s"])
            out[key] = f"{p['policy']} met every target at {p['llm_tok_s']:.2f} tokens/s, above it"
        elif un:
            out[key] = f"unmanaged missed eps at {un[0]['llm_tok_s']:.2f} tokens/s, which it reaches"
    return out


def is_ripple(policy: str) -> bool:
    """ripple or one of its variants (ripple+TAG)."""
    return policy == "ripple" or policy.startswith("ripple+")


def ratios(points: list[dict]) -> dict[str, dict]:
    """Per k: ripple's LLM tokens/s over unmanaged's, and over the best other policy that
    met every target at that k (issue 7's two ratios; None where a side is missing). The
    same for each ripple variant, under "variants"; no ripple variant counts as "other"."""
    out: dict[str, dict] = {}
    for k in sorted({p["k"] for p in points}):
        at = {p["policy"]: p for p in points if p["k"] == k}
        mine = [pol for pol in at if is_ripple(pol)]
        if not mine or len(at) == len(mine):
            continue
        u = at.get("unmanaged")
        feas = [p for pol, p in at.items() if not is_ripple(pol) and p["feasible"]]
        best = max(feas, key=lambda p: p["llm_tok_s"], default=None)

        def entry(r):
            def over(q):
                return r["llm_tok_s"] / q["llm_tok_s"] if q and q["llm_tok_s"] > 0 else None
            return {"ripple_feasible": r["feasible"],
                    "vs_unmanaged": over(u),
                    "best_feasible_other": best["policy"] if best else None,
                    "vs_best_feasible_other": over(best)}
        e = entry(at["ripple"]) if "ripple" in at else {}
        variants = {pol: entry(at[pol]) for pol in mine if pol != "ripple"}
        if variants:
            e["variants"] = variants
        out[f"{k:g}"] = e
    return out


def _num(x) -> float:
    """x, or nan where it is missing (null in a results.json)."""
    return math.nan if x is None else x


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.2f}"


def _row_name(pol: str) -> str:
    return "cap-x" if pol.startswith("cap-") else pol


def _table7_cells(s: dict) -> dict[str, dict[float, dict]]:
    """policy row -> k -> point; cap-* levels fold into one cap-x row (paper Table 7: the
    highest-throughput level meeting the targets, else the lowest-DMR level)."""
    rows: dict[str, dict[float, dict]] = {}
    for p in s["points"]:
        row = rows.setdefault(_row_name(p["policy"]), {})
        cur = row.get(p["k"])
        if cur is None:
            row[p["k"]] = p
            continue
        def key(q):
            return (q["feasible"], q["llm_tok_s"] if q["feasible"] else -q["worst_dmr"])
        if key(p) > key(cur):
            row[p["k"]] = p
    return rows


BUDGET_CAUSES_MIN = 0.0005  # a cause under 0.05 % of every point's scored time is left out


def budget_causes_table(points: list[dict]) -> list[str]:
    """The budget wait by the reason the agent gave (gaps' `budget:CAUSE`, % of the scored
    time; the parts sum to the budget column): a table of the causes some point spent
    BUDGET_CAUSES_MIN or more in, or nothing where no point has the split."""
    def shown(prefix: str) -> list[str]:
        return sorted({k[len(prefix):] for p in points for k, v in p["gaps"].items()
                       if k.startswith(prefix) and v is not None and not math.isnan(v) and v >= BUDGET_CAUSES_MIN})
    causes, tasks = shown("budget:"), shown("budget@")
    if not causes and not tasks:
        return []
    cols = [f"budget:{c}" for c in causes] + [f"budget@{t}" for t in tasks]
    out = ["", "The LLM's budget wait by the reason the agent gave (% of the scored time; the parts sum to the "
           "budget column): budget = B(t) below the next unit, crossing = a release the crossing bound "
           "forbids crossing, link = held for the other engine's host-byte grant, release = granted ahead, held "
           "for the CPU release it was admitted against (Documentation/agent.md, "
           "`ripplectl explain`). \"B(t) bound by TASK\": every engine's wait on B(t) while that task's job bound "
           "it (the VLM's too).", "",
           "| policy | k | " + " | ".join(causes + [f"B(t) bound by {t}" for t in tasks]) + " |",
           "|---|---|" + "---|" * len(cols)]
    for p in points:
        if not any(k.startswith(("budget:", "budget@")) for k in p["gaps"]):
            continue
        out.append(f"| {p['policy']} | {p['k']:g} | " +
                   " | ".join(_pct(p["gaps"].get(c, 0.0)) for c in cols) + " |")
    return out


def allowance_table(s: dict) -> list[str]:
    """Per ripple point and task, over the agent-state samples inside the scored windows
    (`timelines`): the share of samples whose job's allowance was 0, the share whose pricing
    passed the deadline with no bytes at all (a_hat + q >= D at the held slope, or q
    unbounded: no priced slope can lift App. C's line; Eq. 2's allowance falls to 0 through the rate limit), the held slope's median,
    and where the samples carry them the priced slope's median and the share on a fixed line.
    Nothing where no point has samples (the simulator keeps none)."""
    score_s = s.get("score_s")
    rows = []
    for p in s["points"]:
        if not is_ripple(p["policy"]):
            continue
        cells, any_sample = [], False
        for t in s["tasks"]:
            n = zero = over = fixed = 0
            held, priced = [], []
            for tl in p.get("timelines", []):
                t0 = tl.get("scored_from_s")
                for row in tl.get("samples", []):
                    x = row.get("tasks", {}).get(t)
                    if x is None or t0 is None or row["t_s"] < t0 or (score_s and row["t_s"] > t0 + score_s):
                        continue
                    n += 1
                    zero += (x.get("allowance_bytes") or 0) == 0
                    d, a, q = p["deadlines_ms"].get(t), x.get("a_hat_ms"), x.get("margin_ms")
                    over += d is not None and (q is None or (a is not None and a + q >= d))
                    if x.get("kappa_ms_per_gb") is not None:
                        held.append(x["kappa_ms_per_gb"])
                    if x.get("fixed_line") is not None:   # agents since a976a44
                        fixed += bool(x["fixed_line"])
                        priced.append(x.get("priced_slope_ms_per_gb") or 0.0)
            any_sample = any_sample or n > 0
            if n == 0:
                cells.append("n/a")
                continue
            kappa = f"{statistics.median(held):.2f}" if held else "n/a"
            lines = (f"; priced at {statistics.median(priced):.2f}, on a fixed line {100 * fixed / len(priced):.0f} %"
                     if priced else "")
            cells.append(f"{100 * zero / n:.0f} ({100 * over / n:.0f}), {kappa}{lines}")
        if any_sample:
            rows.append(f"| {p['policy']} | {p['k']:g} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return ["", "The agent's samples in the scored windows (`timelines`), per task: % whose job's allowance "
            "was 0; in brackets, % whose App. C line passed the deadline with no bytes at all (â + q ≥ D at the "
            "held slope, or q unbounded: no priced slope lifts it, and its allowance falls to 0 within a few "
            "jobs through the rate limit); then the held slope κ̂'s median, ms/GB, and where the agent reports them, the median slope "
            "the jobs were priced at and the share priced on a fixed-slope line (`pricing.slope_candidates`).", "",
            "| policy | k | " + " | ".join(s["tasks"]) + " |", "|---|---|" + "---|" * len(s["tasks"]), *rows]


def markdown_table(s: dict) -> str:
    ks = sorted({p["k"] for p in s["points"]})
    unit = "stand-in tokens/s" if s["backend"] == "plant" else "LLM tokens/s"
    calls = s.get("calls")
    if calls:   # a sweep merged from several calls (merge): each call's options on its own line
        head = [f"eps = {100 * s['eps']:g} %; the sweep is {len(calls)} calls, each with its own co-run profile "
                "and deadlines; ✗ = a CPU task above eps or a VLM deadline missed.", ""]
        head += [f"- k = {', '.join(f'{k:g}' for k in c['ks'])} ({c['source']}): {_options(c)}" for c in calls]
    else:
        head = [f"eps = {100 * s['eps']:g} %; {_options(s)}; ✗ = a CPU task above eps or a VLM deadline missed."]
    out = [f"### {s['mix']}: {unit} / worst-task DMR (%) by deadline factor k",
           "", f"_{s['note']}_", "", *head, "",
           "| policy | " + " | ".join(f"k = {k:g}" for k in ks) + " |",
           "|---|" + "---|" * len(ks)]
    for row, cells in _table7_cells(s).items():
        vals = []
        for k in ks:
            p = cells.get(k)
            if p is None:
                vals.append("")
                continue
            name = f" ({p['policy']})" if row == "cap-x" else ""
            mark = "" if p["feasible"] else " ✗"
            vals.append(f"{p['llm_tok_s']:.2f} / {_pct(p['worst_dmr'])}{mark}{name}")
        out.append(f"| {row} | " + " | ".join(vals) + " |")
    out.append("| bound (fluid) | " + " | ".join(f"{s['bound_tok_s'].get(f'{k:g}', math.nan):.2f}" for k in ks) + " |")
    bm = s.get("bound_measured_tok_s") or {}
    if any(v is not None and math.isfinite(v) for v in bm.values()):
        out.append("| bound (fluid, κ from unmanaged) | " + " | ".join(
            f"{_num(bm.get(f'{k:g}')):.2f}" for k in ks) + " |")
    rs = s.get("ratios") or ratios(s["points"])
    if rs:
        def f(x):
            return "n/a" if x is None else f"{x:.2f}"

        def over_bound(policy, k):
            """The policy's tokens/s over the fluid bound at k, and over the bound with kappa
            from unmanaged where there is one (the sim writes none); None without either."""
            tok = next((p["llm_tok_s"] for p in s["points"] if p["policy"] == policy and f"{p['k']:g}" == k), None)

            def over(b):
                return tok / b if tok is not None and b is not None and math.isfinite(b) and b > 0 else None
            return over(s["bound_tok_s"].get(k)), over(bm.get(k))

        notes = s.get("bound_notes") or {}

        def vs_bound(policy, k):
            """The ratio to the fluid bound (", R of the fluid bound"), with the ratio to the
            kappa-from-unmanaged bound beside it and, where the measured points contradict the
            bound at k (bound_notes), why: a ratio to a bound that is none must not read as one."""
            r, rm = over_bound(policy, k)
            if r is None:
                return ""
            extra = ([f"contradicted here: {notes[k]}"] if notes.get(k) else []) + \
                ([f"{rm:.2f} with κ from unmanaged"] if rm is not None else [])
            return f", {r:.2f} of the fluid bound" + (f" ({'; '.join(extra)})" if extra else "")

        def line(who, policy, items):
            return f"{who}'s LLM tokens/s as a ratio: " + "; ".join(
                f"k = {k}: {f(v['vs_unmanaged'])} of unmanaged, "
                + (f"{f(v['vs_best_feasible_other'])} of {v['best_feasible_other']} (the best other policy meeting "
                   f"every target)" if v["best_feasible_other"] else "no other policy met every target")
                + vs_bound(policy, k)
                + ("" if v["ripple_feasible"] else f" ({who} itself missed a target)")
                for k, v in items) + "."
        main = [(k, v) for k, v in rs.items() if "ripple_feasible" in v]
        if main:
            out += ["", line("Ripple", "ripple", main)]
        names = sorted({n for v in rs.values() for n in v.get("variants", {})})
        for n in names:
            out += ["", line(n, n, [(k, v["variants"][n]) for k, v in rs.items() if n in v.get("variants", {})])]
    out += ["", "Per point: per-task DMR (%), VLM frames late/judged, LLM tokens/s and GB/s, VLM GB/s, the LLM's "
            "share of both engines' granted bytes (%), and the LLM's scored time (Fig. 9): busy, budget wait, "
            "decision, delivery, other gap (%).", "",
            "| policy | k | " + " | ".join(f"{t} DMR" for t in s["tasks"]) +
            " | VLM late | tok/s | GB/s | VLM GB/s | LLM share | busy | budget | decision | delivery | other |",
            "|---|---|" + "---|" * (len(s["tasks"]) + 10)]
    for p in s["points"]:
        g = p["gaps"]
        out.append(f"| {p['policy']} | {p['k']:g} | " +
                   " | ".join(f"{_pct(p['tasks'][t]['dmr'])} ({p['tasks'][t]['misses']}/{p['tasks'][t]['jobs']})"
                              for t in s["tasks"]) +
                   f" | {p['vlm_misses']}/{p['vlm_frames']} | {p['llm_tok_s']:.2f} | {p['llm_gbps']:.3f} | "
                   f"{p.get('vlm_gbps', math.nan):.3f} | {_pct(p.get('llm_byte_share', math.nan))} | " +
                   " | ".join(_pct(g.get(c, math.nan)) for c in ("busy", "budget", "decision", "delivery", "other")) + " |")
    out += budget_causes_table(s["points"])
    out += allowance_table(s)
    for c in calls or [s]:
        pts = [p for p in s["points"] if not calls or p["k"] in c["ks"]]
        at = f" ({c['source']})" if calls else ""
        out += ["", f"Deadlines{at} (ms, k x co-run p99 with engines idle): " + "; ".join(
            f"k={p['k']:g}: " + ", ".join(f"{t} {v:.1f}" for t, v in p["deadlines_ms"].items())
            for p in pts if p["policy"] == pts[0]["policy"]),
            f"Co-run profile p99{at} (ms): " + ", ".join(f"{t} {v['p99_ms']:.2f}" for t, v in c["profile"].items())
            + profile_notes.profile_load_note(c.get("profile_load") or {})]
        if ci := profile_notes.profile_ci_note({**c, "points": pts}):
            out.append(ci)
        if c.get("profile_end"):
            out.append(profile_notes.drift_note({**c, "points": pts}))
    out.append("")
    return "\n".join(out)


def _options(c: dict) -> str:
    """One call's runs and windows, as the table's header says them."""
    return (f"{c['runs']} run(s) per point"
            + "".join(f" ({p}: {n})" for p, n in c.get("policy_runs", {}).items())
            + (f", {c['order']}" if c.get("order") else "")
            + f", {c['prep_s']:g} s preparation"
            + (f" ({c['ripple_prep_s']:g} s for ripple)" if c.get("ripple_prep_s", c["prep_s"]) != c["prep_s"] else "")
            + f" + {c['score_s']:g} s scored")


def nan_for_null(s: dict) -> dict:
    """A results.json read back: the point fields the bench keeps as nan (JSON null) made nan
    again, so the table renders them as it did. Returns s."""
    for pt in s.get("points", []):
        for key in ("llm_tok_s", "llm_tok_s_sd", "llm_gbps", "worst_dmr"):
            if pt.get(key) is None:
                pt[key] = float("nan")
    return s


# What describes one call (its options and its co-run profiles), kept per call in a merged
# sweep, and what every call of one sweep must share.
CALL_FIELDS = ("command", "variants", "runs", "policy_runs", "order", "prep_s", "ripple_prep_s", "score_s", "layout",
               "profile", "profile_jobs", "profile_end", "profile_drift", "profile_load", "profile_host", "profile_end_host",
               "vlm_profile_unit_bytes")
SWEEP_FIELDS = ("backend", "note", "mix", "tasks", "periods_ms", "eps")


def merge(parts: list[tuple[str, dict]]) -> dict:
    """One sweep's results from several calls' results.json, each (source, results): a device
    call runs at most 10 minutes, so a sweep over k is split into calls (results/e2e.md §0).
    The points, bounds, bound notes and ratios are each call's, by k; each call's options and
    co-run profiles are kept under "calls" (each k's deadlines came from its own call's
    profile). Raises ValueError naming the source and the field where the calls cannot be one
    sweep: a field of SWEEP_FIELDS that differs, a k that two calls measured, an input that is
    already merged, or none."""
    if not parts:
        raise ValueError("merge: no results to merge")
    first_src, first = parts[0]
    out = {f: first.get(f) for f in SWEEP_FIELDS}
    out.update(calls=[], points=[], bound_tok_s={}, bound_measured_tok_s={}, measured_kappas_ms_per_gb={},
               bound_notes={}, ratios={})
    seen: dict[float, str] = {}
    for src, r in parts:
        if "calls" in r:
            raise ValueError(f"{src}: already a merged sweep (calls); merge the calls' own results.json")
        for f in SWEEP_FIELDS:
            if r.get(f) != out[f]:
                raise ValueError(f"{src}: {f} is {r.get(f)!r}, not {out[f]!r} as in {first_src}: not one sweep")
        ks = sorted({p["k"] for p in r.get("points", [])})
        if not ks:
            raise ValueError(f"{src}: points: none")
        for k in ks:
            if k in seen:
                raise ValueError(f"{src}: k = {k:g} is also in {seen[k]}: a k must come from one call")
            seen[k] = src
        out["calls"].append({"source": src, "ks": ks, **{f: r.get(f) for f in CALL_FIELDS if f in r}})
        out["points"] += r["points"]
        for f in ("bound_tok_s", "bound_measured_tok_s", "measured_kappas_ms_per_gb", "bound_notes", "ratios"):
            out[f].update(r.get(f) or {})
    out["points"].sort(key=lambda p: p["k"])   # stable: each k's policies in their call's order
    return out


def check_claim(s: dict) -> tuple[bool, list[str]]:
    """At every k: ripple meets eps (every task) and unmanaged does not."""
    ok, lines = True, []
    for k in sorted({p["k"] for p in s["points"]}):
        by = {p["policy"]: p for p in s["points"] if p["k"] == k}
        r, u = by.get("ripple"), by.get("unmanaged")
        if r is None or u is None:
            return False, [f"k={k:g}: ripple or unmanaged missing"]
        r_ok = not math.isnan(r["worst_dmr"]) and r["worst_dmr"] <= s["eps"]
        u_ok = not math.isnan(u["worst_dmr"]) and u["worst_dmr"] > s["eps"]
        ok = ok and r_ok and u_ok
        lines.append(f"{'ok' if r_ok and u_ok else 'FAIL'}: k={k:g}: ripple worst DMR {_pct(r['worst_dmr'])} % "
                     f"{'<=' if r_ok else '>'} eps {100 * s['eps']:g} %, unmanaged {_pct(u['worst_dmr'])} % "
                     f"{'>' if u_ok else '<='} eps; VLM misses ripple {r['vlm_misses']}, unmanaged {u['vlm_misses']}")
    pl = s.get("profile_load") or {}
    if pl.get("loaded"):   # not a verdict: the claim's lines stand, this says what they rest on
        lines.append(f"note: the co-run profile ran beside other load (the least loaded of {len(pl['attempts'])} "
                     f"attempts: {100 * pl['share']:.0f} % of {pl['cpus']} CPUs): its deadlines may be too loose "
                     f"for unmanaged to miss")
    return ok, lines


def write_all(s: dict, out: Path, plots: bool = True) -> None:
    out.mkdir(parents=True, exist_ok=True)
    responses = s.pop("_responses")
    jobs = [p.pop("_jobs", None) for p in s["points"]]
    (out / "results.json").write_text(json.dumps(s, indent=1, default=lambda x: None) + "\n")
    for p, j in zip(s["points"], jobs):
        p["_jobs"] = j
    with open(out / "results.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "k", "runs", "task", "deadline_ms", "jobs", "misses", "dmr", "p99_ms",
                    "worst_dmr", "vlm_misses", "vlm_frames", "llm_tok_s", "llm_tok_s_sd", "llm_gbps", "bound_tok_s",
                    "feasible", "busy", "budget_wait", "decision", "delivery", "other_gap", "vlm_gbps",
                    "llm_byte_share"])
        for p in s["points"]:
            g = p["gaps"]
            for t, v in p["tasks"].items():
                w.writerow([p["policy"], p["k"], p["runs"], t, f"{p['deadlines_ms'][t]:.3f}", v["jobs"], v["misses"],
                            f"{v['dmr']:.5f}", f"{v['p99_ms']:.3f}", f"{p['worst_dmr']:.5f}", p["vlm_misses"],
                            p["vlm_frames"], f"{p['llm_tok_s']:.4f}", f"{p['llm_tok_s_sd']:.4f}", f"{p['llm_gbps']:.4f}",
                            f"{s['bound_tok_s'].get(format(p['k'], 'g'), math.nan):.4f}", int(p["feasible"]),
                            *(f"{g.get(c, math.nan):.4f}" for c in ("busy", "budget", "decision", "delivery", "other")),
                            f"{p.get('vlm_gbps', math.nan):.4f}", f"{p.get('llm_byte_share', math.nan):.4f}"])
    with open(out / "responses.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["policy", "k", "run", "task", "release_ns", "response_ms", "deadline_ms"])
        for r in responses:
            w.writerow([r[0], r[1], r[2], r[3], r[4], f"{r[5]:.4f}", f"{r[6]:.3f}"])
    (out / "table.md").write_text(markdown_table(s))
    s["_responses"] = responses
    if plots:
        plots.write_plots(s, out)
