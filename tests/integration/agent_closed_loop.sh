#!/usr/bin/env bash
# ripple-agent end to end, no GPU (TAP): the real agent, the real BPF tracer, a real
# periodic task (ripple-kdnn, unmodified) and a stand-in engine over the real engine
# socket, on the emulated interference plant — a TEST DOUBLE (tests/plant/plant.h):
# the engine publishes the bytes it "executes" and the plant-mode task stretches each
# job by kappa x those bytes, since CI machines show no real memory contention.
#
#   1  ripple: the task's DMR (its own ground truth) <= eps = 5 %, within three binomial
#      standard deviations at its number of jobs (9.6 % for 200)
#   2  unmanaged, same plant: DMR >= 20 % (clearly worse)
#   3  ripplectl status / explain / top answer, text and --json
#   4  an engine that dies mid-grant is settled; the other engine goes on
#   5  a malformed message closes that session only; the agent stays up
#   6  SIGTERM: the engines are told, BPF detached, exit 0
#   7  a configuration with errors is refused, naming line and key
#   8  (run third) ripple with a deadline-bound engine too (a VLM stand-in, one 4-unit (8 MB) pass every
#      250 ms): it meets every deadline while the best-effort engine and the task share
#      the plant, and the task's DMR stays <= eps (within its binomial bound, as in 1)
#   9  a pipelined stand-in engine (--copy-in 0.3) under unmanaged: each grant starts
#      before the one ahead of it is done, the agent counts them queued and its busy time
#      (the union of the grants' intervals) stays within the wall time, while the engine
#      moves more bytes than one serial stream could
set -uo pipefail
O=${O:-build}
B=$(cd "$O" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root for BPF"; exit 0; }
tmp=$(mktemp -d /tmp/ripple-agent-it.XXXXXX)
plant="ripple-it-$$"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -f "/dev/shm/$plant"
  rm -rf "$tmp"
}
trap cleanup EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
echo "1..9"

# A private copy of the task binary: the tracer matches by exe, so concurrent runs of
# other suites never look like ours.
task="$tmp/kdnn-it-$$"
cp "$B/bin/ripple-kdnn" "$task"
EPS=0.05
# The task computes ~40 of every 50 ms: on a 2-core CI machine with a build beside it, the
# scheduler's fair share alone makes it miss, and those misses are the CPU's, not the GPU
# traffic's this test is about. A deployment runs its control and perception loops at
# real-time priority; so does this test where it may (root or CAP_SYS_NICE): the task, the
# agent and the deadline-bound stand-in engine, whose CPU "execution" stands for a GPU's,
# which no CPU load slows. The greedy best-effort stand-in stays at normal priority beside
# the task (in 9, alone and timed, it runs at the agent's).
RT_TASK=() RT_AGENT=()
if chrt -f 10 true 2>/dev/null; then
  RT_TASK=(chrt -f 20) RT_AGENT=(chrt -f 10)
else
  echo "# no SCHED_FIFO here: the deadlines assume an otherwise idle machine"
