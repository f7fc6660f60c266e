#!/usr/bin/env bash
# Soak on the emulated interference plant (a TEST DOUBLE, tests/plant/plant.h): the
# real agent and BPF tracer, a real periodic task (ripple-kdnn in plant mode, 20 Hz,
# D = 45 ms, eps = 5 %) and two stand-in best-effort engines
# (ripple-standin-engine, tests/integration/agent_engine.cc) over the real engine socket, for DURATION seconds in
# windows of WINDOW seconds, with a perturbation in the middle of most windows:
#   task-kill     the task is killed (SIGKILL) and started again
#   engine-kill   engine "llm" is killed (SIGKILL) and started again
#   agent-restart the agent is stopped (SIGTERM) and started again; the stand-in engines
#                 (which, unlike the interposer, do not reconnect) are started again
#   agent-stop    the agent is stopped (SIGSTOP) for 1 s, then continued
# The agent restarts once (window 3); the others cycle. Every window is judged (TAP, by
# tests/soak/analyze.py): DMR <= eps from the task's own log over the misses the admitted
# traffic caused (a job that would have missed with none of the plant's stretch is the
# shared VM's, counted and shown; the agent's CPU time, at most CPU_FRAC of a core per
# window, bounds what the agent itself could do to the task's core), no grant stall longer
# than STALL_MS while units are pending and the agent's reason is not protection, and at
# the end the agent's RSS flat (+5 % + 2 MiB after its first window).
#
#   tests/soak/soak.sh DURATION_S [WINDOW_S]     e.g. 3600 100 (the hour), 300 30 (CI)
#   SOAK_DIR=DIR keeps the run there (samples.jsonl, windows.tsv, logs); default: a
#   temporary directory, removed unless a case failed or SOAK_KEEP=1.
#   SOAK_PRICING="key = value" adds a line to the agent's [pricing] table (an A/B arm).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
O=${O:-build}
B=$(cd "$O" && pwd)
DURATION=${1:-300}
W=${2:-30}
N=$(( DURATION / W ))
EPS=0.05 DEADLINE_MS=45 PERIOD_MS=50 KAPPA=800   # the plant's slope, ms/GB
CPU_FRAC=${CPU_FRAC:-0.25}
STALL_MS=${STALL_MS:-250}
# The task and the agent run SCHED_FIFO, as a protected task would on the robot: the
# machines this runs on are shared (builds), and CPU starvation is not what is measured.
AGENT_PRIO=${AGENT_PRIO:-40} TASK_PRIO=${TASK_PRIO:-30}
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root for BPF"; exit 0; }
[ "$N" -ge 4 ] || { echo "1..0 # SKIP needs at least 4 windows (DURATION >= 4 x WINDOW)"; exit 0; }
d=${SOAK_DIR:-$(mktemp -d /tmp/ripple-soak.XXXXXX)}
mkdir -p "$d"
plant="ripple-soak-$$"
task="$d/kdnn-soak-$$"   # a private copy: the tracer matches by exe
cp "$B/bin/ripple-kdnn" "$task"
agent_pid=0 sampler=0 owner=0
declare -A eng=()
tasks=()
cleanup() {
  touch "$d/stop"
  for p in "${eng[@]}" "${tasks[@]}" "$owner" "$agent_pid"; do [ "$p" != 0 ] && kill -CONT "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
  [ "$sampler" != 0 ] && kill "$sampler" 2>/dev/null
  wait 2>/dev/null
  rm -f "/dev/shm/$plant"
  if [ "${SOAK_KEEP:-0}" = 0 ] && [ "${soak_failed:-1}" = 0 ] && [ -z "${SOAK_DIR:-}" ]; then rm -rf "$d"; fi
}
trap cleanup EXIT

cat > "$d/ripple.toml" <<EOF
[agent]
policy = "ripple"
engine_socket = "$d/engine.sock"
control_socket = "$d/control.sock"
pin_dir = ""

[pricing]
peak_rate_gbps = 1.0   # the two stand-in engines' rate together
${SOAK_PRICING:-}

