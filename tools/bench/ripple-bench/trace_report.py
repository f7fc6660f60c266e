#!/usr/bin/env python3
"""Reads an admission trace (agent.trace_file, or ripple-sim --trace: JSON lines, one per
release, completion, grant, start, done, discard; agent/admission/trace.h) and says where
each task's deadline misses and each engine's idle time came from.

    trace_report.py TRACE.jsonl[.gz] [--window FROM_S,TO_S [--origin first|zero]] [--late-ms 1] [--near-ms 5]
                    [--json]

Times in the trace are the agent's clock (ns; ripple-sim: virtual, from 0). --window keeps
the jobs released and the grants done in [FROM, TO) seconds after the first record, or after
0 with --origin zero (ripple-sim's scored window: --window PREP,PREP+SCORE --origin zero;
ripple-bench --trace writes each run's window, on the agent's CLOCK_MONOTONIC, to
OUT/traces/windows.json: --window T0,T1 --origin zero).

Per task: jobs and misses, and for each missed job the GPU bytes whose actual interval (done:
start to end) overlapped it, pro rata, against the bytes whose predicted interval (grant:
predicted start to end) did. A miss that met bytes no grant was predicted to bring is
"crossed": a grant ended (or started) other than predicted. One that met no bytes at all is
"no traffic": the engines' grants did not reach it. Those are split by what came before them:
"queued" when the task's previous job ended after this one's release (it waited behind a
late predecessor), "near" when some grant's GPU interval ended less than --near-ms before the
release (an after-effect, or a clock skew between the trace's GPU intervals and the tracer's
jobs), "apart" otherwise (nothing of the engines came close: the host's own noise).

Per engine: grants done, late ends (actual end more than --late-ms after the predicted end,
as the agent counts late_ends), the end error's quantiles, the late ends split into those
that started late and those that ran longer than predicted, with the grants' GPU over
predicted duration by the predicted duration's class (late_ends_by; a pipelined grant's GPU
interval spans part of its neighbour's, so this ratio reads their overlap as lateness); the
GB/s of its timed grants over the union of their GPU intervals against the GB/s their
predicted durations give, with their GPU time's sum over that union and how many started on
an idle GPU; and its idle time: where none
of its grants ran (outside the union of their GPU intervals; pipelined grants overlap, so
the gap is from the furthest end so far to the next start), split by when the next grant
was decided (after that end: the engine waited for a decision) and sent (delivery); and
the idle time behind grants
whose successor was sent before they ended (the agent was not late), by the size of the
grant before the gap; and how many grants it had in hand: the share of the window with
none, one, and two or more of its grants started and not yet done (from the start record
to the done record, both the agent's clock), with the GB/s of the grants done in it. A
pipelined engine keeps its copies flowing only with a second grant queued behind the
running one (results/e2e-archive.md, twentieth session). And where it held none: its share of
the time inside the CPU jobs, and in the first 5 ms, the middle and the last 5 ms of the
gaps of 20 ms or more between them (an allowance that stops it inside the jobs, or gaps it
does not fill). And its host-byte grants (>= 1 MiB) by how much of their GPU interval another
engine's host-byte grant ran beside (alone < 5 %, partly < 50 %, mostly), each bin's actual
over predicted duration: what sharing the host link costs the copies (agent.shared_link).
"""
from __future__ import annotations

import argparse
import bisect
import gzip
import json
import math
import sys
from dataclasses import dataclass, field


class TraceError(Exception):
    pass


@dataclass
class Job:
    task: str
    seq: int
    release: int
    end: int
    missed: bool
    charged: int
    actual: float = 0.0      # bytes whose actual GPU interval overlapped the job
    predicted: float = 0.0   # bytes whose predicted interval overlapped it


@dataclass
class Grant:
    engine: str
    gid: int
    bytes: int
    decided: int
    p_from: int
    p_to: int
    not_before: int
    successor: bool
    sent: int = -1
    start: int = -1
    a_from: int = -1
    a_to: int = -1
    done_at: int = -1
    discarded: bool = False


@dataclass
class Trace:
    t0: int = 0
    jobs: list[Job] = field(default_factory=list)
    grants: dict[tuple[int, int], Grant] = field(default_factory=dict)


FIELDS = ("k", "t", "who", "name", "id", "bytes", "from", "to", "value", "flag")