fi
write_config() { # policy
  cat > "$tmp/ripple.toml" <<EOF
[agent]
policy = "$1"
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""

[pricing]
peak_rate_gbps = 1.0   # the stand-in engine's rate

[[task]]
name = "kdnn"
exe = "$task"
period_ms = 50
deadline_ms = 45
miss_tolerance = $EPS
prior_slope_ms_per_gb = 1000   # pessimistic prior; the plant's kappa is 800 ms/GB
EOF
  if [ "${2:-}" = bound ]; then cat >> "$tmp/ripple.toml" <<EOF

[[engine]]
name = "vlm"
kind = "deadline-bound"
period_ms = 250
EOF
  fi
}
start_agent() { # policy [bound] -> $agent_pid
  write_config "$1" "${2:-}"
  "${RT_AGENT[@]}" "$B/bin/ripple-agent" -c "$tmp/ripple.toml" > "$tmp/agent-$1.log" 2>&1 &
  agent_pid=$!
  pids+=("$agent_pid")
  for _ in $(seq 100); do [ -S "$tmp/control.sock" ] && return 0; sleep 0.05; done
  return 1
}
stop_agent() {
  kill -TERM "$agent_pid" 2>/dev/null
  wait "$agent_pid"
}
ENGINE_ARGS=(--socket "$tmp/engine.sock" --rate-gbps 1 --unit-mb 2 --units 8)
engine() { # extra args...
  "$B/bin/ripple-standin-engine" "${ENGINE_ARGS[@]}" "$@"
}
# The engine creates the plant's shm; a plant-mode task refuses to start without it.
wait_plant() { for _ in $(seq 100); do [ -e "/dev/shm/$plant" ] && return; sleep 0.05; done; }
# One closed-loop run: 10 s of a 20 Hz task beside a greedy best-effort engine.
run_loop() { # policy -> prints the task's RESULT line
  start_agent "$1" || { echo "agent did not start"; return; }
  # A plant left by the previous run's engine (killed, so not unlinked) would let the
  # task attach to a segment nobody updates any more: no bytes, no interference.
  rm -f "/dev/shm/$plant"
  engine --name llm --plant-create "$plant" --duration-s 12 --quiet > "$tmp/engine-$1.log" 2>&1 &
  local e=$!
  pids+=("$e")
  wait_plant
  "${RT_TASK[@]}" "$task" --period-ms 50 --deadline-ms 45 --duration-s 10 --points 50000 --queries 45000 \
    --plant "$plant" --plant-kappa-ms-per-gb 800 --quiet 2>&1 | grep RESULT
  "$B/bin/ripplectl" status --socket "$tmp/control.sock" > "$tmp/status-$1.txt" 2>&1
  kill "$e" 2>/dev/null; wait "$e" 2>/dev/null
  stop_agent
}
dmr_of() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { if (v["jobs"] > 0) printf "%.4f", v["misses"] / v["jobs"]; else print "nan" }'; }
# The agent holds a task's long-run DMR at eps (the margin's level, Eq. 5), not every run of
# n jobs below it: a task missing at exactly eps exceeds eps in about half of its 200-job
# runs (here ripple missed 2-7 % of its jobs, and more than 5 % in 2 of 13 runs on this VM). So a run
# passes where its DMR is within three binomial standard deviations of eps at its n (a task
# at eps passes 99.8 % of its runs); unmanaged misses every job here (check 2).
dmr_bound_of() { awk -v e="$EPS" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } } END { if (v["jobs"] > 0) printf "%.4f", e + 3 * sqrt(e * (1 - e) / v["jobs"]); else print "nan" }'; }

r=$(run_loop ripple)
d=$(echo "$r" | dmr_of)
bound=$(echo "$r" | dmr_bound_of)
if awk -v d="$d" -v e="$bound" 'BEGIN { exit !(d != "nan" && e != "nan" && d <= e) }'; then
  ok "ripple: kdnn DMR $d <= eps $EPS within its binomial bound $bound ($r)"
else
  not_ok "ripple: kdnn DMR $d <= eps $EPS within its binomial bound $bound" "$r" "$(cat "$tmp/status-ripple.txt")"
fi
ripple_dmr=$d

r=$(run_loop unmanaged)
d=$(echo "$r" | dmr_of)
if awk -v d="$d" 'BEGIN { exit !(d != "nan" && d >= 0.20) }'; then
  ok "unmanaged: kdnn DMR $d >= 0.20, ripple $ripple_dmr ($r)"
else
  not_ok "unmanaged: kdnn DMR $d >= 0.20" "$r"
fi

# 8: a deadline-bound engine beside the best-effort one and the task, under ripple.
run_bound() {
  start_agent ripple bound || { echo "agent did not start"; return; }
  rm -f "/dev/shm/$plant"  # the last run's engine was killed: see run_loop
  engine --name llm --plant-create "$plant" --duration-s 10 --quiet > "$tmp/engine-bound.log" 2>&1 &
  local e=$!
  pids+=("$e")
  wait_plant
  "${RT_AGENT[@]}" "$B/bin/ripple-standin-engine" --socket "$tmp/engine.sock" --rate-gbps 1 --unit-mb 2 --units 4 \
    --name vlm --kind deadline-bound --period-ms 250 --plant "$plant" --duration-s 7 > "$tmp/vlm.log" 2>&1 &
  local v=$!
  pids+=("$v")
  "${RT_TASK[@]}" "$task" --period-ms 50 --deadline-ms 45 --duration-s 7 --points 50000 --queries 45000 \
    --plant "$plant" --plant-kappa-ms-per-gb 800 --quiet 2>&1 | grep RESULT > "$tmp/task-bound.txt"
  wait "$v"
  "$B/bin/ripplectl" status --socket "$tmp/control.sock" > "$tmp/status-bound.txt" 2>&1
  kill "$e" 2>/dev/null; wait "$e" 2>/dev/null
  stop_agent
}
run_bound
r=$(cat "$tmp/task-bound.txt")
d=$(echo "$r" | dmr_of)
bound=$(echo "$r" | dmr_bound_of)
v=$(grep RESULT "$tmp/vlm.log")
passes=$(echo "$v" | sed -n 's/.* passes=\([0-9]*\).*/\1/p')
late=$(echo "$v" | sed -n 's/.* late=\([0-9]*\).*/\1/p')
# 7 s at one pass per 250 ms: 28 passes (>= 24 allows for start-up), none late, managed.
if [ -n "$passes" ] && [ "$passes" -ge 24 ] && [ "$late" = 0 ] && echo "$v" | grep -q 'managed_at_end=1' &&
   grep -q '^vlm .*deadline-bound' "$tmp/status-bound.txt" &&
   awk -v d="$d" -v e="$bound" 'BEGIN { exit !(d != "nan" && e != "nan" && d <= e) }'; then
  ok "deadline-bound engine: $passes passes, $late late; kdnn DMR $d <= eps $EPS within $bound beside it and llm"
