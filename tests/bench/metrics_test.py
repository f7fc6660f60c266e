#!/usr/bin/env python3
# Unit tests of ripple-bench's pure metrics and table (tools/bench/ripple-bench/benchlib), TAP.
import math
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools/bench/ripple-bench"))
from benchlib import metrics, options, profile_notes, report  # noqa: E402

from taplib import Skip, case, run  # noqa: E402 -- beside this file


def job(seq, release_ms, start_ms, end_ms):
    return metrics.Job(seq, int(release_ms * 1e6), int(start_ms * 1e6), int(end_ms * 1e6))


@case
def parse_log_names_bad_line():
    """Tests that a malformed ground-truth line is an error naming the file and line."""
    assert metrics.parse_log("seq,release_ns,start_ns,completion_ns,plant_bytes\n0,10,20,30,5\n", "t.csv") == \
        [metrics.Job(0, 10, 20, 30, 5)]
    try:
        metrics.parse_log("0,10,20,30,0\n1,x,2,3,0\n", "t.csv")
    except ValueError as e:
        assert str(e).startswith("t.csv:2: not an integer field"), e
    else:
        raise AssertionError("no error")


@case
def percentile_nearest_rank():
    """Tests the nearest-rank percentile (p99 of 100 values is the 99th)."""
    v = list(range(1, 101))
    assert metrics.percentile(v, 99) == 99 and metrics.percentile(v, 100) == 100 and metrics.percentile(v, 50) == 50
    assert math.isnan(metrics.percentile([], 99))


@case
def pooled_dmr_over_runs():
    """Tests that DMR pools jobs over runs (misses / jobs, not a mean of per-run rates)."""
    p = metrics.Pooled()
    p.add([job(0, 0, 0, 5), job(1, 10, 10, 25)], 10.0)        # run 1: 1 of 2 late
    p.add([job(i, 100 * i, 100 * i, 100 * i + 1) for i in range(8)], 10.0)   # run 2: 0 of 8
    assert (p.jobs, p.misses) == (10, 1) and abs(p.dmr - 0.1) < 1e-12


@case
def worst_dmr_without_jobs_is_not_a_pass():
    """Tests that a task with no scored jobs makes the worst DMR nan (infeasible), not 0."""
    a, b = metrics.Pooled(), metrics.Pooled()
    a.add([job(0, 0, 0, 1)], 10)
    assert math.isnan(metrics.worst_dmr({"a": a, "b": b}))
    assert not metrics.feasible(metrics.worst_dmr({"a": a, "b": b}), 0.05, 0)
    assert not metrics.feasible(0.0, 0.05, 1)      # a VLM miss alone is infeasible


@case
def deadline_is_k_times_p99_capped_at_period():
    """Tests deadline = k x co-run p99, never above the period."""
    r = [10.0] * 99 + [20.0]
    assert metrics.deadline_from_profile(r, 1.5, 100) == 15.0
    assert metrics.deadline_from_profile(r, 2.0, 18) == 18


@case
def window_selects_by_release():
    """Tests that the scored window keeps jobs released in [t0, t1)."""
    js = [job(i, 10 * i, 10 * i, 10 * i + 3) for i in range(10)]
    assert [j.seq for j in metrics.in_window(js, int(20e6), int(50e6))] == [2, 3, 4]


@case
def gap_breakdown_from_status():
    """Tests the Fig. 9 breakdown from two status snapshots (fractions of scored time)."""
    e = lambda busy, b, d, v: {"engines": [{"name": "llm", "busy_s": busy,
                                            "wait_ms": {"budget": b, "decision": d, "delivery": v}}]}
    g = metrics.gap_breakdown(e(1, 100, 10, 10), e(7, 2100, 110, 310), "llm", 10.0)
    assert abs(g["busy"] - 0.6) < 1e-9 and abs(g["budget"] - 0.2) < 1e-9 and abs(g["decision"] - 0.01) < 1e-9
    assert abs(g["delivery"] - 0.03) < 1e-9 and abs(g["other"] - 0.16) < 1e-9 and abs(g["gap"] - 0.4) < 1e-9
    assert metrics.gap_breakdown(e(0, 0, 0, 0), {"engines": []}, "llm", 10.0) == {}


@case
def budget_wait_by_cause():
    """Tests the budget wait's split by the agent's wait cause (wait_causes_ms): each cause's
    share of the scored time, scaled as the budget wait is when the waits exceed the gap;
    left out where the agent reports none; and the point's table of causes (report)."""
    e = lambda busy, b, causes: {"engines": [{"name": "llm", "busy_s": busy,
                                              "wait_ms": {"budget": b, "decision": 0, "delivery": 0},
                                              **({"wait_causes_ms": causes} if causes is not None else {})}]}
    g = metrics.gap_breakdown(e(1, 100, {"budget": 100, "crossing": 0}),
                              e(7, 2100, {"budget": 1600, "crossing": 500}), "llm", 10.0)
    assert abs(g["budget:budget"] - 0.15) < 1e-9 and abs(g["budget:crossing"] - 0.05) < 1e-9, g
    assert abs(g["budget:budget"] + g["budget:crossing"] - g["budget"]) < 1e-9
    # 8 s of waits in a 4-s gap: every part scaled by one half, as the budget wait is.
    g = metrics.gap_breakdown(e(0, 0, {}), e(6, 8000, {"budget": 6000, "link": 2000}), "llm", 10.0)
    assert abs(g["budget"] - 0.4) < 1e-9 and abs(g["budget:budget"] - 0.3) < 1e-9, g
    assert abs(g["budget:link"] - 0.1) < 1e-9, g
    g = metrics.gap_breakdown(e(0, 0, None), e(6, 100, None), "llm", 10.0)
    assert not any(k.startswith("budget:") for k in g), g
    # Per task: the agent's budget_wait_ms over the window, an older agent's task left out.
    t = lambda name, ms: {"name": name, **({"budget_wait_ms": ms} if ms is not None else {})}
    bt = metrics.budget_wait_by_task({"tasks": [t("sgm", 100.0), t("kdnn", 0.0), t("old", None)]},
                                     {"tasks": [t("sgm", 1600.0), t("kdnn", 200.0), t("old", None)]}, 10.0)
    assert bt == {"budget@sgm": 0.15, "budget@kdnn": 0.02}, bt
    assert metrics.budget_wait_by_task({"tasks": [t("sgm", 100.0)]}, {"tasks": [t("sgm", 50.0)]}, 10.0) == {}
    pts = [{"policy": "ripple", "k": 1.1, "gaps": {"budget": 0.1, "budget:budget": 0.08, "budget:crossing": 0.02,
                                                    "budget:link": 0.0, "budget@sgm": 0.07, "budget@kdnn": 0.0}},
           {"policy": "unmanaged", "k": 1.1, "gaps": {"budget": 0.0}}]
    t = report.budget_causes_table(pts)
    assert "| policy | k | budget | crossing | B(t) bound by sgm |" in t, t
    assert "| ripple | 1.1 | 8.00 | 2.00 | 7.00 |" in t, t
    assert not any(line.startswith("| unmanaged") for line in t), t
    assert report.budget_causes_table([pts[1]]) == []
    # The run's progress line: the parts of 0.5 % or more, largest first.
    assert metrics.budget_wait_note(pts[0]["gaps"]) == \
        "; budget wait 10 % (budget 8, crossing 2; B(t) bound by sgm 7)", metrics.budget_wait_note(pts[0]["gaps"])
    assert metrics.budget_wait_note({"budget": 0.1}) == "; budget wait 10 %"
    assert metrics.budget_wait_note({"budget": 0.001, "budget:budget": 0.001}) == ""
    assert metrics.budget_wait_note({}) == ""


