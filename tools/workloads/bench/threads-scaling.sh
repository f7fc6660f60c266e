#!/usr/bin/env bash
# Job time of costmap, kdnn and sgm against --threads (Documentation/workloads.md,
# "Threads"): each task alone at its default size, pinned to cores FIRST..FIRST+N-1, run
# under SCHED_FIFO (chrt -f 10) so that other load on a shared machine does not preempt it,
# --threads 1 and N interleaved over ROUNDS rounds. Prints every RESULT line, then per task
# and thread count the median over the rounds of p50 and mean job time and the phase line.
# Usage: tools/workloads/bench/threads-scaling.sh BIN_DIR "1 2" [ROUNDS] [JOBS] [FIRST]
set -u
B=$1 THREADS=$2 ROUNDS=${3:-3} JOBS=${4:-40} FIRST=${5:-0}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rt=(); command -v chrt >/dev/null && [ "$(id -u)" = 0 ] && rt=(chrt -f 10)
for r in $(seq "$ROUNDS"); do
  for t in costmap kdnn sgm; do
    for n in $THREADS; do
      cores=$FIRST; [ "$n" -gt 1 ] && cores=$FIRST-$((FIRST + n - 1))
      "${rt[@]}" "$B/ripple-$t" --jobs "$JOBS" --period-ms 200 --threads "$n" --cores "$cores" >"$out/$t-$n-$r" 2>&1
      grep '^RESULT' "$out/$t-$n-$r"
    done
  done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "task threads p50_ms(median of $ROUNDS) mean_ms(median) digest"
for t in costmap kdnn sgm; do
  for n in $THREADS; do
    p50=$(cat "$out/$t-$n-"* | sed -n 's/^RESULT.* p50_ms=\([^ ]*\).*/\1/p' | median)
    mean=$(cat "$out/$t-$n-"* | sed -n 's/^RESULT.* mean_ms=\([^ ]*\).*/\1/p' | median)
    dig=$(sed -n 's/^RESULT.* digest=\([^ ]*\).*/\1/p' "$out/$t-$n-1")
    echo "$t $n $p50 $mean $dig"
    grep -h "mean phase ms" "$out/$t-$n-$ROUNDS" | sed 's/.*mean phase ms/  phases (last round), ms/'
  done
done
