#!/usr/bin/env python3
# Tests of tools/packaging/gpu/overhead_ci.py (the overhead verdict of engines-check.sh), TAP.
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/packaging/gpu/overhead_ci.py"
FIX = ROOT / "tests/fixtures/overhead"
CALL4 = ROOT / "Documentation/results/engines-runs/s7-call4/overhead.txt"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from taplib import case, run as run_cases  # noqa: E402


def run(*args):
    r = subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def cells(out):
    """{arm: line} of --cell output."""
    return {line.split(":")[0]: line for line in out.splitlines()}


@case
def call4_is_not_resolved():
    """Tests that s7 call 4's 15 runs give hook +2.66 % whose CI spans 1 %: not resolved, more runs named."""
    rc, out, err = run(CALL4, "--cell")
    assert rc == 0, err
    c = cells(out)
    assert c["hook"].startswith("hook: +2.66 % ["), c["hook"]
    assert c["off"].startswith("off: -0.15 % ["), c["off"]
    for arm in ("hook", "off"):
        lo, hi = (float(x) for x in c[arm].split("[")[1].split("]")[0].split(","))
        assert lo < 1 < hi, c[arm]
        need = int(c[arm].split("need ~")[1].split()[0])
        assert "not resolved" in c[arm] and need > 15, c[arm]


@case
def clearly_within_goal_is_shown():
    """Tests that a 0.3 % overhead with 0.5 % jitter over 20 runs is '<= 1 % shown'."""
    rc, out, err = run(FIX / "within1.txt", "--cell")
    assert rc == 0, err
    assert cells(out)["hook"].endswith("<= 1 % shown"), out


@case
def clearly_above_goal_is_shown():
    """Tests that a 3 % overhead with 0.5 % jitter over 20 runs is '> 1 % shown'."""
    rc, out, err = run(FIX / "above1.txt", "--cell")
    assert rc == 0, err
    assert cells(out)["hook"].endswith("> 1 % shown"), out
    assert "+3.0" in cells(out)["hook"] or "+2.9" in cells(out)["hook"], out


@case
def bootstrap_is_seeded():
    """Tests that the same input and seed give the same CI (a rerun reproduces the figure)."""
    a, b = run(CALL4)[1], run(CALL4)[1]
    assert a == b and "bootstrap, 10000, seed 1" in a, a


@case
def malformed_line_names_file_and_line():
    """Tests that a malformed line is one error line naming the file and line, exit non-zero."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "overhead.txt"
        p.write_text("plain 1 1000.0\nhook 1 990.0\nhook 2\n")
        rc, out, err = run(p)
        assert rc != 0 and out == "", (rc, out)
        assert err.strip().splitlines() == [f"overhead_ci.py: {p}:3: expected 'ARM RUN TOKS_PER_S', got 'hook 2'"], err
        p.write_text("plain 1 1000.0\nhook 1 fast\n")
        rc, out, err = run(p)
        assert rc != 0 and err.strip() == f"overhead_ci.py: {p}:2: tokens/s 'fast' is not a positive number", err


@case
def failed_runs_are_counted_not_errors():
    """Tests that 'n/a' (a run without a figure) is reported and left out, not an error."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "overhead.txt"
        p.write_text((FIX / "above1.txt").read_text() + "hook 21 n/a\n")
        rc, out, err = run(p)
        assert rc == 0 and "runs without a figure (n/a): hook 1" in out, (out, err)


@case
def accounting_estimate_from_stats_and_table():
    """Tests the accounting estimate: (wait + calls x the table's added ns) / decode time."""
    with tempfile.TemporaryDirectory() as d:
        st, tab = Path(d) / "hook.stats", Path(d) / "table.md"
        # 1000 tokens (graph launches) at plain's 1000 tok/s = 1 s; 2 ms of calls + 1 ms of waits
        st.write_text(json.dumps({"wait_ns": 1000000, "calls": {"cuGraphLaunch": [1000, 0], "cuLaunchKernel": [500, 0],
                                                                 "cuMemcpyHtoDAsync_v2": [500, 8]}}))
        tab.write_text("| call | plain | counting only | gated |\n|---|---|---|---|\n"
                       "| kernel | 4000 | 4100 (+100) | 5000 (+1000) |\n| graph | 1000 | 1100 (+100) | 2000 (+1000) |\n"
                       "| h2d-async-8B | 1000 | 1100 (+100) | 2000 (+1000) |\n")
        rc, out, err = run(FIX / "within1.txt", "--stats", f"hook={st}", "--hook-table", tab)
        assert rc == 0, err
        line = next(x for x in out.splitlines() if x.startswith("accounting estimate, not a measurement, hook"))
        # 3 ms / (1000 tokens / median plain tok/s (1000.0 here) + 3 ms) = 0.299 %
        assert "(grant wait 1.00 ms + 2000 calls x per-call gated cost = 2.00 ms)" in line and "= 0.30 %" in line, line
        rc, out, err = run(FIX / "within1.txt", "--stats", f"hook={st}")
        assert rc != 0 and "--stats needs --hook-table" in err, err


@case
def faster_than_plain_rows_are_read():
    """Tests a table whose interposed calls ran faster than plain (a negative added cost, written
    "(-N)", or "(+-N)" by tables made before the sign fix) is read, not refused."""
    with tempfile.TemporaryDirectory() as d:
        st, tab = Path(d) / "hook.stats", Path(d) / "table.md"
        # 1000 kernel launches at -1000 ns and 1000 graph launches at +1000 ns cancel out; a
        # parser that skipped the kernel row would cost those launches as the dearest call.
        st.write_text(json.dumps({"wait_ns": 1000000, "calls": {"cuGraphLaunch": [1000, 0], "cuLaunchKernel": [1000, 0]}}))
        tab.write_text("| call | plain | counting only | gated |\n|---|---|---|---|\n"
                       "| kernel | 4000 | 3900 (-100) | 3000 (+-1000) |\n| graph | 1000 | 1100 (+100) | 2000 (+1000) |\n")
        rc, out, err = run(FIX / "within1.txt", "--stats", f"hook={st}", "--hook-table", tab)
        assert rc == 0, err
        line = next(x for x in out.splitlines() if x.startswith("accounting estimate, not a measurement, hook"))
        assert "(grant wait 1.00 ms + 2000 calls x per-call gated cost = 0.00 ms)" in line, line
        assert "costed as the dearest" not in line, line


@case
def reps_against_processes():
    """Tests the noise split: tight reps inside scattered processes say more processes, not reps."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "reps.txt"
        p.write_text("".join(f"plain {i} {r} {m + r}\n" for i, m in enumerate((950, 1000, 1050, 990, 1010), 1)
                             for r in (1, 2, 3)))
        rc, out, err = run(FIX / "within1.txt", "--reps", p)
        assert rc == 0, err
        assert "noise, plain (5 processes x 3 reps): a rep inside a process sd 0.10 %" in out, out
        assert "more processes, not more reps, narrow the CI" in out, out


run_cases()
