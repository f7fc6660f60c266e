#!/usr/bin/env bash
# TAP: the robot tasks, the plant engine and ripple-llm run, report, and refuse bad
# input with one clear error line and a non-zero exit. Short runs: a few seconds in all.
set -u
O=${O:-build}
B=$O/bin
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_error NAME PATTERN CMD...: exits non-zero, stderr is one line matching PATTERN.
expect_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local lines; lines=$(wc -l <"$tmp/err")
  if [ $rc -ne 0 ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$tmp/err"; then ok "$name"
  else not_ok "$name" "rc=$rc lines=$lines" "$(head -3 "$tmp/err")"; fi
}
# expect_result NAME CMD...: exits 0 and prints a RESULT line with jobs > 0.
expect_result() {
  local name=$1; shift
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ $rc -eq 0 ] && grep -qE '^RESULT task=[a-z]+ jobs=[1-9]' "$tmp/out"; then ok "$name"
  else not_ok "$name" "rc=$rc" "$(tail -3 "$tmp/out" "$tmp/err")"; fi
}

small_costmap=(--size 256 --beams 64 --scans 1)
small_kdnn=(--points 5000 --queries 1000 --scans 2)
small_sgm=(--width 320 --height 96 --disparities 32 --frames 1)
small_orb=(--width 320 --height 240 --features 200 --frames 1)

expect_result "costmap runs and reports" $B/ripple-costmap --jobs 3 --period-ms 5 "${small_costmap[@]}"
expect_result "kdnn runs and reports" $B/ripple-kdnn --jobs 3 --period-ms 5 "${small_kdnn[@]}"
expect_result "sgm runs and reports" $B/ripple-sgm --jobs 3 --period-ms 5 "${small_sgm[@]}"
expect_result "orb runs and reports" $B/ripple-orb --jobs 3 --period-ms 5 "${small_orb[@]}"
expect_result "control runs and reports" $B/ripple-control --jobs 10 --period-ms 2

# Ground truth log: a header and one line per job, release <= start <= completion.
$B/ripple-control --jobs 5 --period-ms 2 --log "$tmp/gt.csv" --quiet >/dev/null 2>&1
if [ "$(wc -l <"$tmp/gt.csv")" -eq 6 ] && awk -F, 'NR > 1 && !($2 <= $3 && $3 <= $4) { bad = 1 } END { exit bad }' "$tmp/gt.csv"; then
  ok "ground-truth log has one ordered line per job"
else not_ok "ground-truth log has one ordered line per job" "$(head -3 "$tmp/gt.csv")"; fi

# Releases are periodic on absolute time: release k = release 0 + k * period exactly.
if awk -F, 'NR == 2 { r0 = $2 } NR > 2 && $2 - r0 != (NR - 2) * 2000000 { bad = 1 } END { exit bad }' "$tmp/gt.csv"; then
  ok "releases are exact multiples of the period"
else not_ok "releases are exact multiples of the period" "$(head -4 "$tmp/gt.csv")"; fi