else
  not_ok "deadline-bound engine meets its deadlines beside llm and kdnn" "$v" "$r" "$(cat "$tmp/status-bound.txt")"
fi

# 3-6 against one agent (ripple) with two engines and the task running.
start_agent ripple
# The last run's engine was killed, its plant left behind: a task started on it while the
# new engine replaces it may find no plant and exit (run_loop says more).
rm -f "/dev/shm/$plant"
# Long enough for 3-6 on a loaded machine (another build beside it): the engine is killed
# after 6, and the task, at SCHED_FIFO where allowed as in 1, keeps the slack the grants
# of 4 need (at SCHED_OTHER beside a -j2 build it missed every job: no allowance, no grant).
engine --name llm --plant-create "$plant" --duration-s 40 > "$tmp/llm.log" 2>&1 &
llm=$!; pids+=("$llm")
wait_plant
"${RT_TASK[@]}" "$task" --period-ms 50 --deadline-ms 45 --duration-s 40 --points 50000 --queries 45000 \
  --plant "$plant" --plant-kappa-ms-per-gb 800 --quiet > "$tmp/task-3.log" 2>&1 &
pids+=("$!")
jobs_now() {
  "$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>/dev/null |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["jobs"])' 2>/dev/null || echo 0
}
for _ in $(seq 100); do [ "$(jobs_now)" -gt 5 ] && break; sleep 0.1; done
s_txt=$("$B/bin/ripplectl" status --socket "$tmp/control.sock" 2>&1)
s_json=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>&1)
x_txt=$("$B/bin/ripplectl" explain --socket "$tmp/control.sock" 2>&1)
x_json=$("$B/bin/ripplectl" explain --json --socket "$tmp/control.sock" 2>&1)
t_txt=$("$B/bin/ripplectl" top -n 2 --interval 0.1 --socket "$tmp/control.sock" 2>&1)
if echo "$s_txt" | grep -q '^kdnn ' && echo "$s_txt" | grep -q '^llm .*best-effort' &&
   echo "$s_json" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["tasks"][0]["jobs"] > 0 and j["engines"][0]["grants"] > 0' &&
   echo "$s_json" | python3 -c '
import json, sys
t = json.load(sys.stdin)["tasks"][0]   # the misses no grant was admitted into: counted, and within the jobs
assert 0 <= t["window_untouched_misses"] <= t["untouched_misses"] <= t["untouched_jobs"] <= t["jobs"], t
assert t["untouched_misses"] <= t["misses"], t
# the line the last job was priced on (pricing.slope_candidates, on by default): App. C'"'"'s or a
# fixed-slope line, never below the held slope (a line is eligible only at kappa^u or above)
assert isinstance(t["fixed_line"], bool) and t["priced_slope_ms_per_gb"] >= t["kappa_ms_per_gb"] > 0, t' &&
   echo "$x_txt" | grep -q '^llm: ' &&
   echo "$x_json" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["engines"][0]["cause"]' &&
   [ "$(echo "$t_txt" | grep -c 'ripple-agent: policy ripple')" = 2 ]; then
  ok "ripplectl status, explain, top (text and --json)"
else
  not_ok "ripplectl status, explain, top" "$s_txt" "$x_txt" "$s_json" "task: $(cat "$tmp/task-3.log")"
fi

# 4: a second engine dies in the middle of its 3rd grant.
engine --name crasher --crash-after 3 --duration-s 15 > "$tmp/crasher.log" 2>&1
rc=$?
g1=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" | python3 -c 'import json,sys; j=json.load(sys.stdin); e={x["name"]: x for x in j["engines"]}; print(e["llm"]["grants"], e["crasher"]["connected"], e["crasher"]["bytes"])')
read -r llm1 crasher_connected crasher_bytes <<< "$g1"
llm_grants() {
  "$B/bin/ripplectl" status --json --socket "$tmp/control.sock" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print({x["name"]: x for x in j["engines"]}["llm"]["grants"])'
}
g2=$(llm_grants)
for _ in $(seq 50); do [ "${g2:-0}" -gt "${llm1:-0}" ] 2>/dev/null && break; sleep 0.1; g2=$(llm_grants); done
# Settled: the crashed grant's bytes count as executed (3 grants' units charged).
if [ "$rc" = 3 ] && [ "$crasher_connected" = False ] && [ "$crasher_bytes" -gt 0 ] && [ "$g2" -gt "$llm1" ] &&
   grep -Eq 'crasher.*closed: (disconnected|receive failed)' "$tmp/agent-ripple.log"; then
  ok "engine dying mid-grant is settled ($crasher_bytes B charged); llm grants $llm1 -> $g2"
