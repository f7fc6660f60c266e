#!/usr/bin/env python3
"""The interposer's overhead on llama.cpp's tokens/s, with its uncertainty (issue 18's
<= 1 % goal; tools/packaging/gpu/engines-check.sh, step 4, writes its input and calls it).

    overhead_ci.py OVERHEAD.txt [OVERHEAD.txt ...] [options]

OVERHEAD.txt: one line per llama-bench process, "ARM RUN TOKS_PER_S" (arms: plain, and
any others, e.g. off = the interposer counting only, hook = gated with an always-grant
agent); "n/a" for a run that gave no figure; blank lines and '#' comments are skipped.
Several files are strata (one per GPU call, each its own instance): resampled apart, their
overheads pooled weighted by runs.

For each arm against plain (overhead = 1 - arm/plain; positive = slower): the overhead of
the medians, a seeded percentile-bootstrap 95 % CI of it (each arm resampled apart), the
overhead of the means, n, and a verdict against the goal:
  "<= 1 % shown"  only when the CI's upper end is <= the goal,
  "> 1 % shown"   when its lower end is > the goal,
  else "not resolved: need ~N runs per arm", N = n x (CI half-width / distance from the
  estimate to the goal)^2, the distance taken as at least 0.25 points.

--reps FILE|DIR: llama-bench's repetitions inside each process ("ARM RUN REP TOKS_PER_S"
lines, or a directory of engines-check's bench-ARM.N.{jsonl,csv}): the spread of the reps
inside a process against the spread of the process means, and what more reps would buy.

--stats ARM=FILE and --hook-table FILE: an accounting estimate, not a measurement: (the
time the run waited for grants + each intercepted call x its added cost in
ripple-hook-bench's table, gated column for a gated arm, counting-only column for "off")
over the run's decode time (its graph launches as tokens, at plain's median tokens/s).
"""
import argparse
import json
import math
import os
import random
import re
import statistics
import sys

GOAL = 1.0        # percent
MIN_DIST = 0.25   # points: the smallest distance to the goal N is planned for


class InputError(Exception):
    """A malformed input: the message names the file and line."""


def records(path):
    """(line number, the stripped line, its fields) of each line of a whitespace-separated
    file but blank ones and # comments."""
    try:
        text = open(path).read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("#"):
            yield no, s, s.split()


def parse_overhead(path):
    """{arm: [tokens/s, ...]} and {arm: failed runs} of one ARM RUN TOKS file."""
    runs, failed = {}, {}
    for no, s, f in records(path):
        if len(f) != 3:
            raise InputError(f"{path}:{no}: expected 'ARM RUN TOKS_PER_S', got '{s}'")
        if f[2] == "n/a":
            failed[f[0]] = failed.get(f[0], 0) + 1
            continue
        try:
            v = float(f[2])
        except ValueError:
            v = float("nan")
        if not (v > 0 and math.isfinite(v)):
            raise InputError(f"{path}:{no}: tokens/s '{f[2]}' is not a positive number")
        runs.setdefault(f[0], []).append(v)
    if not runs.get("plain"):
        raise InputError(f"{path}: no 'plain' runs")
    return runs, failed


def overhead(plain, arm, stat):
    return 100.0 * (1.0 - stat(arm) / stat(plain))


def pooled(strata, arm, stat):
    """The n-weighted mean over strata of each stratum's overhead of ARM."""
    w = [(len(s[arm]), overhead(s["plain"], s[arm], stat)) for s in strata]
    return sum(n * o for n, o in w) / sum(n for n, _ in w)


def bootstrap(strata, arm, stat, b, seed):
    rng = random.Random(seed)
    est = []
    for _ in range(b):
        res = [{k: rng.choices(s[k], k=len(s[k])) for k in ("plain", arm)} for s in strata]
        est.append(pooled(res, arm, stat))
    est.sort()
    return est[int(0.025 * b)], est[min(b - 1, int(math.ceil(0.975 * b)) - 1)]


