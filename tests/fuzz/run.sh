#!/usr/bin/env bash
# Runs each libFuzzer harness (tests/fuzz/Build.mk) for FUZZ_SECONDS (default 20) on a
# copy of its committed seed corpus, as one TAP case per harness: ok when it ends its
# budget with no crash, leak, timeout (FUZZ_UNIT_TIMEOUT_S per input) or out-of-memory.
# A failing input is kept under $O/fuzz/artifacts/ and printed; make it a unit test.
#   O=build tests/fuzz/run.sh            FUZZ_SECONDS=300 for a longer run
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
O=${O:-build}
secs=${FUZZ_SECONDS:-20}
# In make check the run is reproducible: a fixed seed and a fixed number of inputs
# (FUZZ_RUNS, 0: until FUZZ_SECONDS), so CI replays exactly the inputs that passed here
# and a new finding comes from a longer or reseeded run by hand, not from chance in CI.
# FUZZ_SECONDS stays a cap: a slower machine replays a prefix of the same sequence.
seed=${FUZZ_SEED:-1}
runs=${FUZZ_RUNS:-150000}
case $runs in *[!0-9]*|'') echo "run.sh: FUZZ_RUNS '$runs': a whole number of inputs (0: until FUZZ_SECONDS)" >&2; exit 2;; esac
# libFuzzer's -runs=0 runs no input at all beyond the corpus (-1 is its "no limit"): a timed
# run asked for with FUZZ_RUNS=0 would replay the seeds and pass having fuzzed nothing.
lf_runs=$runs limit="at most $runs inputs"
[ "$runs" -eq 0 ] && lf_runs=-1 limit="no input limit"
unit_timeout=${FUZZ_UNIT_TIMEOUT_S:-10}
harnesses=(protocol config profile)
echo "1..${#harnesses[@]}"
n=0
for h in "${harnesses[@]}"; do
  n=$((n + 1))
  bin="$O/fuzz/fuzz_$h"
  if [ ! -x "$bin" ]; then echo "ok $n - fuzz_$h # SKIP not built (clang's libFuzzer runtime missing)"; continue; fi
  work="$O/fuzz/work/$h" art="$O/fuzz/artifacts/$h/"
  rm -rf "$work" && mkdir -p "$work" "$art"
  cp "$here/corpus/$h/"* "$work/"
  dict=(); [ -f "$here/$h.dict" ] && dict=(-dict="$here/$h.dict")
  log="$O/fuzz/fuzz_$h.log"
  # -fork/-jobs are not used: one process, so the time budget is exact. Leak checking
  # is on (LeakSanitizer at exit and per input with -detect_leaks).
  timeout -k 5 $((secs + 60)) "$bin" "$work" "${dict[@]}" -max_total_time="$secs" -seed="$seed" -runs="$lf_runs" -timeout="$unit_timeout" \
    -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$art" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
  seeds=$(ls "$here/corpus/$h" | wc -l)
  if [ "$rc" -eq 0 ] && [ "${execs:-0}" -le "$seeds" ]; then
    echo "not ok $n - fuzz_$h: ${execs:-no} inputs run, no more than its $seeds seeds: it fuzzed nothing"
  elif [ "$rc" -eq 0 ]; then
    echo "ok $n - fuzz_$h: ${execs:-?} inputs (seed $seed, $limit, ${secs} s at most), ${cov:-cov: ?}, corpus $(ls "$work" | wc -l) files"
  else
    echo "not ok $n - fuzz_$h: rc $rc after ${execs:-?} inputs (crash, leak, timeout or OOM)"
    grep -E '^(==[0-9]+==|SUMMARY|artifact_prefix|Test unit written|.*runtime error)' "$log" | head -n 20 | sed 's/^/# /'
    for f in "$art"*; do [ -f "$f" ] && { echo "# input $f:"; head -c 600 "$f" | od -c | head -n 12 | sed 's/^/#   /'; }; done
  fi
done
