"""The co-run profiles in ripple-bench's outputs: each task's summary (p50, p99 and its
interval), the closing profile's drift, and the table's PROFILE, closing-profile (DRIFT) and
load notes that say what the deadlines rest on."""
from __future__ import annotations

import math

from . import metrics


def summary(prof: dict) -> dict:
    """Per task: its jobs, p50, p99, largest response and the p99's 95 % interval
    (metrics.quantile_ci; null for an end its jobs do not reach)."""
    out = {}
    for n, js in prof.items():
        r = [j.response_ms for j in js]
        out[n] = {"jobs": len(js), "p50_ms": metrics.percentile(r, 50), "p99_ms": metrics.percentile(r, 99),
                  "max_ms": max(r, default=math.nan), "p99_ci95_ms": list(metrics.quantile_ci(r, 99, 0.95))}
    return out


def profile_ci_note(s: dict) -> str:
    """The PROFILE line: each task whose deadline at the smallest k does not lie above the
    95 % interval of its own p99 (the co-run profile's jobs, metrics.quantile_ci), where
    the host alone may miss more than 1 % of that task's jobs whatever the policy; '' when
    every deadline does, or the results carry no interval (ripple-sim's, older ones). A
    p99 from fewer than quantile_ci_min_n(99) jobs has no upper end: their largest may lie
    below it (a 15-s profile of a 10-Hz task: 135 jobs, its p99 is their second largest)."""
    pts = s.get("points") or []
    if not pts:
        return ""
    k = min(p["k"] for p in pts)
    dl = next(p["deadlines_ms"] for p in pts if p["k"] == k)
    flagged = []
    for t, v in (s.get("profile") or {}).items():
        ci = v.get("p99_ci95_ms")
        if not ci or t not in dl:
            continue
        lo, hi = ci
        if hi is not None and hi < dl[t]:
            continue
        lo_s = f"{lo:.2f}" if lo is not None else "?"
        flagged.append(f"{t} {lo_s} to " + (f"{hi:.2f}" if hi is not None else
                                               f"above its largest of {v['jobs']} jobs, {v['max_ms']:.2f}")
                       + f", deadline {dl[t]:.1f}")
    if not flagged:
        return ""
    return (f"PROFILE: at k = {k:g} a deadline does not lie above the 95 % interval of its task's own p99 (ms): "
            + "; ".join(flagged) + f". The host alone may then miss more than 1 % of its jobs, whatever the "
            f"policy; {metrics.quantile_ci_min_n(99)} jobs or more bound a p99 (--profile-s)")


def profile_drift(start: dict, end: dict) -> dict:
    """Task -> p99 of the closing profile / p99 of the first - 1 (tasks in both; {} without a
    closing profile)."""
    out = {}
    for n, js in start.items():
        if end.get(n) and js:
            p0 = metrics.percentile([j.response_ms for j in js], 99)
            out[n] = round(metrics.percentile([j.response_ms for j in end[n]], 99) / p0 - 1, 4) if p0 > 0 else math.nan
    return out


def drift_note(s: dict) -> str:
    """The closing profile's line: each task's p99 and its drift, and a warning when a task's
    p99 moved by more than k - 1 for the smallest k: its deadline k x p99 then lay below (or
    that far above) the host's own p99 for part of the sweep, whatever the policy."""
    end, drift = s.get("profile_end") or {}, s.get("profile_drift") or {}
    if not end:
        return ""
    line = "Closing profile p99 (ms): " + ", ".join(
        f"{t} {v['p99_ms']:.2f} ({100 * drift[t]:+.0f} %)" if t in drift else f"{t} {v['p99_ms']:.2f}"
        for t, v in end.items())
    ks = sorted({p["k"] for p in s.get("points", [])})
    g0 = (s.get("profile_host") or {}).get("tasks") or {}
    g1 = (s.get("profile_end_host") or {}).get("tasks") or {}
    if g0.get("mhz") and g1.get("mhz"):
        line += f"; task cores' clock {g0['mhz']:.0f} -> {g1['mhz']:.0f} MHz ({g1.get('mhz_from')})"
    if g0.get("steal") or g1.get("steal"):
        line += f"; task cores' time stolen {100 * (g0.get('steal') or 0):.1f} -> {100 * (g1.get('steal') or 0):.1f} %"
    worst = max(drift.items(), key=lambda kv: abs(kv[1]) if kv[1] == kv[1] else -1, default=None)
    if ks and worst and abs(worst[1]) > ks[0] - 1:
        line += (f". DRIFT: {worst[0]}'s own p99 moved {100 * worst[1]:+.0f} % over the sweep, more than "
                 f"k - 1 = {100 * (ks[0] - 1):.0f} %: at k = {ks[0]:g} the deadlines were "
                 + ("tighter" if worst[1] > 0 else "looser") + " than k says for some runs, whatever the policy")
    return line


def profile_load_note(pl: dict) -> str:
    """The sentence on the other processes' load beside the kept co-run profile ('' without one)."""
    if not pl:
        return ""
    n = len(pl["attempts"])
    note = (f"; other processes beside it: {100 * pl['share']:.0f} % of {pl['cpus']} CPUs "
            f"({100 * pl['peak_share']:.0f} % in its busiest second; attempt {pl['kept']} of {n})")
    if pl["loaded"]:
        note += (f". LOADED: every attempt ran beside more than {100 * pl['limit_share']:g} % (or "
                 f"{200 * pl['limit_share']:g} % in a second): the p99s, and the deadlines, may be too loose")
    return note
