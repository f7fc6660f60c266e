#!/usr/bin/env bash
# TAP tests of `ripplectl trace`, the tracer run alone like a bcc tool:
# its output, its closing summary, the live pinned maps, and one clear error
# line (and a non-zero exit) for each kind of bad input.
set -u
O=${O:-build}
CTL="$O/bin/ripplectl"
TMP=$(mktemp -d /tmp/ripplectl-tap.XXXXXX)
# A private copy: tracing by executable matches its inode, so other runs of
# the shared test program (another test suite, another checkout) stay out.
PERIODIC="$TMP/periodic"
cp "$O/tests/progs/periodic" "$PERIODIC"
PIN="/sys/fs/bpf/ripple-tap-$$"
trap 'rm -rf "$TMP"' EXIT

n=0 failed=0
plan() { echo "TAP version 13"; echo "1..$1"; }
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }

# expect_error NAME PATTERN CMD...: non-zero exit, exactly one stderr line matching PATTERN
expect_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$? lines
  lines=$(wc -l <"$TMP/err")
  if [ "$rc" -ne 0 ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" "$TMP/err"; then
    ok "$name: $(cat "$TMP/err")"
  else
    not_ok "$name" "rc=$rc lines=$lines" "stderr: $(head -c 400 "$TMP/err")" "wanted: $pat"
  fi
}

plan 17

if [ "$(id -u)" -ne 0 ]; then
  for i in $(seq 17); do n=$((n + 1)); echo "ok $n # SKIP ripplectl trace needs root"; done
  exit 0
fi

# --- bad input ---------------------------------------------------------------
gone=$(sh -c 'echo $$')  # a pid whose process has exited
expect_error "unknown pid" "^ripplectl trace: error: no such process: pid $gone$" \
  "$CTL" trace --pid "$gone" --no-pin --duration 1
expect_error "pid 0" "^ripplectl: --pid: Value 0 not in range 1 to 4194304$" "$CTL" trace --pid 0 --no-pin --duration 1
expect_error "pid -1" "^ripplectl: --pid: Value -1 not in range 1 to 4194304$" "$CTL" trace --pid -1 --no-pin --duration 1
expect_error "unknown command" "^ripplectl: unknown command 'bogus' \\(trace, status, top, explain, metrics, doctor; --help\\)$" "$CTL" bogus
expect_error "unknown exe" "executable /nonexistent/robot: No such file or directory" \
  "$CTL" trace --exe /nonexistent/robot --no-pin --duration 1
printf '#!/bin/sh\nexit 0\n' >"$TMP/script.sh"; chmod +x "$TMP/script.sh"
expect_error "non-ELF file" "$TMP/script.sh: not an ELF file" \
  "$CTL" trace --exe "$TMP/script.sh" --no-pin --duration 1
expect_error "missing symbol" "symbol 'no_such_job' not found in $PERIODIC" \
  "$CTL" trace --exe "$PERIODIC" --mode uprobe --release no_such_job --no-pin --duration 1
expect_error "unknown wait syscall" "unknown period-wait syscall 'bogus'" \
  "$CTL" trace --exe "$PERIODIC" --wait clock_nanosleep,bogus --no-pin --duration 1
expect_error "missing privileges" "missing privileges: loading BPF needs root or CAP_BPF\+CAP_PERFMON" \
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$CTL" trace \
  --exe "$PERIODIC" --no-pin --duration 1
expect_error "tracefs not mounted" "tracefs not mounted at /sys/kernel/tracing" \
  unshare -m sh -c "umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; exec $CTL trace --exe $PERIODIC --no-pin --duration 1"
expect_error "uprobe without --release" "--mode uprobe needs --release SYM" \
  "$CTL" trace --exe "$PERIODIC" --mode uprobe --no-pin --duration 1

# --- JSON lines: one per job, then the summary --------------------------------
"$CTL" trace --exe "$PERIODIC" --json --no-pin --duration 4 >"$TMP/json" 2>"$TMP/json.err" &
tracer=$!
sleep 1.5   # the tracer attaches (a process started after it is picked up at exec)
"$PERIODIC" --jobs 50 --period-us 5000 --work-us 200 --log "$TMP/gt"
wait $tracer
jobs=$(grep -c '"seq"' "$TMP/json")
summary=$(tail -n 1 "$TMP/json")
if [ "$jobs" -eq 50 ] && echo "$summary" | grep -q '"jobs":50' && echo "$summary" | grep -q '"drops":0'; then
  ok "--json: 50 job lines and a summary of 50 jobs, 0 drops"
else
  not_ok "--json" "job lines: $jobs" "summary: $summary" "stderr: $(head -c 300 "$TMP/json.err")"
fi
if grep '"seq"' "$TMP/json" | awk -F'"seq":' '{split($2,a,","); if (a[1] != NR) bad=1} END {exit bad}'; then
  ok "--json: sequence numbers 1..50 in order"
else
  not_ok "--json: sequence numbers out of order"
fi

# --- text: --pid ends with the process; misses against --deadline -----------
"$PERIODIC" --wait-start --jobs 40 --period-us 5000 --work-us 500 >"$TMP/ready" &
target=$!
for _ in $(seq 50); do grep -q ready "$TMP/ready" && break; sleep 0.1; done
"$CTL" trace --pid "$target" --deadline 0.1 --no-pin >"$TMP/text" 2>"$TMP/text.err" &
tracer=$!
sleep 1.5
kill -USR1 "$target"
if timeout 20 tail --pid="$tracer" -f /dev/null; then
  last=$(tail -n 1 "$TMP/text")
  if echo "$last" | grep -qE ': 40 jobs, 40 misses \(deadline 0.100 ms\), response p50 [0-9.]+ ms, p99 [0-9.]+ ms, max [0-9.]+ ms, 0 drops'; then
    ok "--pid: ends with the process; summary counts 40 jobs, 40 misses"
  else
    not_ok "--pid summary" "last line: $last" "stderr: $(head -c 300 "$TMP/text.err")"
  fi
else
  kill "$tracer" 2>/dev/null
  not_ok "--pid: the trace did not end when the process exited"
fi
if [ "$(grep -c ' MISS$' "$TMP/text")" -eq 40 ]; then
  ok "text: every job line over the deadline says MISS"
else
  not_ok "text: MISS marks" "$(grep -c ' MISS$' "$TMP/text") lines"
fi

# --- live pinned maps: bpftool sees the counters while the tracer runs -------
"$CTL" trace --exe "$PERIODIC" --pin-dir "$PIN" --duration 4 >/dev/null 2>"$TMP/pin.err" &
tracer=$!
sleep 1.5
"$PERIODIC" --jobs 30 --period-us 5000
dump=$(bpftool map dump pinned "$PIN/pt_stats" 2>&1 | head -n 20)
if echo "$dump" | grep -qE '"jobs": 30,'; then
  ok "bpftool map dump pinned $PIN/pt_stats shows 30 jobs while tracing"
else
  not_ok "bpftool live view" "$dump" "$(head -c 300 "$TMP/pin.err")"
fi
wait $tracer
if [ ! -e "$PIN/pt_stats" ] && [ ! -e "$PIN" ]; then
  ok "pins are removed when the tracer exits"
else
  not_ok "pins left behind in $PIN"
  rm -rf "$PIN"
fi

[ "$failed" -eq 0 ]
