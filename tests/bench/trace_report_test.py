#!/usr/bin/env python3
# Tests of the admission trace end to end (TAP): ripple-sim --trace writes it through the
# admission's own sink (agent/admission/trace.h), and tools/bench/ripple-bench/trace_report.py
# reads back the counts the simulator and the agent's counters report; its attribution of
# misses and idle time on a hand-made trace; and its refusal of bad input.
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/bench/ripple-bench/trace_report.py"
SIM = Path(os.environ.get("O", ROOT / "build")) / "bin/ripple-sim"
PRESET = ROOT / "Documentation/results/sim-runs/endguard/h200-late-ends.toml"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from taplib import Skip, case, run  # noqa: E402


def report(path, *args):
    r = subprocess.run([sys.executable, str(TOOL), str(path), *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


@case
def sim_trace_reads_back_the_simulators_counts():
    """The scored window's jobs and misses per task, and the LLM's late ends, as the trace
    gives them, equal ripple-sim's results.json (its tasks, and the agent's late_ends counter
    over the window). time_sigma 0.3 makes grants end late."""
    if not SIM.exists():
        raise Skip(f"{SIM} not built")
    with tempfile.TemporaryDirectory() as d:
        preset = Path(d) / "p.toml"
        preset.write_text(PRESET.read_text().replace("time_sigma = 0.08", "time_sigma = 0.3"))
        r = subprocess.run([str(SIM), "--preset", str(preset), "--policies", "ripple", "--k", "1.1", "--runs", "1",
                            "--prep-s", "6", "--score-s", "20", "--seed", "3", "-q", "--trace", d, "--out", d],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        res = json.loads((Path(d) / "results.json").read_text())
        p = res["points"][0]
        rc, out, err = report(Path(d) / "trace-ripple-k1.1-run1.jsonl", "--window", "6,26", "--origin", "zero",
                              "--json")
        assert rc == 0, err
        tr = json.loads(out)
        for name, t in p["tasks"].items():
            assert (tr["tasks"][name]["jobs"], tr["tasks"][name]["misses"]) == (t["jobs"], t["misses"]), (name, t, tr)
        assert p["llm_grants"]["late_ends"] > 10, p["llm_grants"]
        assert tr["engines"]["llm"]["late_ends"] == p["llm_grants"]["late_ends"], (tr["engines"]["llm"], p)


def on_lines(lines, *args):
    """trace_report.py's (rc, stdout, stderr) on a trace of these records."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.jsonl"
        p.write_text("\n".join(lines) + "\n")
        return report(p, *args)


def json_of(lines, *args):
    rc, out, err = on_lines(lines, "--json", *args)
    assert rc == 0, err
    return json.loads(out)


def rec(k, t, who, name, id_, bytes_=0, frm=0, to=0, value=0, flag=0):
    return json.dumps({"k": k, "t": t, "who": who, "name": name, "id": id_, "bytes": bytes_, "from": frm, "to": to,
                       "value": value, "flag": flag})


@case
def misses_and_idle_are_attributed():
    """Job 1 (0-10 ms, missed) meets grant 1, predicted and run at 0-1 ms inside it: charged.
    Job 2 (20-30 ms, missed) meets grant 2, predicted at 4-19 ms but run at 4-22 ms: crossed
    (and a late end). Job 3 (40-50 ms, missed) meets no grant: no traffic. Job 4 met its
    deadline. Grant 2 was decided 1 ms after grant 1 ended, sent 1 ms later and started 1 ms
    after that: 1 ms waiting for the decision, 1 ms delivery, 1 ms other."""
    ms = 1_000_000
    lines = [
        rec("grant", 0, 0, "llm", 1, 100 * ms, 0, 1 * ms),
        rec("start", 0, 0, "llm", 1, 100 * ms, 0),
        rec("done", 1 * ms, 0, "llm", 1, 100 * ms, 0, 1 * ms, 1 * ms),
        rec("complete", 10 * ms, 0, "costmap", 1, 100 * ms, 0, 0, 10 * ms, 1),
        rec("grant", 2 * ms, 0, "llm", 2, 300 * ms, 4 * ms, 19 * ms),
        rec("start", 4 * ms, 0, "llm", 2, 300 * ms, 3 * ms),
        rec("done", 22 * ms, 0, "llm", 2, 300 * ms, 4 * ms, 22 * ms, 18 * ms),
        rec("complete", 30 * ms, 0, "costmap", 2, 0, 0, 0, 10 * ms, 1),
        rec("complete", 50 * ms, 0, "costmap", 3, 0, 0, 0, 10 * ms, 1),
        rec("complete", 70 * ms, 0, "costmap", 4, 0, 0, 0, 5 * ms, 0),
    ]
    r = json_of(lines)
    c = r["tasks"]["costmap"]
    assert (c["jobs"], c["misses"], c["charged_misses"], c["crossed"], c["no_traffic"]) == (4, 3, 1, 1, 1), c
    e = r["engines"]["llm"]
    assert e["grants"] == 2 and e["late_ends"] == 1, e   # grant 2 ended 3 ms late
    assert e["idle_ms"] == {"total": 3.0, "waiting_for_decision": 1.0, "delivery": 1.0, "other": 1.0}, e
    # Grant 2 started on time (4 ms) and ran 18 ms for 15 predicted: late by its run's excess.
    # Grant 1 ran its 1 ms as predicted (< 5 ms); grant 2's 15 predicted are the >= 10 ms class.
    b = e["late_ends_by"]
    assert (b["started_late"], b["ran_long"], b["start_delay_ms_p90"], b["excess_ms_p90"]) == (0, 1, 0.0, 3.0), b
    r50 = b["duration_ratio_p50"]
    assert (r50["< 5 ms"], r50[">= 10 ms"]) == (1.0, 1.2) and math.isnan(r50["5-10 ms"]), b
    assert b["duration_count"] == {"< 5 ms": 1, "5-10 ms": 0, ">= 10 ms": 1}, b
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| costmap | 4 | 3 | 75.00 | 1 | 1 | 1 |" in out, out
    assert "| llm | 0 / 1 | 0.00 / 3.00 | 1.00 (1) / nan (0) / 1.20 (1) | 0 / 0 |" in out, out


@case
def dones_without_time_and_short_grants_are_counted():
    """Grant 1 is predicted 10 ms and its Done carries no GPU time (no event pair, or an
    end read before its start); grant 2 is predicted 10 ms and timed 4: under half; grant 3
    is predicted 10 ms and timed 9."""
    ms = 1_000_000
    lines = []
    for gid, a0, ran in ((1, 0, 0), (2, 20, 4), (3, 40, 9)):
        lines += [rec("grant", a0 * ms, 0, "llm", gid, 100 * ms, a0 * ms, (a0 + 10) * ms),
                  rec("start", a0 * ms, 0, "llm", gid, 100 * ms, a0 * ms),
                  rec("done", (a0 + 10) * ms, 0, "llm", gid, 100 * ms, a0 * ms, (a0 + 10) * ms, ran * ms)]
    lines.append(rec("complete", 60 * ms, 0, "costmap", 1, 0, 0, 0, 5 * ms, 0))
    b = json_of(lines)["engines"]["llm"]["late_ends_by"]
    assert (b["untimed"], b["under_half"]) == (1, 1), b
    assert b["duration_count"][">= 10 ms"] == 2, b
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| 1 / 1 |" in out, out


@case
def misses_without_traffic_are_split_by_what_came_before():
    """No grant reaches any of these missed jobs. Job 1 (10-20 ms) is released 8 ms after
    grant 1 ended (0-2 ms, in the preparation before the window): apart. Job 2 (40-50 ms)
    is released 1.5 ms after grant 2 (30-38.5 ms) ended: near (< 5 ms; apart with
    --near-ms 1). Job 3 is released at 48 ms, before job 2 ended: queued behind it, though
    grant 2 is also near."""
    ms = 1_000_000
    lines = []
    for gid, a0, a1 in ((1, 0, 2), (2, 30, 38.5)):
        lines += [rec("grant", int(a0 * ms), 0, "llm", gid, 100 * ms, int(a0 * ms), int(a1 * ms)),
                  rec("start", int(a0 * ms), 0, "llm", gid, 100 * ms, int(a0 * ms)),
                  rec("done", int(a1 * ms), 0, "llm", gid, 100 * ms, int(a0 * ms), int(a1 * ms), int((a1 - a0) * ms))]
    lines += [rec("complete", 20 * ms, 0, "sgm", 1, 0, 0, 0, 10 * ms, 1),
              rec("complete", 50 * ms, 0, "sgm", 2, 0, 0, 0, 10 * ms, 1),
              rec("complete", 60 * ms, 0, "sgm", 3, 0, 0, 0, 12 * ms, 1)]
    t = json_of(lines)["tasks"]["sgm"]
    assert (t["no_traffic"], t["no_traffic_queued"], t["no_traffic_near"], t["no_traffic_apart"]) == (3, 1, 1, 1), t
    assert t["no_traffic_gap_ms"] == [8.0, 1.5, 9.5], t
    rc, out, err = on_lines(lines, "--json", "--near-ms", "1")
    t = json.loads(out)["tasks"]["sgm"]
    assert rc == 0 and (t["no_traffic_queued"], t["no_traffic_near"], t["no_traffic_apart"]) == (1, 0, 2), t
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| 1 / 1 / 1 |" in out, out
    rc, out, err = on_lines(lines, "--near-ms", "-1")
    assert rc == 2 and "--near-ms" in err and not out, (rc, out, err)


@case
def notraffic_bins_counts_every_job_no_grant_reached():
    """notraffic_bins.py over a bench output: grant 1 runs 0-2 ms; sgm's jobs at 2.5-10 ms
    (missed, 0.5 ms after it), 30-40 ms (met, 28 ms after) and 60-70 ms (missed, 58 ms
    after) met no traffic; the job at 1-5 ms overlapped it and is not counted in the bins, but
    in the durations of the jobs some grant reached."""
    import gzip
    ms = 1_000_000
    lines = [rec("grant", 0, 0, "llm", 1, 100 * ms, 0, 2 * ms), rec("start", 0, 0, "llm", 1, 100 * ms, 0),
             rec("done", 2 * ms, 0, "llm", 1, 100 * ms, 0, 2 * ms, 2 * ms),
             rec("complete", 5 * ms, 0, "sgm", 1, 0, 0, 0, 4 * ms, 1),
             rec("complete", 10 * ms, 0, "sgm", 2, 0, 0, 0, int(7.5 * ms), 1),
             rec("complete", 40 * ms, 0, "sgm", 3, 0, 0, 0, 10 * ms, 0),
             rec("complete", 70 * ms, 0, "sgm", 4, 0, 0, 0, 10 * ms, 1)]
    with tempfile.TemporaryDirectory() as d:
        t = Path(d) / "traces"
        t.mkdir()
        with gzip.open(t / "ripple-k1.1-run1.jsonl.gz", "wt") as fh:
            fh.write("\n".join(lines) + "\n")
        (t / "windows.json").write_text(json.dumps({"ripple-k1.1-run1.jsonl.gz": [0, 1]}))
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), d], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        # The three jobs no grant reached took 7.5, 10 and 10 ms; the one it reached 4 ms. Two of
        # the four jobs missed with no grant reaching them: 50 %, above the default eps (2 %,
        # no results.json here), so the run is named after the table.
        assert "| ripple-k1.1-run1 | sgm | 4 | 3 | 1/1 | 0/0 | 0/0 | 0/0 | 1/2 | 10.0 / 10.0 | 4.0 / 4.0 | 50.00 ✗ |" \
            in r.stdout, r.stdout
        assert "- ripple-k1.1-run1 sgm: 2 of 4 jobs missed with no grant reaching them (50.00 % > eps 2 %)" in r.stdout, \
            r.stdout
        # eps comes from results.json (a fraction) when the bench wrote one: at 60 % no run is named.
        (Path(d) / "results.json").write_text(json.dumps({"eps": 0.6}))
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), d], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0 and "| 50.00 |" in r.stdout and "No run's misses" in r.stdout \
            and "eps (60 %)" in r.stdout, r.stdout
        # --eps overrides it; one outside (0, 100) and a results.json without eps are refused by name.
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), d, "--eps", "40"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and "| 50.00 ✗ |" in r.stdout and "(50.00 % > eps 40 %)" in r.stdout, r.stdout
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), d, "--eps", "0"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "--eps 0" in r.stderr and not r.stdout, (r.returncode, r.stdout, r.stderr)
        (Path(d) / "results.json").write_text(json.dumps({"runs": 3}))
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), d], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and "results.json: no eps" in r.stderr and not r.stdout, (r.returncode, r.stderr)
        r = subprocess.run([sys.executable, str(TOOL.parent / "notraffic_bins.py"), str(Path(d) / "none")],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "windows.json" in r.stderr, (r.returncode, r.stderr)


@case
def idle_behind_successors_sent_ahead_is_binned_by_size():
    """Grant 1 (100 MB, run 0-1 ms); grant 2 sent at 0.5 ms, before grant 1 ended, runs
    1.5-10 ms: a 0.5-ms gap behind a grant under 128 MB. Grant 3 sent at 5 ms, before grant 2
    (300 MB) ended, runs 10.1-20 ms: 0.1 ms is the Done's own jitter (QUEUE_JITTER_NS), no gap. Grant 4 sent at 25 ms, after grant 3 (600 MB)
    ended at 20 ms: the agent was late there, so it is not counted (it is decision time)."""
    ms = 1_000_000
    mb = 1_000_000
    lines = []
    for gid, size, sent, a0, a1 in ((1, 100, 0, 0, 1), (2, 300, 0.5, 1.5, 10), (3, 600, 5, 10.1, 20), (4, 50, 25, 26, 30)):
        lines += [rec("grant", int(sent * ms), 0, "llm", gid, size * mb, int(a0 * ms), int(a1 * ms)),
                  rec("start", int(a0 * ms), 0, "llm", gid, size * mb, int(sent * ms)),
                  rec("done", int(a1 * ms), 0, "llm", gid, size * mb, int(a0 * ms), int(a1 * ms), int((a1 - a0) * ms))]
    b = json_of(lines)["engines"]["llm"]["idle_behind_ahead"]
    assert b["< 128 MB"] == {"successors": 1, "gaps": 1, "idle_ms": 0.5}, b
    assert b["128-512 MB"] == {"successors": 1, "gaps": 0, "idle_ms": 0.0}, b
    assert b[">= 512 MB"] == {"successors": 0, "gaps": 0, "idle_ms": 0.0}, b
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| llm | < 128 MB | 1 | 1 | 0.5 |" in out, out


@case
def grants_in_hand_are_shared_over_the_window():
    """Grant 1 (100 MB) is started at 0 and done at 10 ms; grant 2 (300 MB) started at 2 ms
    (queued behind it) and done at 20 ms. Over the whole trace (0-20 ms): one in hand 0-2 and
    10-20 ms (60 %), two 2-10 ms (40 %), 400 MB in 20 ms (20 GB/s). Over a window of 0-40 ms
    the last 20 ms hold none (50 %); grant 3, done at 45 ms, is outside it."""
    ms = 1_000_000
    mb = 1_000_000
    lines = []
    for gid, size, start, done in ((1, 100, 0, 10), (2, 300, 2, 20), (3, 50, 42, 45)):
        lines += [rec("grant", int(start * ms), 0, "llm", gid, size * mb, int(start * ms), int(done * ms)),
                  rec("start", int(start * ms), 0, "llm", gid, size * mb, int(start * ms)),
                  rec("done", int(done * ms), 0, "llm", gid, size * mb, int(start * ms), int(done * ms),
                      int((done - start) * ms))]
    h = json_of(lines[:6])["engines"]["llm"]["in_hand"]
    assert [round(h[k], 6) for k in ("none", "one", "two_or_more", "done_gbps")] == [0, 0.6, 0.4, 20], h
    h = json_of(lines, "--window", "0,0.04", "--origin", "zero")["engines"]["llm"]["in_hand"]
    assert [round(h[k], 6) for k in ("none", "one", "two_or_more", "done_gbps")] == [0.5, 0.3, 0.2, 10], h
    rc, out, err = on_lines(lines[:6])
    assert rc == 0 and "| llm | 0.0 / 60.0 / 40.0 | 20.0 |" in out, out


@case
def where_no_grant_is_in_hand_inside_jobs_and_gaps():
    """Two CPU jobs, 0-10 ms and 40-50 ms (their union; a third job inside the first adds
    nothing), leave one 30-ms gap: first 5 ms 10-15, middle 15-35, last 35-40. Grant 1 is in
    hand 5-8 ms, grant 2 12-33 ms. Over the window 0-50 ms none is in hand 0-5, 8-12 and
    33-50: inside the jobs 7 + 10 of 20 ms (85 %); in the gap's first 5 ms 2 (40 %), its
    middle 2 of 20 (10 %), its last 5 (100 %). A gap under 20 ms is not split (nan)."""
    ms = 1_000_000
    lines = [rec("complete", 10 * ms, 0, "a", 1, 0, 0, 0, 10 * ms, 0),
             rec("complete", 9 * ms, 0, "b", 1, 0, 0, 0, 6 * ms, 0),
             rec("complete", 50 * ms, 0, "a", 2, 0, 0, 0, 10 * ms, 0)]
    for gid, start, done in ((1, 5, 8), (2, 12, 33)):
        lines += [rec("grant", start * ms, 0, "llm", gid, 1000, start * ms, done * ms),
                  rec("start", start * ms, 0, "llm", gid, 1000, start * ms),
                  rec("done", done * ms, 0, "llm", gid, 1000, start * ms, done * ms, (done - start) * ms)]
    w = json_of(lines, "--window", "0,0.05", "--origin", "zero")["engines"]["llm"]["none_where"]
    assert [round(w[k], 6) for k in ("in_jobs", "gap_first", "gap_middle", "gap_last")] == [0.85, 0.4, 0.1, 1.0], w
    rc, out, err = on_lines(lines, "--window", "0,0.05", "--origin", "zero")
    assert rc == 0 and "| llm | 85.0 | 40.0 / 10.0 / 100.0 |" in out, out
    lines[2] = rec("complete", 25 * ms, 0, "a", 2, 0, 0, 0, 10 * ms, 0)   # jobs 0-10 and 15-25: a 5-ms gap
    w = json_of(lines, "--window", "0,0.05", "--origin", "zero")["engines"]["llm"]["none_where"]
    assert math.isnan(w["gap_middle"]) and round(w["in_jobs"], 6) == round(7 / 20, 6), w


@case
def host_byte_grants_are_binned_by_what_ran_beside_them():
    """LLM grant 1 runs 0-10 ms as predicted, beside only the VLM's 1000-byte unit (no host
    bytes): alone, 1.0. Grant 2 runs 20-30 ms against a predicted 20-25 beside the VLM's
    18-32: mostly, 2.0. Grant 3 runs 40-50 beside the VLM's 48-49: 10 %, partly, 1.0. The
    VLM's 18-32 (predicted 18-25) has the LLM beside it 10 of 14 ms, its 48-49 all of it:
    both mostly, ratios 2.0 and 1.0 (p50 1.0, p90 2.0). Its small unit is not counted."""
    ms = 1_000_000
    mb = 1_000_000
    lines = []
    for who, name, gid, size, a0, a1, p1 in ((0, "llm", 1, 600 * mb, 0, 10, 10), (0, "llm", 2, 600 * mb, 20, 30, 25),
                                             (0, "llm", 3, 600 * mb, 40, 50, 50), (1, "vlm", 1, 1000, 0, 10, 10),
                                             (1, "vlm", 2, 200 * mb, 18, 32, 25), (1, "vlm", 3, 20 * mb, 48, 49, 49)):
        lines += [rec("grant", a0 * ms, who, name, gid, size, a0 * ms, p1 * ms),
                  rec("start", a0 * ms, who, name, gid, size, a0 * ms),
                  rec("done", a1 * ms, who, name, gid, size, a0 * ms, a1 * ms, (a1 - a0) * ms)]
    b = json_of(lines)["beside"]
    assert b["llm"] == {"alone": {"grants": 1, "ratio_p50": 1.0, "ratio_p90": 1.0},
                        "partly": {"grants": 1, "ratio_p50": 1.0, "ratio_p90": 1.0},
                        "mostly": {"grants": 1, "ratio_p50": 2.0, "ratio_p90": 2.0}}, b
    assert b["vlm"]["alone"]["grants"] == 0 and b["vlm"]["partly"]["grants"] == 0, b
    assert b["vlm"]["mostly"] == {"grants": 2, "ratio_p50": 1.0, "ratio_p90": 2.0}, b
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| llm | 1, 1.00 (1.00) / 1, 1.00 (1.00) / 1, 2.00 (2.00) |" in out, out
    assert "| vlm | 0, nan (nan) / 0, nan (nan) / 2, 1.00 (2.00) |" in out, out
    b = json_of(lines[:9])["beside"]   # the LLM alone: every grant alone
    assert [b["llm"][k]["grants"] for k in ("alone", "partly", "mostly")] == [3, 0, 0] and "vlm" not in b, b


@case
def idle_is_outside_the_union_of_overlapping_grants():
    """Pipelined grants overlap: grant 1 runs 0-20 ms, grant 2 (queued) 5-10 ms, grant 3
    15-25 ms, grant 4 30-40 ms, each decided and sent before the one before ended. The GPU
    idled only 25-30 ms (5 ms, behind grant 3), not also 10-15 ms behind grant 2, which
    grant 1 covered."""
    ms = 1_000_000
    mb = 1_000_000
    lines = []
    for gid, sent, a0, a1 in ((1, 0, 0, 20), (2, 1, 5, 10), (3, 2, 15, 25), (4, 20, 30, 40)):
        lines += [rec("grant", sent * ms, 0, "llm", gid, 600 * mb, a0 * ms, a1 * ms),
                  rec("start", a0 * ms, 0, "llm", gid, 600 * mb, sent * ms),
                  rec("done", a1 * ms, 0, "llm", gid, 600 * mb, a0 * ms, a1 * ms, (a1 - a0) * ms)]
    e = json_of(lines)["engines"]["llm"]
    assert e["idle_ms"] == {"total": 5.0, "waiting_for_decision": 0.0, "delivery": 0.0, "other": 5.0}, e
    assert abs(e["idle_share"] - 5 / 40) < 1e-9, e
    assert e["idle_behind_ahead"][">= 512 MB"] == {"successors": 3, "gaps": 1, "idle_ms": 5.0}, e
    # Over the union (0-25 and 30-40 ms: 35 ms) the four grants moved 2,400 MB: 68.6 GB/s, where
    # their own 45 ms of GPU time (each predicted as it ran) gives 53.3; grant 4 alone started
    # on an idle GPU.
    u = e["union_rate"]
    assert abs(u["union_s"] - 0.035) < 1e-12 and abs(u["gbps_union"] - 2400 / 35) < 1e-9, u
    assert abs(u["gbps_predicted"] - 2400 / 45) < 1e-9 and abs(u["sum_over_union"] - 45 / 35) < 1e-9, u
    assert u["drained"] == 1, u
    rc, out, err = on_lines(lines)
    assert rc == 0 and "| llm | 0.035 | 68.6 | 53.3 | 1.29 | 1 |" in out, out


@case
def bad_input_is_named():
    """A record without a field, and a done before its grant, are refused with the line."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.jsonl"
        p.write_text(rec("release", 0, 0, "a", 1) + "\n" + json.dumps({"k": "grant", "t": 1}) + "\n")
        rc, out, err = report(p)
        assert rc == 2 and "t.jsonl:2: record lacks field 'who'" in err, (rc, err)
        p.write_text(rec("done", 0, 0, "llm", 7) + "\n")
        rc, out, err = report(p)
        assert rc == 2 and "t.jsonl:1: done of grant 7 (engine 0) before its grant record" in err, (rc, err)
        rc, out, err = report(Path(d) / "none.jsonl")
        assert rc == 2 and "none.jsonl" in err, err


run()