else
  not_ok "engine dying mid-grant is settled" "rc=$rc g1=$g1 g2=$g2" "$(cat "$tmp/crasher.log")" "$(tail -5 "$tmp/agent-ripple.log")"
fi

# 5: a malformed message.
engine --name junk --garbage --duration-s 1 > "$tmp/junk.log" 2>&1
pe=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" | python3 -c 'import json,sys; print(json.load(sys.stdin)["protocol_errors"])')
if [ "$pe" = 1 ] && grep -q 'junk): malformed message: message: bad magic' "$tmp/agent-ripple.log" && kill -0 "$agent_pid"; then
  ok "a malformed message closes only that session ($(grep -o 'malformed message: [^,]*' "$tmp/agent-ripple.log" | head -1))"
else
  not_ok "a malformed message closes only that session" "protocol_errors=$pe" "$(tail -5 "$tmp/agent-ripple.log")"
fi

# 6: SIGTERM.
kill -TERM "$agent_pid"; wait "$agent_pid"; arc=$?
for _ in $(seq 50); do grep -q 'agent gone' "$tmp/llm.log" && break; sleep 0.1; done
kill "$llm" 2>/dev/null; wait "$llm" 2>/dev/null
if [ "$arc" = 0 ] && grep -q 'told 1 engine(s), BPF detached' "$tmp/agent-ripple.log" &&
   grep -q 'agent gone (ripple-agent is stopping): running UNMANAGED' "$tmp/llm.log" && [ ! -S "$tmp/engine.sock" ]; then
  ok "SIGTERM: engine told (fail-open), BPF detached, exit 0"
else
  not_ok "SIGTERM: engine told, BPF detached, exit 0" "rc=$arc" "$(tail -3 "$tmp/agent-ripple.log")" "$(cat "$tmp/llm.log")"
fi

# 7: a configuration with errors.
printf '[agent]\npolicy = "ripple"\n\n[[task]]\ncomm = "x"\nperiod_ms = 50\ndeadline_ms = 80\n' > "$tmp/bad.toml"
msg=$("$B/bin/ripple-agent" -c "$tmp/bad.toml" 2>&1); brc=$?
if [ "$brc" = 2 ] && [ "$msg" = "ripple-agent: configuration refused: $tmp/bad.toml:4: task[0]: deadline 80.000 ms exceeds the period 50.000 ms" ]; then
  ok "bad configuration refused: ${msg#ripple-agent: }"
else
  not_ok "bad configuration refused" "rc=$brc $msg"
fi

# 9: a pipelined engine; 2 s at 1 GB/s, so a serial stream moves at most 2 GB. At SCHED_FIFO
# where allowed (as the deadline-bound engine of 8): its units overlap only if it submits the
# next one in time, and beside two busy loops at SCHED_OTHER it moved 2.27 GB.
start_agent unmanaged
t0=$(date +%s.%N)
"${RT_AGENT[@]}" "$B/bin/ripple-standin-engine" "${ENGINE_ARGS[@]}" --name piped --copy-in 0.3 --duration-s 2 \
  > "$tmp/piped.log" 2>&1
wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
q=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>/dev/null | python3 -c '
import json, sys
e = {x["name"]: x for x in json.load(sys.stdin)["engines"]}["piped"]
print(e["grants"], e["queued"], e["busy_s"], e["queued_scale"])' 2>&1)
stop_agent
read -r pg pq pb pqs <<< "$q"
gb=$(sed -n 's/.* gb=\([0-9.]*\).*/\1/p' "$tmp/piped.log")
if [ -n "$gb" ] && [ "${pq:-0}" -ge 1 ] && awk -v b="$pb" -v w="$wall" -v g="$gb" -v s="$pqs" \
     'BEGIN { exit !(b > 0 && b <= w && g > 2.3 && s > 0 && s < 1) }'; then
  ok "pipelined engine: $pq of $pg grants queued, busy ${pb} s in ${wall} s, queued scale $pqs, $gb GB in 2 s"
else
  not_ok "pipelined engine: queued grants counted, busy within the wall time" "$q wall=$wall" "$(cat "$tmp/piped.log")"
fi
exit $failed
