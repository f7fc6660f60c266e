#!/usr/bin/env bash
# results/sim.md §23: how long the lines at fixed slopes average their allowances before one
# is chosen (pricing.slope_candidate_jobs, ~50 releases by default) — in ripple-sim
# (SIMULATED: the agent's pricing, admission and policy code in virtual time against
# modelled tasks and engines). 1 release is the line whose nominal allowance is largest now;
# 10, 50 (the default) and 200 average over more. k = 1.1 and 1.5; 10 runs a point, 6 s
# preparation (20 s for ripple), 30 s scored; the hosts of §22:
#   - h200-harmless (narrow own spread), and with the thirty-ninth and fortieth sessions'
#     H100 profiles (--solo-from: wide own tails; kdnn at 150 ms as in those calls);
#   - h200-calibrated at three seeds, and h200-vlm-host (the traffic costs).
# From anywhere; writes average.md beside this script and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
runs=$repo/Documentation/results/e2e-runs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--k 1.1,1.5 --runs 10 --prep-s 6 --ripple-prep-s 20 --score-s 30 -q
        --policies ripple+j1,ripple+j10,ripple,ripple+j200,ripple+appc,unmanaged
        --variant ripple+j1:pricing.slope_candidate_jobs=1 --variant ripple+j10:pricing.slope_candidate_jobs=10
        --variant ripple+j200:pricing.slope_candidate_jobs=200 --variant ripple+appc:pricing.slope_candidates=false)
table() { sed -n '/^| policy | k = /,/^| bound/p' "$1/table.md"; echo; sed -n '/^| policy | k | costmap DMR/,/^$/p' "$1/table.md" | cut -d'|' -f1-8; }
{
  echo "ripple = the defaults (the lines averaged over ~50 releases); +jN: over ~N; +appc: App. C's line alone."
  echo
  echo "#### h200-harmless (narrow own spread)"; echo
  "$sim" --preset h200-harmless "${common[@]}" --out "$tmp/narrow" >/dev/null; table "$tmp/narrow"
  for call in h100-s39-sr11 h100-s40-iv11b; do
    echo; echo "#### h200-harmless with the $call profile (wide own tails; kdnn at 150 ms)"; echo
    "$sim" --preset h200-harmless --mix "$repo/tools/workloads/mixes/robotic1-kdnn150.toml" --profile-s 45 \
      --solo-from "$runs/$call/results.json" "${common[@]}" --out "$tmp/$call" >/dev/null; table "$tmp/$call"
  done
  for seed in 1 2 3; do
    echo; echo "#### h200-calibrated, seed $seed"; echo
    "$sim" --preset h200-calibrated --seed $seed "${common[@]}" --out "$tmp/cal$seed" >/dev/null; table "$tmp/cal$seed"
  done
  echo; echo "#### h200-vlm-host"; echo
  "$sim" --preset h200-vlm-host "${common[@]}" --out "$tmp/vlm" >/dev/null; table "$tmp/vlm"
} > "$here/average.md"
cat "$here/average.md"