def read(lines, origin: str) -> Trace:
    tr = Trace()
    first = None
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError as e:
            raise TraceError(f"{origin}:{n}: not JSON ({e.msg})") from None
        missing = [f for f in FIELDS if f not in r]
        if missing:
            raise TraceError(f"{origin}:{n}: record lacks field '{missing[0]}'")
        k, t = r["k"], int(r["t"])
        first = t if first is None else min(first, t)
        key = (int(r["who"]), int(r["id"]))
        if k == "release":
            continue
        if k == "complete":
            resp = int(r["value"])
            tr.jobs.append(Job(r["name"], int(r["id"]), t - resp, t, bool(r["flag"]), int(r["bytes"])))
        elif k == "grant":
            tr.grants[key] = Grant(r["name"], key[1], int(r["bytes"]), t, int(r["from"]), int(r["to"]),
                                   int(r["value"]), bool(r["flag"]))
        elif k in ("start", "done", "discard"):
            g = tr.grants.get(key)
            if g is None:
                raise TraceError(f"{origin}:{n}: {k} of grant {key[1]} (engine {key[0]}) before its grant record")
            if k == "start":
                g.start, g.sent = t, int(r["from"])
            elif k == "done":
                # The GPU's interval as the Done shows it: it ends at the Done (the interposer
                # reports a grant once the GPU passed its end event) and ran its measured time
                # before, no earlier than its Start. Traces before the agent wrote it so put a
                # successor at start + measured, early by as much as the grant it waited behind
                # on the stream; derived here, they read alike. No measured time (no event
                # pair): an empty interval, as before.
                measured = int(r["value"])
                g.done_at = t
                if measured > 0:
                    g.a_to = t
                    g.a_from = max(g.start, t - measured) if g.start >= 0 else t - measured
                else:
                    g.a_from, g.a_to = int(r["from"]), int(r["from"])
            else:
                g.discarded = True
        else:
            raise TraceError(f"{origin}:{n}: unknown record kind '{k}'")
    tr.t0 = first or 0
    return tr


def overlap(a0: int, a1: int, b0: int, b1: int) -> float:
    return max(0, min(a1, b1) - max(a0, b0))


class Spans:
    """(from, to, bytes) intervals, sorted by from, and the bytes of them inside a job, pro
    rata by time; a lookup starts at the first span that can reach the job."""

    def __init__(self, spans):
        self.spans = sorted(spans)
        self.froms = [f for f, _, _ in self.spans]
        self.longest = max((t - f for f, t, _ in self.spans), default=0)

    def last_end_before(self, t: int) -> int | None:
        """The latest end of a span that started before t and ended at or before t."""
        best = None
        for f, e, _ in self.spans[:bisect.bisect_left(self.froms, t)]:
            if e <= t and (best is None or e > best):
                best = e
        return best

    def bytes_in(self, j: Job) -> float:
        total = 0.0
        for f, t, b in self.spans[bisect.bisect_left(self.froms, j.release - self.longest):]:
            if f >= j.end:
                break
            o = overlap(j.release, j.end, f, t)
            if o > 0:
                total += b * o / (t - f)
        return total


def attribute(tr: Trace) -> None:
    """Fills each job's actual and predicted overlapping bytes."""
    done = Spans((g.a_from, g.a_to, g.bytes) for g in tr.grants.values() if g.a_to >= 0 and g.a_to > g.a_from)
    pred = Spans((g.p_from, g.p_to, g.bytes) for g in tr.grants.values() if not g.discarded and g.p_to > g.p_from)
    for j in tr.jobs:
        j.actual, j.predicted = done.bytes_in(j), pred.bytes_in(j)


def quantile(xs: list[float], q: float) -> float:
    if not xs:
        return math.nan
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


# The GPU idle time behind a grant whose successor was sent before it ended (the pipeline's
# own gaps: the agent was not late), by that grant's size.
AHEAD_BINS = ((128e6, "< 128 MB"), (512e6, "128-512 MB"), (math.inf, ">= 512 MB"))
# A successor queued behind its predecessor starts on the GPU at the predecessor's Done; read
# back as Done - measured it lands within +-0.2 ms of it (p10-p50 on the H200:
# results/e2e-archive.md, twenty-fifth session). A gap shorter than this is that noise, not idle.
QUEUE_JITTER_NS = 200_000