# Threads: each task's output is the same for any --threads at one seed (digest= in the
# RESULT line), and the run really used the threads (threads= in the RESULT line).
field() { sed -n "s/^RESULT .* $1=\([^ ]*\).*/\1/p" "$2"; }
same_result() {  # NAME CMD... : --threads 1 and --threads 4 (appended) give the same digest
  local name=$1; shift
  "$@" --threads 1 >"$tmp/t1" 2>&1; local rc1=$?
  "$@" --threads 4 >"$tmp/t4" 2>&1; local rc4=$?
  local d1 d4 n4; d1=$(field digest "$tmp/t1"); d4=$(field digest "$tmp/t4"); n4=$(field threads "$tmp/t4")
  if [ $rc1 -eq 0 ] && [ $rc4 -eq 0 ] && [ -n "$d1" ] && [ "$d1" = "$d4" ] && [ "$n4" = 4 ]; then
    ok "$name: --threads 1 and 4 give the same output ($d1)"
  else not_ok "$name: --threads 1 and 4 give the same output" "rc $rc1/$rc4 digest $d1/$d4 threads $n4" \
    "$(tail -n 2 "$tmp/t1" "$tmp/t4")"; fi
}
same_result "costmap" $B/ripple-costmap --jobs 4 --period-ms 5 --seed 7 --size 256 --beams 64 --scans 2
same_result "kdnn" $B/ripple-kdnn --jobs 4 --period-ms 5 --seed 7 --points 8000 --queries 3000 --scans 3
# SGM: the map depends on the stripes (default one per thread), never on the threads.
same_result "sgm (4 stripes)" $B/ripple-sgm --jobs 2 --period-ms 5 --seed 7 "${small_sgm[@]}" --stripes 4
$B/ripple-sgm --jobs 1 --period-ms 5 "${small_sgm[@]}" >"$tmp/s1" 2>&1
$B/ripple-sgm --jobs 1 --period-ms 5 "${small_sgm[@]}" --threads 1 --stripes 1 >"$tmp/s1b" 2>&1
if [ -n "$(field digest "$tmp/s1")" ] && [ "$(field digest "$tmp/s1")" = "$(field digest "$tmp/s1b")" ] &&
   grep -q '1 stripe(s)' "$tmp/s1"; then ok "sgm: one thread is one stripe, the whole image"
else not_ok "sgm: one thread is one stripe, the whole image" "$(tail -2 "$tmp/s1")"; fi

# Release and completion stay on the main thread: between jobs it sleeps in
# clock_nanosleep, the workers in futex (never a period wait the tracer counts), and the
# threads exist from the start (none per job).
case $(uname -m) in
  x86_64) sys_cns=230 sys_ns=35 sys_futex=202 ;;
  aarch64) sys_cns=115 sys_ns=101 sys_futex=98 ;;
  *) sys_cns= ;;
esac
if [ -n "$sys_cns" ]; then
  $B/ripple-costmap --size 256 --beams 64 --scans 1 --threads 3 --period-ms 200 --duration-s 5 --quiet \
    >"$tmp/waits.out" 2>&1 &
  cpid=$!
  sleep 0.5
  good=0 bad="" ntask=""
  for _ in $(seq 20); do
    main=$(cut -d' ' -f1 /proc/$cpid/syscall 2>/dev/null)
    workers=$(for t in /proc/$cpid/task/*; do [ "${t##*/}" = $cpid ] || cut -d' ' -f1 $t/syscall; done 2>/dev/null | sort -u | tr '\n' ' ')
    ntask="$ntask $(ls /proc/$cpid/task 2>/dev/null | wc -l)"
    case " $workers" in *" $sys_cns "*|*" $sys_ns "*) bad="workers in a period wait: $workers" ;; esac
    [ "$main" = "$sys_cns" ] && [ "$workers" = "$sys_futex " ] && good=$((good + 1))
    sleep 0.05
  done
  kill -INT $cpid 2>/dev/null; wait $cpid
  if [ $good -ge 1 ] && [ -z "$bad" ] && [ "$(echo $ntask | tr ' ' '\n' | sort -u)" = 3 ]; then
    ok "threads: main waits in clock_nanosleep, workers in futex ($good/20 samples), 3 threads throughout"
  else not_ok "threads: main waits in clock_nanosleep, workers in futex" "good=$good $bad tasks:$ntask"; fi
else
  n=$((n + 1)); echo "ok $n - threads wait in futex # SKIP syscall numbers unknown for $(uname -m)"
fi

# A threaded run keeps the ground truth: ordered lines, exact periodic releases.
$B/ripple-kdnn --jobs 5 --period-ms 20 --threads 2 "${small_kdnn[@]}" --log "$tmp/gt2.csv" >"$tmp/out" 2>&1
if [ "$(field threads "$tmp/out")" = 2 ] && [ "$(wc -l <"$tmp/gt2.csv")" -eq 6 ] &&
   awk -F, 'NR > 1 && !($2 <= $3 && $3 <= $4) { bad = 1 } NR == 2 { r0 = $2 } NR > 2 && $2 - r0 != (NR - 2) * 20000000 { bad = 1 } END { exit bad }' "$tmp/gt2.csv"; then
  ok "threaded ground-truth log: one ordered line per job, exact releases"
