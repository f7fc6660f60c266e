"""Pure metrics of ripple-bench: no I/O, no clocks. Unit-tested by tests/bench/metrics_test.py.

Times are CLOCK_MONOTONIC nanoseconds (the robot tasks' ground-truth logs) unless a name
says otherwise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Job:
    """One job of a periodic task, from its ground-truth log (tools/workloads/periodic.h)."""
    seq: int
    release_ns: int
    start_ns: int
    completion_ns: int
    plant_bytes: int = 0

    @property
    def response_ms(self) -> float:
        return (self.completion_ns - self.release_ns) / 1e6

    @property
    def work_ms(self) -> float:
        return (self.completion_ns - self.start_ns) / 1e6


def parse_log(text: str, source: str = "log") -> list[Job]:
    """Parses a task's ground-truth CSV (`seq,release_ns,start_ns,completion_ns,plant_bytes`).

    A header line is allowed; any other malformed line is an error naming the source and line.
    """
    jobs = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("seq"):
            continue
        parts = line.split(",")
        if len(parts) < 4:
            raise ValueError(f"{source}:{n}: expected seq,release_ns,start_ns,completion_ns[,plant_bytes]: {line!r}")
        try:
            vals = [int(p) for p in parts[:5]]
        except ValueError:
            raise ValueError(f"{source}:{n}: not an integer field: {line!r}") from None
        jobs.append(Job(*vals))
    return jobs


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in [0, 100]); nan for no values."""
    if not values:
        return math.nan
    v = sorted(values)
    rank = max(1, min(len(v), math.ceil(p / 100.0 * len(v))))
    return v[rank - 1]


def _binom_cdfs(n: int, p: float) -> list[float]:
    """[P(Bin(n, p) <= k) for k in 0..n]."""
    lp, lq, acc, out = math.log(p), math.log1p(-p), 0.0, []
    for i in range(n + 1):
        acc += math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq)
        out.append(min(1.0, acc))
    out[n] = 1.0
    return out


def quantile_ci(values: list[float], p: float, conf: float = 0.95) -> tuple[float | None, float | None]:
    """Distribution-free confidence interval for the p-quantile (p in (0, 100)) of what the
    values sample, from their order statistics: X_(l) <= q with probability P(B >= l) and
    X_(u) >= q with P(B <= u - 1), B ~ Bin(n, p/100) counting the values below q; each end
    holds with at least (1 + conf) / 2, the interval with conf. None for an end no order
    statistic reaches: with n values the largest bounds the p-quantile above only if
    1 - (p/100)^n >= (1 + conf) / 2 (the p99 at 95 %: n >= 368, quantile_ci_min_n), so a
    shorter sample says nothing of how far above its largest value the quantile may lie."""
    v = sorted(values)
    n, q, tail = len(v), p / 100.0, (1.0 - conf) / 2.0
    if n == 0 or not 0 < q < 1:
        return None, None
    cdf = _binom_cdfs(n, q)
    # The largest l with P(B >= l) = 1 - cdf[l - 1] >= 1 - tail; the smallest u with
    # P(B <= u - 1) = cdf[u - 1] >= 1 - tail.
    lo = next((v[l - 1] for l in range(n, 0, -1) if 1.0 - cdf[l - 1] >= 1.0 - tail), None)
    hi = next((v[u - 1] for u in range(1, n + 1) if cdf[u - 1] >= 1.0 - tail), None)
    return lo, hi


def quantile_ci_min_n(p: float, conf: float = 0.95) -> int:
    """The fewest values whose largest bounds the p-quantile above at conf (quantile_ci)."""
    return math.ceil(math.log((1.0 - conf) / 2.0) / math.log(p / 100.0))


def in_window(jobs: list[Job], t0_ns: int, t1_ns: int) -> list[Job]:
    """Jobs released inside the scored window [t0, t1)."""
    return [j for j in jobs if t0_ns <= j.release_ns < t1_ns]


