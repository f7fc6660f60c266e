#!/usr/bin/env bash
# results/sim.md §18: which task's allowance held the LLM at k = 1.1 (budget@TASK), where the
# traffic does not slow the tasks (h200-harmless) and where it does (h200-calibrated), with
# the held slope's release and two lower priors beside the defaults. SIMULATED.
# Writes PRESET-seedS/ beside this script; prints the table's rows.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
for preset in h200-harmless h200-calibrated; do
  for seed in 1 2 3; do
    "$sim" --preset "$preset" --seed "$seed" --k 1.1 --runs 3 --prep-s 6 --ripple-prep-s 25 --score-s 30 \
      --policies ripple,ripple+sr,ripple+p2,ripple+p1,unmanaged,sigamma \
      --variant ripple+sr:pricing.slope_release=true \
      --variant ripple+p2:pricing.prior_slope_ms_per_gb=2 --variant ripple+p1:pricing.prior_slope_ms_per_gb=1 \
      -q --out "$here/$preset-seed$seed" >/dev/null
  done
done
python3 - "$here" <<'PY'
import json, sys
from pathlib import Path
d = Path(sys.argv[1])
print("| preset | policy | tokens/s (seeds 1-3) | worst DMR % | budget wait % | B(t) bound by costmap / kdnn / sgm % (mean of seeds) |")
print("|---|---|---|---|---|---|")
for preset in ("h200-harmless", "h200-calibrated"):
    rows = {}
    for seed in (1, 2, 3):
        for p in json.loads((d / f"{preset}-seed{seed}" / "results.json").read_text())["points"]:
            rows.setdefault(p["policy"], []).append(p)
    for pol, ps in rows.items():
        g = lambda k: sum(100 * p["gaps"].get(k, 0.0) for p in ps) / len(ps)
        tok = ", ".join(f"{p['llm_tok_s']:.2f}" for p in ps)
        print(f"| {preset} | {pol} | {tok} | "
              f"{max(100 * p['worst_dmr'] for p in ps):.2f} | {g('budget'):.1f} | "
              f"{g('budget@costmap'):.1f} / {g('budget@kdnn'):.1f} / {g('budget@sgm'):.1f} |")
PY
