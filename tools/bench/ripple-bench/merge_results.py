#!/usr/bin/env python3
"""One sweep's results.json and table.md from the calls it was split into: a device call runs
at most 10 minutes, so a sweep over k runs as one call per k (Documentation/results/e2e.md §0,
e2e-runs/h200-latest). Each k must come from one call, and the calls must share the mix, the
tasks, their periods, eps and the backend; each call's options and co-run profiles are kept
under "calls" (each k's deadlines are its own call's). The table is ripple-bench's own
rendering (benchlib/report.py).

    merge_results.py CALL_DIR_OR_RESULTS_JSON ... --out DIR
"""
import argparse
import json
import sys
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import report  # noqa: E402


def load(arg: str) -> tuple[str, dict]:
    """(source name, results) from a bench output folder or its results.json."""
    p = Path(arg)
    f = p / "results.json" if p.is_dir() else p
    try:
        r = json.loads(f.read_text())
    except OSError as e:
        raise ValueError(f"{f}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{f}: not JSON ({e.msg}, line {e.lineno})") from None
    if not isinstance(r, dict) or not isinstance(r.get("points"), list):
        raise ValueError(f"{f}: points: missing (not a ripple-bench results.json)")
    return (f.parent.name if f.name == "results.json" else str(f)), report.nan_for_null(r)


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("calls", nargs="+", help="each call's ripple-bench output folder (or its results.json)")
    ap.add_argument("--out", required=True, type=Path, help="write results.json and table.md here")
    a = ap.parse_args(argv)
    try:
        s = report.merge([load(c) for c in a.calls])
    except ValueError as e:
        print(f"merge_results: {e}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "results.json").write_text(json.dumps(s, indent=1, default=lambda x: None) + "\n")
    (a.out / "table.md").write_text(report.markdown_table(s))
    print(f"merge_results: wrote {a.out}/results.json, table.md ({len(s['calls'])} calls, "
          f"k = {', '.join(f'{k:g}' for c in s['calls'] for k in c['ks'])})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
