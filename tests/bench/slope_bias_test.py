#!/usr/bin/env python3
# Tests of tools/bench/ripple-sim/slope_bias.py (TAP): the three slopes it reads from hand-made
# admission traces with known answers, and its refusal of bad input.
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/bench/ripple-sim/slope_bias.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from taplib import case, run  # noqa: E402


def trace(d, jobs, name="t.jsonl"):
    """jobs: (charged GB, response ms[, early GB]) of one task 'a', as complete records."""
    p = Path(d) / name
    p.write_text("".join(json.dumps({"k": "complete", "t": i, "who": 0, "name": "a", "id": i,
                                     "bytes": round(j[0] * 1e9), "from": round(j[2] * 1e9) if len(j) > 2 else 0,
                                     "to": 0, "value": round(j[1] * 1e6), "flag": 0}) + "\n"
                         for i, j in enumerate(jobs)))
    return p


def tool(*args):
    r = subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def cells(out):
    return [c.strip() for c in out.strip().splitlines()[-1].strip("|").split("|")]


def row(out):
    c = cells(out)
    return float(c[4]), float(c[5])  # charge, intensity


@case
def own_spread_reads_as_charge_slope_not_intensity():
    """No slope at all: r = 10 + n ms, the engines' rate (GB/ms) independent of n, C = rate x r.
    A longer job is charged more, so the charge slope is well above 0; the intensity (rate x
    median r) does not move with n, so its slope is 0 (a balanced design: exactly)."""
    jobs = [(rate * (10 + n), 10 + n) for rate in (0.05, 0.10, 0.15) for n in (-2, 0, 2)] * 4
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = tool("--warmup-fraction", "0", trace(d, jobs))
        assert rc == 0, err
        charge, intensity = row(out)
        assert charge > 1.0, out
        assert abs(intensity) < 1e-6, out


@case
def fixed_charges_give_the_true_slope_as_charge_slope():
    """Budget-bound jobs: C set before the job (0.5, 1, 1.5 GB), r = 10 + n + 2 C. The charge
    slope is the true 2 ms/GB; the intensity slope reads the own spread against it (lower)."""
    jobs = [(c, 10 + n + 2 * c) for c in (0.5, 1.0, 1.5) for n in (-2, 0, 2)] * 4
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = tool("--warmup-fraction", "0", trace(d, jobs))
        assert rc == 0, err
        charge, intensity = row(out)
        assert abs(charge - 2.0) < 1e-3, out
        assert intensity < 2.0 - 0.1, out


@case
def instrument_reads_the_true_slope_through_the_own_spread():
    """r = 10 + n + 2 C with C = rate x r (charged while the job lives), Z = rate x 8 (the
    first 8 ms): the charge slope reads the spread on top of 2; the instrumented slope is
    exactly 2 (a balanced design: cov(Z, 10 + n) = 0). Without Z the column is blank."""
    jobs = [(rate * (10 + n) / (1 - 2 * rate), (10 + n) / (1 - 2 * rate), rate * 8)
            for rate in (0.05, 0.10, 0.15) for n in (-2, 0, 2)] * 4
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = tool("--warmup-fraction", "0", trace(d, jobs))
        assert rc == 0, err
        charge, _ = row(out)
        assert charge > 2.5, out
        assert abs(float(cells(out)[6]) - 2.0) < 1e-2, out  # bytes rounded to whole bytes
        rc, out, err = tool("--warmup-fraction", "0", trace(d, [j[:2] for j in jobs], "no-z.jsonl"))
        assert rc == 0, err
        assert cells(out)[6] == "", out


@case
def warmup_fraction_leaves_out_the_first_jobs():
    """The first half carries a slope of 100 ms/GB, the second none: 0.5 leaves it out."""
    first = [(c, 10 + 100 * c) for c in (0.1, 0.2, 0.3)] * 2
    second = [(c, 10.0 + n) for c in (0.1, 0.2, 0.3) for n in (-1, 1)]
    with tempfile.TemporaryDirectory() as d:
        rc, out, err = tool("--warmup-fraction", "0.5", trace(d, first + second))
        assert rc == 0, err
        charge, _ = row(out)
        assert abs(charge) < 1e-6, out


@case
def bad_input_is_refused_with_its_place():
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "bad.jsonl"
        p.write_text('{"k": "release"}\nnot json\n')
        rc, _, err = tool(p)
        assert rc == 2 and "bad.jsonl:2" in err, err
        rc, _, err = tool(Path(d) / "missing.jsonl")
        assert rc == 2 and "missing.jsonl: no such file" in err, err
        q = Path(d) / "none.jsonl"
        q.write_text('{"k": "release", "name": "a"}\n')
        rc, _, err = tool(q)
        assert rc == 2 and "no complete records" in err, err
        rc, _, err = tool("--warmup-fraction", "1", q)
        assert rc == 2 and "--warmup-fraction" in err, err


run()
