#!/usr/bin/env bash
# results/sim.md §19, "The grants are not slower than predicted; they overlap": per ripple run
# of the k = 1.1 calls h200-s33-k11 and h200-s36-sr11 (lanes hook) and of h200-s22-k20 (before
# it), from their raw admission traces in git history: how many of the LLM's grants start
# before the one before ends, the sum of their GPU durations over their union, and the granted
# bytes' rate over that union against the rate the grants' predicted intervals give.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for spec in b5b4421:h200-s22-k20 6684b3b:h200-s33-k11 aa403fb:h200-s36-sr11; do
  git -C "$repo" archive "${spec%%:*}" "Documentation/results/e2e-runs/${spec#*:}/traces" | tar x -C "$tmp"
done
python3 - "$tmp/Documentation/results/e2e-runs" <<'PY'
import glob, gzip, json, sys
print("| call | run | grants done | overlapping the one before % | sum / union of GPU time | GB/s over the union | GB/s predicted |")
print("|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(sys.argv[1] + "/*/traces/ripple*.jsonl.gz")):
    grants, done = {}, []
    for line in gzip.open(f, "rt"):
        r = json.loads(line)
        if r.get("name") != "llm":
            continue
        if r["k"] == "grant":
            grants[r["id"]] = r
        elif r["k"] == "done" and r["value"] > 0 and r["id"] in grants:
            done.append(r)
    done.sort(key=lambda r: r["from"])
    union, a, b = 0, None, None
    for r in done:
        if a is None or r["from"] > b:
            if a is not None:
                union += b - a
            a, b = r["from"], r["to"]
        else:
            b = max(b, r["to"])
    union += b - a
    over = sum(1 for i in range(1, len(done)) if done[i]["from"] < done[i - 1]["to"])
    gb = sum(grants[r["id"]]["bytes"] for r in done) / 1e9
    pred = sum(grants[r["id"]]["to"] - grants[r["id"]]["from"] for r in done) / 1e9
    print(f"| {f.split('/')[-3]} | {f.split('/')[-1].removesuffix('.jsonl.gz')} | {len(done)} | {100 * over / max(1, len(done) - 1):.0f} | "
          f"{sum(r['value'] for r in done) / union:.2f} | {gb / (union / 1e9):.1f} | {gb / pred:.1f} |")
PY
