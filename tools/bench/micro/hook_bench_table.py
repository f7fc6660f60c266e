#!/usr/bin/env python3
"""The table of ripple-hook-bench runs (tools/bench/micro/hook_bench.sh,
tools/packaging/gpu/engines-check.sh): DIR holds plain.N, off.N and gated.N (N = 1..RUNS),
each ripple-hook-bench's output ("KIND NS" lines); prints a markdown table of the median
ns per call of each kind and mode, and the interposer's cost over plain.

  hook_bench_table.py DIR RUNS [GATED_LABEL]
"""
import statistics
import sys


def load(d, mode, runs):
    per = {}
    for i in range(1, runs + 1):
        try:
            lines = open(f"{d}/{mode}.{i}").read().splitlines()
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) != 2 or line.startswith("#"):
                continue
            try:
                per.setdefault(f[0], []).append(float(f[1]))
            except ValueError:
                pass
    return {k: statistics.median(v) for k, v in per.items()}


def main():
    d, runs = sys.argv[1], int(sys.argv[2])
    gated = sys.argv[3] if len(sys.argv) > 3 else "gated (unmanaged agent)"
    p, o, g = (load(d, m, runs) for m in ("plain", "off", "gated"))
    print(f"| call (ns per call, median of {runs}) | plain | counting only (RIPPLE_CUHOOK=off) | {gated} |")
    print("|---|---|---|---|")
    cell = lambda m, k: f"{m[k]:.0f} ({m[k] - p[k]:+.0f})" if k in m else "n/a"   # signed: faster than plain is -N
    for k in p:
        print(f"| {k} | {p[k]:.0f} | {cell(o, k)} | {cell(g, k)} |")
    if not p:
        print("| ripple-hook-bench | n/a (no output) | | |")


if __name__ == "__main__":
    main()