else not_ok "threaded ground-truth log: one ordered line per job, exact releases" "$(cat "$tmp/out" | tail -2)" "$(head -3 "$tmp/gt2.csv")"; fi

ncpu=$(getconf _NPROCESSORS_CONF)
expect_error "--threads 0" "--threads: Value 0 not in range" $B/ripple-costmap --threads 0 --jobs 1
expect_error "--threads not a number" "--threads" $B/ripple-kdnn --threads many --jobs 1
expect_error "--cores backwards" "--cores '3-1': range '3-1' runs backwards" $B/ripple-costmap --cores 3-1 --jobs 1
expect_error "--cores not a list" "--cores '0-a': '0-a' is not a CPU or a range A-B" $B/ripple-sgm --cores 0-a --jobs 1
expect_error "--cores out of range" "--cores 0,$((ncpu + 7)): CPU $((ncpu + 7)) out of range \(this process may run on CPUs" \
  $B/ripple-kdnn --cores 0,$((ncpu + 7)) --jobs 1
expect_error "--threads does not match --cores" "--threads 3 needs one core per thread, --cores 0 names 1" \
  $B/ripple-costmap --threads 3 --cores 0 --jobs 1
expect_error "--core with --threads" "--core pins one thread; with --threads 2 give --cores" $B/ripple-costmap --core 0 --threads 2 --jobs 1
expect_error "--core and --cores" "--core and --cores are exclusive" $B/ripple-costmap --core 0 --cores 0 --jobs 1
expect_error "threads on a single-threaded task" "--threads 2: ripple-orb runs single-threaded" $B/ripple-orb --threads 2 --jobs 1
expect_error "sgm --stripes too many" "--stripes 90 leaves fewer than 8 rows a stripe" $B/ripple-sgm "${small_sgm[@]}" --stripes 90 --jobs 1
expect_error "core out of range" "--core $((ncpu + 7)) is out of range" $B/ripple-costmap --core $((ncpu + 7)) --jobs 1
expect_error "unknown option" "not expected: --bogus" $B/ripple-kdnn --bogus
expect_error "bad period" "period-ms" $B/ripple-orb --period-ms -3
expect_error "unreadable image" "cannot read image $tmp/none.pgm" $B/ripple-orb --image "$tmp/none.pgm"
printf 'P5\n4 4\n255\nxx' >"$tmp/short.pgm"
expect_error "truncated image" "truncated" $B/ripple-sgm --left "$tmp/short.pgm" --right "$tmp/short.pgm"
expect_error "unknown SGM mode" "unknown --mode 'fast'" $B/ripple-sgm --mode fast
expect_error "plant missing" "cannot open plant shm /ripple-cli-none" $B/ripple-control --plant ripple-cli-none --jobs 1
expect_error "unknown mix file" "mix.toml" $B/ripple-mix --mix "$tmp/mix.toml"
if [ "$(nproc)" -lt 11 ]; then
  expect_error "robotic1 on too few cores" "task costmap needs CPUs 0-3 \(4 threads at --first-core 0\).*robotic1-1t.toml" \
    $B/ripple-mix --mix tools/workloads/mixes/robotic1.toml --duration-s 1
else
  n=$((n + 1)); echo "ok $n - robotic1 on too few cores # SKIP this machine has $(nproc) CPUs"
fi
$B/ripple-mix --mix tools/workloads/mixes/robotic1.toml --first-core 5 --dry-run >"$tmp/out" 2>&1
if grep -q 'ripple-costmap --period-ms 100 --threads 4 --cores 5-8 ' "$tmp/out" &&
   grep -q 'ripple-kdnn --period-ms 100 --threads 4 --cores 9-12 ' "$tmp/out" &&
   grep -q 'ripple-sgm --period-ms 100 --threads 3 --cores 13-15 ' "$tmp/out"; then
  ok "ripple-mix --dry-run: robotic1's tasks get their threads and shifted cores"
else not_ok "ripple-mix --dry-run: robotic1's tasks get their threads and shifted cores" "$(cat "$tmp/out")"; fi

