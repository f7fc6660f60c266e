"""ripple-bench's PNG plots (matplotlib, optional): throughput and worst DMR against k
(paper Fig. 6), the LLM's scored-time breakdown (Fig. 9) and the adaptivity timeline, from a
summary (report.summarize or merged/rendered results.json)."""
from __future__ import annotations

import math
import sys
from pathlib import Path


def _save(plt, fig, path: Path, ax=None, title: str | None = None) -> None:
    """Titles `ax` and gives it its legend (when given), then writes the figure to `path`."""
    if ax is not None:
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_plots(s: dict, out: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("ripple-bench: matplotlib not found (Debian: python3-matplotlib, run with /usr/bin/python3): "
              "no PNG plots", file=sys.stderr)
        return
    ks = sorted({p["k"] for p in s["points"]})
    pols = list(dict.fromkeys(p["policy"] for p in s["points"]))
    title_sfx = " — emulated plant (TEST DOUBLE)" if s["backend"] == "plant" else ""
    by = {(p["policy"], p["k"]): p for p in s["points"]}

    def series(ax, key, scale=1.0, floor=None):
        for pol in pols:
            xs = [k for k in ks if (pol, k) in by]
            ys = [by[(pol, k)][key] * scale for k in xs]
            if floor is not None:
                ys = [max(y, floor) for y in ys]
            line, = ax.plot(xs, ys, "-", label=pol, alpha=0.8)
            for x, y in zip(xs, ys):   # hollow marker: a target missed (paper Fig. 6)
                f = by[(pol, x)]["feasible"]
                ax.plot([x], [y], "o", color=line.get_color(), markerfacecolor=line.get_color() if f else "none",
                        zorder=3)   # above the bound's diamonds, which may lie on the same point

    fig, ax = plt.subplots(figsize=(6, 4))
    series(ax, "worst_dmr", 100, floor=0.01)
    ax.axhline(100 * s["eps"], color="k", ls="--", lw=1, label=f"eps {100 * s['eps']:g} %")
    ax.set_yscale("log")
    ax.set_xlabel("deadline factor k")
    ax.set_ylabel("worst-task DMR (%)")
    _save(plt, fig, out / "dmr_vs_k.png", ax, f"{s['mix']}: DMR vs k{title_sfx}")

    fig, ax = plt.subplots(figsize=(6, 4))
    series(ax, "llm_tok_s")
    ax.plot(ks, [s["bound_tok_s"].get(f"{k:g}", math.nan) for k in ks], "D", color="k", markersize=5,
            label="bound (fluid)", zorder=2)
    ax.set_xlabel("deadline factor k")
    ax.set_ylabel("stand-in tokens/s" if s["backend"] == "plant" else "LLM tokens/s")
    _save(plt, fig, out / "throughput_vs_k.png", ax, f"{s['mix']}: throughput vs k (hollow: target missed){title_sfx}")

    resp: dict = {}
    dl: dict = {}
    for pol, k, _, task, _, r, d in s["_responses"]:
        resp.setdefault((k, task, pol), []).append(r)
        dl[(k, task)] = d
    for k in (ks if resp else []):   # no responses (a re-rendered results.json): no empty CDFs
        fig, axes = plt.subplots(1, len(s["tasks"]), figsize=(4 * len(s["tasks"]), 3.5), squeeze=False)
        for ax, task in zip(axes[0], s["tasks"]):
            for pol in pols:
                v = sorted(resp.get((k, task, pol), []))
                if v:
                    ax.plot(v, [(i + 1) / len(v) for i in range(len(v))], label=pol)
            if (k, task) in dl:
                ax.axvline(dl[(k, task)], color="k", ls="--", lw=1)
            ax.axhline(1 - s["eps"], color="grey", ls=":", lw=1)
            ax.set_title(f"{task} (k = {k:g})", fontsize=9)
            ax.set_xlabel("response time (ms)")
            ax.set_ylabel("CDF")
        axes[0][0].legend(fontsize=7)
        fig.suptitle(f"{s['mix']}: response times, dashed = deadline{title_sfx}", fontsize=9)
        _save(plt, fig, out / f"cdf_k{k:g}.png")

    write_adaptivity(s, out, plt, title_sfx)

    fig, ax = plt.subplots(figsize=(6, 4))
    cats = ("budget", "decision", "delivery", "other")
    pts = [p for p in s["points"] if p["gaps"].get("gap") is not None and not math.isnan(p["gaps"]["gap"])]
    labels = [f"{p['policy']}\nk={p['k']:g}" for p in pts]
    bottom = [0.0] * len(pts)
    for c in cats:
        vals = [100 * (p["gaps"].get(c) or 0.0) for p in pts]
        ax.bar(range(len(pts)), vals, bottom=bottom, label=c)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(range(len(pts)))
    ax.set_xticklabels(labels, fontsize=6, rotation=90)
    ax.set_ylabel("% of scored time without a grant running")
    _save(plt, fig, out / "gaps.png", ax, f"LLM gap-time breakdown (Fig. 9){title_sfx}")


def write_adaptivity(s: dict, out: Path, plt, title_sfx: str) -> None:
    """adaptivity_<policy>_k<k>.png for every point whose runs had a perturbation: each task's
    allowance over time (the agent's state, sampled) above its jobs' response / deadline,
    the perturbations shaded."""
    for p in s["points"]:
        tl = [t for t in p.get("timelines", []) if t["perturbations_s"]]
        if not tl:
            continue
        t = tl[0]
        jobs = (p.get("_jobs") or [{}])[tl.index(t) if len(p.get("_jobs") or []) > tl.index(t) else 0]
        fig, (a1, a2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        base = t["scored_from_s"]
        for task in s["tasks"]:
            xs = [row["t_s"] - base for row in t["samples"] if task in row["tasks"]]
            ys = [(row["tasks"][task].get("allowance_bytes") or 0) / 1e9 for row in t["samples"] if task in row["tasks"]]
            a1.plot(xs, ys, label=task)
        a1.set_ylabel("allowance (GB)")
        a1.legend(fontsize=7)
        js = [(n, rel, r) for n, v in jobs.items() for rel, r in v]
        t0 = min((rel for _, rel, _ in js), default=0)
        for task in s["tasks"]:
            pts = [((rel - t0) / 1e9, r / p["deadlines_ms"][task]) for n, rel, r in js if n == task]
            a2.plot([x for x, _ in pts], [y for _, y in pts], ".", ms=3, label=task)
        a2.axhline(1.0, color="k", ls="--", lw=1)
        a2.set_ylabel("response / deadline")
        a2.set_xlabel("s from the scored window's start")
        for on, off in t["perturbations_s"]:
            for ax in (a1, a2):
                ax.axvspan(on, off, color="orange", alpha=0.2)
        fig.suptitle(f"{p['policy']} k={p['k']:g}: allowance and responses, perturbation shaded{title_sfx}", fontsize=9)
        _save(plt, fig, out / f"adaptivity_{p['policy'].replace('/', '_')}_k{p['k']:g}.png")
