#!/usr/bin/env bash
# ripple-agent benchmarks (not a test; Documentation/results/agent.md):
#   1. grant round trip engine -> agent -> engine: the stand-in engine announces a
#      one-unit pass and times until the grant arrives (--rtt N), no PT job active;
#      the agent's decision latency (scheduling point -> grant sent) over the same run.
#      Agent pinned to AGENT_CORE (agent.core, default 1), engine to ENGINE_CORE
#      (taskset, default 0); once sleeping between messages (spin 0) and once
#      busy-polling SPIN_US (default 50) first, agent (agent.spin_us) and engine alike.
#   2. agent CPU at ~1k job events/s: a 2 ms periodic task (ripple-control, 500 jobs/s =
#      1000 release+completion events/s) traced by the real BPF tracer, beside a
#      best-effort engine taking grants; CPU = utime+stime of the agent over the window.
# Usage: O=build tests/integration/agent_bench.sh [seconds]   (root: BPF)
set -uo pipefail
O=${O:-build}
B=$(cd "$O" && pwd)
secs=${1:-10}
AGENT_CORE=${AGENT_CORE:-1}
ENGINE_CORE=${ENGINE_CORE:-0}
SPIN_US=${SPIN_US:-50}
N=${N:-20000}
tmp=$(mktemp -d /tmp/ripple-agent-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
task="$tmp/control-bench-$$"
cp "$B/bin/ripple-control" "$task"
config() { # tasks? wakeup [spin_us]
  cat > "$tmp/ripple.toml" <<EOC
[agent]
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""
tracer_wakeup = $2
core = $AGENT_CORE
spin_us = ${3:-0}
[pricing]
peak_rate_gbps = 1.0
EOC
  if [ "$1" = 1 ]; then cat >> "$tmp/ripple.toml" <<EOC
[[task]]
name = "control"
exe = "$task"
period_ms = 2
deadline_ms = 2
miss_tolerance = 0.05
EOC
  fi
}
start_agent() {
  "$B/bin/ripple-agent" -c "$tmp/ripple.toml" > "$tmp/agent.log" 2>&1 &
  agent=$!
  for _ in $(seq 100); do [ -S "$tmp/control.sock" ] && return; sleep 0.05; done
}
latency() { "$B/bin/ripplectl" status --json --socket "$tmp/control.sock" |
  python3 -c 'import json,sys; d=json.load(sys.stdin)["decision_latency_us"]; print("decision latency p50 %.1f us p99 %.1f us max %.1f us (n=%d)" % (d["p50"], d["p99"], d.get("max", 0), d["count"]))'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "== machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
for spin in 0 "$SPIN_US"; do
  echo "== 1. grant round trip (no PT job), $N grants, agent on CPU $AGENT_CORE, engine on CPU $ENGINE_CORE, spin $spin us"
  config 0 false "$spin"
  start_agent
  taskset -c "$ENGINE_CORE" "$B/bin/ripple-standin-engine" --socket "$tmp/engine.sock" --name rtt --rtt "$N" \
    --spin-us "$spin" --quiet
  latency
  kill -TERM "$agent"; wait "$agent"
done

for wake in false true; do
  echo "== 2. agent CPU, ${secs} s at 1k events/s + engine grants (tracer_wakeup = $wake)"
  config 1 "$wake"
  start_agent
  taskset -c "$ENGINE_CORE" "$B/bin/ripple-standin-engine" --socket "$tmp/engine.sock" --name llm --unit-mb 0.2 --rate-gbps 1 --units 8 \
    --duration-s $((secs + 4)) --quiet &
  "$task" --period-ms 2 --duration-s $((secs + 3)) --quiet > "$tmp/task.log" 2>&1 &
  sleep 1.5
  t0=$(cpu_ticks "$agent"); s0=$(date +%s.%N)
  e0=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tracer"]["events"], j["grants_sent"])')
  sleep "$secs"
  t1=$(cpu_ticks "$agent"); s1=$(date +%s.%N)
  e1=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tracer"]["events"], j["grants_sent"])')
  hz=$(getconf CLK_TCK)
  read -r ev0 g0 <<< "$e0"; read -r ev1 g1 <<< "$e1"
  awk -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" -v e="$((ev1 - ev0))" -v g="$((g1 - g0))" \
    'BEGIN { w = s1 - s0; printf "agent CPU %.2f %% of one core over %.1f s; %.0f events/s, %.0f grants/s\n", 100 * (t1 - t0) / hz / w, w, e / w, g / w }'
  latency
  kill -TERM "$agent"; wait "$agent"
  wait
done
