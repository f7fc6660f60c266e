#!/usr/bin/env bash
# results/sim.md §22: the lines at fixed slopes (pricing.slope_candidates) against App. C's
# line alone, in ripple-sim (SIMULATED: the agent's pricing, admission and policy code in
# virtual time against modelled tasks and engines). k = 1.1, 1.5 and 2.0; 10 runs a point,
# 6 s preparation (20 s for ripple), 30 s scored; five hosts:
#   - h200-harmless: kappa 0.05 ms/GB, the preset's narrow own spread;
#   - the same with the thirty-ninth and the fortieth sessions' H100 profiles (--solo-from:
#     wide own tails; kdnn at 150 ms as in those calls);
#   - h200-calibrated (costmap 6.23, kdnn 0.47, sgm 1.53 ms/GB: unmanaged misses) and
#     h200-vlm-host (the VLM carries host bytes).
# Then why: the held slope fixed (slope_hold_z = 1e6) at 1, 2.5, 5, 10 and 20 ms/GB on the
# narrow preset and with the thirty-ninth session's profile, k = 1.1 and 1.5.
# From anywhere; writes slope-lines.md beside this script and prints it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
runs=$repo/Documentation/results/e2e-runs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# ripple is App. C's line alone (the lines are on by default since 089b94d; the tables
# below were made at 7a83ba0, before that, and come out the same).
common=(--k 1.1,1.5,2.0 --runs 10 --prep-s 6 --ripple-prep-s 20 --score-s 30 -q
        --policies ripple,ripple+lines,unmanaged --agent-set pricing.slope_candidates=false
        --variant ripple+lines:pricing.slope_candidates=true)
table() { sed -n '/^| policy | k = /,/^| bound/p' "$1/table.md"; echo; grep -A4 '^| policy | k | budget' "$1/table.md" || true; }
{
  echo "ripple = App. C's line alone (pricing.slope_candidates=false); +lines = pricing.slope_candidates=true."
  echo
  echo "#### h200-harmless (narrow own spread)"; echo
  "$sim" --preset h200-harmless "${common[@]}" --out "$tmp/narrow" >/dev/null; table "$tmp/narrow"
  for call in h100-s39-sr11 h100-s40-iv11b; do
    echo; echo "#### h200-harmless with the $call profile (wide own tails; kdnn at 150 ms)"; echo
    "$sim" --preset h200-harmless --mix "$repo/tools/workloads/mixes/robotic1-kdnn150.toml" --profile-s 45 \
      --solo-from "$runs/$call/results.json" "${common[@]}" --out "$tmp/$call" >/dev/null; table "$tmp/$call"
  done
  for preset in h200-calibrated h200-vlm-host; do
    echo; echo "#### $preset"; echo
    "$sim" --preset $preset "${common[@]}" --out "$tmp/$preset" >/dev/null; table "$tmp/$preset"
  done
  echo; echo "#### Why: the held slope fixed at one value (pricing.prior_slope_ms_per_gb = P, slope_hold_z = 1e6; κᵘ still prices above it)"; echo
  fixed=(--k 1.1,1.5 --runs 10 --prep-s 6 --ripple-prep-s 20 --score-s 30 -q --agent-set pricing.slope_candidates=false)
  pols=ripple
  for pr in 1 2.5 5 10 20; do
    pols=$pols,ripple+p$pr
    fixed+=(--variant "ripple+p$pr:pricing.prior_slope_ms_per_gb=$pr" --variant "ripple+p$pr:pricing.slope_hold_z=1000000")
  done
  fixed+=(--policies "$pols,unmanaged")
  echo "h200-harmless:"; echo
  "$sim" --preset h200-harmless "${fixed[@]}" --out "$tmp/fixed-narrow" >/dev/null; sed -n '/^| policy | k = /,/^| bound/p' "$tmp/fixed-narrow/table.md"
  echo; echo "h200-harmless with the h100-s39-sr11 profile:"; echo
  "$sim" --preset h200-harmless --mix "$repo/tools/workloads/mixes/robotic1-kdnn150.toml" --profile-s 45 \
    --solo-from "$runs/h100-s39-sr11/results.json" "${fixed[@]}" --out "$tmp/fixed-wide" >/dev/null
  sed -n '/^| policy | k = /,/^| bound/p' "$tmp/fixed-wide/table.md"
} > "$here/slope-lines.md"
cat "$here/slope-lines.md"