def behind(run: list[Grant]):
    """(prev, g) for each grant g of a run sorted by start, prev the grant that had reached
    furthest before it (the largest end so far): g's idle is g.a_from - prev.a_to where
    positive. Pipelined grants overlap and a queued one can end before the one it followed,
    so the grant started just before g is not the one whose end the GPU idles behind."""
    last = None
    for g in run:
        if last is not None:
            yield last, g
        if last is None or g.a_to > last.a_to:
            last = g


def idle_behind_ahead(run: list[Grant], lo: float, hi: float) -> dict:
    out = {label: {"successors": 0, "gaps": 0, "idle_ms": 0.0} for _, label in AHEAD_BINS}
    for prev, g in behind(run):
        sent = g.sent if g.sent >= 0 else g.decided
        if not (lo <= g.a_from < hi) or sent >= prev.a_to:
            continue
        d = out[next(label for lim, label in AHEAD_BINS if prev.bytes < lim)]
        d["successors"] += 1
        if g.a_from - prev.a_to >= QUEUE_JITTER_NS:
            d["gaps"] += 1
            d["idle_ms"] += (g.a_from - prev.a_to) / 1e6
    return out


def _held(gs: list[Grant], lo: float, hi: float) -> tuple[list[Grant], list[tuple[float, float, int]]]:
    """The grants that ran (started, then done) and the spans of [lo, hi) each with how many of
    them were in hand (started, not yet done). Without a window (lo, hi infinite): from the
    first start to the last done; no spans where none ran."""
    ran = [g for g in gs if g.start >= 0 and g.done_at >= g.start]
    pts = sorted(p for g in ran for p in ((g.start, 1), (g.done_at, -1)))
    if not math.isfinite(lo):
        if not pts:
            return ran, []
        lo, hi = pts[0][0], pts[-1][0]
    spans, n, last = [], 0, lo
    for t, d in pts:
        t = min(max(t, lo), hi)
        if t > last:
            spans.append((last, t, n))
        last, n = t, n + d
    if hi > last:
        spans.append((last, hi, n))
    return ran, spans


def in_hand(gs: list[Grant], lo: float, hi: float) -> dict:
    """Share of [lo, hi) with 0, 1 and >= 2 of these grants started and not yet done, and the
    GB/s of those done in it. Without a window (lo, hi infinite): from the first start to the
    last done, every done grant counted."""
    ran, spans = _held(gs, lo, hi)
    if not ran or not spans:
        return dict.fromkeys(("none", "one", "two_or_more", "done_gbps"), math.nan)
    share = [0.0, 0.0, 0.0]
    for a, b, n in spans:
        share[min(n, 2)] += b - a
    whole = not math.isfinite(lo)
    lo, hi = spans[0][0], spans[-1][1]
    done = sum(g.bytes for g in ran if whole or lo <= g.done_at < hi)
    span = hi - lo
    return {"none": share[0] / span, "one": share[1] / span, "two_or_more": share[2] / span, "done_gbps": done / span}


def union_rate(scored: list[Grant]) -> dict:
    """The rate of an engine's timed grants over the union of their GPU intervals, against the
    rate their predicted durations give. Pipelined grants overlap (the next copy-in runs beside
    the last spill), so a grant's GPU interval spans part of its neighbour's and its GPU over
    predicted duration reads that overlap as a slow grant: over the union it is not
    (results/sim.md §19). Also the sum of their GPU times over that union, and how many started
    on an idle GPU (after every earlier grant's end: a drained pipeline)."""
    timed = sorted((g for g in scored if g.a_to > g.a_from and g.p_to > g.p_from), key=lambda g: g.a_from)
    if not timed:
        return dict.fromkeys(("union_s", "gbps_union", "gbps_predicted", "sum_over_union"), math.nan) | {"drained": 0}
    union = sum(b - a for a, b in _union((g.a_from, g.a_to) for g in timed))
    moved = sum(g.bytes for g in timed)
    drained = sum(1 for prev, g in behind(timed) if g.a_from > prev.a_to)
    predicted = sum(g.p_to - g.p_from for g in timed)
    return {"union_s": union / 1e9, "gbps_union": moved / union, "gbps_predicted": moved / predicted,
            "sum_over_union": sum(g.a_to - g.a_from for g in timed) / union, "drained": drained}


