#!/usr/bin/env python3
"""Sums a soak's task logs (tests/soak/soak.sh, SOAK_DIR or a kept run) for the late-start
A/B (Documentation/results/reliability.md, "A host stall: late starts"): jobs, misses (task's
own view: completion - release > D), host and traffic misses (analyze.py's split), the jobs
that started late (start - release > 5 ms), the misses among them and the plant's stretch
they got, and the GB the stand-in engines moved (their RESULT lines).
    late_summary.py DIR [DIR ...]     (the soak's D = 45 ms, kappa = 800 ms/GB)
"""
import csv, glob, os, re, sys

D_NS, NS_PER_BYTE = 45e6, 800e6 / 1e9
print("| run | jobs | misses (%) | host / traffic | late starts | misses among them | plant ms per late job | engines GB |")
print("|---|---|---|---|---|---|---|---|")
for d in sys.argv[1:]:
    jobs = miss = host = late = late_miss = 0
    late_added = 0.0
    logs = glob.glob(os.path.join(d, "task-*.csv"))
    if not logs:
        sys.exit(f"late_summary.py: {d}: no task-*.csv (not a kept soak directory)")
    for f in logs:
        for r in csv.DictReader(open(f)):
            rel, st, co, b = (int(r[k]) for k in ("release_ns", "start_ns", "completion_ns", "plant_bytes"))
            jobs += 1
            took, added = co - rel, NS_PER_BYTE * b
            m = took > D_NS
            miss += m
            host += m and took - added > D_NS
            if st - rel > 5e6:
                late += 1
                late_miss += m
                late_added += added / 1e6
    gb = 0.0
    for f in glob.glob(os.path.join(d, "engine-*.log")):
        gb += sum(float(x) for x in re.findall(r"^RESULT .* gb=([0-9.]+)", open(f).read(), re.M))
    print(f"| {os.path.basename(d.rstrip('/'))} | {jobs} | {miss} ({100 * miss / max(1, jobs):.2f}) | {host} / {miss - host} | "
          f"{late} | {late_miss} | {late_added / max(1, late):.1f} | {gb:.1f} |")