@case
def allowance_table_names_the_margin_where_the_allowance_is_zero():
    """Tests the table of the agent's samples: zero allowances, the pricing past D with no
    bytes (q unbounded counts), the held slope's median; samples outside the scored window
    and points without samples are left out."""
    def x(alloc, a, q, kappa):
        return {"allowance_bytes": alloc, "a_hat_ms": a, "margin_ms": q, "kappa_ms_per_gb": kappa}
    samples = [{"t_s": 1.0, "tasks": {"sgm": x(0, 50.0, 50.0, 9.0)}},            # before the window
               {"t_s": 11.0, "tasks": {"sgm": x(0, 20.0, 50.0, 5.0)}},           # 70 >= 68: past D
               {"t_s": 12.0, "tasks": {"sgm": x(0, 20.0, None, 5.0)}},           # q unbounded
               {"t_s": 13.0, "tasks": {"sgm": x(10**9, 20.0, 40.0, 1.0)}},
               {"t_s": 14.0, "tasks": {"sgm": x(10**9, 20.0, 48.0, 2.0)}},        # 68 >= 68: past D
               {"t_s": 45.0, "tasks": {"sgm": x(0, 50.0, 50.0, 9.0)}}]           # after it
    s = {"tasks": ["sgm", "kdnn"], "score_s": 30.0, "points": [
        {"policy": "ripple", "k": 1.1, "deadlines_ms": {"sgm": 68.0, "kdnn": 110.0},
         "timelines": [{"scored_from_s": 10.0, "samples": samples}]},
        {"policy": "ripple+iv", "k": 1.1, "deadlines_ms": {"sgm": 68.0, "kdnn": 110.0}, "timelines": []},
        {"policy": "unmanaged", "k": 1.1, "deadlines_ms": {"sgm": 68.0, "kdnn": 110.0},
         "timelines": [{"scored_from_s": 10.0, "samples": samples}]}]}
    t = report.allowance_table(s)
    assert "| policy | k | sgm | kdnn |" in t, t
    assert "| ripple | 1.1 | 50 (75), 3.50 | n/a |" in t, t
    assert not any(line.startswith(("| ripple+iv", "| unmanaged")) for line in t), t
    assert report.allowance_table({**s, "points": s["points"][1:]}) == []
    # Agents since a976a44 report the priced line: its slope's median and the fixed lines' share.
    for i, row in enumerate(samples):
        row["tasks"]["sgm"].update(priced_slope_ms_per_gb=float(i), fixed_line=i % 2 == 1)
    assert "| ripple | 1.1 | 50 (75), 3.50; priced at 2.50, on a fixed line 50 % | n/a |" in report.allowance_table(s)


@case
def hook_waits_from_the_interposer_stats():
    """Tests the interposer's chunk-gate and boundary waits over a window, as fractions of
    the interval between its two stats snapshots, and {} when they cannot be compared."""
    h = lambda pid, t, w, c: {"pid": pid, "mono_ns": t, "wait_ns": w, "chunk_wait_ns": c}
    g = metrics.hook_waits(h(7, 1_000, 100, 40), h(7, 11_000, 3_100, 1_040))
    assert abs(g["hook_chunk_wait"] - 0.1) < 1e-9 and abs(g["hook_boundary_wait"] - 0.2) < 1e-9, g
    assert metrics.hook_waits(h(7, 0, 0, 0), h(8, 10, 5, 1)) == {}, "another process"
    assert metrics.hook_waits(None, h(7, 10, 5, 1)) == {}
    assert metrics.hook_waits(h(7, 10, 0, 0), h(7, 10, 5, 1)) == {}, "no interval"
    assert metrics.hook_waits({"pid": 7}, h(7, 10, 5, 1)) == {}, "an older interposer's file"


@case
def hook_counters_over_a_window():
    """Tests the interposer's boundary counters over a window: differences of one process's
    two snapshots, a key an older interposer lacks left out, {} for another process or a
    missing snapshot; and that a point sums them over its runs (llm_hook)."""
    h0 = {"pid": 7, "grants": 10, "grants_in_hand": 4, "chunk_changes": 1, "agent_connects": 2,
          "event_record_failures": 0, "event_pools": 1}
    h1 = {"pid": 7, "grants": 110, "grants_in_hand": 64, "chunk_changes": 3, "agent_connects": 4,
          "event_record_failures": 3, "event_pools": 2}
    c = metrics.hook_counters(h0, h1)
    # event_pools is a gauge (pools held now), not a count over the window: left out.
    assert c == {"grants": 100, "grants_in_hand": 60, "chunk_changes": 2, "agent_connects": 2,
                 "event_record_failures": 3}, c
    assert metrics.hook_counters(h0, dict(h1, pid=8)) == {}, "another process"
    assert metrics.hook_counters(None, h1) == {} and metrics.hook_counters(h0, None) == {}
    import types
    o = types.SimpleNamespace(ks=[2.0], policies=["ripple"], eps=0.02, variants={}, runs=2, prep_s=1.0,
                              ripple_prep_s=1.0, score_s=10.0, policy_runs={})
    run = lambda rep, hook: types.SimpleNamespace(
        policy="ripple", k=2.0, rep=rep, deadlines_ms={"a": 50.0}, jobs={"a": [job(0, 0, 0, 10)]},
        llm={"bytes": 1e9, "grants": 1}, vlm={"bytes": 0, "works_done": 0, "deadline_misses": 0},
        gaps={}, llm_tok_s=1.0, llm_gbps=0.1, score_s=10.0, timeline=[], perturbations=[], t0_rel_s=0.0, hook=hook)
    b = types.SimpleNamespace(o=o, tasks=[types.SimpleNamespace(name="a", period_ms=100.0)], mix_name="M",
                              layout="l", gpu=None, profile={"a": [job(0, 0, 0, 10)]}, bound=lambda k: 2.0,
                              results=[run(0, c), run(1, {"grants": 50})])
    p = report.summarize(b, True)["points"][0]
    assert p["llm_hook"] == {"grants": 150, "grants_in_hand": 60, "chunk_changes": 2, "agent_connects": 2,
                             "event_record_failures": 3}, p["llm_hook"]


@case
def fluid_bound():
    """Tests the fluid bound: peak rate between jobs, the slack rate r = (1 - q/D)/kappa
    while a job runs (for its stretched duration), zero while a job has no slack."""
    # One task, a 10 ms job every 100 ms, deadline 20 ms, kappa 500 ms/GB -> r = 1 GB/s
    # (stretch 2: active 20 of every 100 ms); peak 4 GB/s -> 0.8 x 4 + 0.2 x 1 = 3.4 GB/s.
    js = [job(i, 100 * i, 100 * i, 100 * i + 10) for i in range(50)]
    b = metrics.fluid_bound_gbps([metrics.FluidTask(js, 20.0, 500.0, 0.02)], 4.0, step_ms=0.5)
    assert abs(b - 3.4) < 0.05, b
    # No slack (deadline = response): nothing may stream during jobs: 0.9 x 4 = 3.6 (jobs 10 ms).
    b0 = metrics.fluid_bound_gbps([metrics.FluidTask(js, 10.0, 500.0, 0.02)], 4.0, step_ms=0.5)
    assert abs(b0 - 3.6) < 0.05 and b0 < 4.0, b0


