#!/usr/bin/python3
# Renders a ripple-sim results.json with ripple-bench's own report code
# (tools/bench/ripple-bench/benchlib/report.py): the markdown table on stdout and, with --plots,
# the bench's PNGs (DMR and throughput vs k) next to the JSON. ripple-sim writes the same
# table itself (tools/bench/ripple-sim/report.cc is a port); this is the cross-check.
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(HERE.parent / "ripple-bench"))
from benchlib import plots, report  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("results", type=Path)
    p.add_argument("--plots", action="store_true", help="write dmr_vs_k.png, throughput_vs_k.png (matplotlib)")
    a = p.parse_args()
    s = report.nan_for_null(json.loads(a.results.read_text()))
    print(report.markdown_table(s))
    if a.plots:
        s["_responses"] = []
        plots.write_plots(s, a.results.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main())
