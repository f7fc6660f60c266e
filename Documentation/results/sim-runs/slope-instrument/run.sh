#!/usr/bin/env bash
# results/sim.md §21: the instrumented slope (pricing.slope_instrument, the default since
# a5cc98a) against App. C's least-squares slope, with and without the held slope's release,
# in ripple-sim (SIMULATED: the agent's pricing, admission and policy code in virtual time
# against modelled tasks and engines). k = 1.1, 1.5 and 2.0; 5 runs a point, 6 s preparation
# (20 s for ripple), 30 s scored; three hosts:
#   - h200-harmless: kappa 0.05 ms/GB, the preset's narrow own spread;
#   - the same with the thirty-ninth session's H100 profile (--solo-from h100-s39-sr11: wide
#     own tails; kdnn at 150 ms as in that call);
#   - h200-calibrated: costmap 6.23, kdnn 0.47, sgm 1.53 ms/GB (unmanaged misses).
# From anywhere; writes slope-instrument.md beside this script and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
runs=$repo/Documentation/results/e2e-runs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--k 1.1,1.5,2.0 --runs 5 --prep-s 6 --ripple-prep-s 20 --score-s 30 -q
        --policies ripple,ripple+appc,ripple+iv+sr,ripple+appc+sr,unmanaged
        --variant ripple+appc:pricing.slope_instrument=false
        --variant ripple+iv+sr:pricing.slope_release=true
        --variant ripple+appc+sr:pricing.slope_instrument=false --variant ripple+appc+sr:pricing.slope_release=true)
{
  echo "ripple = the instrumented slope (the default); +appc = App. C's least-squares slope; +sr = the held slope's release."
  echo
  echo "#### h200-harmless (narrow own spread)"; echo
  "$sim" --preset h200-harmless "${common[@]}" --out "$tmp/narrow" | sed -n '/^| policy | k = /,/^| bound/p'
  echo; echo "#### h200-harmless with the H100 call's profile (wide own tails; kdnn at 150 ms)"; echo
  "$sim" --preset h200-harmless --mix "$repo/tools/workloads/mixes/robotic1-kdnn150.toml" --profile-s 45 \
    --solo-from "$runs/h100-s39-sr11/results.json" "${common[@]}" --out "$tmp/wide" | sed -n '/^| policy | k = /,/^| bound/p'
  echo; echo "#### h200-calibrated"; echo
  "$sim" --preset h200-calibrated "${common[@]}" --out "$tmp/calibrated" | sed -n '/^| policy | k = /,/^| bound/p'
} > "$here/slope-instrument.md"
cat "$here/slope-instrument.md"
