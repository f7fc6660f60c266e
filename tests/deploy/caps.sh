#!/usr/bin/env bash
# TAP: the capabilities ripple-agent.service grants (CapabilityBoundingSet=) are enough
# and each one is needed. The agent runs as root with its bounding set cut to the unit's
# (setpriv --bounding-set: what CapabilityBoundingSet= does to a root service), protecting
# a task that another user (nobody) started before the agent, as a robot's loop would be.
# Enough: the tracer loads, attaches and counts the task's jobs. Needed: with any one of
# the unit's capabilities dropped, the agent fails or sees no job. Root only.
#   tests/deploy/caps.sh [--table]   --table: also try the capabilities the unit leaves out
set -u
O=${O:-build}
src=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=$O/bin/ripple-agent
CTL=$O/bin/ripplectl
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
mapfile -t unit_caps < <(sed -n 's/^CapabilityBoundingSet=//p' "$src/tools/packaging/deploy/ripple-agent.service.in" | tr ' ' '\n' | grep .)
plan=$(( ${#unit_caps[@]} + 1 ))
echo "TAP version 13"
echo "1..$plan"
if [ "$(id -u)" -ne 0 ]; then
  for _ in $(seq $plan); do n=$((n + 1)); echo "ok $n # SKIP needs root"; done
  exit 0
fi
"$src/tools/packaging/deps/mount-fs.sh" >/dev/null 2>&1 || true

tmp=$(mktemp -d /tmp/ripple-caps-tap.XXXXXX)
chmod 0755 "$tmp"
# The task's executable in its user's private directory (mode 0700), like a robot
# user's home: root reaches it only through CAP_DAC_READ_SEARCH.
mkdir -m 0700 "$tmp/home"
task=$tmp/home/caps-task-$$
cp "$O/tests/progs/periodic" "$task"
chmod 0755 "$task"
chown -R 65534:65534 "$tmp/home"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
cat >"$tmp/ripple.toml" <<EOF
[agent]
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = "/sys/fs/bpf/ripple-caps-$$"

[[task]]
name = "caps"
exe = "$task"
user = 65534       # the task runs as nobody (task.user: only its threads join)
period_ms = 20
deadline_ms = 15
EOF
# The protected task: another user's, running before the agent starts.
setpriv --reuid=65534 --regid=65534 --clear-groups "$task" --period-us 20000 --work-us 500 --jobs 100000 \
  >/dev/null 2>&1 &
pids+=($!)
sleep 0.3

# try CAPS...: runs the agent with only these capabilities; prints "ok JOBS" or "fail: WHY".
# One tracer per machine (/run/ripple/tracer.lock): another checkout's tests may hold it,
# so wait for it first and try again if it was taken in between.
try() {
  local r k
  for k in 1 2 3 4 5; do
    mkdir -p /run/ripple
    flock -w 120 /run/ripple/tracer.lock true 2>/dev/null
    r=$(try_once "$@")
    grep -q 'another Ripple tracer is running' "$tmp/agent.log" || break
    sleep 1
  done
  echo "$r"
}
try_once() {
  local set=-all c
  for c in "$@"; do c=${c#[Cc][Aa][Pp]_}; set+=",+$c"; done
  set=${set,,}
  rm -f "$tmp/control.sock" "$tmp/engine.sock"
  setpriv --bounding-set "$set" --inh-caps "$set" "$AGENT" -c "$tmp/ripple.toml" >"$tmp/agent.log" 2>&1 &
  local pid=$!
  local jobs=0 k
  for k in $(seq 40); do
    if ! kill -0 $pid 2>/dev/null; then break; fi
    jobs=$("$CTL" status --json --socket "$tmp/control.sock" --timeout 1 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["jobs"])' 2>/dev/null || echo 0)
    [ "$jobs" -ge 5 ] && break
    sleep 0.1
  done
  kill -TERM $pid 2>/dev/null
  wait $pid 2>/dev/null
  if [ "$jobs" -ge 5 ]; then echo "ok $jobs"
  elif grep -qE 'refused|error|failed' "$tmp/agent.log"; then
    echo "fail: $(grep -m1 -E 'refused|error|failed' "$tmp/agent.log" | sed -E 's/^.*(ripple-agent|libbpf): //' | cut -c1-150)"
  else echo "fail: the agent ran but counted $jobs jobs in 4 s"; fi
}

r=$(try "${unit_caps[@]}")
if [[ $r == ok* ]]; then ok "the unit's set (${unit_caps[*]}): tracer attached, ${r#ok } jobs of nobody's task seen"
else not_ok "the unit's set is enough" "${unit_caps[*]}: $r"; fi
for drop in "${unit_caps[@]}"; do
  rest=()
  for c in "${unit_caps[@]}"; do [ "$c" = "$drop" ] || rest+=("$c"); done
  r=$(try "${rest[@]}")
  if [[ $r == ok* ]]; then not_ok "$drop is needed" "without it the agent still saw ${r#ok } jobs"
  else ok "$drop is needed: without it, $r"; fi
done

if [ "${1:-}" = --table ]; then
  echo "# other sets, for the record (Documentation/deploy.md):"
  echo "#   CAP_BPF CAP_PERFMON: $(try CAP_BPF CAP_PERFMON)"
  echo "#   CAP_SYS_ADMIN CAP_SYS_PTRACE CAP_DAC_READ_SEARCH (no CAP_BPF/CAP_PERFMON): $(try CAP_SYS_ADMIN CAP_SYS_PTRACE CAP_DAC_READ_SEARCH)"
  mapfile -t all < <(capsh --decode="$(awk '/^CapBnd/ {print $2}' /proc/self/status)" | cut -d= -f2 | tr , '\n')
  echo "#   all ${#all[@]} capabilities this process may hold: $(try "${all[@]}")"
fi
[ "$failed" -eq 0 ]