GAP_MIN_NS = 20_000_000   # a gap between CPU jobs this long or longer is split into its edges and middle
EDGE_NS = 5_000_000


def _union(spans) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        elif b > a:
            out.append([a, b])
    return out


def none_where(gs: list[Grant], jobs: list[Job], lo: float, hi: float) -> dict:
    """Where an engine held no grant (none started and not yet done, as in_hand): its share of
    the time inside the CPU jobs (the union of every task's release-to-end), and of the gaps
    between them at least GAP_MIN_NS long, split into their first EDGE_NS, their middle and
    their last EDGE_NS. Tells an allowance that stops the engine inside the jobs from gaps it
    does not fill (the twenty-second session's k = 1.1, results/e2e.md §0). nan where a
    region has no time. Without a window: from the first start to the last done."""
    keys = ("in_jobs", "gap_first", "gap_middle", "gap_last")
    _, spans = _held(gs, lo, hi)
    if not spans:
        return dict.fromkeys(keys, math.nan)
    lo, hi = spans[0][0], spans[-1][1]
    zero = [(a, b) for a, b, n in spans if n == 0]   # the spans with none in hand, inside [lo, hi)
    zs = [a for a, _ in zero]

    def none_in(a: float, b: float) -> float:
        i, z = max(bisect.bisect_right(zs, a) - 1, 0), 0.0
        while i < len(zero) and zero[i][0] < b:
            z += max(0.0, min(b, zero[i][1]) - max(a, zero[i][0]))
            i += 1
        return z

    busy = _union((max(j.release, lo), min(j.end, hi)) for j in jobs if j.end > lo and j.release < hi)
    regions: dict[str, list[tuple[float, float]]] = {k: [] for k in keys}
    regions["in_jobs"] = [(a, b) for a, b in busy]
    for (_, g0), (g1, _) in zip(busy, busy[1:]):
        if g1 - g0 >= GAP_MIN_NS:
            regions["gap_first"].append((g0, g0 + EDGE_NS))
            regions["gap_middle"].append((g0 + EDGE_NS, g1 - EDGE_NS))
            regions["gap_last"].append((g1 - EDGE_NS, g1))
    out = {}
    for k, rs in regions.items():
        total = sum(b - a for a, b in rs)
        out[k] = sum(none_in(a, b) for a, b in rs) / total if total > 0 else math.nan
    return out


LINK_MIN_BYTES = 1 << 20   # a grant this large moves host bytes (kLinkMinBytes, agent/admission/types.h)
BESIDE_BINS = ((0.05, "alone"), (0.5, "partly"), (math.inf, "mostly"))


def beside(by_engine: dict[str, list[Grant]], lo: float, hi: float) -> dict:
    """Each engine's host-byte grants (>= LINK_MIN_BYTES) done in [lo, hi), by the share of
    their GPU interval (start to end) that another engine's host-byte grant ran beside: alone
    (< 5 %), partly (< 50 %), mostly; per bin the grants and the quantiles of actual over
    predicted duration (done interval over the grant's predicted one). The two engines' copies
    share the host link: what running beside another costs them, against the agent's own
    predictions (agent.shared_link; results/e2e-archive.md, twenty-third session)."""
    def runs(g: Grant) -> bool:
        return g.bytes >= LINK_MIN_BYTES and g.a_to > g.a_from

    out = {}
    for name, gs in by_engine.items():
        mine = [g for g in gs if runs(g) and g.p_to > g.p_from and lo <= g.done_at < hi]
        if not mine:
            continue
        others = _union((g.a_from, g.a_to) for n, o in by_engine.items() if n != name for g in o if runs(g))
        starts = [a for a, _ in others]
        ratios: dict[str, list[float]] = {label: [] for _, label in BESIDE_BINS}
        for g in mine:
            i, met = max(bisect.bisect_right(starts, g.a_from) - 1, 0), 0
            while i < len(others) and others[i][0] < g.a_to:
                met += overlap(g.a_from, g.a_to, others[i][0], others[i][1])
                i += 1
            share = met / (g.a_to - g.a_from)
            label = next(label for lim, label in BESIDE_BINS if share < lim)
            ratios[label].append((g.a_to - g.a_from) / (g.p_to - g.p_from))
        out[name] = {label: {"grants": len(v), "ratio_p50": quantile(v, 0.5), "ratio_p90": quantile(v, 0.9)}
                     for label, v in ratios.items()}
    return out


