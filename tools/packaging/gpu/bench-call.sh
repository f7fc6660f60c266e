#!/usr/bin/env bash
# One device call of ripple-bench on the GPU machine (Documentation/results/e2e.md §0).
# Not a test (CI has no GPU): it unpacks the carried build, runs ripple-bench with the given
# arguments into /tmp/bench-TAG under a time limit, writes trace_report.py's report beside
# each ripple run's trace (with --trace) and notraffic_bins.py's table of every run, and packs the outputs into $OUT/TAG.tgz and
# $OUT/TAG-traces.tgz: a device call brings back at most 8 files. Prints the table last.
# The raw traces are committed once and then removed from the tree (a device call sends the
# tree with its carry, 64 MiB in all): Documentation/results/e2e-runs/README.md.
#
#   tools/packaging/gpu/bench-call.sh TAG LIMIT_S [ripple-bench args ...]
# e.g. (carry .devcarry, made here by tools/packaging/gpu/pack.sh):
#   tools/packaging/gpu/bench-call.sh k11 520 --runs 3 --k 1.1 --score-s 30 --ripple-prep-s 20 \
#       --policies ripple,sigamma,unmanaged --trace
# DEST: the carried folder (default .devcarry). OUT: where the archives go (the device's $OUT).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: bench-call.sh TAG LIMIT_S [ripple-bench args ...]" >&2; exit 2; }
TAG=$1 LIMIT=$2
shift 2
case $TAG in *[!A-Za-z0-9._-]*|'') echo "bench-call.sh: TAG '$TAG': letters, digits, '.', '_' and '-' only" >&2; exit 2;; esac
case $LIMIT in *[!0-9]*|'') echo "bench-call.sh: LIMIT_S '$LIMIT': a whole number of seconds" >&2; exit 2;; esac
: "${OUT:?bench-call.sh: OUT (the folder the archives go to) is not set}"
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
DEST=${DEST:-.devcarry}
cd "$REPO" || exit 1
tools/packaging/gpu/unpack.sh "$DEST" >/dev/null || { echo "bench-call.sh: unpack of $DEST failed" >&2; exit 1; }
export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH PYTHONPATH=/tmp/rdeps/python PYTHONUNBUFFERED=1
B=/tmp/bench-$TAG
rm -rf "$B"
# Every call keeps its admission traces (a miss no trace explains is lost for good: the
# thirteenth session's k11b); NO_TRACE=1 leaves them out.
case " $* " in *" --trace "*) ;; *) [ "${NO_TRACE:-0}" = 1 ] || set -- "$@" --trace;; esac
nvidia-smi -L
# 45-s co-run profiles: Robotic1's 10-Hz tasks keep 405 jobs after the warm-up tenth, which
# bound each p99 from above at 95 % (368 do; the 135 of a 15-s profile did not, and their
# p99, the second largest, set deadlines whose error was as large as k - 1 = 10 %: results/
# e2e.md §0, twenty-eighth session). The opening and closing profiles cost 60 s more than 15-s ones.
timeout "$LIMIT" python3 tools/bench/ripple-bench/ripple-bench --backend gpu --build-dir "$DEST/build" \
  --profile-s 45 --prep-s 6 --no-plots --out "$B" "$@" > "$OUT/$TAG.log" 2>&1
echo "ripple-bench rc=$?"
if [ -f "$B/traces/windows.json" ]; then
  python3 - "$B/traces" <<'PY'
import json, pathlib, subprocess, sys
d = pathlib.Path(sys.argv[1])
for name, (t0, t1) in sorted(json.loads((d / "windows.json").read_text()).items()):
    if not name.startswith("ripple"):
        continue
    r = subprocess.run([sys.executable, "tools/bench/ripple-bench/trace_report.py", str(d / name), "--origin", "zero",
                        "--window", f"{t0},{t1}"], capture_output=True, text=True)
    (d / name.replace(".jsonl.gz", ".report.txt")).write_text(r.stdout + r.stderr)
PY
  # Every job no grant reached, by the time since the last grant ended, and its misses: the
  # host's own noise against an after-effect of the traffic (results/e2e-archive.md, fifteenth session).
  python3 tools/bench/ripple-bench/notraffic_bins.py "$B" > "$B/traces/notraffic_bins.md"
  tar czf "$OUT/$TAG-traces.tgz" -C "$B" traces
fi
tar czf "$OUT/$TAG.tgz" -C "$B" --exclude traces .
tail -4 "$OUT/$TAG.log"
cat "$B/table.md" 2>/dev/null