@dataclass
class Pooled:
    """Jobs and misses of one task pooled over runs (the paper's Table 7 DMR)."""
    jobs: int = 0
    misses: int = 0
    responses_ms: list[float] = field(default_factory=list)

    def add(self, jobs: list[Job], deadline_ms: float) -> None:
        for j in jobs:
            r = j.response_ms
            self.responses_ms.append(r)
            self.jobs += 1
            if r > deadline_ms:
                self.misses += 1

    @property
    def dmr(self) -> float:
        return self.misses / self.jobs if self.jobs else math.nan


def worst_dmr(per_task: dict[str, Pooled]) -> float:
    """The highest pooled DMR over tasks (nan if a task has no jobs: that is a failure, not a pass)."""
    worst = 0.0
    for p in per_task.values():
        if p.jobs == 0:
            return math.nan
        worst = max(worst, p.dmr)
    return worst


def deadline_from_profile(responses_ms: list[float], k: float, period_ms: float) -> float:
    """Deadline = k x the co-run p99 response time, capped at the period (a deadline may not
    exceed the period: the agent refuses such a task)."""
    p99 = percentile(responses_ms, 99)
    if math.isnan(p99):
        raise ValueError("no profile jobs to take a p99 from")
    return min(k * p99, period_ms)


class CountersReset(ValueError):
    """An engine's counters at the window's end cannot be set against those at its start."""


def engine_entry(s: dict, engine: str) -> dict | None:
    """The status entry of `engine` (by name): the connected one, else the first listed
    (the agent lists connected engines first, then the most recently gone)."""
    named = [e for e in s.get("engines", []) if e.get("name") == engine]
    return next((e for e in named if e.get("connected")), named[0] if named else None)


def engine_counters(s0: dict, s1: dict, engine: str) -> tuple[dict, dict] | None:
    """The engine's counters at the window's start and end, from two `ripplectl status
    --json` replies; None where the end's does not list it, zeros at the start where the
    start's does not (it joined in the window).

    An engine renews its session (a new catalog, a new chunk size) and each session is a
    new entry whose own counters start at zero, so the entries' own counters are not
    comparable across a renewal. The agent also reports, per entry, its process's pid and
    the process's counters over all its sessions ("total"): the window is the difference
    of the totals of one pid. Raises CountersReset when the two cannot be compared: the
    engine is another process at the end (it restarted), or an agent without "total"
    shows another session (entry id) at the end."""
    e0, e1 = engine_entry(s0, engine), engine_entry(s1, engine)
    if e1 is None:
        return None
    if e0 is None:
        return {}, e1.get("total", e1)
    if "total" in e0 and "total" in e1:
        if e0.get("pid") != e1.get("pid"):
            raise CountersReset(f"engine {engine}: pid {e0.get('pid')} at the window's start, "
                                f"{e1.get('pid')} at its end (the engine restarted)")
        return e0["total"], e1["total"]
    if e0.get("id") != e1.get("id"):
        raise CountersReset(f"engine {engine}: session {e0.get('id')} at the window's start, {e1.get('id')} at "
                            f"its end, and this agent reports no per-process totals")
    return e0, e1


