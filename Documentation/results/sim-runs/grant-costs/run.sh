#!/usr/bin/env bash
# results/sim.md §19: the grant costs measured on the GPU (grant_costs.py over the chunked
# calls h200-s12-* to h200-s33-*), the replay of those calls with the presets before (5bf8ade)
# and after the re-statement, and issue 12's k = 1.1-2.0 predictions with the new costs.
# SIMULATED apart from the measurement. From anywhere; writes beside this script:
#   costs.md, replay-{before,after}.md, PRESET-seedS/ (results.json, table.md); prints the tables.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
sim=${SIM:-$repo/build/bin/ripple-sim}
runs=$repo/Documentation/results/e2e-runs
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# The chunked ripple-llm calls since the twelfth session, without a VLM that carries host bytes
# (vlmhost, link, dl: their delivery wait is the link's hold) or another LLM engine (hf).
calls=()
for d in "$runs"/h200-s*; do
  n=$(basename "$d"); s=${n#h200-s}; s=${s%%-*}
  [[ $s =~ ^[0-9]+$ ]] && [ "$s" -ge 12 ] || continue
  [[ $n =~ hf|vlmhost|link|dl ]] && continue
  calls+=("$d")
done
python3 "$repo/tools/bench/ripple-sim/grant_costs.py" "${calls[@]}" > "$here/costs.md"

git -C "$repo" show 5bf8ade:tools/bench/ripple-sim/presets/h200-offload.toml > "$tmp/before.toml"
for v in before after; do
  p=$tmp/before.toml; [ $v = after ] && p=$repo/tools/bench/ripple-sim/presets/h200-offload.toml
  python3 "$repo/tools/bench/ripple-sim/validate.py" --sim "$sim" --preset "$p" "${calls[@]}" > "$here/replay-$v.md"
done

for preset in h200-harmless h200-calibrated; do
  for seed in 1 2 3; do
    "$sim" --preset "$preset" --seed "$seed" --k 1.1,1.5,2.0 --runs 3 --prep-s 6 --ripple-prep-s 20 --score-s 30 \
      --policies ripple,ripple+sr,sigamma,unmanaged --variant ripple+sr:pricing.slope_release=true \
      -q --out "$here/$preset-seed$seed" >/dev/null
  done
done

tail -5 "$here/costs.md"
echo
python3 - "$here" <<'PY'
import json, re, statistics, sys
from pathlib import Path
d = Path(sys.argv[1])
print("| replay | policy | k | points | median tokens/s error | within 15 % |")
print("|---|---|---|---|---|---|")
for v in ("before", "after"):
    by = {}
    for line in (d / f"replay-{v}.md").read_text().splitlines():
        c = [x.strip() for x in line.split("|")]
        if len(c) < 8 or not c[1].startswith("h200-"):
            continue
        fam = "ripple" if c[2].startswith("ripple") else c[2]
        k = "1.1" if float(c[3]) < 1.2 else "1.5-2.0"
        by.setdefault((fam, k), []).append(float(re.match(r"([+-]?\d+) %", c[6]).group(1)))
    for (fam, k), e in sorted(by.items()):
        print(f"| {v} | {fam} | {k} | {len(e)} | {statistics.median(e):+.0f} % | {sum(abs(x) <= 15 for x in e)} |")
print()
print("| preset | k | ripple / unmanaged | ripple+sr / unmanaged | ripple / sigamma | worst DMR % ripple, ripple+sr | ripple's budget wait % |")
print("|---|---|---|---|---|---|---|")
for preset in ("h200-harmless", "h200-calibrated"):
    for k in (1.1, 1.5, 2.0):
        tok, dmr, wait = {}, {}, []
        for seed in (1, 2, 3):
            for p in json.loads((d / f"{preset}-seed{seed}" / "results.json").read_text())["points"]:
                if abs(p["k"] - k) > 1e-9:
                    continue
                tok.setdefault(p["policy"], []).append(p["llm_tok_s"])
                dmr[p["policy"]] = max(dmr.get(p["policy"], 0.0), p["worst_dmr"])
                if p["policy"] == "ripple":
                    wait.append(p["gaps"]["budget"])
        m = {pol: sum(v) / len(v) for pol, v in tok.items()}
        print(f"| {preset} | {k} | {m['ripple'] / m['unmanaged']:.2f} | {m['ripple+sr'] / m['unmanaged']:.2f} | "
              f"{m['ripple'] / m['sigamma']:.1f} | {100 * dmr['ripple']:.2f}, {100 * dmr['ripple+sr']:.2f} | "
              f"{100 * sum(wait) / len(wait):.1f} |")
PY