def report(tr: Trace, window: tuple[float, float] | None, late_ms: float, near_ms: float = 5.0) -> dict:
    lo, hi = (-math.inf, math.inf) if window is None else (tr.t0 + window[0] * 1e9, tr.t0 + window[1] * 1e9)
    attribute(tr)
    done = Spans((g.a_from, g.a_to, g.bytes) for g in tr.grants.values() if g.a_to >= 0 and g.a_to > g.a_from)
    prev_end: dict[str, int] = {}
    tasks: dict[str, dict] = {}
    for j in sorted(tr.jobs, key=lambda j: (j.task, j.release)):
        before, prev_end[j.task] = prev_end.get(j.task), j.end
        if not lo <= j.release < hi:
            continue
        d = tasks.setdefault(j.task, {"jobs": 0, "misses": 0, "crossed": 0, "no_traffic": 0, "charged_misses": 0,
                                      "no_traffic_queued": 0, "no_traffic_near": 0, "no_traffic_apart": 0,
                                      "no_traffic_gap_ms": [], "miss_actual_mb": [], "miss_predicted_mb": []})
        d["jobs"] += 1
        if not j.missed:
            continue
        d["misses"] += 1
        d["miss_actual_mb"].append(j.actual / 1e6)
        d["miss_predicted_mb"].append(j.predicted / 1e6)
        if j.actual <= 0:
            d["no_traffic"] += 1
            last = done.last_end_before(j.release)
            gap = math.inf if last is None else (j.release - last) / 1e6
            d["no_traffic_gap_ms"].append(round(gap, 3) if math.isfinite(gap) else None)
            if before is not None and before > j.release:
                d["no_traffic_queued"] += 1
            elif gap < near_ms:
                d["no_traffic_near"] += 1
            else:
                d["no_traffic_apart"] += 1
        elif j.actual > j.predicted + 1e6:   # more than 1 MB beyond what the predictions put there
            d["crossed"] += 1
        else:
            d["charged_misses"] += 1
    for d in tasks.values():
        d["dmr"] = d["misses"] / d["jobs"] if d["jobs"] else math.nan
        for key in ("miss_actual_mb", "miss_predicted_mb"):
            v = d.pop(key)
            d[key.replace("_mb", "_mb_median")] = quantile(v, 0.5)
    engines: dict[str, dict] = {}
    by_engine: dict[str, list[Grant]] = {}
    for g in tr.grants.values():
        by_engine.setdefault(g.engine, []).append(g)
    for name, gs in by_engine.items():
        run = sorted((g for g in gs if g.a_to >= 0), key=lambda g: g.a_from)
        scored = [g for g in run if lo <= g.done_at < hi]
        errs = [(g.a_to - g.p_to) / 1e6 for g in scored]
        idle = {"total": 0.0, "waiting_for_decision": 0.0, "delivery": 0.0, "other": 0.0}
        for prev, g in behind(run):
            if not (lo <= g.a_from < hi) or g.a_from <= prev.a_to:
                continue
            gap = g.a_from - prev.a_to
            idle["total"] += gap
            decided = min(max(g.decided, prev.a_to), g.a_from) - prev.a_to
            sent = g.sent if g.sent >= 0 else g.decided
            delivery = min(max(sent, prev.a_to, g.decided), g.a_from) - max(g.decided, prev.a_to)
            idle["waiting_for_decision"] += decided
            idle["delivery"] += max(0, delivery)
            idle["other"] += gap - decided - max(0, delivery)
        span = (min(hi, max((g.a_to for g in run), default=0)) - max(lo, min((g.a_from for g in run), default=0)))
        engines[name] = {
            "grants": len(scored),
            "discarded": sum(1 for g in gs if g.discarded and lo <= g.decided < hi),
            "late_ends": sum(1 for e in errs if e > late_ms),
            "end_error_ms_p50": quantile(errs, 0.5),
            "end_error_ms_p95": quantile(errs, 0.95),
            "end_error_ms_p99": quantile(errs, 0.99),
            "idle_ms": {k: v / 1e6 for k, v in idle.items()},
            "idle_share": idle["total"] / span if span > 0 else math.nan,
            "late_ends_by": late_ends_by(scored, late_ms),
            "union_rate": union_rate(scored),
            "idle_behind_ahead": idle_behind_ahead(run, lo, hi),
            "in_hand": in_hand(gs, lo, hi),
            "none_where": none_where(gs, tr.jobs, lo, hi),
        }
    return {"window_s": list(window) if window else None, "late_ms": late_ms, "near_ms": near_ms, "tasks": tasks,
            "engines": engines, "beside": beside(by_engine, lo, hi)}


