#!/usr/bin/env python3
"""Replays ripple-bench GPU runs in ripple-sim and scores the agreement (issue 13's bars).

    tools/bench/ripple-sim/validate.py [--sim build/bin/ripple-sim] [--preset h200-offload]
        [--runs 3] [--seed 1] [--out DIR] RUN[:ENGINES] ...

RUN is a ripple-bench output folder (its results.json). Each is replayed with the bench's
own parameters (its policies and k, --prep-s, --ripple-prep-s, --score-s, --profile-s,
--agent-set, --variant) and that run's measured co-run profile (--solo-from: each task's
solo p50 and p99, the only per-run input; the slopes and engines are the preset's).
ENGINES (comma-separated, e.g. llm_layers,vlm) picks the preset's engines for runs made
before chunked grants. Per point: the same feasible/infeasible verdict; tokens/s within
+-15 %; worst DMR within +-2 pp or on the same side of eps. Prints a markdown table and the
totals; --out keeps each replay's results.json.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path


def bench_args(cmd: str) -> dict:
    toks = shlex.split(cmd)
    out = {"agent_set": [], "variant": []}
    for i, t in enumerate(toks):
        if i + 1 >= len(toks):
            break
        v = toks[i + 1]
        if t in ("--prep-s", "--ripple-prep-s", "--score-s", "--profile-s"):
            out[t[2:].replace("-", "_")] = float(v)
        elif t == "--agent-set":
            out["agent_set"].append(v)
        elif t == "--variant":
            out["variant"].append(v)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs_dirs", nargs="+", metavar="RUN[:ENGINES]")
    ap.add_argument("--sim", default="build/bin/ripple-sim")
    ap.add_argument("--preset", default="h200-offload")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()
    rows, n = [], {"points": 0, "verdict": 0, "tok": 0, "dmr": 0}
    for spec in a.runs_dirs:
        path, _, engines = spec.partition(":")
        rj = Path(path) / "results.json"
        try:
            r = json.loads(rj.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"validate.py: {rj}: {e}", file=sys.stderr)
            return 2
        b = bench_args(r.get("command", ""))
        policies = list(dict.fromkeys(p["policy"] for p in r["points"]))
        ks = sorted({p["k"] for p in r["points"]})
        out = Path(a.out) / Path(path).name if a.out else Path(tempfile.mkdtemp(prefix="ripple-validate."))
        cmd = [a.sim, "--preset", a.preset, "--solo-from", str(rj), "--policies", ",".join(policies),
               "--k", ",".join(f"{k:g}" for k in ks), "--runs", str(a.runs), "--seed", str(a.seed),
               "--eps", f"{r['eps']:g}", "--prep-s", f"{b.get('prep_s', r['prep_s']):g}",
               "--ripple-prep-s", f"{b.get('ripple_prep_s', r.get('ripple_prep_s') or b.get('prep_s', r['prep_s'])):g}",
               "--score-s", f"{b.get('score_s', r['score_s']):g}", "-q", "--out", str(out)]
        if "profile_s" in b:
            cmd += ["--profile-s", f"{b['profile_s']:g}"]
        if engines:
            cmd += ["--engines", engines]
        for s in b["agent_set"]:
            cmd += ["--agent-set", s]
        for v in b["variant"]:
            cmd += ["--variant", v]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"validate.py: {' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()[-400:]}", file=sys.stderr)
            return 2
        s = json.loads((out / "results.json").read_text())
        sim = {(q["policy"], q["k"]): q for q in s["points"]}
        eps = r["eps"]
        for g in r["points"]:
            q = sim[(g["policy"], g["k"])]
            v_ok = bool(g["feasible"]) == bool(q["feasible"])
            tg, ts = g["llm_tok_s"], q["llm_tok_s"]
            t_err = (ts - tg) / tg if tg else float("nan")
            t_ok = abs(t_err) <= 0.15
            dg, ds = g["worst_dmr"], q["worst_dmr"]
            d_ok = abs(dg - ds) <= 0.02 or ((dg <= eps) == (ds <= eps))
            n["points"] += 1
            n["verdict"] += v_ok
            n["tok"] += t_ok
            n["dmr"] += d_ok
            mark = lambda ok: "" if ok else " ✗"  # noqa: E731
            rows.append(f"| {Path(path).name} | {g['policy']} | {g['k']:g} | {tg:.2f} / {100 * dg:.2f} "
                        f"{'feasible' if g['feasible'] else 'infeasible'} | {ts:.2f} / {100 * ds:.2f} "
                        f"{'feasible' if q['feasible'] else 'infeasible'}{mark(v_ok)} | {100 * t_err:+.0f} %{mark(t_ok)} "
                        f"| {100 * (ds - dg):+.2f} pp{mark(d_ok)} |")
    print("| run | policy | k | GPU tok/s / worst DMR % | sim | tok/s error | DMR error |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    pts = n["points"]
    print(f"\nverdicts agree: {n['verdict']}/{pts} ({100 * n['verdict'] / pts:.0f} %); tokens/s within 15 %: "
          f"{n['tok']}/{pts} ({100 * n['tok'] / pts:.0f} %); worst DMR within 2 pp or same side of eps: "
          f"{n['dmr']}/{pts} ({100 * n['dmr'] / pts:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
