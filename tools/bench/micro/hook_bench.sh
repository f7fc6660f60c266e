#!/usr/bin/env bash
# What one intercepted driver call costs, three ways (Documentation/cuhook.md, "Per-call
# cost"): ripple-hook-bench plain, under ripple-run with the interposer only counting
# (RIPPLE_CUHOOK=off), and gated by an always-grant agent (policy unmanaged); one table
# of ns per call and the interposer's cost over plain.
#
#   tools/bench/micro/hook_bench.sh [BUILD] [RUNS]      (BUILD default build/, RUNS 3)
# Where no libcuda.so.1 is installed it runs on tests/cuhooks' test double (the numbers
# are then the interposer's CPU cost against a driver that does almost nothing, and the
# table says so). The median of RUNS runs per mode, interleaved. The agent needs root (its
# tracer); without it the gated column is fail-open (no agent: the interposer runs
# unmanaged after one failed connect) and says so.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
B=$(cd "${1:-$REPO/build}" && pwd)
RUNS=${2:-3}
BENCH=("$B/bin/ripple-hook-bench" ${HOOK_BENCH_ARGS:-})
export RIPPLE_CUHOOK_LIB=${HOOK_BENCH_LIB:-$B/lib/libripple-cuhook.so}   # HOOK_BENCH_LIB: another build of it
[ -x "${BENCH[0]}" ] && [ -e "$RIPPLE_CUHOOK_LIB" ] || { echo "hook_bench.sh: no ${BENCH[0]} or $RIPPLE_CUHOOK_LIB (make first)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ripple-hookbench.XXXXXX)
apid=""
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
driver="real driver"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 ' || [ -n "${HOOK_BENCH_FAKE:-}" ]; then
  export LD_LIBRARY_PATH="$B/tests/cuhooks/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  driver="fake driver (tests/cuhooks test double)"
fi
ncpu=$(nproc)
ACORE=$((ncpu - 1))
ECORE=0
OUT=$tmp
. "$REPO/tools/packaging/gpu/agent.sh"
gated="gated (unmanaged agent)"
if [ "$(id -u)" != 0 ] || ! agent unmanaged > "$tmp/agent-start.log" 2>&1; then
  gated="gated, no agent (fail-open)"
fi
hooked() { taskset -c $ECORE "$B/bin/ripple-run" --engine hookbench --socket "$tmp/engine.sock" -- "${BENCH[@]}"; }
for i in $(seq "$RUNS"); do
  taskset -c $ECORE "${BENCH[@]}" > "$tmp/plain.$i" || exit 1
  RIPPLE_CUHOOK=off hooked > "$tmp/off.$i" 2> "$tmp/off.$i.err" || { cat "$tmp/off.$i.err"; exit 1; }
  hooked > "$tmp/gated.$i" 2> "$tmp/gated.$i.err" || { cat "$tmp/gated.$i.err"; exit 1; }
done
echo "ripple-hook-bench on the $driver ($(sed -n 's/^# ripple-hook-bench: //p' "$tmp/plain.1"))"
echo
python3 "$REPO/tools/bench/micro/hook_bench_table.py" "$tmp" "$RUNS" "$gated"
