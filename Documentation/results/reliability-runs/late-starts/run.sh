#!/usr/bin/env bash
# results/reliability.md, "A host stall: late starts": the soak on the plant (a TEST
# DOUBLE) with an emulated host stall (tests/soak/host-stall.sh, 80 ms of both CPUs every
# ~3 s), late starts off and on, RUNS rounds of one soak each (default 1), SOAK_S seconds
# (default 150). Root; nothing else running (the stall takes the whole machine).
# Writes off-R/ and on-R/ beside this script (windows.tsv kept) and prints the table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../../.." && pwd)
O=${O:-$repo/build}
s=${SOAK_S:-150}
cd "$repo"
for r in $(seq "${RUNS:-1}"); do
  for arm in off on; do
    d=$(mktemp -d /tmp/late-$arm.XXXXXX)
    tests/soak/host-stall.sh $((s + 5)) > /dev/null 2>&1 &
    stall=$!
    SOAK_PRICING="late_starts = $([ $arm = on ] && echo true || echo false)" SOAK_KEEP=1 SOAK_DIR=$d \
      STALL_MS=500 O=$O tests/soak/soak.sh "$s" 30 > "$d/tap.log" 2>&1 || true
    kill $stall 2>/dev/null || true; wait
    mkdir -p "$here/$arm-$r"
    cp "$d/windows.tsv" "$here/$arm-$r/"
    python3 tests/soak/late_summary.py "$d" | tail -n 1 > "$here/$arm-$r/summary.md"
    rm -rf "$d"
  done
done
echo "| run | jobs | misses (%) | host / traffic | late starts | misses among them | plant ms per late job | engines GB |"
echo "|---|---|---|---|---|---|---|---|"
cat "$here"/*/summary.md