@case
def gpu_bound_uses_a_ripple_variant_when_plain_ripple_did_not_run():
    """Tests that on the GPU the fluid bound takes kappa from a ripple variant's run when
    the sweep ran no plain ripple (`--policies ripple+aw,unmanaged`: it printed nan), plain
    ripple's where both ran, and stays nan without an unmanaged run (no peak rate)."""
    import types
    js = [job(i, 100 * i, 100 * i, 100 * i + 10) for i in range(50)]
    st = lambda kappa: {"tasks": [{"name": "a", "kappa_ms_per_gb": kappa}]}
    run = lambda pol, kappa=0.0, gbps=4.0, tok=1.0: types.SimpleNamespace(
        policy=pol, k=1.5, status_end=st(kappa), llm_gbps=gbps, llm_tok_s=tok, vlm={"bytes": 0}, score_s=10.0)
    tasks = [("a", js, 20.0)]
    results = [run("ripple+aw", 500.0), run("unmanaged")]
    # As fluid_bound: 3.4 GB/s at 4 GB/s a token.
    b = metrics.gpu_fluid_bound(results, 1.5, tasks, 0.02)
    assert abs(b - 0.85) < 0.02, b
    results.insert(0, run("ripple", 0.0))   # plain ripple first: its kappa (0: no slowdown)
    assert abs(metrics.gpu_fluid_bound(results, 1.5, tasks, 0.02) - 1.0) < 1e-9
    assert math.isnan(metrics.gpu_fluid_bound([run("ripple+aw", 500.0)], 1.5, tasks, 0.02))
    assert math.isnan(metrics.gpu_fluid_bound(results, 2.0, tasks, 0.02))   # nothing ran at k = 2


@case
def unmanaged_kappas_make_the_bound_agree_with_the_unmanaged_run():
    """Tests unmanaged_kappas: the profile's 10-ms jobs took 20 ms under unmanaged at 4 GB/s
    of LLM and 1 GB/s of VLM traffic (5 GB/s), so kappa = (1 - 10/20) / 5 GB/s = 100 ms/GB;
    a task unmanaged did not slow gets 0; none without an unmanaged run at k. With it, the
    bound streams at r = (1 - q/D) / kappa = (1 - 10/20) / 0.1 = 5 GB/s while jobs run, the
    rate unmanaged ran at without a miss (D = 20 ms): no slower than the peak here, so the
    bound is the peak less the VLM's bytes, 3 GB/s over 4 GB/s a token."""
    import types
    prof = [job(i, 100 * i, 100 * i, 100 * i + 10) for i in range(50)]
    slow = [job(i, 100 * i, 100 * i, 100 * i + 20) for i in range(50)]
    run = lambda pol, jobs: types.SimpleNamespace(
        policy=pol, k=1.5, jobs={"a": jobs, "b": prof}, llm_gbps=4.0, llm_tok_s=1.0, vlm={"bytes": 10e9},
        score_s=10.0, status_end={"tasks": [{"name": "a", "kappa_ms_per_gb": 0.0}]})
    tasks = [("a", prof, 20.0), ("b", prof, 20.0)]
    results = [run("ripple", prof), run("unmanaged", slow)]
    k = metrics.unmanaged_kappas(results, 1.5, tasks, 0.02)
    assert k == {"a": 100.0, "b": 0.0}, k
    assert metrics.unmanaged_kappas(results, 2.0, tasks, 0.02) == {}
    b = metrics.gpu_fluid_bound(results, 1.5, tasks, 0.02, k)
    assert abs(b - 0.75) < 1e-9, b
    # A tighter deadline (15 ms): r = (1 - 10/15) / 0.1 = 3.33 GB/s while a job runs
    # (10 ms stretched to 15 of every 100), the peak 4 GB/s between: 0.15 x 3.33 + 0.85 x 4
    # = 3.9 GB/s, less the VLM's 1 GB/s, over 4 GB/s a token: 0.725.
    b = metrics.gpu_fluid_bound(results, 1.5, [("a", prof, 15.0), ("b", prof, 15.0)], 0.02, k)
    assert abs(b - 0.725) < 0.01, b


@case
def bound_notes_flag_a_bound_the_measurements_contradict():
    """Tests bound_notes: a feasible point above the bound (the e2e call-1 case: ripple 0.65
    against a 'bound' of 0.51) and an infeasible unmanaged run the bound reaches (call 4:
    unmanaged missed 82 % at the bound's 1.40) are named; a consistent bound, a nan one and
    a feasible point within 2 % of it are not."""
    pt = lambda pol, k, tok, feasible: {"policy": pol, "k": k, "llm_tok_s": tok, "feasible": feasible}
    points = [pt("ripple", 1.1, 0.65, True), pt("unmanaged", 1.1, 1.29, False),
              pt("ripple", 1.5, 0.60, True), pt("unmanaged", 1.5, 1.40, False),
              pt("ripple", 2.0, 1.28, True), pt("unmanaged", 2.0, 1.37, True),
              pt("ripple", 3.0, 1.0, True)]
    n = report.bound_notes(points, {"1.1": 0.51, "1.5": 1.40, "2": 1.38, "3": math.nan})
    assert set(n) == {"1.1", "1.5"}, n
    assert n["1.1"] == "ripple met every target at 0.65 tokens/s, above it", n
    assert n["1.5"] == "unmanaged missed eps at 1.40 tokens/s, which it reaches", n
    assert report.bound_notes([pt("ripple", 2.0, 1.40, True)], {"2": 1.38}) == {}


@case
def vlm_host_bytes_and_llm_share_reported():
    """Tests that a point reports the VLM's granted GB/s, its late frames over those judged,
    and the LLM's share of both engines' granted bytes, in results and in the per-point table."""
    import types
    o = types.SimpleNamespace(ks=[1.5], policies=["ripple"], eps=0.02, variants={}, runs=2, prep_s=1.0,
                              ripple_prep_s=1.0, score_s=10.0, policy_runs={})
    run = lambda rep, llm_b, vlm_b, late: types.SimpleNamespace(
        policy="ripple", k=1.5, rep=rep, deadlines_ms={"a": 50.0}, jobs={"a": [job(0, 0, 0, 10)]},
        llm={"bytes": llm_b, "grants": 1}, vlm={"bytes": vlm_b, "works_done": 2, "deadline_misses": late},
        gaps={}, llm_tok_s=1.0, llm_gbps=llm_b / 1e10, score_s=10.0, timeline=[], perturbations=[], t0_rel_s=0.0,
        hook={})
    b = types.SimpleNamespace(o=o, tasks=[types.SimpleNamespace(name="a", period_ms=100.0)], mix_name="M",
                              layout="l", gpu=None, profile={"a": [job(0, 0, 0, 10)]}, bound=lambda k: 2.0,
                              results=[run(0, 60e9, 20e9, 0), run(1, 60e9, 40e9, 1)])
    s = report.summarize(b, True)
    p = s["points"][0]
    assert abs(p["vlm_gbps"] - 3.0) < 1e-9 and abs(p["llm_byte_share"] - 2 / 3) < 1e-9, p
    assert (p["vlm_misses"], p["vlm_frames"], p["feasible"]) == (1, 4, False), p
    md = report.markdown_table(s)
    assert "| VLM late | tok/s | GB/s | VLM GB/s | LLM share |" in md, md
    assert "| 1/4 | 1.00 | 6.000 | 3.000 | 66.67 |" in md, md


