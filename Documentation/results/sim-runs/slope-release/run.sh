#!/usr/bin/env bash
# results/sim.md §12: ripple (pricing.slope_release on, the default) against ripple+appc
# (App. C's hold rule alone) on every preset, 3 seeds x 3 runs. From the repo root.
set -e
D=Documentation/results/sim-runs/slope-release
for pre in Documentation/results/sim-runs/antiwindup/h200-tail.toml h200-offload gb10 plant h200-vlm-host; do
  n=$(basename "$pre" .toml)
  for s in 1 2 3; do
    build/bin/ripple-sim --preset "$pre" --policies ripple,ripple+appc,unmanaged \
      --variant ripple+appc:pricing.slope_release=false \
      --k 1.1,1.5,2.0 --runs 3 --score-s 60 --ripple-prep-s 30 -q --seed "$s" --out "$D/$n-seed$s"
  done
done