def verdict(lo, hi, est, n, goal):
    if hi <= goal:
        return f"<= {goal:g} % shown"
    if lo > goal:
        return f"> {goal:g} % shown"
    half = (hi - lo) / 2
    d = max(abs(est - goal), MIN_DIST)
    need = math.ceil(n * (half / d) ** 2)
    return f"not resolved: need ~{need} runs per arm"


def analyse(strata, b, seed, goal):
    arms = [a for a in strata[0] if a != "plain" and all(s.get(a) for s in strata)]
    out = []
    for arm in arms:
        n = sum(len(s[arm]) for s in strata)
        n_plain = sum(len(s["plain"]) for s in strata)
        med = pooled(strata, arm, statistics.median)
        lo, hi = bootstrap(strata, arm, statistics.median, b, seed)
        mean = pooled(strata, arm, statistics.fmean)
        mlo, mhi = bootstrap(strata, arm, statistics.fmean, b, seed)
        out.append(dict(arm=arm, n=n, n_plain=n_plain, median=med, lo=lo, hi=hi, mean=mean,
                        mean_lo=mlo, mean_hi=mhi, verdict=verdict(lo, hi, med, min(n, n_plain), goal)))
    return out


# --- repetitions inside a process ----------------------------------------------------

def parse_reps(path):
    """{arm: {run: [tokens/s of each rep]}} from an ARM RUN REP TOKS file, or a directory
    of bench-ARM.N.jsonl (llama-bench -o jsonl: samples_ts) or .csv (avg_ts, stddev_ts:
    the reps themselves are not there, so they come back as (avg, sd) pairs)."""
    reps = {}
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            m = re.fullmatch(r"bench-(\w+)\.(\d+)\.(jsonl|csv)", name)
            if not m:
                continue
            f = os.path.join(path, name)
            try:
                if m.group(3) == "jsonl":
                    rows = [json.loads(x) for x in open(f) if x.strip()]
                    v = [float(x) for x in rows[-1]["samples_ts"]] if rows else []
                else:
                    import csv
                    rows = list(csv.DictReader(open(f)))
                    v = (float(rows[-1]["avg_ts"]), float(rows[-1]["stddev_ts"])) if rows else []
            except (ValueError, KeyError, OSError) as e:
                raise InputError(f"{f}: cannot read llama-bench's figures ({e})")
            if v:
                reps.setdefault(m.group(1), {})[m.group(2)] = v
        return reps
    for no, s, f in records(path):
        try:
            if len(f) != 4:
                raise ValueError
            v = float(f[3])
        except ValueError:
            raise InputError(f"{path}:{no}: expected 'ARM RUN REP TOKS_PER_S', got '{s}'")
        reps.setdefault(f[0], {}).setdefault(f[1], []).append(v)
    return reps


def noise(reps, r_csv):
    """Per arm: processes, reps each, the within-process sd of one rep, the between-process
    sd of a process's mean, and the per-process part of it (all in % of the arm's mean)."""
    out = []
    for arm, per in reps.items():
        means, var_w, r = [], [], None
        for v in per.values():
            if isinstance(v, tuple):          # csv: (avg, sd) of r_csv reps
                means.append(v[0]); var_w.append(v[1] ** 2); r = r_csv
            elif len(v) >= 2:
                means.append(statistics.fmean(v)); var_w.append(statistics.variance(v)); r = len(v)
        if len(means) < 2 or not r:
            continue
        m = statistics.fmean(means)
        sw = math.sqrt(statistics.fmean(var_w))
        sb = statistics.stdev(means)
        sp = math.sqrt(max(0.0, sb ** 2 - sw ** 2 / r))
        out.append(dict(arm=arm, k=len(means), r=r, within=100 * sw / m, between=100 * sb / m,
                        process=100 * sp / m))
    return out


# --- accounting ----------------------------------------------------------------------