def gap_breakdown(s0: dict, s1: dict, engine: str, scored_s: float) -> dict[str, float]:
    """Paper Fig. 9: where the engine's scored time went, as fractions of the scored time.

    From two `ripplectl status --json` snapshots (window start, end): busy (grants executing),
    and the agent's wait-by-cause counters (budget wait, decision, delivery); `other` is the
    rest of the gap (engine side: between a grant's end and its next request, no work);
    `budget:CAUSE` splits the budget wait by the reason the agent gave (WaitCause).
    Summed over the engine's sessions in the window (engine_counters); raises CountersReset
    where they cannot be.
    """
    c = engine_counters(s0, s1, engine)
    if c is None or scored_s <= 0:
        return {}
    e0, e1 = c
    # busy is counted per grant, so a window can see a grant that began before it: cap it.
    w0 = e0.get("wait_ms", {})
    busy = min(scored_s, e1["busy_s"] - e0.get("busy_s", 0.0))
    w = {c: (e1["wait_ms"][c] - w0.get(c, 0.0)) / 1e3 for c in ("budget", "decision", "delivery")}
    gap = max(0.0, scored_s - busy)
    # A wait is counted when it ends, so one that began before the window can exceed the
    # gap: scale the causes down to the gap.
    tot = sum(w.values())
    scale = gap / tot if tot > gap > 0 else 1.0
    w = {c: v * scale for c, v in w.items()}
    other = max(0.0, gap - sum(w.values()))
    out = {"busy": busy / scored_s, "gap": gap / scored_s}
    out.update({k: v / scored_s for k, v in w.items()})
    out["other"] = other / scored_s
    # The budget wait by the reason the engine waited (the agent's wait_causes_ms, whose
    # parts sum to wait_ms.budget): "budget:CAUSE", scaled as the budget wait is. Absent
    # where the agent does not report it.
    c0, c1 = e0.get("wait_causes_ms", {}), e1.get("wait_causes_ms")
    if isinstance(c1, dict):
        for cause, v in c1.items():
            out[f"budget:{cause}"] = (v - c0.get(cause, 0.0)) / 1e3 * scale / scored_s
    return out


def hook_waits(h0: dict | None, h1: dict | None) -> dict[str, float]:
    """Where the engine's own grant waits went, from two snapshots of its interposer's stats
    file (RIPPLE_CUHOOK_STATS, rewritten every RIPPLE_CUHOOK_STATS_MS): the fraction of the
    interval between them (its own `mono_ns`) spent blocked at chunk gates (inside a unit, a
    sub-unit not yet granted) and at unit boundaries. Set against the agent's budget,
    decision and delivery waits over the same window, they tell whether the "other" gap is
    spent at the gates. {} when a snapshot is missing, from another process, or too old."""
    keys = ("pid", "mono_ns", "wait_ns", "chunk_wait_ns")
    if not h0 or not h1 or any(k not in h0 or k not in h1 for k in keys) or h0["pid"] != h1["pid"]:
        return {}
    span = h1["mono_ns"] - h0["mono_ns"]
    if span <= 0:
        return {}
    chunk = h1["chunk_wait_ns"] - h0["chunk_wait_ns"]
    boundary = (h1["wait_ns"] - h0["wait_ns"]) - chunk
    return {"hook_chunk_wait": chunk / span, "hook_boundary_wait": boundary / span}


# The interposer's counters that say where a gated engine's grant boundaries went (the
# stats file's keys, include/ripple/cuhook.h): how many acquires found their grant already
# in hand, how many sessions the engine opened (each chunk-size change is one), works
# announced ahead and drained, grant timeouts, units run unmanaged, and the GPU time
# between consecutive grants (boundary_gap_ns over boundary_gaps), and the timing events'
# records the driver refused (event_record_failures: such a grant's Done carries no GPU time).
# pin_waits_given_up: context ends that stopped waiting (1 s) for the watcher's driver call.
HOOK_COUNTERS = ("grants", "grant_waits", "grants_in_hand", "chunk_waits", "chunks", "chunk_gates",
                 "chunk_changes", "agent_connects", "agent_losses", "grant_timeouts", "unmanaged_units",
                 "works_ahead", "ahead_drained", "work_start_waits", "work_starts_in_hand",
                 "boundary_gaps", "boundary_gap_ns", "connect_failures", "passes_recalled",
                 "event_record_failures", "pin_waits_given_up")


def hook_counters(h0: dict | None, h1: dict | None) -> dict[str, int]:
    """The HOOK_COUNTERS over the interval between two snapshots of one process's stats
    file (as hook_waits); {} when a snapshot is missing or from another process. A key an
    older interposer does not write is left out."""
    if not h0 or not h1 or h0.get("pid") is None or h0.get("pid") != h1.get("pid"):
        return {}
    return {k: int(h1[k]) - int(h0[k]) for k in HOOK_COUNTERS
            if isinstance(h0.get(k), (int, float)) and isinstance(h1.get(k), (int, float))}


