#!/usr/bin/env python3
"""Judges a soak (tests/soak/soak.sh): per window, the task's deadline-miss ratio from
its own ground truth (the CSV of each task run: a miss is completion - release > D),
the longest grant stall, the agent's CPU time, and the agent's RSS; prints one TAP case
per window, one for the agent's memory, and writes the per-window table (windows.tsv).

Misses are split by what the plant (a test double with a known slope kappa) added to the
job: a job stretched by kappa x plant_bytes that would have missed without any of it
(completion - release - kappa x bytes > D) is a host miss: the shared VM, not the traffic
the agent admitted, made it late. The agent answers for the others, the traffic misses:
their ratio is judged against eps. Host misses are counted and shown, not judged; what
the agent itself could do to the task's core (it runs at a higher SCHED_FIFO priority) is
bounded instead by its CPU time: at most CPU_FRAC of one core per window.

A stall: a connected engine with units pending whose grant count does not move, while
the agent's reason for the wait is not protection (budget, crossing, due_time, paused).
Samples come every ~50 ms while the agent answers; while it is stopped or restarting
(a perturbation) there are none, and the stall clock restarts when it answers again.

    analyze.py DIR WINDOW_S N_WINDOWS EPS DEADLINE_MS STALL_MS RSS_MARGIN_KB RSS_MARGIN_FRAC \
               KAPPA_MS_PER_GB CPU_FRAC
"""
import csv, glob, json, os, sys

d, W, N, eps, D_ms, stall_ms, margin_kb, margin_frac, kappa, cpu_frac = sys.argv[1:11]
kappa_ns_per_byte, cpu_frac = float(kappa) * 1e6 / 1e9, float(cpu_frac)
W, N, eps, D_ns = float(W), int(N), float(eps), float(D_ms) * 1e6
stall_lim, margin_kb, margin_frac = float(stall_ms) / 1e3, float(margin_kb), float(margin_frac)
PROTECT = {"budget", "crossing", "due_time", "paused"}

t0 = float(open(os.path.join(d, "t0")).read())          # wall clock of window 0's start
mono0 = int(open(os.path.join(d, "mono0")).read())      # CLOCK_MONOTONIC ns at the same moment
events = {}
for line in open(os.path.join(d, "events.log")):
    k, what = line.split(" ", 1)
    events.setdefault(int(k), []).append(what.strip())