@case
def table7_folds_cap_levels():
    """Tests that cap-x levels fold into one row: the best feasible level, else the lowest DMR."""
    pt = lambda pol, tok, dmr, feas: {"policy": pol, "k": 1.5, "llm_tok_s": tok, "worst_dmr": dmr, "feasible": feas,
                                     "tasks": {"a": {"dmr": dmr, "misses": 0, "jobs": 1}}, "vlm_misses": 0,
                                     "vlm_frames": 1, "llm_gbps": 0, "gaps": {}, "deadlines_ms": {"a": 1.0}}
    s = {"mix": "M", "backend": "plant", "note": "n", "eps": 0.02, "runs": 1, "prep_s": 1, "score_s": 1,
         "tasks": ["a"], "profile": {"a": {"p99_ms": 1.0}}, "bound_tok_s": {"1.5": 9.0},
         "points": [pt("cap-1/8", 5.0, 0.01, True), pt("cap-1/4", 7.0, 0.015, True), pt("cap-1/2", 8.0, 0.3, False)]}
    md = report.markdown_table(s)
    assert "| cap-x | 7.00 / 1.50 (cap-1/4) |" in md, md
    s["points"] = [pt("cap-1/4", 7.0, 0.5, False), pt("cap-1/2", 8.0, 0.3, False)]
    assert "| cap-x | 8.00 / 30.00 ✗ (cap-1/2) |" in report.markdown_table(s)


def _call(ks, p99, drift, eps=0.02, runs=3):
    """A results.json of one call at ks (two policies a k), its profile's p99 and drift."""
    pt = lambda pol, k, tok, dmr: {"policy": pol, "k": k, "runs": runs, "llm_tok_s": tok, "worst_dmr": dmr,
                                  "feasible": dmr <= eps, "tasks": {"a": {"dmr": dmr, "misses": 0, "jobs": 1}},
                                  "vlm_misses": 0, "vlm_frames": 1, "llm_gbps": 0, "gaps": {},
                                  "deadlines_ms": {"a": k * p99}}
    pts = [q for k in ks for q in (pt("ripple", k, k, 0.01), pt("unmanaged", k, 1.4, 0.01 * k))]
    return {"backend": "gpu", "note": "n", "mix": "M", "tasks": ["a"], "periods_ms": {"a": 100.0}, "eps": eps,
            "command": f"ripple-bench --k {ks}", "runs": runs, "policy_runs": {}, "order": "interleaved",
            "prep_s": 6, "ripple_prep_s": 20, "score_s": 30, "profile": {"a": {"p99_ms": p99}},
            "profile_end": {"a": {"p99_ms": p99 * (1 + drift)}}, "profile_drift": {"a": drift},
            "bound_tok_s": {f"{k:g}": 1.5 for k in ks}, "bound_notes": {}, "points": pts,
            "ratios": report.ratios(pts)}


@case
def merge_keeps_each_calls_profile():
    """Tests that a sweep split into calls merges into one: every point once, ordered by k,
    the bounds and ratios of each k, and each call's options, deadlines and co-run profiles
    kept under calls and in the table (a k's deadlines are its own call's, and a drift
    warning names the call whose profile moved); a call's own table is unchanged by it."""
    a, b = _call([1.1], 10.0, 0.82), _call([2.0, 1.5], 20.0, -0.02, runs=1)
    one = report.markdown_table(a)
    assert "eps = 2 %; 3 run(s) per point, interleaved, 6 s preparation (20 s for ripple) + 30 s scored; ✗" in one, one
    s = report.merge([("c11", a), ("c15", b)])
    assert [(p["k"], p["policy"]) for p in s["points"]] == \
        [(1.1, "ripple"), (1.1, "unmanaged"), (1.5, "ripple"), (1.5, "unmanaged"), (2.0, "ripple"), (2.0, "unmanaged")]
    assert [(c["source"], c["ks"], c["runs"]) for c in s["calls"]] == [("c11", [1.1], 3), ("c15", [1.5, 2.0], 1)]
    assert set(s["bound_tok_s"]) == {"1.1", "1.5", "2"} and set(s["ratios"]) == {"1.1", "1.5", "2"}, s
    assert "runs" not in s and "profile" not in s, "a call's options are the call's, not the sweep's"
    md = report.markdown_table(s)
    assert "| ripple | 1.10 / 1.00 | 1.50 / 1.00 | 2.00 / 1.00 |" in md, md
    assert "- k = 1.5, 2 (c15): 1 run(s) per point, interleaved" in md, md
    assert "Deadlines (c11) (ms, k x co-run p99 with engines idle): k=1.1: a 11.0\n" in md, md
    assert "Deadlines (c15) (ms, k x co-run p99 with engines idle): k=1.5: a 30.0; k=2: a 40.0\n" in md, md
    assert "Co-run profile p99 (c15) (ms): a 20.00" in md, md
    assert md.count("DRIFT") == 1 and "a 18.20 (+82 %). DRIFT" in md, md
    assert report.markdown_table(a) == one


@case
def merge_refuses_what_is_not_one_sweep():
    """Tests that calls that are not one sweep are refused with the source and the field
    named: a k in two calls, another eps or mix, an already merged input, nothing."""
    a = _call([1.1], 10.0, 0.0)
    cases = [([("x", a), ("y", _call([1.1, 2.0], 10.0, 0.0))], "y: k = 1.1 is also in x"),
             ([("x", a), ("y", _call([2.0], 10.0, 0.0, eps=0.05))], "y: eps is 0.05, not 0.02 as in x"),
             ([("x", a), ("y", dict(_call([2.0], 10.0, 0.0), mix="Robotic2"))], "y: mix is 'Robotic2'"),
             ([("m", report.merge([("x", a)]))], "m: already a merged sweep"),
             ([("x", a), ("e", dict(_call([2.0], 10.0, 0.0), points=[]))], "e: points: none"),
             ([], "merge: no results")]
    for parts, want in cases:
        try:
            report.merge(parts)
        except ValueError as e:
            assert str(e).startswith(want), (str(e), want)
        else:
            raise AssertionError(f"merged: {want}")


@case
def frames_due_judges_by_deadline():
    """Tests VLM frame scoring: frames whose deadline falls in the window; a late or unlogged one misses."""
    P = 5_000_000_000
    # releases at 0, P, 2P, 3P (the lattice), frame 1 late, frame 3 never logged
    frames = [(0, 100), (P, P + P + 1), (2 * P, 2 * P + 10)]
    # window [P, 4P + 1): deadlines P (frame 0), 2P (frame 1), 3P (frame 2), 4P (frame 3)
    assert metrics.frames_due(frames, P, P, P, 4 * P + 1) == (4, 2)
    # a window before the first release judges nothing before r0
    assert metrics.frames_due(frames, P, P, -10 * P, P) == (0, 0)
    # nothing logged: every period of the window is a miss
    assert metrics.frames_due([], P, P, 0, 3 * P) == (3, 3)
    # releases are matched to the lattice by rounding (a log taken late by a few us)
    assert metrics.frames_due([(0, 10), (P + 3000, P + 20)], P, P, P, 2 * P + 1) == (2, 0)
    try:
        metrics.frames_due(frames, 0, P, 0, P)
    except ValueError:
        pass
    else:
        raise AssertionError("no error for a zero period")


