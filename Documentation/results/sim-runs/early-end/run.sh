#!/usr/bin/env bash
# results/sim.md §13: ripple against ripple+eec (agent.early_end_carries = true), ripple+q
# (agent.queued_durations = true) and both (ripple+qe), with an LLM whose host issues ahead
# (h200-ahead.toml) and without (h200-offload), 3 seeds x 3 runs.
# From the repo root.
set -e
D=Documentation/results/sim-runs/early-end
for pre in $D/h200-ahead.toml h200-offload; do
  n=$(basename "$pre" .toml)
  for s in 1 2 3; do
    build/bin/ripple-sim --preset "$pre" --policies ripple,ripple+eec,ripple+q,ripple+qe,unmanaged \
      --variant ripple+eec:agent.early_end_carries=true --variant ripple+q:agent.queued_durations=true \
      --variant ripple+qe:agent.queued_durations=true --variant ripple+qe:agent.early_end_carries=true \
      --k 1.1,1.5,2.0 --runs 3 --score-s 60 --ripple-prep-s 30 -q --seed "$s" --out "$D/$n-seed$s"
  done
done