[[task]]
name = "kdnn"
exe = "$task"
period_ms = $PERIOD_MS
deadline_ms = $DEADLINE_MS
miss_tolerance = $EPS
prior_slope_ms_per_gb = 1000   # pessimistic prior; the plant's kappa is $KAPPA ms/GB
EOF
start_agent() {
  chrt -f "$AGENT_PRIO" "$B/bin/ripple-agent" -c "$d/ripple.toml" >> "$d/agent.log" 2>&1 &
  agent_pid=$!
  echo "$agent_pid" > "$d/agent.pid"
  for _ in $(seq 200); do [ -S "$d/control.sock" ] && return 0; sleep 0.05; done
  echo "# agent did not start"; return 1
}
start_engine() { # name
  "$B/bin/ripple-standin-engine" --socket "$d/engine.sock" --rate-gbps 0.5 --unit-mb 1 --units 8 \
    --name "$1" --plant "$plant" --duration-s $((DURATION + 60)) >> "$d/engine-$1.log" 2>&1 &
  eng[$1]=$!
}
seg=0
start_task() { # seconds
  seg=$((seg + 1))
  chrt -f "$TASK_PRIO" "$task" --period-ms $PERIOD_MS --deadline-ms $DEADLINE_MS --duration-s "$1" --points 16000 --queries 14000 \
    --plant "$plant" --plant-kappa-ms-per-gb $KAPPA --quiet --log "$d/task-$seg.csv" >> "$d/task.log" 2>&1 &
  task_pid=$!
  tasks+=("$task_pid")
}
# Waits for the task run; one still running 10 s after its end is killed and the window
# marked (a job that never ends is a failure the DMR alone would not show).
wait_task() {
  for _ in $(seq 200); do kill -0 "$task_pid" 2>/dev/null || break; sleep 0.05; done
  local end; end=$(awk -v b="$(now)" 'BEGIN { print b + 10 }')
  while kill -0 "$task_pid" 2>/dev/null; do
    if awk -v a="$(now)" -v e="$end" 'BEGIN { exit !(a > e) }'; then
      kill -KILL "$task_pid"; echo "$k task-overran" >> "$d/events.log"; break
    fi
    sleep 0.1
  done
  wait "$task_pid" 2>/dev/null
}
now() { date +%s.%N; }
at() { awk -v t="$ws" -v f="$1" -v w="$W" 'BEGIN { printf "%.3f", t + f * w }'; }  # window start + f x W
sleep_until() { local s; s=$(awk -v a="$1" -v b="$(now)" 'BEGIN { x = a - b; print (x > 0 ? x : 0) }'); sleep "$s"; }

# The plant's owner: idle (gated, nothing grants it), it only keeps the shm alive across
# the engines' restarts.
rm -f "/dev/shm/$plant"
"$B/bin/ripple-plant-engine" --shm "$plant" --rate-gbps 1 --unit-mb 1 --gated --quiet > "$d/plant.log" 2>&1 &
owner=$!
for _ in $(seq 100); do [ -e "/dev/shm/$plant" ] && break; sleep 0.05; done
start_agent || exit 1
start_engine llm
start_engine be2
python3 "$here/sample.py" "$d/control.sock" "$d/agent.pid" "$d/samples.jsonl" 0.05 "$d/stop" 2> "$d/sampler.log" &
sampler=$!
sleep 1  # warm: engines connected, first samples
: > "$d/events.log"
t0=$(now)
echo "$t0" > "$d/t0"
python3 -c 'import time; print(time.monotonic_ns())' > "$d/mono0"  # the same moment, CLOCK_MONOTONIC
echo "# soak: $N windows of $W s in $d (O=$B)"
cycle=(none task-kill engine-kill agent-stop)
half=$(awk -v w="$W" 'BEGIN { print w / 2 - 0.5 }')
for ((k = 0; k < N; k++)); do
  ws=$(awk -v t="$t0" -v k="$k" -v w="$W" 'BEGIN { printf "%.3f", t + k * w }')
  if [ "$k" = 3 ]; then p=agent-restart; elif [ "$k" = 0 ]; then p=none; else p=${cycle[$((k % 4))]}; fi
  # Two task runs per window, so a run's log (written at its end) lands in its window.
  start_task "$half"
  sleep_until "$(at 0.25)"
  case $p in
    task-kill)
      kill -KILL "$task_pid"; wait "$task_pid" 2>/dev/null
      start_task "$(awk -v w="$W" 'BEGIN { print w / 4 - 0.5 }')" ;;
    engine-kill) kill -KILL "${eng[llm]}"; wait "${eng[llm]}" 2>/dev/null; start_engine llm ;;
    agent-stop) kill -STOP "$agent_pid"; sleep 1; kill -CONT "$agent_pid" ;;
    agent-restart)
      kill -TERM "$agent_pid"; wait "$agent_pid"
      start_agent || exit 1
      for e in llm be2; do kill "${eng[$e]}" 2>/dev/null; wait "${eng[$e]}" 2>/dev/null; start_engine "$e"; done ;;
  esac
  [ "$p" != none ] && echo "$k $p" >> "$d/events.log"
  sleep_until "$(at 0.5)"
  wait_task
  start_task "$half"
  sleep_until "$(at 1)"
  wait_task
  tasks=()
done
touch "$d/stop"
wait "$sampler" 2>/dev/null; sampler=0
python3 "$here/analyze.py" "$d" "$W" "$N" "$EPS" "$DEADLINE_MS" "$STALL_MS" 2048 0.05 "$KAPPA" "$CPU_FRAC"
soak_failed=$?
python3 "$here/plot.py" "$d" "$W" "$d/rss.svg" || true  # the agent's RSS over the run
[ "$soak_failed" = 0 ] || echo "# kept: $d"
exit "$soak_failed"
