#!/usr/bin/env bash
# Copy-pass learning against the real ripple-agent (a benchmark, not a test; no GPU).
# The fake driver (tests/cuhooks/fake_cuda.c, a TEST DOUBLE) runs driver_app's
# `layercopies` mode: a transformers decoder offloaded to pinned memory, scaled down
# (per layer 7 host-to-device copies: q, k, v, o, gate, up, down, then K kernels; no
# NVTX, so bare copies are the boundaries). The real agent (policy unmanaged: it grants
# everything at once) plays the scheduler. For each run: the wall time, the hook's
# counters (grants, time blocked at boundaries) and the wait per copy, which is the
# local proxy for what gating adds to each copy on a GPU.
#
#   O=build tests/cuhooks/copy_learning_bench.sh [PASSES] [LAYERS] [KERNELS] [REPEAT]
#   (defaults: 100 passes x 28 layers x 7 copies = 19,600 copies, 4 kernels a layer, 3 rounds)
set -uo pipefail
O=${O:-build}
B=$(cd "$O" && pwd)
P=${1:-100}
L=${2:-28}
K=${3:-4}
R=${4:-3}
# Qwen3-1.7B's layer (8, 4, 4, 8, 24, 24, 24 MiB), divided by 128.
SIZES=65536,32768,32768,65536,196608,196608,196608
tmp=$(mktemp -d /tmp/ripple-copy-bench.XXXXXX)
agent=
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
cat > "$tmp/ripple.toml" <<EOF
[agent]
policy = "unmanaged"
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""
[pricing]
peak_rate_gbps = 1.0
EOF
"$B/bin/ripple-agent" -c "$tmp/ripple.toml" > "$tmp/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do [ -S "$tmp/control.sock" ] && break; sleep 0.05; done
[ -S "$tmp/engine.sock" ] || { echo "ripple-agent did not start:"; cat "$tmp/agent.log"; exit 1; }
app=("$B/tests/cuhooks/driver_app" direct layercopies "$P" "$L" "$K" "$SIZES")
echo "== $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $P passes x $L layers x 7 copies = $((P * L * 7)) copies, $K kernels a layer"
echo "   min 8192: the layer copies are the boundaries, the 4 KiB read-back after each pass is not: a one-layer pass"
echo "   min 4096: the read-back too, once per forward pass: the whole forward pass is learned"
now() { date +%s.%N; }
for i in $(seq "$R"); do
  t0=$(now); LD_LIBRARY_PATH="$B/tests/cuhooks/fake" "${app[@]}" > /dev/null; t1=$(now)
  awk -v a="$t0" -v b="$t1" -v n="$((P * L * 7))" 'BEGIN { printf "no preload            wall %6.3f s %6.2f us/copy\n", b - a, 1e6 * (b - a) / n }'
  for min in 8192 4096; do
    for learn in on off; do
      t0=$(now)
      env LD_PRELOAD="$B/lib/libripple-cuhook.so" LD_LIBRARY_PATH="$B/tests/cuhooks/fake" RIPPLE_SOCKET="$tmp/engine.sock" \
        RIPPLE_ENGINE=copybench RIPPLE_COPY_MIN_BYTES=$min RIPPLE_LEARN=$learn RIPPLE_CUHOOK_STATS="$tmp/st.json" \
        "${app[@]}" > /dev/null 2> "$tmp/err"
      t1=$(now)
      python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
n = d["units_copy"]
print("min %-5s learn %-3s wall %6.3f s %6.2f us/copy; copies %d grants %d; blocked %.3f s = %.2f us/copy (%.1f us/grant);"
      " passes_learned %d relearns %d pass %d unmanaged %d"
      % (sys.argv[5], sys.argv[4], wall, 1e6 * wall / n, n, d["grants"], d["wait_ns"] / 1e9, d["wait_ns"] / 1e3 / n,
         d["wait_ns"] / 1e3 / max(1, d["grants"]), d["passes_learned"], d["relearns"], d["learned_pass_units"],
         d["unmanaged_units"]))' "$tmp/st.json" "$t0" "$t1" "$learn" "$min"
    done
  done
done
