#!/usr/bin/env python3
"""Who used which CPUs, second by second (a diagnostic beside a ripple-bench run).

    cpusample.py OUT.csv [PERIOD_S]      # runs until killed

Every PERIOD_S (default 1) it reads /proc/stat (each CPU's busy share) and every
process's utime+stime and last CPU (/proc/PID/stat), and writes one row per sample:
time, the busy share of each CPU, and the five processes that used the most CPU time
in that interval as "comm:pid:cpu:ms". Used to tell a CPU-side disturbance of the
deadline tasks from GPU memory traffic (Documentation/results/e2e.md).
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "ripple-bench"))
from benchlib.procs import proc_stats  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def cpu_times():
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                p = line.split()
                v = [int(x) for x in p[1:]]
                idle = v[3] + (v[4] if len(v) > 4 else 0)
                out[int(p[0][3:])] = (sum(v), idle)
    return out


def procs():
    out = {}
    for pid, comm, rest in proc_stats():
        comm = comm.replace(",", "_").replace(":", "_")
        out[(pid, rest[19])] = (comm, int(rest[11]) + int(rest[12]), int(rest[36]))  # keyed by pid and start time
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: cpusample.py OUT.csv [PERIOD_S]")
    period = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    c0, p0, t0 = cpu_times(), procs(), time.monotonic()
    ncpu = len(c0)
    with open(sys.argv[1], "w", buffering=1) as f:
        f.write("t_s," + ",".join(f"cpu{i}" for i in range(ncpu)) + ",top\n")
        while True:
            time.sleep(period)
            c1, p1 = cpu_times(), procs()
            busy = []
            for i in range(ncpu):
                dt = c1[i][0] - c0[i][0]
                di = c1[i][1] - c0[i][1]
                busy.append(f"{(dt - di) / dt:.2f}" if dt > 0 else "nan")
            use = []
            for (pid, _), (comm, t, cpu) in p1.items():
                was = p0.get((pid, _))
                d = t - (was[1] if was else 0)
                if d > 0:
                    use.append((d, f"{comm}:{pid}:{cpu}:{d * 1000 // HZ}"))
            use.sort(reverse=True)
            f.write(f"{time.monotonic() - t0:.1f}," + ",".join(busy) + "," + " ".join(u[1] for u in use[:5]) + "\n")
            c0, p0 = c1, p1


if __name__ == "__main__":
    main()