@case
def token_log_parses_and_names_bad_line():
    """Tests the LLM token log parser (GPU throughput from the engine's own count)."""
    from benchlib import gpu
    assert gpu.parse_token_log("token,end_ns\n1,100\n2,250\n", "t.csv") == [100, 250]
    try:
        gpu.parse_token_log("token,end_ns\n1,x\n", "t.csv")
    except ValueError as e:
        assert str(e).startswith("t.csv:2: expected token,end_ns"), e
    else:
        raise AssertionError("no error")


@case
def run_order_interleaves_policies_round_by_round():
    """Tests the sweep's run order (options.schedule): interleaved runs rep r of every policy
    that has it, round by round, each round starting one policy later, at each k with the
    policies --k-policies gives it; a policy with fewer runs (--policy-runs) leaves the later
    rounds; grouped keeps every run of a policy together. Every run appears exactly once."""
    import types
    o = types.SimpleNamespace(ks=[1.1, 2.0], runs=3, policy_runs={"unmanaged": 1}, order="interleaved")
    at = {1.1: ["ripple", "sigamma", "unmanaged"], 2.0: ["ripple", "unmanaged"]}.get
    got = options.schedule(o, at)
    want = [(1.1, "ripple", 0), (1.1, "sigamma", 0), (1.1, "unmanaged", 0),
            (1.1, "sigamma", 1), (1.1, "ripple", 1),
            (1.1, "ripple", 2), (1.1, "sigamma", 2),
            (2.0, "ripple", 0), (2.0, "unmanaged", 0), (2.0, "ripple", 1), (2.0, "ripple", 2)]
    assert got == want, got
    o.order = "grouped"
    got = options.schedule(o, at)
    assert got == [(1.1, "ripple", 0), (1.1, "ripple", 1), (1.1, "ripple", 2), (1.1, "sigamma", 0),
                   (1.1, "sigamma", 1), (1.1, "sigamma", 2), (1.1, "unmanaged", 0),
                   (2.0, "ripple", 0), (2.0, "ripple", 1), (2.0, "ripple", 2), (2.0, "unmanaged", 0)], got
    o.order, o.policy_runs = "interleaved", {}
    got = options.schedule(o, lambda k: ["a", "b", "c", "d"])
    assert sorted(got) == sorted((k, p, r) for k in o.ks for p in "abcd" for r in range(3)), got
    assert [p for k, p, r in got if k == 1.1 and r == 2] == ["c", "d", "a", "b"], got


@case
def closing_profile_reports_the_hosts_drift():
    """Tests the closing profile's report: each task's p99 drift (end / start - 1), none
    without a closing profile, and the DRIFT warning only when a task's p99 moved by more
    than k - 1 for the smallest k (the sixteenth session's kdnn, 47 -> 56 ms, at k = 1.1)."""
    prof = lambda p99: [job(i, 0, 0, p99 if i >= 98 else 10) for i in range(100)]
    start = {"kdnn": prof(47.0), "sgm": prof(20.0)}
    d = profile_notes.profile_drift(start, {"kdnn": prof(56.4), "sgm": prof(19.0)})
    assert d == {"kdnn": 0.2, "sgm": -0.05}, d
    assert profile_notes.profile_drift(start, {}) == {}
    s = {"points": [{"k": 1.1}, {"k": 2.0}], "profile_drift": d,
         "profile_end": {"kdnn": {"p99_ms": 56.4}, "sgm": {"p99_ms": 19.0}}}
    line = profile_notes.drift_note(s)
    assert line.startswith("Closing profile p99 (ms): kdnn 56.40 (+20 %), sgm 19.00 (-5 %). DRIFT: kdnn's"), line
    assert "more than k - 1 = 10 %: at k = 1.1 the deadlines were tighter" in line, line
    s["profile_host"] = {"tasks": {"busy": 0.4, "mhz": 3100.0, "mhz_from": "cpufreq"}}
    s["profile_end_host"] = {"tasks": {"busy": 0.4, "mhz": 2800.4, "mhz_from": "cpufreq"}}
    assert "(+20 %), sgm 19.00 (-5 %); task cores' clock 3100 -> 2800 MHz (cpufreq). DRIFT" in profile_notes.drift_note(s)
    s["profile_end_host"]["tasks"]["steal"] = 0.031
    assert "2800 MHz (cpufreq); task cores' time stolen 0.0 -> 3.1 %. DRIFT" in profile_notes.drift_note(s), \
        "time stolen at either end is said; none at both, nothing"
    s["points"] = [{"k": 1.5}]
    assert "DRIFT" not in profile_notes.drift_note(s), "a 20 % drift is inside k = 1.5's 50 %"
    s["profile_drift"] = {"kdnn": -0.6}
    assert "looser than k says" in profile_notes.drift_note(s)
    assert profile_notes.drift_note({"points": [{"k": 1.1}]}) == ""


@case
def quantile_interval_is_distribution_free():
    """Tests the p-quantile's confidence interval from order statistics: the median of 1..10
    at 95 % is [2, 9] (the binomial table's ranks); a p99 has no upper end below 368 values
    (0.99^367 > 2.5 %) and has one from 368 on; and over 400 samples of 500 exponential
    values each the interval holds the true p99 at least ~95 % of the time (it is
    conservative; a 3-sd margin for the 400 trials)."""
    import random
    assert metrics.quantile_ci(list(range(1, 11)), 50) == (2, 9)
    assert metrics.quantile_ci_min_n(99) == 368
    assert metrics.quantile_ci([float(i) for i in range(367)], 99)[1] is None
    lo, hi = metrics.quantile_ci([float(i) for i in range(368)], 99)
    assert hi == 367.0 and lo is not None and lo < metrics.percentile([float(i) for i in range(368)], 99), (lo, hi)
    assert metrics.quantile_ci([], 99) == (None, None) and metrics.quantile_ci([1.0], 100) == (None, None)
    rng, true, held = random.Random(7), math.log(100.0), 0
    for _ in range(400):
        lo, hi = metrics.quantile_ci([rng.expovariate(1.0) for _ in range(500)], 99)
        held += lo <= true <= hi
    assert held >= 0.95 * 400 - 3 * math.sqrt(400 * 0.95 * 0.05), held


@case
def profile_note_names_deadlines_inside_the_p99s_interval():
    """Tests the PROFILE line: a task whose deadline at the smallest k lies inside (or
    below the open end of) its p99's 95 % interval is named, with the interval; one whose
    deadline lies above it is not; results without intervals (the simulator's) give none."""
    prof = lambda n, big: [job(i, 0, 0, big if i == n - 1 else 10.0 + (i % 10) / 10) for i in range(n)]
    p = profile_notes.summary({"a": prof(135, 12.0), "b": prof(400, 11.0)})
    assert p["a"]["p99_ci95_ms"][1] is None and p["a"]["max_ms"] == 12.0, p["a"]
    assert p["b"]["p99_ci95_ms"][1] == 11.0, p["b"]
    s = {"profile": p, "points": [{"k": 1.5, "deadlines_ms": {"a": 99.0, "b": 99.0}},
                                  {"k": 1.1, "deadlines_ms": {"a": 11.5, "b": 11.5}}]}
    line = profile_notes.profile_ci_note(s)
    assert line.startswith("PROFILE: at k = 1.1 a deadline does not lie above the 95 % interval of its task's own "
                           "p99 (ms): a 10.90 to above its largest of 135 jobs, 12.00, deadline 11.5. The host alone"), line
    assert line.endswith("368 jobs or more bound a p99 (--profile-s)"), line
    s["points"][1]["deadlines_ms"]["b"] = 10.95
    assert "; b 10.90 to 11.00, deadline 10.9" in profile_notes.profile_ci_note(s), "b's deadline lies inside its interval"
    for v in p.values():
        del v["p99_ci95_ms"]
    assert profile_notes.profile_ci_note(s) == "", "no interval, no line"


