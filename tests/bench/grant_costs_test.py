#!/usr/bin/env python3
# Tests of tools/bench/ripple-sim/grant_costs.py (TAP): the per-grant costs it pools from
# hand-made ripple-bench results (known answers), which points it leaves out, and its refusal
# of bad input.
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/bench/ripple-sim/grant_costs.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from taplib import case, run  # noqa: E402


def point(policy, tok, busy, grants, successors=0, decision=0.0, delivery=0.0, other=0.0, runs=1, vlm_gbps=0.0):
    return {"policy": policy, "k": 1.1, "runs": runs, "llm_tok_s": tok, "vlm_gbps": vlm_gbps,
            "gaps": {"busy": busy, "decision": decision, "delivery": delivery, "other": other},
            "llm_grants": {"grants": grants, "successors": successors}}


def call(d, name, pts, score_s=10):
    p = Path(d) / name
    p.mkdir()
    (p / "results.json").write_text(json.dumps({"score_s": score_s, "points": pts}))
    return p


def tool(*args):
    r = subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


@case
def pooled_costs_have_the_known_values():
    """Unmanaged: 1 token/s at 100 % busy (1 busy s a token). ripple: 0.5 token/s at 60 % busy
    over 10 s = 6 busy s for 5 tokens, 1 s of excess over 1000 grants = 1000 us, plus 1 % other
    (100 us a grant); sigamma (no successors): 2 % delivery over 500 grants = 400 us a grant."""
    with tempfile.TemporaryDirectory() as d:
        a = call(d, "a", [point("unmanaged", 1.0, 1.0, 40),
                          point("ripple", 0.5, 0.6, 1000, successors=700, other=0.01, delivery=0.01),
                          point("sigamma", 0.2, 0.3, 500, delivery=0.02)])
        rc, out, err = tool("--json", a)
        assert rc == 0, err
        q = json.loads(out)
        r, s = q["ripple"], q["sigamma"]
        assert abs(r["busy_excess_us"] - 1000) < 1e-6 and abs(r["other_us"] - 100) < 1e-6, r
        assert abs(r["hidden_overhead_us"] - 1100) < 1e-6 and r["delivery_wait_us"] is None, r
        # sigamma: 3 busy s for 2 tokens -> 1 s excess over 500 grants = 2000 us
        assert abs(s["busy_excess_us"] - 2000) < 1e-6 and abs(s["delivery_wait_us"] - 400) < 1e-6, s
        # pooled: (1 + 0.1 + 1) s over 1500 grants
        assert abs(q["all"]["hidden_overhead_us"] - 2.1e6 / 1500) < 1e-6, q["all"]


@case
def a_call_without_unmanaged_adds_no_excess_and_vlm_host_points_are_left_out():
    """The busy excess needs the same call's unmanaged point; a point whose VLM moves host bytes
    is not pooled at all (its delivery wait is a link hold)."""
    with tempfile.TemporaryDirectory() as d:
        a = call(d, "a", [point("ripple", 0.5, 0.6, 1000, delivery=0.01)])
        b = call(d, "b", [point("unmanaged", 1.0, 1.0, 40), point("ripple", 0.5, 0.5, 1000, delivery=0.05, vlm_gbps=2.0)])
        rc, out, err = tool("--json", a, b)
        assert rc == 0, err
        r = json.loads(out)["ripple"]
        assert r["points"] == 1 and r["points_beside_unmanaged"] == 0 and r["hidden_overhead_us"] is None, r
        assert abs(r["delivery_us"] - 100) < 1e-6, r
        rc, out, err = tool(a, b)
        assert rc == 0 and "| a | ripple | 1.1 | 1000 |" in out and "| b |" not in out, out


@case
def the_drained_grant_fit_finds_a_cost_paid_only_by_drained_grants():
    """Two points whose cost is exactly 1 ms per grant not taken ahead (successors differ, so a
    price per grant cannot fit both): the drained fit is 1000 us with no residual, the per-grant
    fit leaves one."""
    with tempfile.TemporaryDirectory() as d:
        # unmanaged: 1 busy s a token. Point 1: 100 drained of 1000 grants -> 0.1 s excess over
        # 10 s (busy 0.51, 0.5 tokens/s). Point 2: 500 drained of 1000 -> 0.5 s (busy 0.55).
        a = call(d, "a", [point("unmanaged", 1.0, 1.0, 40),
                          point("ripple", 0.5, 0.51, 1000, successors=900),
                          point("ripple+x", 0.5, 0.55, 1000, successors=500)])
        rc, out, err = tool("--json", a)
        assert rc == 0, err
        f = json.loads(out)["ripple"]["fit"]
        assert abs(f["per_drained_grant"]["us"] - 1000) < 1e-6 and f["per_drained_grant"]["rms_over_mean"] < 1e-9, f
        assert f["per_grant"]["rms_over_mean"] > 0.3, f


@case
def bad_input_is_one_line_naming_the_file_and_field():
    """A missing folder, a point without gaps, a field that is not a number, and no managed point."""
    with tempfile.TemporaryDirectory() as d:
        rc, _, err = tool(Path(d) / "none")
        assert rc == 2 and "none/results.json" in err and len(err.strip().splitlines()) == 1, err
        p = point("ripple", 0.5, 0.6, 10)
        del p["gaps"]
        rc, _, err = tool(call(d, "nogaps", [p]))
        assert rc == 2 and "point ripple k=1.1: no 'gaps'" in err, err
        p = point("ripple", 0.5, 0.6, 10)
        p["gaps"]["other"] = "x"
        rc, _, err = tool(call(d, "str", [p]))
        assert rc == 2 and "'other' is not a number" in err, err
        rc, _, err = tool(call(d, "um", [point("unmanaged", 1.0, 1.0, 40)]))
        assert rc == 2 and "no managed point" in err, err


if __name__ == "__main__":
    run()