UNTOUCHED_COUNTERS = ("jobs", "untouched_jobs", "untouched_misses")


def budget_wait_note(gaps: dict) -> str:
    """For a run's progress line: the LLM's budget wait, its causes and the tasks whose jobs
    bound B(t), each ≥ 0.5 % of the window ("; budget wait 10 % (budget 9, crossing 1; B(t)
    bound by sgm 8, costmap 1)"); "" when it waited less than 0.5 % or the agent gives none."""
    b = gaps.get("budget")
    if not isinstance(b, (int, float)) or math.isnan(b) or b < 0.005:
        return ""
    def parts(prefix: str) -> str:
        kv = sorted(((k[len(prefix):], v) for k, v in gaps.items()
                     if k.startswith(prefix) and isinstance(v, (int, float)) and v >= 0.005), key=lambda x: -x[1])
        return ", ".join(f"{n} {100 * v:.0f}" for n, v in kv)
    causes, tasks = parts("budget:"), parts("budget@")
    inner = "; ".join(x for x in (causes, f"B(t) bound by {tasks}" if tasks else "") if x)
    return f"; budget wait {100 * b:.0f} %" + (f" ({inner})" if inner else "")


def tasks_by_name(s: dict | None) -> dict[str, dict]:
    """An agent status reply's tasks by name ({} for a reply without them)."""
    return {t["name"]: t for t in (s or {}).get("tasks", []) if isinstance(t, dict) and "name" in t}


def budget_wait_by_task(s0: dict, s1: dict, scored_s: float) -> dict[str, float]:
    """Per task, as "budget@TASK": the engines' time waiting on B(t) while the task's job bound
    it (the agent's per-task `budget_wait_ms`, summed over the engines), as a fraction of the
    scored window. A task either reply lacks, or whose counter an older agent does not write
    or that went backwards (another agent), is left out."""
    t0, t1 = tasks_by_name(s0), tasks_by_name(s1)
    out = {}
    for name in t0.keys() & t1.keys():
        a, b = t0[name].get("budget_wait_ms"), t1[name].get("budget_wait_ms")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b >= a and scored_s > 0:
            out[f"budget@{name}"] = (b - a) / 1e3 / scored_s
    return out


def untouched_delta(s0: dict, s1: dict) -> dict[str, dict[str, int]]:
    """Per task, over the interval between two agent status replies: its jobs, those no GPU
    byte was admitted into, and those of them that missed (the agent's `untouched_*`
    counters: Documentation/agent.md). A task either reply lacks, or whose counters an older
    agent does not write or that went backwards (another agent), is left out."""
    t0, t1 = tasks_by_name(s0), tasks_by_name(s1)
    out = {}
    for name in t0.keys() & t1.keys():
        a, b = t0[name], t1[name]
        if not all(isinstance(a.get(k), int) and isinstance(b.get(k), int) for k in UNTOUCHED_COUNTERS):
            continue
        d = {k: b[k] - a[k] for k in UNTOUCHED_COUNTERS}
        if min(d.values()) >= 0:
            out[name] = d
    return out


def untouched_share(runs: list[dict[str, dict[str, int]]]) -> dict[str, dict]:
    """untouched_delta pooled over runs, per task, with the misses no grant was admitted into
    as a share of all the task's jobs ("share", None without jobs): a share above eps alone
    broke eps, unless a grant ran past its predicted end into those jobs."""
    out: dict[str, dict] = {}
    for r in runs:
        for name, d in r.items():
            acc = out.setdefault(name, {k: 0 for k in UNTOUCHED_COUNTERS})
            for k in UNTOUCHED_COUNTERS:
                acc[k] += d[k]
    for acc in out.values():
        acc["share"] = acc["untouched_misses"] / acc["jobs"] if acc["jobs"] else None
    return out


ENGINE_COUNTERS = ("works_done", "bytes", "deadline_misses", "grants", "successors", "stale", "late_ends", "queued",
                   "for_release", "link_held", "expired")