@case
def ratios_to_unmanaged_and_best_feasible_other():
    """Tests issue 7's two ratios: ripple over unmanaged, and over the best other policy
    meeting every target (an infeasible faster policy does not count)."""
    pt = lambda pol, tok, feas, k=1.5: {"policy": pol, "k": k, "llm_tok_s": tok, "feasible": feas}
    r = report.ratios([pt("ripple", 1.0, True), pt("unmanaged", 2.0, False), pt("pause", 1.25, True),
                       pt("sereno", 1.6, True), pt("cap-1/2", 1.9, False), pt("ripple", 1.0, True, 2.0)])
    assert list(r) == ["1.5"], r  # k = 2 has ripple alone: no ratio
    v = r["1.5"]
    assert v["vs_unmanaged"] == 0.5 and v["best_feasible_other"] == "sereno", v
    assert abs(v["vs_best_feasible_other"] - 0.625) < 1e-12 and v["ripple_feasible"], v
    v = report.ratios([pt("ripple", 1.0, False), pt("unmanaged", 2.0, False)])["1.5"]
    assert v["best_feasible_other"] is None and v["vs_best_feasible_other"] is None and not v["ripple_feasible"]


@case
def ratios_of_ripple_variants():
    """Tests that a ripple variant (ripple+TAG) gets its own ratios and never counts as the
    best other policy, with or without plain ripple at that k."""
    pt = lambda pol, tok, feas, k=1.5: {"policy": pol, "k": k, "llm_tok_s": tok, "feasible": feas}
    r = report.ratios([pt("ripple", 1.0, True), pt("ripple+clip", 1.8, True), pt("unmanaged", 2.0, False),
                       pt("pause", 1.25, True)])["1.5"]
    assert r["best_feasible_other"] == "pause" and r["vs_unmanaged"] == 0.5, r
    c = r["variants"]["ripple+clip"]
    assert c["vs_unmanaged"] == 0.9 and abs(c["vs_best_feasible_other"] - 1.44) < 1e-12, c
    r = report.ratios([pt("ripple+clip", 1.0, False), pt("unmanaged", 2.0, True)])["1.5"]
    assert "vs_unmanaged" not in r and r["variants"]["ripple+clip"]["best_feasible_other"] == "unmanaged", r
    assert report.ratios([pt("ripple", 1.0, True), pt("ripple+clip", 1.0, True)]) == {}


@case
def ratio_line_gives_the_fluid_bound():
    """Tests that the table's ratio line gives ripple's and each variant's tokens/s over the
    fluid bound at each k (issue 12's >= 0.8), and over the bound with kappa from unmanaged
    where the results carry one (the GPU's; the sim writes none), names a bound the measured
    points contradict (bound_notes), and says nothing of a bound that is missing or not a
    number."""
    a = _call([1.1, 1.5], 10.0, 0.0)
    a["points"].append({**a["points"][0], "policy": "ripple+q", "llm_tok_s": 0.9})
    a["ratios"] = report.ratios(a["points"])
    a["bound_tok_s"] = {"1.1": 1.25, "1.5": math.nan}
    lines = [ln for ln in report.markdown_table(a).splitlines() if "as a ratio" in ln]
    assert lines[0] == ("Ripple's LLM tokens/s as a ratio: k = 1.1: 0.79 of unmanaged, 0.79 of unmanaged (the best "
                        "other policy meeting every target), 0.88 of the fluid bound; k = 1.5: 1.07 of unmanaged, "
                        "1.07 of unmanaged (the best other policy meeting every target)."), lines
    assert lines[1].startswith("ripple+q's LLM tokens/s as a ratio: k = 1.1: 0.64 of unmanaged") and \
        lines[1].endswith(", 0.72 of the fluid bound."), lines
    a["bound_measured_tok_s"] = {"1.1": 1.1, "1.5": None}
    lines = [ln for ln in report.markdown_table(a).splitlines() if "as a ratio" in ln]
    assert "0.88 of the fluid bound (1.00 with κ from unmanaged); k = 1.5" in lines[0], lines
    a["bound_notes"] = {"1.1": "unmanaged missed eps at 1.25 tokens/s, which it reaches"}
    lines = [ln for ln in report.markdown_table(a).splitlines() if "as a ratio" in ln]
    assert ("0.88 of the fluid bound (contradicted here: unmanaged missed eps at 1.25 tokens/s, which it "
            "reaches; 1.00 with κ from unmanaged); k = 1.5") in lines[0], ("a contradicted bound says so", lines)
    assert lines[1].endswith(", 0.72 of the fluid bound (contradicted here: unmanaged missed eps at 1.25 "
                             "tokens/s, which it reaches; 0.82 with κ from unmanaged)."), lines
    a["bound_notes"] = {}
    del a["bound_tok_s"]["1.1"]
    lines = [ln for ln in report.markdown_table(a).splitlines() if "as a ratio" in ln]
    assert not any("fluid bound" in ln for ln in lines), ("no bound at k: no ratio to it", lines)


