#!/usr/bin/env python3
"""Measures what a grant costs the LLM on the GPU, from ripple-bench outputs: the simulator's
per-grant delays and `hidden_overhead_us` (Documentation/sim.md, "engines").

    tools/bench/ripple-sim/grant_costs.py [--json] RUN ...

RUN is a ripple-bench output folder (its results.json). For every managed point (not
unmanaged) whose VLM moves no host bytes (a VLM that does makes the delivery wait a link
hold, not a cost), per grant of the LLM:
- decision, delivery, other: the LLM's scored gap time of that kind over its grants;
- busy excess: the LLM's busy time beyond what its tokens take at the busy seconds per token
  of the same call's unmanaged point (the copy pipeline refilled after a grant boundary is
  inside a grant's measured time, so it shows as busy, not as a gap). Only where the call
  has an unmanaged point.
Pooled by policy family (ripple and its variants; each other policy by name), then:
- hidden_overhead_us = busy excess + other, over every point with an unmanaged beside it;
- the delivery wait a grant = the delivery gap over the grants of the points whose grants
  were never taken ahead (successors 0): there no earlier grant's end hides the wait. In
  ripple-sim that wait is delivery_us + start_us + report_us;
- two one-parameter least-squares fits of that cost over the points: a price per grant, and a
  price per drained grant (not a successor taken ahead), each with its rms residual over the
  mean cost: which describes the points better.
Bad input is one line naming the file and field, and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


class BadInput(Exception):
    pass


def field(d: dict, key: str, where: str):
    if key not in d or d[key] is None:
        raise BadInput(f"{where}: no '{key}'")
    return d[key]


def number(d: dict, key: str, where: str) -> float:
    v = field(d, key, where)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadInput(f"{where}: '{key}' is not a number")
    return float(v)


def optional(d: dict, key: str, where: str) -> float:
    """A number that may be absent (0 then), e.g. from results made before it existed."""
    return number(d, key, where) if d.get(key) is not None else 0.0


def points(run: Path) -> list[dict]:
    """The managed points of one call, each with its per-grant costs (seconds)."""
    rj = run / "results.json"
    try:
        r = json.loads(rj.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise BadInput(f"{rj}: {e}") from None
    score_s = number(r, "score_s", str(rj))
    pts = field(r, "points", str(rj))
    spt = None  # unmanaged busy seconds per token
    for p in pts:
        if p.get("policy") == "unmanaged":
            where = f"{rj}: point unmanaged k={p.get('k')}"
            tok = number(p, "llm_tok_s", where)
            if tok > 0:
                spt = number(field(p, "gaps", where), "busy", where + " gaps") / tok
            break
    out = []
    for p in pts:
        pol = field(p, "policy", str(rj))
        where = f"{rj}: point {pol} k={p.get('k')}"
        if pol == "unmanaged" or optional(p, "vlm_gbps", where) > 0.01:
            continue
        g = field(p, "gaps", where)
        grants = field(p, "llm_grants", where)
        n = number(grants, "grants", where + " llm_grants")
        if n <= 0:
            continue
        t = score_s * number(p, "runs", where)
        q = {"call": run.name, "policy": pol, "k": p.get("k"), "grants": n,
             "successors": optional(grants, "successors", where + " llm_grants"),
             "decision": number(g, "decision", where + " gaps") * t,
             "delivery": number(g, "delivery", where + " gaps") * t,
             "other": number(g, "other", where + " gaps") * t,
             "excess": None}
        if spt is not None:
            q["excess"] = number(g, "busy", where + " gaps") * t - number(p, "llm_tok_s", where) * t * spt
        out.append(q)
    return out


def family(policy: str) -> str:
    return "ripple" if policy == "ripple" or policy.startswith("ripple+") else policy


def pool(pts: list[dict]) -> dict:
    """Totals over points (seconds and grants) and the per-grant figures (microseconds)."""
    n = sum(p["grants"] for p in pts)
    beside = [p for p in pts if p["excess"] is not None]
    nb = sum(p["grants"] for p in beside)
    alone = [p for p in pts if p["successors"] == 0]
    na = sum(p["grants"] for p in alone)
    us = lambda s, k: 1e6 * s / k if k else None  # noqa: E731
    # Two one-parameter fits of the cost (busy excess + other) over the points beside
    # unmanaged: a price per grant, or a price per drained grant (one not taken ahead, so it
    # starts on a drained copy pipeline); each with its rms residual over the mean cost.
    fits = {}
    cost = [p["excess"] + p["other"] for p in beside]
    for name, x in (("per_grant", [p["grants"] for p in beside]),
                    ("per_drained_grant", [p["grants"] - p["successors"] for p in beside])):
        sxx = sum(v * v for v in x)
        if not beside or sxx <= 0:
            fits[name] = {"us": None, "rms_over_mean": None}
            continue
        c = sum(v * y for v, y in zip(x, cost)) / sxx
        mean = sum(cost) / len(cost)
        rms = math.sqrt(sum((y - c * v) ** 2 for v, y in zip(x, cost)) / len(cost))
        fits[name] = {"us": 1e6 * c, "rms_over_mean": rms / mean if mean else None}
    return {
        "points": len(pts), "grants": n,
        "decision_us": us(sum(p["decision"] for p in pts), n),
        "delivery_us": us(sum(p["delivery"] for p in pts), n),
        "other_us": us(sum(p["other"] for p in pts), n),
        "points_beside_unmanaged": len(beside), "grants_beside_unmanaged": nb,
        "busy_excess_us": us(sum(p["excess"] for p in beside), nb),
        "hidden_overhead_us": us(sum(p["excess"] + p["other"] for p in beside), nb),
        "grants_never_ahead": na,
        "delivery_wait_us": us(sum(p["delivery"] for p in alone), na),
        "fit": fits,
    }


def fmt(v, digits=0) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN")
    ap.add_argument("--json", action="store_true", help="print the pooled figures as JSON")
    a = ap.parse_args()
    try:
        pts = [q for run in a.runs for q in points(Path(run))]
    except BadInput as e:
        print(f"grant_costs.py: {e}", file=sys.stderr)
        return 2
    if not pts:
        print("grant_costs.py: no managed point with grants in " + ", ".join(a.runs), file=sys.stderr)
        return 2
    fams = sorted({family(p["policy"]) for p in pts})
    pooled = {"all": pool(pts), **{f: pool([p for p in pts if family(p["policy"]) == f]) for f in fams}}
    if a.json:
        print(json.dumps(pooled, indent=1, sort_keys=True))
        return 0
    print("| call | policy | k | grants | decision us | delivery us | other us | busy excess us | excess + other us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in pts:
        n = p["grants"]
        ex = None if p["excess"] is None else 1e6 * p["excess"] / n
        tot = None if ex is None else ex + 1e6 * p["other"] / n
        print(f"| {p['call']} | {p['policy']} | {p['k']} | {n:.0f} | {fmt(1e6 * p['decision'] / n, 1)} | "
              f"{fmt(1e6 * p['delivery'] / n)} | {fmt(1e6 * p['other'] / n)} | {fmt(ex)} | {fmt(tot)} |")
    print()
    print("| pooled | points | grants | decision us | delivery us | other us | busy excess us | hidden_overhead_us | delivery wait us (never ahead) | fit: us a grant (rms/mean) | fit: us a drained grant (rms/mean) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for f, q in pooled.items():
        fit = lambda k: f"{fmt(q['fit'][k]['us'])} ({fmt(q['fit'][k]['rms_over_mean'], 2)})"  # noqa: E731
        print(f"| {f} | {q['points']} | {q['grants']:.0f} | {fmt(q['decision_us'], 1)} | {fmt(q['delivery_us'])} | "
              f"{fmt(q['other_us'])} | {fmt(q['busy_excess_us'])} | {fmt(q['hidden_overhead_us'])} | {fmt(q['delivery_wait_us'])} | "
              f"{fit('per_grant')} | {fit('per_drained_grant')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