if [ -x $B/ripple-llm ]; then
  expect_error "ripple-llm unknown preset" "unknown preset 'qwen9'" $B/ripple-llm --preset qwen9
  expect_error "ripple-llm bad --weights" "--weights must be device or host" $B/ripple-llm --weights gpu
else
  n=$((n + 1)); echo "ok $n - ripple-llm bad input # SKIP ripple-llm not built (no nvcc)"
fi

# Plant mode end to end: a running stand-in engine stretches jobs, and says it is a test double.
shm=ripple-cli-$$
# The engine runs until told to stop (30 s bounds it), so a slow start of the task on a busy
# machine cannot outlast it.
$B/ripple-plant-engine --shm $shm --rate-gbps 20 --unit-mb 20 --duration-s 30 >"$tmp/engine" 2>&1 &
epid=$!
for _ in $(seq 50); do [ -e /dev/shm/$shm ] && break; sleep 0.02; done
sleep 0.05  # the engine publishes its header just after creating the object
# Jobs of a few ms (costmap, 1024^2 cells), so each spans many engine publications (100 us).
$B/ripple-costmap --size 1024 --beams 256 --jobs 20 --period-ms 12 --plant $shm --plant-kappa-ms-per-gb 25 \
  --log "$tmp/plant.csv" >"$tmp/out" 2>&1
kill -INT $epid 2>/dev/null; wait $epid
# kappa 25 ms/GB = 0.025 ns per byte. What the mechanism guarantees: every job lasts at least
# kappa x the engine bytes it counted, and bytes are counted. How many jobs see the engine
# publish depends on the engine being scheduled during them, which a busy 2-core machine does
# not promise (CI once saw fewer than 15 of 20), so the count is not asserted.
stretched() {
  awk -F, 'NR > 1 { if ($4 - $3 < 0.025 * $5) bad++; if ($5 > 0) s++ }
           END { exit !(NR > 1 && bad == 0 && s >= 1) }' "$1"
}
if grep -q 'plant=test-double' "$tmp/out" && grep -q 'PLANT MODE (emulated interference, test double)' "$tmp/out" &&
   stretched "$tmp/plant.csv"; then
  ok "plant mode counts engine bytes and labels itself a test double"
else not_ok "plant mode counts engine bytes and labels itself a test double" "$(tail -2 "$tmp/out")"; fi
# Plant mode with threads: the main thread stretches the job after the join.
$B/ripple-plant-engine --shm $shm --rate-gbps 20 --unit-mb 20 --duration-s 30 --quiet >/dev/null 2>&1 &
epid=$!
for _ in $(seq 50); do [ -e /dev/shm/$shm ] && break; sleep 0.02; done
sleep 0.05
$B/ripple-costmap --size 1024 --beams 256 --jobs 20 --period-ms 12 --threads 2 --plant $shm --plant-kappa-ms-per-gb 25 \
  --log "$tmp/plant2.csv" >"$tmp/out" 2>&1
kill -INT $epid 2>/dev/null; wait $epid
if grep -q 'plant=test-double' "$tmp/out" && [ "$(field threads "$tmp/out")" = 2 ] &&
   stretched "$tmp/plant2.csv"; then
  ok "plant mode with --threads 2 stretches jobs"
else not_ok "plant mode with --threads 2 stretches jobs" "$(tail -2 "$tmp/out")"; fi
$B/ripple-plant-engine --shm $shm --rate-gbps 20 --duration-s 1 --quiet >/dev/null 2>&1 &
epid=$!
for _ in $(seq 50); do [ -e /dev/shm/$shm ] && break; sleep 0.02; done
sleep 0.05
expect_error "plant slope too steep" "too steep: kappa x engine rate = 2.00" $B/ripple-control --jobs 1 --plant $shm --plant-kappa-ms-per-gb 100
kill -INT $epid 2>/dev/null; wait $epid
if grep -q 'TEST DOUBLE' "$tmp/engine"; then ok "plant engine labels itself a test double"
else not_ok "plant engine labels itself a test double" "$(cat "$tmp/engine")"; fi

echo "1..$n"
exit $fail