@case
def plots_write_each_figure_and_no_empty_cdfs():
    """Tests that the plots module writes the DMR, throughput and gap figures of a sweep, a
    CDF per k only where the summary carries the runs' responses (a results.json re-rendered
    without them gets none, not empty axes)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise Skip("no matplotlib in this Python (Debian: python3-matplotlib, /usr/bin/python3)") from None
    import tempfile
    from benchlib import plots
    a = _call([1.1, 1.5], 10.0, 0.0)
    for p in a["points"]:
        p["gaps"] = {"busy": 0.9, "budget": 0.1, "gap": 0.1}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d)
        plots.write_plots({**a, "_responses": []}, out)
        names = sorted(f.name for f in out.iterdir())
        assert names == ["dmr_vs_k.png", "gaps.png", "throughput_vs_k.png"], names
        rows = [(p["policy"], p["k"], 0, "a", 0, 9.0 + i, 11.0) for i, p in enumerate(a["points"])]
        plots.write_plots({**a, "_responses": rows}, out)
        names = sorted(f.name for f in out.iterdir())
        assert "cdf_k1.1.png" in names and "cdf_k1.5.png" in names, names
        assert all((out / n).stat().st_size > 1000 for n in names), [(n, (out / n).stat().st_size) for n in names]


@case
def engine_delta_counts_the_window():
    """Tests one engine's counters over the scored window, late grant ends included, and that
    a missing engine counts zero."""
    s0 = {"engines": [{"name": "llm", "grants": 5, "successors": 2, "late_ends": 1, "bytes": 10, "queued": 1}]}
    s1 = {"engines": [{"name": "llm", "grants": 9, "successors": 5, "late_ends": 4, "bytes": 30, "queued": 3},
                      {"name": "vlm", "grants": 3}]}
    d = metrics.engine_delta(s0, s1, "llm")
    assert (d["grants"], d["successors"], d["late_ends"], d["bytes"], d["stale"], d["queued"]) == (4, 3, 3, 20, 0, 2), d
    assert metrics.engine_delta(s0, s1, "other") == {k: 0 for k in d}, metrics.engine_delta(s0, s1, "other")


@case
def untouched_misses_over_the_window_and_pooled():
    """Tests the agent's misses no grant was admitted into over the scored window: deltas per
    task; a task without the counters (an older agent), missing from a reply, or whose
    counters went backwards (another agent) is left out; pooled over runs with the share of
    all jobs."""
    def task(name, jobs, uj, um):
        return {"name": name, "jobs": jobs, "untouched_jobs": uj, "untouched_misses": um}
    s0 = {"tasks": [task("kdnn", 100, 40, 1), task("sgm", 100, 10, 0), {"name": "old", "jobs": 5},
                    task("gone", 10, 1, 0), task("reset", 100, 50, 5)]}
    s1 = {"tasks": [task("kdnn", 400, 180, 18), task("sgm", 400, 20, 0), {"name": "old", "jobs": 9},
                    task("reset", 20, 5, 0)]}
    d = metrics.untouched_delta(s0, s1)
    assert d == {"kdnn": {"jobs": 300, "untouched_jobs": 140, "untouched_misses": 17},
                 "sgm": {"jobs": 300, "untouched_jobs": 10, "untouched_misses": 0}}, d
    assert metrics.untouched_delta({}, s1) == {}
    p = metrics.untouched_share([d, {"kdnn": {"jobs": 300, "untouched_jobs": 0, "untouched_misses": 0}}, {}])
    assert p["kdnn"] == {"jobs": 600, "untouched_jobs": 140, "untouched_misses": 17, "share": 17 / 600}, p
    assert p["sgm"]["share"] == 0.0 and set(p) == {"kdnn", "sgm"}, p
    assert metrics.untouched_share([{"x": {"jobs": 0, "untouched_jobs": 0, "untouched_misses": 0}}])["x"]["share"] is None


def renewed_status(pid0=7, pid1=7, total=True):
    """Status replies around a session renewal: at the start the LLM's first session (id 0,
    its own counters = its process's), at the end its second (id 2, own counters restarted
    at zero) listed before the gone first one, as the agent lists them."""
    def entry(eid, connected, own, tot, pid, session):
        busy, b, grants, works = own
        e = {"name": "llm", "id": eid, "connected": connected, "busy_s": busy, "grants": grants, "works_done": works,
             "bytes": 10 * grants, "wait_ms": {"budget": b, "decision": 0.0, "delivery": 0.0}}
        if total:
            tb, tbw, tg, tw = tot
            e.update(pid=pid, session=session,
                     total={"busy_s": tb, "grants": tg, "works_done": tw, "bytes": 10 * tg,
                            "wait_ms": {"budget": tbw, "decision": 0.0, "delivery": 0.0}})
        return e
    s0 = {"engines": [entry(0, True, (2.0, 500.0, 20, 2), (2.0, 500.0, 20, 2), pid0, 1)]}
    # 4 s busy and 1 s of budget wait in the first session after the start, 3 s and 0.5 s
    # in the second: 7 s busy and 1.5 s budget wait of a 10 s window.
    s1 = {"engines": [entry(2, True, (3.0, 500.0, 30, 3), (9.0, 2000.0, 90, 9), pid1, 2),
                      entry(0, False, (6.0, 1500.0, 60, 6), (6.0, 1500.0, 60, 6), pid0, 1)]}
    return s0, s1


@case
def engine_columns_span_a_session_renewal():
    """Tests that the gap breakdown and the engine's counters over a window in which the engine
    renewed its session are its process's totals (both sessions), not the new session's
    restarted counters less the old one's (a negative busy time)."""
    s0, s1 = renewed_status()
    g = metrics.gap_breakdown(s0, s1, "llm", 10.0)
    assert abs(g["busy"] - 0.7) < 1e-9 and abs(g["budget"] - 0.15) < 1e-9 and abs(g["other"] - 0.15) < 1e-9, g
    d = metrics.engine_delta(s0, s1, "llm")
    assert (d["grants"], d["works_done"], d["bytes"]) == (70, 7, 700), d


@case
def engine_columns_refused_across_another_process():
    """Tests that a window whose engine is another process at its end (a restart), or, from an
    agent without per-process totals, another session, raises CountersReset naming both ends,
    and that the bench then leaves those columns out (nan, no gap breakdown) with a warning."""
    s0, s1 = renewed_status(pid0=7, pid1=8)
    for f in (lambda: metrics.gap_breakdown(s0, s1, "llm", 10.0), lambda: metrics.engine_delta(s0, s1, "llm")):
        try:
            f()
        except metrics.CountersReset as e:
            assert "pid 7 at the window's start, 8 at its end" in str(e), e
        else:
            raise AssertionError("no CountersReset")
    o0, o1 = renewed_status(total=False)
    try:
        metrics.engine_delta(o0, o1, "llm")
    except metrics.CountersReset as e:
        assert "session 0 at the window's start, 2 at its end" in str(e), e
    else:
        raise AssertionError("no CountersReset")
    import importlib.machinery
    import importlib.util
    import io
    import contextlib
    path = str(Path(__file__).resolve().parents[2] / "tools/bench/ripple-bench/ripple-bench")
    spec = importlib.util.spec_from_loader("ripple_bench", importlib.machinery.SourceFileLoader("ripple_bench", path))
    rb = importlib.util.module_from_spec(spec)
    sys.modules["ripple_bench"] = rb   # its dataclasses look their module up
    try:
        spec.loader.exec_module(rb)
    except SystemExit:   # no tomli_w in this Python: the bench itself cannot run here
        raise Skip("the bench's part needs tomli_w (run with /usr/bin/python3)") from None
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        llm, vlm, gaps = rb.Bench.engine_columns(None, "ripple", 1.5, s0, s1, 10.0)
    assert gaps == {} and math.isnan(llm["grants"]) and vlm["grants"] == 0, (llm, vlm, gaps)
    assert "warning: ripple k=1.5: engine llm: pid 7" in err.getvalue(), err.getvalue()


