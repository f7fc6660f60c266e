#!/usr/bin/env python3
"""Is a miss that no grant reached an after-effect of the traffic before it? For every run of
a ripple-bench --trace output (OUT/traces/*.jsonl.gz with windows.json), per task: the jobs
that no grant's GPU interval overlapped, binned by the time from the last grant's end to
their release, and how many of them missed. If misses came from traffic just before the
release, the near bins would miss more often than the far ones; a host's own noise misses
alike in every bin (and under sigamma, whose traffic stays away from the jobs). The last
two columns compare the durations (release to completion, p50 / p90 ms) of the jobs no grant
reached with those some grant reached: if the first are slower under one policy than under
another in the same call, its runs carry load that the grants do not show (results/e2e-archive.md,
twenty-fifth session). The column "host misses" counts the misses no grant reached as a
share of all the task's jobs in the run. Where it is above ε, those misses alone broke ε,
and the lines after the table name the run. They are the host's own drift unless the near
bins miss more often than the far ones (an after-effect of the traffic). A closing profile
misses such drift when it is over by then (results/e2e.md §0, twenty-seventh session). ε is
OUT/results.json's, else --eps.

    notraffic_bins.py OUT [--tasks costmap,sgm] [--eps PERCENT]
"""
import argparse
import gzip
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trace_report as T  # noqa: E402

BINS = ((0, 1), (1, 2), (2, 5), (5, 20), (20, math.inf))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--eps", type=float, default=None, help="ε in percent (default: OUT/results.json's, else 2)")
    a = ap.parse_args(argv)
    d = Path(a.out) / "traces"
    eps = a.eps
    if eps is None:
        try:
            eps = float(json.loads((Path(a.out) / "results.json").read_text())["eps"]) * 100
        except OSError:
            eps = 2.0
        except (ValueError, KeyError, TypeError) as e:
            print(f"notraffic_bins: {Path(a.out) / 'results.json'}: no eps ({e!r}); pass --eps", file=sys.stderr)
            return 2
    if not 0 < eps < 100:
        print(f"notraffic_bins: --eps {eps:g}: a percentage above 0 and below 100", file=sys.stderr)
        return 2
    try:
        windows = json.loads((d / "windows.json").read_text())
    except OSError as e:
        print(f"notraffic_bins: {d / 'windows.json'}: {e.strerror}", file=sys.stderr)
        return 2
    want = set(filter(None, a.tasks.split(",")))
    print("| run | task | jobs | no traffic | " + " | ".join(f"{lo:g}-{hi:g} ms" for lo, hi in BINS) +
          " | no traffic: p50 / p90 ms | with traffic: p50 / p90 ms | host misses, % of jobs |")
    print("|---|---|---|---|" + "---|" * (len(BINS) + 3))
    host = []
    for name, (t0, t1) in sorted(windows.items()):
        try:
            with gzip.open(d / name, "rt") as fh:
                tr = T.read(fh, name)
        except (OSError, T.TraceError) as e:
            print(f"notraffic_bins: {d / name}: {e}", file=sys.stderr)
            return 2
        tr.t0 = 0
        T.attribute(tr)
        done = T.Spans((g.a_from, g.a_to, g.bytes) for g in tr.grants.values() if g.a_to >= 0 and g.a_to > g.a_from)
        for task in sorted({j.task for j in tr.jobs}):
            if want and task not in want:
                continue
            js = [j for j in tr.jobs if j.task == task and t0 * 1e9 <= j.release < t1 * 1e9]
            cells = []
            nt = [j for j in js if j.actual <= 0]
            for lo, hi in BINS:
                inb = []
                for j in nt:
                    last = done.last_end_before(j.release)
                    gap = math.inf if last is None else (j.release - last) / 1e6
                    if lo <= gap < hi:
                        inb.append(j)
                cells.append(f"{sum(j.missed for j in inb)}/{len(inb)}")
            for group in (nt, [j for j in js if j.actual > 0]):
                ms = [(j.end - j.release) / 1e6 for j in group]
                cells.append(f"{T.quantile(ms, 0.5):.1f} / {T.quantile(ms, 0.9):.1f}" if ms else "-")
            missed = sum(j.missed for j in nt)
            share = 100 * missed / len(js) if js else 0.0
            cells.append(f"{share:.2f}" + (" ✗" if share > eps else ""))
            run = name.replace('.jsonl.gz', '')
            print(f"| {run} | {task} | {len(js)} | {len(nt)} | " + " | ".join(cells) + " |")
            if share > eps:
                host.append(f"{run} {task}: {missed} of {len(js)} jobs missed with no grant reaching them "
                            f"({share:.2f} % > eps {eps:g} %)")
    print()
    if host:
        print(f"Runs where the misses no grant reached passed eps ({eps:g} %) on their own "
              "(the host's, unless the near bins miss more often than the far ones):")
        for line in host:
            print(f"- {line}")
    else:
        print(f"No run's misses that no grant reached passed eps ({eps:g} %) of a task's jobs.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