# DMR per window from the task's own logs (release time decides the window).
jobs, misses, host = [0] * N, [0] * N, [0] * N
missed = [[] for _ in range(N)]  # (s into the window, task run, ms late, plant ms) per miss
for f in sorted(glob.glob(os.path.join(d, "task-*.csv"))):
    run = os.path.basename(f)[len("task-"):-len(".csv")]
    for r in csv.DictReader(open(f)):
        rel = int(r["release_ns"]) - mono0
        k = int(rel / 1e9 // W)
        if not 0 <= k < N:
            continue
        jobs[k] += 1
        took = int(r["completion_ns"]) - int(r["release_ns"])
        if took <= D_ns:
            continue
        added = kappa_ns_per_byte * int(r["plant_bytes"])
        misses[k] += 1
        host[k] += took - added > D_ns
        missed[k].append((rel / 1e9 - k * W, run, (took - D_ns) / 1e6, added / 1e6))

samples = [json.loads(l) for l in open(os.path.join(d, "samples.jsonl"))]
stall = [0.0] * N
stall_at = [""] * N
prot = [0.0] * N  # longest wait explained by protection (shown, not judged)
answered = [0] * N
rss = [[] for _ in range(N)]
cpu = [[] for _ in range(N)]  # (t, pid, agent CPU seconds)
last = {}  # engine id -> (grants, t of last progress or of the last explained wait)
prev_t = None
for s in samples:
    t = s["t"]
    k = int((t - t0) // W)
    if not 0 <= k < N:
        continue
    if s.get("rss_kb"):
        rss[k].append((t, s["pid"], s["rss_kb"]))
    if s.get("cpu_s") is not None:
        cpu[k].append((t, s["pid"], s["cpu_s"]))
    if "err" in s:
        prev_t = None
        continue
    answered[k] += 1
    gap = prev_t is not None and t - prev_t > 0.5  # the agent was not answering
    prev_t = t
    for eid, e in s["engines"].items():
        g = e["grants"]
        if eid not in last or gap or g != last[eid][0] or e["pending"] == 0 or e["cause"] in PROTECT:
            if eid in last and e["cause"] in PROTECT:
                prot[k] = max(prot[k], t - last[eid][2])
            since = last[eid][2] if eid in last and e["cause"] in PROTECT and g == last[eid][0] else t
            last[eid] = (g, t, since)
            continue
        length = t - last[eid][1]
        if length > stall[k]:
            stall[k], stall_at[k] = length, f"{e['name']} cause {e['cause']} pending {e['pending']}"

out = open(os.path.join(d, "windows.tsv"), "w")


def cpu_share(xs):
    """The agent's CPU time over the window's wall time, per agent instance, the largest."""
    by_pid, worst = {}, 0.0
    for t, pid, c in xs:
        by_pid.setdefault(pid, []).append((t, c))
    for v in by_pid.values():
        if len(v) >= 2 and v[-1][0] > v[0][0]:
            worst = max(worst, (v[-1][1] - v[0][1]) / (v[-1][0] - v[0][0]))
    return worst


out.write("window\tstart_s\tperturbation\tjobs\tmisses\thost_misses\tdmr\ttraffic_dmr\tmax_stall_ms\t"
          "max_protect_wait_ms\tagent_cpu\tsamples\tagent_pid\trss_end_kb\n")
print(f"1..{N + 1}")
failed = 0
for k in range(N):
    dmr = misses[k] / jobs[k] if jobs[k] else float("nan")
    tdmr = (misses[k] - host[k]) / jobs[k] if jobs[k] else float("nan")
    share = cpu_share(cpu[k])
    pert = ",".join(events.get(k, [])) or "none"
    r_end = rss[k][-1][2] if rss[k] else 0
    pid = rss[k][-1][1] if rss[k] else 0
    out.write(f"{k}\t{k * W:.0f}\t{pert}\t{jobs[k]}\t{misses[k]}\t{host[k]}\t{dmr:.4f}\t{tdmr:.4f}\t"
              f"{stall[k] * 1e3:.0f}\t{prot[k] * 1e3:.0f}\t{share:.3f}\t{answered[k]}\t{pid}\t{r_end}\n")
    ok = (jobs[k] > 0 and tdmr <= eps and share <= cpu_frac and stall[k] <= stall_lim and answered[k] > 0
          and "task-overran" not in pert)
    failed += not ok
    print(f"{'ok' if ok else 'not ok'} {k + 1} - window {k} ({pert}): traffic DMR {tdmr:.4f} "
          f"({misses[k] - host[k]}/{jobs[k]}) <= {eps} (host misses {host[k]}), agent CPU {share:.2f} <= {cpu_frac} core, "
          f"longest stall {stall[k] * 1e3:.0f} ms <= {stall_lim * 1e3:.0f} ms{' (' + stall_at[k] + ')' if stall_at[k] else ''}, "
          f"RSS {r_end / 1024:.1f} MiB")
    if not ok or host[k]:
        for at, run, late, added in missed[k][:40]:
            print(f"#   miss at {at:6.2f} s (task run {run}): {late:6.2f} ms late, plant added {added:6.2f} ms"
                  f"{' (host)' if late > added else ''}")
        if len(missed[k]) > 40:
            print(f"#   ... {len(missed[k]) - 40} more")
# Memory: per agent instance, RSS at the end of its first whole window against the most
# it reached later.
inst = {}
for k in range(N):
    for t, pid, kb in rss[k]:
        inst.setdefault(pid, []).append((k, kb))
verdicts = []
rss_ok = True
for pid, xs in inst.items():
    ks = sorted({k for k, _ in xs})
    if len(ks) < 3:
        continue  # too short-lived to judge (restarted within two windows)
    base = [kb for k, kb in xs if k == ks[1]][-1]
    peak = max(kb for k, kb in xs if k > ks[1])
    allowed = base * (1 + margin_frac) + margin_kb
    rss_ok &= peak <= allowed
    verdicts.append(f"pid {pid}: {base / 1024:.1f} MiB after window {ks[1]}, at most {peak / 1024:.1f} MiB "
                    f"in windows {ks[2]}..{ks[-1]} (allowed {allowed / 1024:.1f})")
rss_ok &= bool(verdicts)
failed += not rss_ok
print(f"{'ok' if rss_ok else 'not ok'} {N + 1} - agent RSS flat (+{margin_frac * 100:.0f} % + {margin_kb / 1024:.0f} MiB): "
      + "; ".join(verdicts or ["no instance lived 3 windows"]))
sys.exit(1 if failed else 0)
