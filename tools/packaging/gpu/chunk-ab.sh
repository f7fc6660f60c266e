#!/usr/bin/env bash
# On the GPU machine, one device call: does sub-layer chunking let ripple spend its
# allowances? Two ripple-bench sweeps on the same instance (the engines are resident for a
# whole sweep, so the interposer's chunk size, an engine setting, changes between sweeps):
#   A  chunked (RIPPLE_CHUNK_BYTES default, 64 MiB): POLICIES_A at K
#   B  whole layers (RIPPLE_CHUNK_BYTES=0):          POLICIES_B at K
# Each sweep measures its own co-run profile, so deadlines differ by that profile's noise;
# ratios are taken inside a sweep, and across A and B only for ripple against sigamma.
#
#   tools/packaging/gpu/chunk-ab.sh OUT [K] [POLICIES_A] [POLICIES_B] [extra ripple-bench args...]
# Prints the machine's CPU topology (which cores share a physical core), then each sweep's
# table. OUT/summary.txt is what it printed; OUT/runs.tgz holds both sweeps' folders
# (results.json, table.md, per-run logs) and bench logs.
set -uo pipefail
OUT=${1:?OUT}
K=${2:-1.1}
PA=${3:-ripple,sigamma,unmanaged}
PB=${4:-ripple}
shift $(( $# < 4 ? $# : 4 ))
C=${C:-.devcarry}
tools/packaging/gpu/unpack.sh "$C" >/dev/null
export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH
mkdir -p "$OUT"
W=$(mktemp -d /tmp/chunk-ab.XXXXXX)
trap 'tar czf "$OUT/runs.tgz" -C "$W" . 2>/dev/null' EXIT
trap 'echo "chunk-ab: stopped by SIGTERM"; exit 143' TERM
exec > >(tee "$OUT/summary.txt") 2>&1
echo "== topology: cpu core socket (lscpu -p)"
lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | tr '\n' ' '; echo
for c in 11 12 13 14 15; do
  echo "cpu$c siblings: $(cat /sys/devices/system/cpu/cpu$c/topology/thread_siblings_list 2>/dev/null)"
done
RB=(python3 tools/bench/ripple-bench/ripple-bench --backend gpu --build-dir "$C/build" --runs 1 --score-s 30
    --profile-s 15 --prep-s 6 --ripple-prep-s 30 --k "$K" --no-plots "$@")
start=$SECONDS
echo "== A: chunked (default RIPPLE_CHUNK_BYTES), policies $PA, k $K"
"${RB[@]}" --policies "$PA" --out "$W/a" > "$W/a.log" 2>&1; echo "rc $? after $((SECONDS - start)) s"
cat "$W/a/table.md" 2>/dev/null || tail -20 "$W/a.log"
echo "== B: whole layers (RIPPLE_CHUNK_BYTES=0), policies $PB, k $K"
RIPPLE_CHUNK_BYTES=0 "${RB[@]}" --policies "$PB" --out "$W/b" > "$W/b.log" 2>&1; echo "rc $? after $((SECONDS - start)) s"
cat "$W/b/table.md" 2>/dev/null || tail -20 "$W/b.log"