# Classes of a grant's predicted duration, for its measured / predicted duration.
DURATION_BINS = ((5e6, "< 5 ms"), (10e6, "5-10 ms"), (math.inf, ">= 10 ms"))


def late_ends_by(scored: list[Grant], late_ms: float) -> dict:
    """Why the grants that ended more than late_ms after their predicted end did: a late end
    is its start's delay (GPU start - predicted start) plus its run's excess (GPU duration -
    predicted duration); "started_late" counts those where the delay is the larger part,
    "ran_long" the others, with the p90 of each part over the late ones (ms). And, over every
    scored grant, the median of its GPU duration over its predicted one per class of the
    predicted duration: an engine whose grants each cost a fixed time beyond their units
    runs over in the short class and under in the long one, whatever one scale it learns.
    And the Dones that carried no GPU time ("untimed": the interposer had no event pair, or
    read its end before its start) and the timed grants that ran under half their prediction
    ("under_half"): a grant timed across two streams read short or negative (the thirty-first
    session: a third of ripple-llm's grants that ended a layer)."""
    late = [(g.a_from - g.p_from, (g.a_to - g.a_from) - (g.p_to - g.p_from))
            for g in scored if g.a_to - g.p_to > late_ms * 1e6]
    ratio: dict[str, list[float]] = {label: [] for _, label in DURATION_BINS}
    for g in scored:
        pred = g.p_to - g.p_from
        if pred > 0 and g.a_to > g.a_from:
            ratio[next(label for top, label in DURATION_BINS if pred < top)].append((g.a_to - g.a_from) / pred)
    timed = [r for v in ratio.values() for r in v]
    return {"started_late": sum(1 for d, x in late if d >= x), "ran_long": sum(1 for d, x in late if d < x),
            "untimed": sum(1 for g in scored if g.done_at >= 0 and g.a_to <= g.a_from),
            "under_half": sum(1 for r in timed if r < 0.5),
            "start_delay_ms_p90": quantile([d / 1e6 for d, _ in late], 0.9),
            "excess_ms_p90": quantile([x / 1e6 for _, x in late], 0.9),
            "duration_ratio_p50": {label: quantile(v, 0.5) for label, v in ratio.items()},
            "duration_count": {label: len(v) for label, v in ratio.items()}}