def engine_delta(s0: dict, s1: dict, engine: str) -> dict[str, float]:
    """Counters of one engine over the window: works done, bytes, deadline misses, grants,
    successors, stale grants, grants that ended late against their prediction, grants that
    ran queued behind the one before (pipelined). Summed over the engine's sessions in the
    window (engine_counters); 0 where a reply does not list it; raises CountersReset where
    they cannot be compared."""
    c = engine_counters(s0, s1, engine)
    if c is None:
        return {k: 0 for k in ENGINE_COUNTERS}
    e0, e1 = c
    return {k: e1.get(k, 0) - e0.get(k, 0) for k in ENGINE_COUNTERS}


@dataclass
class FluidTask:
    """Input of the throughput bound for one task."""
    jobs: list[Job]          # a profile run (engines idle): releases and work
    deadline_ms: float
    kappa_ms_per_gb: float   # delay per GB of GPU traffic (exact on the plant)
    eps: float               # miss tolerance


def fluid_bound_gbps(tasks: list[FluidTask], peak_gbps: float, step_ms: float = 0.5) -> float:
    """Theoretical throughput bound (paper §5.2, Fig. 6 diamonds), in GB/s of GPU traffic.

    Every GPU unit is replaced by a fixed-rate stream of its bytes: no grants, no protocol,
    no VLM due times. While no CPU job is active the stream runs at `peak_gbps`. While jobs
    are active it runs at the lowest of their rates r_i, where r_i is the constant rate that
    still lets task i's (1 - eps)-quantile response meet its deadline:
    a stream at r stretches a job by 1/(1 - kappa r), so r_i = (1 - q_i / D_i) / kappa_i.
    Job i is active from its start for work/(1 - kappa_i r_i). The timeline is the profile
    run's (engines resident but idle), sampled every `step_ms`.
    """
    if not tasks:
        return peak_gbps
    t_lo = min(j.start_ns for t in tasks for j in t.jobs) if any(t.jobs for t in tasks) else 0
    t_hi = max(j.completion_ns for t in tasks for j in t.jobs) if any(t.jobs for t in tasks) else 0
    if t_hi <= t_lo:
        return peak_gbps
    step_ns = int(step_ms * 1e6)
    nbins = (t_hi - t_lo) // step_ns + 1
    cap = [peak_gbps] * nbins
    for t in tasks:
        q = percentile([j.response_ms for j in t.jobs], 100.0 * (1.0 - t.eps))
        kappa_s_per_gb = t.kappa_ms_per_gb / 1e3
        if kappa_s_per_gb <= 0:
            continue
        r = max(0.0, (1.0 - q / t.deadline_ms) / kappa_s_per_gb) if t.deadline_ms > 0 else 0.0
        r = min(r, peak_gbps)
        stretch = 1.0 / max(1e-9, 1.0 - kappa_s_per_gb * r)
        for j in t.jobs:
            end = j.start_ns + int((j.completion_ns - j.start_ns) * stretch)
            for b in range((j.start_ns - t_lo) // step_ns, min(nbins, (end - t_lo) // step_ns + 1)):
                if cap[b] > r:
                    cap[b] = r
    return sum(cap) / nbins


def unmanaged_kappas(results: list, k: float, tasks: list[tuple[str, list[Job], float]], eps: float) -> dict[str, float]:
    """Each task's kappa (ms/GB) as the unmanaged runs at k measured it, in the fluid bound's
    own model: a stream at rate R stretches a job by 1 / (1 - kappa R), so with the profile's
    (1 - eps)-quantile q_p and the unmanaged runs' pooled q_u at their host rate R (the LLM's
    and the VLM's granted GB/s, averaged over the runs), kappa = (1 - q_p / q_u) / R; 0 where
    unmanaged was no slower. Unlike the agent's estimate, it does not depend on the policy
    under test, and the bound it gives is never contradicted by the unmanaged run it came
    from. It takes the host's own noise in those runs as the GPU's, so the kappa errs high
    and the bound low. {} without an unmanaged run at k."""
    un = [r for r in results if r.policy == "unmanaged" and r.k == k]
    if not un:
        return {}
    rate = sum(r.llm_gbps + r.vlm["bytes"] / 1e9 / r.score_s for r in un) / len(un)
    out = {}
    for name, profile, _ in tasks:
        qp = percentile([j.response_ms for j in profile], 100.0 * (1.0 - eps))
        qu = percentile([j.response_ms for r in un for j in r.jobs.get(name, [])], 100.0 * (1.0 - eps))
        if rate > 0 and qp == qp and qu == qu and qu > 0:
            out[name] = max(0.0, 1.0 - qp / qu) / rate * 1e3
    return out


def gpu_fluid_bound(results: list, k: float, tasks: list[tuple[str, list[Job], float]], eps: float,
                    kappas: dict[str, float] | None = None) -> float:
    """The fluid bound at k on the GPU, tokens/s (fluid_bound_gbps). kappa is unknown there:
    the agent's estimate at the end of the ripple run at this k (a ripple variant's where no
    plain ripple ran: its estimator is the same); the peak rate and the bytes per token are
    the unmanaged runs'; the VLM's bytes are taken off. `results`: the bench's RunResults
    (policy, k, status_end, llm_gbps, llm_tok_s, vlm, score_s); `tasks`: (name, profile
    jobs, deadline ms). `kappas`: each task's kappa in place of the agent's (unmanaged_kappas).
    nan without a ripple and an unmanaged run at k."""
    rr = ([r for r in results if r.policy == "ripple" and r.k == k] or
          [r for r in results if r.policy.startswith("ripple+") and r.k == k])
    un = [r for r in results if r.policy == "unmanaged" and r.k == k]
    if not rr or not un:
        return math.nan
    if kappas is None:
        kappas = {t["name"]: t["kappa_ms_per_gb"] for t in rr[-1].status_end.get("tasks", [])}
    peak = max(r.llm_gbps for r in un)
    tok = max(r.llm_tok_s for r in un)
    per_tok = peak / tok if tok > 0 else math.nan
    vlm_gbps = sum(r.vlm["bytes"] for r in rr) / 1e9 / sum(r.score_s for r in rr)
    gbps = fluid_bound_gbps([FluidTask(jobs, d, kappas.get(n, 0.0), eps) for n, jobs, d in tasks], peak)
    return max(0.0, gbps - vlm_gbps) / per_tok


def feasible(worst: float, eps: float, vlm_misses: int) -> bool:
    """A point is feasible only if every CPU task meets eps and every VLM deadline is met."""
    return not math.isnan(worst) and worst <= eps and vlm_misses == 0


def frames_due(frames: list[tuple[int, int]], period_ns: int, deadline_ns: int,
               t0_ns: int, t1_ns: int) -> tuple[int, int]:
    """Deadline-bound frames judged in a window: (frames whose deadline falls in [t0, t1), late).

    `frames` are a periodic engine's logged (release_ns, end_ns), every frame from its first
    (releases lie on the lattice r0 + i x period; r0 = the first logged release). A frame of
    the lattice whose deadline passed with no log entry has missed it (still running or
    never started). With nothing logged at all, every period of the window counts as missed.
    """
    if period_ns <= 0:
        raise ValueError("period_ns must be > 0")
    if not frames:
        n = max(0, (t1_ns - t0_ns) // period_ns)
        return n, n
    r0 = min(r for r, _ in frames)
    ends = {}
    for rel, end in frames:
        ends[round((rel - r0) / period_ns)] = end
    i_lo = max(0, math.ceil((t0_ns - deadline_ns - r0) / period_ns))
    i_hi = math.ceil((t1_ns - deadline_ns - r0) / period_ns) - 1
    judged = late = 0
    for i in range(i_lo, i_hi + 1):
        r = r0 + i * period_ns
        judged += 1
        e = ends.get(i)
        if e is None or e - r > deadline_ns:
            late += 1
    return judged, late