def parse_hook_table(path):
    """{kind: (counting-only added ns, gated added ns)} from hook_bench_table.py's table."""
    kinds = {}
    try:
        text = open(path).read()
    except OSError as e:
        raise InputError(f"{path}: {e.strerror}")
    for line in text.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if len(c) != 4 or c[0] in kinds:
            continue
        # "(+N)" / "(-N)"; tables written before the sign fix said "(+-N)" for a call faster than plain
        d = [re.search(r"\(\+?([+-]?\d+)\)", x) for x in c[2:4]]
        if all(d):
            kinds[c[0]] = (int(d[0].group(1)), int(d[1].group(1)))
    if not kinds:
        raise InputError(f"{path}: no ripple-hook-bench rows ('| KIND | NS | NS (+NS) | NS (+NS) |')")
    return kinds


# Each intercepted driver function -> the ripple-hook-bench call it is costed as. A
# function that is none of them is costed as the dearest call of the table (said so).
KIND_OF = [(r"^cuLaunch", "kernel"), (r"^cuGraphLaunch", "graph"),
           (r"^cuMemcpyHtoDAsync", "h2d-async-8B"), (r"^cuMemcpy.*Async", "memcpy-async-d2h")]


def account(stats_path, kinds, arm, plain_ts, wait_ns=None):
    try:
        st = json.load(open(stats_path))
        calls = {k: int(v[0]) for k, v in st["calls"].items()}
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        raise InputError(f"{stats_path}: not an interposer stats file ({e})")
    col = 0 if arm == "off" else 1
    dearest = max(v[col] for v in kinds.values())
    wait = 0 if arm == "off" else (wait_ns if wait_ns is not None else int(st.get("wait_ns", 0)))
    added = unmapped = kernels = 0
    for fn, n in calls.items():
        kind = next((k for p, k in KIND_OF if re.search(p, fn) and k in kinds), None)
        if kind is None:
            unmapped += n
        if kind == "kernel":
            kernels += n
        added += n * (kinds[kind][col] if kind else dearest)
    # Kernels launched inside a stream capture (a graph's recording) cost the capture row's.
    cap = kinds.get("kernel-capture")
    low = added - kernels * (kinds["kernel"][col] - cap[col]) if cap and "kernel" in kinds else None
    tokens = sum(n for fn, n in calls.items() if fn.startswith("cuGraphLaunch"))
    if not tokens:
        raise InputError(f"{stats_path}: no graph launches to count tokens by")
    t_ns = tokens / plain_ts * 1e9
    pct = lambda a: 100 * (wait + a) / (t_ns + wait + a)
    return dict(arm=arm, wait_ns=wait, calls=sum(calls.values()), added_ns=added, unmapped=unmapped,
                tokens=tokens, t_ns=t_ns, pct=pct(added), pct_low=pct(low) if low is not None else None,
                kernels=kernels)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("files", nargs="+", metavar="OVERHEAD.txt")
    ap.add_argument("--goal", type=float, default=GOAL, help="the goal in percent (1)")
    ap.add_argument("--boot", type=int, default=10000, help="bootstrap resamples (10000)")
    ap.add_argument("--seed", type=int, default=1, help="bootstrap seed (1)")
    ap.add_argument("--reps", metavar="FILE|DIR", help="llama-bench's reps inside each process")
    ap.add_argument("--csv-reps", type=int, default=3, help="llama-bench -r of csv files (3)")
    ap.add_argument("--stats", action="append", default=[], metavar="ARM=FILE",
                    help="an interposer stats file (JSON) of one run of ARM")
    ap.add_argument("--wait-ns", type=int, help="grant wait of the hook run, if not its stats'")
    ap.add_argument("--hook-table", metavar="FILE", help="hook_bench_table.py's table")
    ap.add_argument("--cell", action="store_true", help="one line per arm, for a table cell")
    a = ap.parse_args(argv)
    try:
        parsed = [parse_overhead(f) for f in a.files]
        strata = [r for r, _ in parsed]
        failed = {}
        for _, fl in parsed:
            for k, v in fl.items():
                failed[k] = failed.get(k, 0) + v
        res = analyse(strata, a.boot, a.seed, a.goal)
        acc = []
        if a.stats:
            if not a.hook_table:
                raise InputError("--stats needs --hook-table (the per-call costs)")
            kinds = parse_hook_table(a.hook_table)
            plain_ts = statistics.median([v for s in strata for v in s["plain"]])
            for spec in a.stats:
                arm, sep, path = spec.partition("=")
                if not sep:
                    raise InputError(f"--stats {spec}: expected ARM=FILE")
                acc.append(account(path, kinds, arm, plain_ts, a.wait_ns if arm != "off" else None))
        nz = noise(parse_reps(a.reps), a.csv_reps) if a.reps else []
    except InputError as e:
        print(f"overhead_ci.py: {e}", file=sys.stderr)
        return 2
    accs = {x["arm"]: x for x in acc}

    def acc_text(x):
        low = f" ({x['pct_low']:.2f} % with its {x['kernels']} kernel launches at the in-capture cost)" \
            if x["pct_low"] is not None and x["kernels"] else ""
        un = f"; {x['unmapped']} calls of no bench kind, costed as the dearest" if x["unmapped"] else ""
        return (f"(grant wait {x['wait_ns'] / 1e6:.2f} ms + {x['calls']} calls x per-call "
                f"{'counting-only' if x['arm'] == 'off' else 'gated'} cost = {x['added_ns'] / 1e6:.2f} ms) / "
                f"({x['tokens']} tokens at plain's median = {x['t_ns'] / 1e6:.0f} ms) = {x['pct']:.2f} %{low}{un}")

    if a.cell:
        for r in res:
            x = accs.get(r["arm"])
            print(f"{r['arm']}: {r['median']:+.2f} % [{r['lo']:+.2f}, {r['hi']:+.2f}] (medians, n {r['n']}; "
                  f"means {r['mean']:+.2f} %): {r['verdict']}"
                  + (f"; accounting estimate {x['pct']:.2f} %" if x else ""))
        return 0
    src = ", ".join(a.files)
    print(f"overhead against plain (1 - arm/plain tokens/s; + = slower): {src}")
    if failed:
        print("runs without a figure (n/a): " + ", ".join(f"{k} {v}" for k, v in sorted(failed.items())))
    if len(strata) > 1:
        print(f"{len(strata)} files as strata: each resampled apart, overheads pooled weighted by runs")
    print(f"| arm | n | overhead of medians | 95 % CI (bootstrap, {a.boot}, seed {a.seed}) | overhead of means "
          f"(95 % CI) | verdict (goal <= {a.goal:g} %) |")
    print("|---|---|---|---|---|---|")
    for r in res:
        print(f"| {r['arm']} | {r['n']} (plain {r['n_plain']}) | {r['median']:+.2f} % | [{r['lo']:+.2f}, {r['hi']:+.2f}] % "
              f"| {r['mean']:+.2f} % ([{r['mean_lo']:+.2f}, {r['mean_hi']:+.2f}]) | {r['verdict']} |")
    for x in acc:
        r = next((r for r in res if r["arm"] == x["arm"]), None)
        plan = ""
        if r:
            half = (r["hi"] - r["lo"]) / 2
            need = math.ceil(min(r["n"], r["n_plain"]) * (half / max(abs(x["pct"] - a.goal), MIN_DIST)) ** 2)
            plan = f"; were the overhead this, telling it from {a.goal:g} % would need ~{need} runs per arm at this spread"
        print(f"accounting estimate, not a measurement, {x['arm']}: {acc_text(x)}{plan}")
    for z in nz:
        more = ", ".join(f"r = {r} {math.sqrt(z['process'] ** 2 + z['within'] ** 2 / r):.2f} %" for r in (1, 3, 10))
        print(f"noise, {z['arm']} ({z['k']} processes x {z['r']} reps): a rep inside a process sd {z['within']:.2f} %, "
              f"a process's mean sd {z['between']:.2f} % of which the process itself {z['process']:.2f} %; "
              f"a process's sd with r reps: {more}")
    if nz:
        within_less = all(z["within"] / math.sqrt(z["r"]) < z["between"] for z in nz)
        dominated = all(z["process"] > z["within"] / math.sqrt(z["r"]) for z in nz)
        print("reps inside a process are " + ("less" if within_less else "not less")
              + " noisy than processes; " + ("the spread is the processes': more processes, not more reps, narrow the CI"
                                               if dominated else "more reps per process narrow the CI too"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