@case
def hf_llm_engine_runs_unmodified_with_learned_units():
    """Tests the --llm-engine hf plumbing of the GPU backend without a GPU: the LLM is
    tools/engines/hf_offload.py with its args under ripple-run, with no profile (the
    interposer learns its units) and the default boundaries (no NVTX restriction), writing
    the token log the bench counts; the VLM keeps its profile and NVTX boundaries."""
    import os
    import tempfile
    import types
    from benchlib import gpu
    with tempfile.TemporaryDirectory() as t:
        d = Path(t)
        a = types.SimpleNamespace(llm_engine="hf", hf_args="--preset qwen3-0.6b --offload pinned", llm_preset="x",
                                  llm_args="", vlm_preset="qwen3-vl-8b", vlm_args="--weights device",
                                  vlm_gpu_period_ms=5000.0, llm_profile=None, vlm_profile=str(d / "vlm.json"))

        class Bench:
            o = types.SimpleNamespace(a=a)
            engine_cores = None
            Error = RuntimeError

            def bin(self, name):
                return d / "bin" / name

            def progress(self, msg):
                raise AssertionError(f"nothing should be recorded: {msg}")

            def pinned(self, argv, cores):
                return argv

        started = {}

        class Procs:
            def start(self, argv, out, env=None):
                started[out.stem] = ([str(x) for x in argv], env)
                out.write_text(gpu.READY_MARK + "\n")
                return types.SimpleNamespace(poll=lambda: None)

        os.environ["RIPPLE_BOUNDARIES"] = "nvtx"   # inherited by the VLM's override only
        (d / "vlm.json").write_text('{"units": [{"name": "visual.blocks.0", "bytes": 3000}, '
                                    '{"name": "model.layers.0", "bytes": 4000}]}')
        try:
            g = gpu.GpuEngines(Bench(), d / "gpu")
            g.record()
            assert g.vlm_unit_bytes == 7000, g.vlm_unit_bytes   # its units' host copies, each once
            g.start(Procs(), 100)
        finally:
            del os.environ["RIPPLE_BOUNDARIES"]
        llm, llm_env = started["llm"]
        vlm, vlm_env = started["vlm"]
        cmd = llm[llm.index("--") + 1:]
        assert cmd[1].endswith("tools/engines/hf_offload.py") and Path(cmd[1]).is_file(), cmd
        assert cmd[2:6] == ["--preset", "qwen3-0.6b", "--offload", "pinned"], cmd
        assert cmd[-4:] == ["--duration-s", "100", "--token-log", str(g.token_log)], cmd
        head = llm[:llm.index("--")]
        assert "--profile" not in head and head[head.index("--engine") + 1] == "llm", head
        assert head[head.index("--fail") + 1] == "closed", head
        assert "RIPPLE_BOUNDARIES" not in llm_env, llm_env.get("RIPPLE_BOUNDARIES")
        assert vlm_env["RIPPLE_BOUNDARIES"] == "nvtx,api", vlm_env["RIPPLE_BOUNDARIES"]
        assert vlm[vlm.index("--profile") + 1] == str(d / "vlm.json"), vlm
        assert g.bytes_per_token == 0
        # hf_offload.py writes the log the bench parses.
        sys.path.insert(0, str(Path(cmd[1]).parent))
        import hf_offload
        tl = hf_offload.TokenLog(str(d / "tok.csv"))
        for v in ([[1, 2, 3]], [[7]], [[8]]):   # the prompt, then one token per step
            tl.put(types.SimpleNamespace(numel=lambda v=v: len(v[0])))
        tl.end()
        ends = gpu.parse_token_log((d / "tok.csv").read_text(), "tok.csv")
        assert len(ends) == 2 and ends[0] <= ends[1], ends


@case
def host_sampler_reports_busy_share_and_clock_per_core_group():
    """Tests HostSampler on a fake /proc and /sys: cores 0-1 (engines) went from 100 to 150
    busy ticks of 200 each over the interval (0.25 busy), core 2 (tasks) 300 of 300 (1.0);
    their clocks read 2,000,000 / 3,000,000 kHz (mean 2500 MHz) and 2,900,000 kHz; of core
    2's 300 ticks 30 were stolen (0.1; counted busy too), none of the engines'. Without
    cpufreq the clock is /proc/cpuinfo's, without either None, and a group with no readable
    CPU has no busy share. A kernel whose lines stop before steal gives 0 stolen. Then
    host_summary means the rows inside a window only."""
    import tempfile
    from benchlib.procs import CLK_TCK, HostSampler, host_summary
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "proc").mkdir()

        def stat(busy0, idle0, busy2, idle2, steal2=0):
            # user nice system idle iowait irq softirq steal: busy = user + system (+ steal) here
            rows = [f"cpu{c} {(b - st) // 2} 0 {b - st - (b - st) // 2} {i} 0 0 0 {st}" for c, (b, i, st) in
                    enumerate([(busy0, idle0, 0), (busy0, idle0, 0), (busy2, idle2, steal2)])]
            (root / "proc/stat").write_text("cpu  1 2 3 4 5 6 7 8\n" + "\n".join(rows) + "\n")

        stat(100 * CLK_TCK // 100, 100 * CLK_TCK // 100, 0, 0)
        s = HostSampler({"engines": [0, 1], "tasks": [2], "gone": [9], "none": []}, str(root))
        stat(150 * CLK_TCK // 100, 250 * CLK_TCK // 100, 300 * CLK_TCK // 100, 0, 30 * CLK_TCK // 100)
        for c, khz in ((0, 2_000_000), (1, 3_000_000), (2, 2_900_000)):
            f = root / f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq"
            f.parent.mkdir(parents=True)
            f.write_text(f"{khz}\n")
        (root / "proc/cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 1200.000\n\n"
                                          "processor\t: 2\ncpu MHz\t\t: 1800.500\n")
        h = s.sample()
        assert h == {"engines": {"busy": 0.25, "steal": 0.0, "mhz": 2500.0, "mhz_from": "cpufreq"},
                     "tasks": {"busy": 1.0, "steal": 0.1, "mhz": 2900.0, "mhz_from": "cpufreq"},
                     "gone": {"busy": None, "steal": None, "mhz": None, "mhz_from": None}}, h
        for c in (0, 1, 2):
            (root / f"sys/devices/system/cpu/cpu{c}/cpufreq/scaling_cur_freq").unlink()
        h = s.sample()
        assert h["tasks"] == {"busy": None, "steal": None, "mhz": 1800.5, "mhz_from": "cpuinfo"}, \
            "no ticks passed; cpuinfo's clock"
        assert h["engines"]["mhz"] == 1200.0, h   # cpu 1 is not in this cpuinfo
        (root / "proc/cpuinfo").unlink()
        assert s.sample()["tasks"] == {"busy": None, "steal": None, "mhz": None, "mhz_from": None}
        # An old kernel's lines stop at softirq (7 counters): nothing stolen, busy as before.
        (root / "proc/stat").write_text("cpu  1 2 3 4 5 6 7\ncpu0 1 0 1 2 0 0 0\ncpu1 1 0 1 2 0 0 0\ncpu2 9 0 9 0 0 0 0\n")
        s.sample()
        (root / "proc/stat").write_text("cpu  1 2 3 4 5 6 7\ncpu0 2 0 2 4 0 0 0\ncpu1 2 0 2 4 0 0 0\ncpu2 9 0 9 0 0 0 0\n")
        h = s.sample()
        assert (h["engines"]["busy"], h["engines"]["steal"]) == (0.5, 0.0), h
    rows = [{"t_s": 0.5, "host": {"tasks": {"busy": 0.1, "steal": 0.5, "mhz": 1000.0, "mhz_from": "cpuinfo"}}},
            {"t_s": 1.5, "host": {"tasks": {"busy": 0.5, "steal": 0.02, "mhz": 3000.0, "mhz_from": "cpufreq"}}},
            {"t_s": 2.5, "host": {"tasks": {"busy": 0.7, "mhz": None, "mhz_from": None}}},
            {"t_s": 3.5, "host": {"tasks": {"busy": 0.9, "mhz": 2000.0}}}]
    assert host_summary(rows, 1.0, 3.0) == {"tasks": {"busy": 0.6, "steal": 0.02, "mhz": 3000.0,
                                                      "mhz_from": "cpufreq"}}, \
        host_summary(rows, 1.0, 3.0)
    assert host_summary(rows, 5.0, 6.0) == {}


@case
def hf_llm_engine_needs_the_gpu_backend():
    """Tests that --llm-engine hf on the plant backend is refused with one line, exit 2."""
    import subprocess
    bench = Path(__file__).resolve().parents[2] / "tools/bench/ripple-bench/ripple-bench"
    r = subprocess.run([str(bench), "--backend", "plant", "--llm-engine", "hf", "--quick"],  # its #! python
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr[-400:])
    assert "--llm-engine hf: a real engine needs the gpu backend" in r.stderr, r.stderr[-400:]


run()