def markdown(r: dict) -> str:
    out = ["| task | jobs | misses | DMR % | crossed | no traffic | charged | MB met (median of misses) | MB predicted "
           f"| no traffic: queued / near (< {r['near_ms']:g} ms after a grant) / apart |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for n, d in sorted(r["tasks"].items()):
        out.append(f"| {n} | {d['jobs']} | {d['misses']} | {100 * d['dmr']:.2f} | {d['crossed']} | {d['no_traffic']} | "
                   f"{d['charged_misses']} | {d['miss_actual_mb_median']:.1f} | {d['miss_predicted_mb_median']:.1f} | "
                   f"{d['no_traffic_queued']} / {d['no_traffic_near']} / {d['no_traffic_apart']} |")
    out += ["", "| engine | grants | discarded | late ends | end error p50 / p95 / p99 ms | idle % | "
                "idle: decision / delivery / other ms |", "|---|---|---|---|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        i = d["idle_ms"]
        out.append(f"| {n} | {d['grants']} | {d['discarded']} | {d['late_ends']} | {d['end_error_ms_p50']:.2f} / "
                   f"{d['end_error_ms_p95']:.2f} / {d['end_error_ms_p99']:.2f} | {100 * d['idle_share']:.1f} | "
                   f"{i['waiting_for_decision']:.0f} / {i['delivery']:.0f} / {i['other']:.0f} |")
    out += ["", f"| engine | late ends (> {r['late_ms']:g} ms): started late / ran long | p90 of their start delay / "
                "run excess ms | GPU / predicted duration p50 (grants), predicted " +
            " / ".join(label for _, label in DURATION_BINS) + " | Dones without GPU time / timed under half "
            "their prediction |", "|---|---|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        b = d["late_ends_by"]
        out.append(f"| {n} | {b['started_late']} / {b['ran_long']} | {b['start_delay_ms_p90']:.2f} / "
                   f"{b['excess_ms_p90']:.2f} | " + " / ".join(
                       f"{b['duration_ratio_p50'][label]:.2f} ({b['duration_count'][label]})"
                       for _, label in DURATION_BINS) + f" | {b['untimed']} / {b['under_half']} |")
    out += ["", "| engine | timed grants' GPU union s | GB/s over the union | GB/s predicted | GPU time sum / union | "
                "started on an idle GPU |", "|---|---|---|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        u = d["union_rate"]
        out.append(f"| {n} | {u['union_s']:.3f} | {u['gbps_union']:.1f} | {u['gbps_predicted']:.1f} | "
                   f"{u['sum_over_union']:.2f} | {u['drained']} |")
    out += ["", "| engine | grant before the gap | successors sent before it ended | GPU gaps | idle ms |",
            "|---|---|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        for label, b in d["idle_behind_ahead"].items():
            out.append(f"| {n} | {label} | {b['successors']} | {b['gaps']} | {b['idle_ms']:.1f} |")
    out += ["", "| engine | grants in hand (started, not done): none / one / two or more % | GB/s done |",
            "|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        h = d["in_hand"]
        out.append(f"| {n} | {100 * h['none']:.1f} / {100 * h['one']:.1f} / {100 * h['two_or_more']:.1f} | "
                   f"{h['done_gbps']:.1f} |")
    out += ["", f"| engine | no grant in hand, % of the time: in CPU jobs | gaps of {GAP_MIN_NS / 1e6:g} ms or more "
                f"between jobs: first {EDGE_NS / 1e6:g} ms / middle / last {EDGE_NS / 1e6:g} ms |", "|---|---|---|"]
    for n, d in sorted(r["engines"].items()):
        w = d["none_where"]
        out.append(f"| {n} | {100 * w['in_jobs']:.1f} | {100 * w['gap_first']:.1f} / {100 * w['gap_middle']:.1f} / "
                   f"{100 * w['gap_last']:.1f} |")
    if r["beside"]:
        out += ["", "| engine | host-byte grants beside another engine's (share of their GPU interval): alone < 5 % / "
                    "partly / mostly: grants, actual / predicted duration p50 (p90) |", "|---|---|"]
        for n, d in sorted(r["beside"].items()):
            out.append(f"| {n} | " + " / ".join(f"{b['grants']}, {b['ratio_p50']:.2f} ({b['ratio_p90']:.2f})"
                                                 for b in d.values()) + " |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--window", help="FROM_S,TO_S after the origin (the scored window)")
    ap.add_argument("--origin", choices=("first", "zero"), default="first",
                    help="--window counts from the first record (the agent's clock) or from 0 (ripple-sim's)")
    ap.add_argument("--late-ms", type=float, default=1.0, help="a late end: more than this after the prediction")
    ap.add_argument("--near-ms", type=float, default=5.0,
                    help="a no-traffic miss released less than this after a grant's GPU interval ended is 'near'")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    a = ap.parse_args(argv)
    window = None
    if a.window:
        try:
            f, t = (float(x) for x in a.window.split(","))
        except ValueError:
            print(f"trace_report: --window '{a.window}': expected FROM_S,TO_S", file=sys.stderr)
            return 2
        window = (f, t)
    try:
        with (gzip.open(a.trace, "rt") if a.trace.endswith(".gz") else open(a.trace)) as fh:
            tr = read(fh, a.trace)
    except OSError as e:
        print(f"trace_report: {a.trace}: {e.strerror}", file=sys.stderr)
        return 2
    except TraceError as e:
        print(f"trace_report: {e}", file=sys.stderr)
        return 2
    if a.origin == "zero":
        tr.t0 = 0
    if not a.near_ms >= 0:
        print(f"trace_report: --near-ms {a.near_ms:g}: must be >= 0", file=sys.stderr)
        return 2
    r = report(tr, window, a.late_ms, a.near_ms)
    print(json.dumps(r, indent=1) if a.json else markdown(r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
