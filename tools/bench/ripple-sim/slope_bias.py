#!/usr/bin/env python3
"""Per task, the slope an admission trace's own jobs give, read three ways (results/sim.md §20).

    tools/bench/ripple-sim/slope_bias.py [--warmup-fraction 0.2] TRACE ...

TRACE is an admission trace (agent.trace_file's JSON lines, `.jsonl` or `.jsonl.gz`: a
GPU call's `traces/*.jsonl.gz`, or ripple-sim's `--trace`). Its `complete` records give each
job's charged bytes C and response time r. Per task, over the jobs after the first
--warmup-fraction (the fit's start-up):

- "charge": the least-squares slope of r on C, ms per GB. This is what the agent's fit
  reads (App. C; the fit uses r less the start lag, which the trace does not carry).
- "intensity": the slope of r on C × m / r, with m the task's median response: the bytes
  the job's own traffic rate would have brought over a typical job.
- "instrumented": cov(Z, r) / cov(Z, C), Z the bytes charged in the job's first m ns (the
  agent's pricing.slope_instrument; the complete record's `from`, written since 1aca85c).
  Blank where the trace carries no Z (older traces: every `from` 0).

A job that runs longer for its own reasons is charged more bytes while the engines run
beside it, so the charge slope reads the task's own spread as slope; where the budget ran
out inside the job, C is fixed and the intensity slope reads that spread the other way.
Neither of the first two is the true slope; the third is free of the own spread, at a
wider error. Prints a markdown table: trace, task, jobs, charged share, the three slopes
and r(C, r).
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics as st
import sys
from pathlib import Path


def ls_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of y on x; nan where x does not vary."""
    try:
        return st.linear_regression(x, y).slope
    except st.StatisticsError:
        return float("nan")


def jobs_of(path: Path) -> dict[str, list[tuple[float, float, float]]]:
    """Each task's (charged GB, response ms, early GB), in completion order."""
    opener = gzip.open if path.suffix == ".gz" else open
    out: dict[str, list[tuple[float, float]]] = {}
    with opener(path, "rt") as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"slope_bias.py: {path}:{n}: not JSON ({e.msg})", file=sys.stderr)
                sys.exit(2)
            if rec.get("k") != "complete":
                continue
            try:
                out.setdefault(rec["name"], []).append((rec["bytes"] / 1e9, rec["value"] / 1e6,
                                                        rec.get("from", 0) / 1e9))
            except (KeyError, TypeError):
                print(f"slope_bias.py: {path}:{n}: a complete record without name, bytes or value", file=sys.stderr)
                sys.exit(2)
    return out


def iv_slope(z: list[float], c: list[float], r: list[float]) -> float:
    """cov(z, r) / cov(z, c); nan where z carries nothing or does not move with c."""
    if not any(z):
        return float("nan")
    try:
        czc = st.covariance(z, c)
        return st.covariance(z, r) / czc if czc > 0 else float("nan")
    except st.StatisticsError:
        return float("nan")


def slopes(jobs: list[tuple[float, float, float]], warmup_fraction: float) -> dict | None:
    kept = jobs[int(len(jobs) * warmup_fraction):]
    if len(kept) < 3:
        return None
    c = [a for a, _, _ in kept]
    r = [b for _, b, _ in kept]
    z = [e for _, _, e in kept]
    m = st.median(r)
    intensity = [a * m / b if b > 0 else 0.0 for a, b, _ in kept]
    corr = st.correlation(c, r) if len(set(c)) > 1 and len(set(r)) > 1 else float("nan")
    return {"jobs": len(kept), "charged": sum(1 for a in c if a > 0) / len(kept),
            "charge": ls_slope(c, r), "intensity": ls_slope(intensity, r),
            "instrumented": iv_slope(z, c, r), "corr": corr}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("traces", nargs="+", type=Path, metavar="TRACE")
    ap.add_argument("--warmup-fraction", type=float, default=0.2,
                    help="share of each task's first jobs left out (default 0.2)")
    a = ap.parse_args()
    if not 0 <= a.warmup_fraction < 1:
        print(f"slope_bias.py: --warmup-fraction {a.warmup_fraction}: must lie in [0, 1)", file=sys.stderr)
        return 2
    print("| trace | task | jobs | charged | charge slope (ms/GB) | intensity slope (ms/GB) | "
          "instrumented slope (ms/GB) | r(C, r) |")
    print("|---|---|---|---|---|---|---|---|")
    for p in a.traces:
        if not p.is_file():
            print(f"slope_bias.py: {p}: no such file", file=sys.stderr)
            return 2
        per_task = jobs_of(p)
        if not per_task:
            print(f"slope_bias.py: {p}: no complete records (not an admission trace?)", file=sys.stderr)
            return 2
        # A GPU call's traces sit in CALL/traces/: name them by the call.
        where = p.parent.parent if p.parent.name == "traces" else p.parent
        label = f"{where.name}/{p.name}"
        for task, jobs in sorted(per_task.items()):
            s = slopes(jobs, a.warmup_fraction)
            if s is None:
                print(f"| {label} | {task} | {len(jobs)} | | too few jobs | | | |")
                continue
            iv = "" if s["instrumented"] != s["instrumented"] else f"{s['instrumented']:.2f}"
            print(f"| {label} | {task} | {s['jobs']} | {s['charged']:.2f} | {s['charge']:.2f} | "
                  f"{s['intensity']:.2f} | {iv} | {s['corr']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
