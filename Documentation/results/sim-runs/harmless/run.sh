#!/usr/bin/env bash
# results/sim.md §14: ripple where the traffic does not slow the tasks (preset h200-harmless,
# the sixteenth session's k11 instance), by ripple's preparation window. SIMULATED.
# Writes PREPs-seedS/ beside this script; prints the table's rows.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
for prep in 20 60 140; do
  for seed in 1 2 3; do
    "$sim" --preset h200-harmless --seed "$seed" --policies ripple,sigamma,unmanaged --k 1.1,1.5,2.0 --runs 3 \
      --prep-s 6 --ripple-prep-s "$prep" --score-s 30 \
      --solo-from "$repo/Documentation/results/e2e-runs/h200-s16-k11/results.json" -q --out "$here/prep$prep-seed$seed" >/dev/null
  done
done
python3 - "$here" <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
print("| ripple prep (s) | k | ripple tokens/s (mean of seeds) / worst DMR % | budget wait % | ripple / unmanaged per seed | unmanaged | sigamma |")
print("|---|---|---|---|---|---|---|")
for prep in (20, 60, 140):
    rs = [json.loads((d / f"prep{prep}-seed{s}" / "results.json").read_text()) for s in (1, 2, 3)]
    for k in (1.1, 1.5, 2.0):
        pts = [{p["policy"]: p for p in r["points"] if p["k"] == k} for r in rs]
        rip = [p["ripple"] for p in pts]
        ratio = [p["ripple"]["llm_tok_s"] / p["unmanaged"]["llm_tok_s"] for p in pts]
        f = lambda pol: (f'{sum(p[pol]["llm_tok_s"] for p in pts) / 3:.2f} / '
                         f'{100 * max(p[pol]["worst_dmr"] for p in pts):.2f}')
        print(f"| {prep} | {k:g} | {f('ripple')} | {100 * sum(x['gaps']['budget'] for x in rip) / 3:.1f} | "
              f"{min(ratio):.2f}–{max(ratio):.2f} | {f('unmanaged')} | {f('sigamma')} |")
PY
