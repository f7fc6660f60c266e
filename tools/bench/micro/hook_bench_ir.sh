#!/usr/bin/env bash
# Instructions per intercepted call (issue 18): ripple-hook-bench's kinds one at a time
# (-k), plain, with the interposer only counting (RIPPLE_CUHOOK=off) and gated by an
# always-grant agent (ripple-agent, policy unmanaged), each counted by valgrind's
# callgrind at two call counts: (Ir(N2) - Ir(N1)) / (N2 - N1) is one call's instructions,
# start-up and learning cancelled out. Unlike ns per call (hook_bench.sh) this does not
# move with the machine's load, so it can compare two builds on a shared CI machine.
#
#   tools/bench/micro/hook_bench_ir.sh [BUILD] [N1] [N2]   (BUILD default build/, 2000 12000)
# HOOK_BENCH_LIB: another build's libripple-cuhook.so; HOOK_BENCH_AGENT: another
# ripple-agent binary; HOOK_BENCH_KINDS: the kinds (default all but the capture ones).
# Always on the fake driver (tests/cuhooks' test double). Needs root for the agent (its
# tracer); without it the gated column is fail-open and the header says so.
# Prints "KIND plain off gated" lines (instructions per call) and the differences.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
B=$(cd "${1:-$REPO/build}" && pwd)
N1=${2:-2000}
N2=${3:-12000}
BENCH=$B/bin/ripple-hook-bench
LIB=${HOOK_BENCH_LIB:-$B/lib/libripple-cuhook.so}
AGENT=${HOOK_BENCH_AGENT:-$B/bin/ripple-agent}
KINDS=${HOOK_BENCH_KINDS:-kernel graph h2d-async-8B memcpy-async-d2h memcpy-async-d2d}
command -v valgrind > /dev/null || { echo "hook_bench_ir.sh: needs valgrind" >&2; exit 2; }
[ -x "$BENCH" ] && [ -e "$LIB" ] || { echo "hook_bench_ir.sh: no $BENCH or $LIB (make first)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ripple-hookir.XXXXXX)
apid=""
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; [ -n "${HOOK_BENCH_KEEP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH="$B/tests/cuhooks/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gated="gated (unmanaged agent)"
if [ "$(id -u)" = 0 ] && [ -x "$AGENT" ]; then
  cat > "$tmp/agent.toml" <<EOC
[agent]
policy = "unmanaged"
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""
log_level = "warn"
EOC
  "$AGENT" -c "$tmp/agent.toml" >> "$tmp/agent.log" 2>&1 &
  apid=$!
  for _ in $(seq 100); do [ -S "$tmp/control.sock" ] && break; sleep 0.1; done
  [ -S "$tmp/control.sock" ] || gated="gated, no agent (fail-open)"
else
  gated="gated, no agent (fail-open)"
fi
# Ir of one run: MODE KIND N.
ir() {
  local out=$tmp/cg.$1.$2.$3 env=()
  case $1 in
    off) env=(LD_PRELOAD="$LIB" RIPPLE_CUHOOK=off) ;;
    gated) env=(LD_PRELOAD="$LIB" RIPPLE_ENGINE=hookbench RIPPLE_SOCKET="$tmp/engine.sock") ;;
  esac
  env "${env[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" "$BENCH" -k "$2" -n "$3" -b 100 \
    > /dev/null 2> "$out.err" || { cat "$out.err" >&2; return 1; }
  sed -n 's/^summary: *//p' "$out"
}
echo "# instructions per call ((Ir($N2) - Ir($N1)) / $((N2 - N1)), callgrind), fake driver; $gated"
echo "# kind plain off gated off-plain gated-off"
for k in $KINDS; do
  row=()
  for m in plain off gated; do
    a=$(ir $m "$k" "$N1") && b=$(ir $m "$k" "$N2") || exit 1
    row+=("$(awk -v a="$a" -v b="$b" -v n=$((N2 - N1)) 'BEGIN { printf "%.0f", (b - a) / n }')")
  done
  echo "$k ${row[0]} ${row[1]} ${row[2]} $((row[1] - row[0])) $((row[2] - row[1]))"
done
