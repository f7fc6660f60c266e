#!/usr/bin/env bash
# results/sim.md §20: the slope the agent's fit reads from a task's own spread. Per task, the
# least-squares slope of response on charged bytes, and on charge x median / response
# (slope_bias.py), over:
#   - ripple-sim's admission traces at k = 1.1, 3 seeds, 1 run each, 30 s scored, 20 s ripple
#     preparation, priced by App. C's least-squares slope (pricing.slope_instrument=false, the
#     default until a5cc98a) (SIMULATED; the true slopes are the presets'): h200-harmless (kappa 0.05
#     ms/GB, the preset's narrow own spread), the same with the thirty-ninth session's H100
#     profile (--solo-from h100-s39-sr11, wide own tails; kdnn at 150 ms as in that call), and
#     h200-calibrated (costmap 6.23, kdnn 0.47, sgm 1.53 ms/GB);
#   - the GPU calls' ripple runs whose raw traces are in git history (MEASURED; true slopes
#     unknown, unmanaged measured 0 on these instances): h100-s39-sr11 (56d633a), h200-s33-k11b (b1a61ae);
#     and the fortieth session's A/B of the instrumented slope on one H100 (f2a257f; unmanaged
#     measured costmap 4.6, kdnn 0.2-1.4, sgm 0-1.6 ms/GB): h100-s40-iv11, -iv11b, -iv15, whose
#     traces carry each job's instrument Z (both variants record it; ripple+iv priced with it).
# From anywhere; writes slope-bias.md beside this script and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
tool=$repo/tools/bench/ripple-sim/slope_bias.py
runs=$repo/Documentation/results/e2e-runs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

common=(--k 1.1 --runs 1 --prep-s 6 --ripple-prep-s 20 --score-s 30 --policies ripple -q
        --agent-set pricing.slope_instrument=false)
for s in 1 2 3; do
  "$sim" --preset h200-harmless --seed $s "${common[@]}" --out "$tmp/o" --trace "$tmp/narrow-seed$s" > /dev/null
  "$sim" --preset h200-harmless --mix "$repo/tools/workloads/mixes/robotic1-kdnn150.toml" --profile-s 45 \
    --solo-from "$runs/h100-s39-sr11/results.json" --seed $s "${common[@]}" --out "$tmp/o" --trace "$tmp/wide-seed$s" > /dev/null
  "$sim" --preset h200-calibrated --seed $s "${common[@]}" --out "$tmp/o" --trace "$tmp/calibrated-seed$s" > /dev/null
done
for c in h100-s39-sr11:56d633a h200-s33-k11b:b1a61ae h100-s40-iv11:f2a257f h100-s40-iv11b:f2a257f h100-s40-iv15:f2a257f; do
  d=${c%%:*}; mkdir -p "$tmp/gpu/$d"
  git -C "$repo" archive "${c##*:}" "Documentation/results/e2e-runs/$d/traces" | tar x -C "$tmp/gpu/$d" --strip-components 4
done
{
  echo "### SIMULATED (ripple-sim, k = 1.1)"; echo
  python3 "$tool" "$tmp"/narrow-seed*/trace-ripple-*.jsonl "$tmp"/wide-seed*/trace-ripple-*.jsonl \
    "$tmp"/calibrated-seed*/trace-ripple-*.jsonl
  echo; echo "### MEASURED (the GPU calls' ripple runs, k = 1.1; both slopes are readings, not the truth)"; echo
  python3 "$tool" "$tmp"/gpu/h*-s3*/traces/ripple-k1.1-run*.jsonl.gz
  echo; echo "### MEASURED, with the instrument (the fortieth session's H100 A/B: ripple = App. C's slope, ripple+iv = the instrumented one)"; echo
  python3 "$tool" "$tmp"/gpu/h100-s40-*/traces/ripple*-run*.jsonl.gz
} > "$here/slope-bias.md"
cat "$here/slope-bias.md"
