#!/usr/bin/env bash
# Engine identity and access against the real agent (TAP; root, no GPU, no BPF: the
# configuration has no task). Unprivileged peers are uid 65534 (nobody) and uid 65533
# (no passwd entry needed: setpriv sets raw ids; nothing is created or left behind).
#
#   1  a uid not in allowed_uids is refused, told why, counted (refusals.uid_not_allowed)
#   2  allowed_gids counts supplementary groups: uid 65533 with group 4242 is admitted,
#      the same uid without it is refused
#   3  [[engine]] uid: uid 65534 claiming "llm" (uid = 65533) is refused with a Bye that
#      says why (refusals.engine_identity); uid 65533 joins as deadline-bound
#   4  [[engine]] exe: a copy of the engine binary claiming "vision" is refused; the
#      configured file joins
#   5  unconfigured engines declaring deadline-bound are admitted as best-effort, said
#      once for two of them, counted (refusals.deadline_claims_downgraded)
#   6  agent.unconfigured_engines = "refuse": an unconfigured name is refused with a Bye
#      (refusals.unconfigured); a configured one still joins
#   7  an impostor agent socket (served by nobody): the stand-in engine (root) takes it
#      for no agent and runs unmanaged, before sending its Hello
#   8  ripplectl status (text) and --json show the refusals by reason
#   9  bytes that are not UTF-8: a control request of them (and one cut inside a
#      character) gets a JSON error naming them escaped; an engine whose name is not
#      UTF-8 is refused; the agent answers status after each (it aborted)
#  10  agent.max_sessions_per_uid = 2: uid 65534 holding two engine sessions (one idle,
#      one joined) is refused a third with a Bye that names the limit, counted
#      (limits.sessions_over_uid_limit, and in the text status); uid 65533 still joins;
#      once both are killed (no Bye) uid 65534 joins again
set -uo pipefail
O=${O:-build}
B=$(cd "$O" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (setpriv to other uids)"; exit 0; }
command -v setpriv > /dev/null || { echo "1..0 # SKIP needs setpriv (util-linux)"; exit 0; }
tmp=$(mktemp -d /tmp/ripple-acc.XXXXXX)
chmod 755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  # ACCESS_KEEP=DIR keeps the logs and outputs (Documentation/results/security.md).
  [ -n "${ACCESS_KEEP:-}" ] && mkdir -p "$ACCESS_KEEP" && cp "$tmp"/*.out "$tmp"/*.log "$tmp"/*.toml "$tmp"/status3.* "$ACCESS_KEEP"/ 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
echo "1..10"

eng_bin="$tmp/agent_engine"  # the configured engine executable
cp "$B/bin/ripple-standin-engine" "$eng_bin"
cp "$B/bin/ripple-standin-engine" "$tmp/other_engine"
chmod 755 "$eng_bin" "$tmp/other_engine"
u65534=(setpriv --reuid=65534 --regid=65534 --clear-groups)
u65533=(setpriv --reuid=65533 --regid=65533 --clear-groups)
start_agent() { # log [extra agent toml] [extra toml]
  cat > "$tmp/ripple.toml" <<EOF
[agent]
policy = "ripple"
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""
allowed_uids = [0, 65533, 65534]
${2:-}

[pricing]
peak_rate_gbps = 1.0

[[engine]]
name = "llm"
kind = "deadline-bound"
period_ms = 100
uid = 65533

[[engine]]
name = "vision"
exe = "$eng_bin"
${3:-}
EOF
  "$B/bin/ripple-agent" -c "$tmp/ripple.toml" > "$1" 2>&1 &
  agent_pid=$!
  pids+=("$agent_pid")
  for _ in $(seq 100); do status_json > /dev/null && return 0; sleep 0.1; done
  return 1
}
stop_agent() { kill -TERM "$agent_pid" 2>/dev/null; wait "$agent_pid" 2>/dev/null; }
status_json() { timeout 10 "$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>/dev/null; }
jq_() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)" 2>/dev/null || echo -1; }
refusals() { status_json | jq_ "d['refusals']['$1']"; }
# run_engine OUT [runner...] -- engine args: a short session (0.3 s) of the stand-in.
run_engine() {
  local out=$1; shift
  local runner=()
  while [ "$1" != -- ]; do runner+=("$1"); shift; done
  shift
  timeout 20 "${runner[@]}" --socket "$tmp/engine.sock" --unit-mb 1 --units 2 --duration-s 0.3 --quiet "$@" \
    > "$out" 2>&1
}

# 1 and 2: allowed uids and supplementary groups.
start_agent "$tmp/agent1.log" || not_ok "agent did not start" "$(cat "$tmp/agent1.log")"
stop_agent
sed -i 's/^allowed_uids = .*/allowed_uids = [0]\nallowed_gids = [4242]/' "$tmp/ripple.toml"
"$B/bin/ripple-agent" -c "$tmp/ripple.toml" > "$tmp/agent1.log" 2>&1 &
agent_pid=$!; pids+=("$agent_pid")
for _ in $(seq 100); do status_json > /dev/null && break; sleep 0.1; done
run_engine "$tmp/e1.out" "${u65534[@]}" "$eng_bin" -- --name outsider
why="uid 65534 gid 65534 is not in allowed_uids/allowed_gids"
if grep -q "agent refused engine outsider: $why" "$tmp/e1.out" && [ "$(refusals uid_not_allowed)" = 1 ]; then
  ok "uid 65534 (not allowed) is refused and told why; refusals.uid_not_allowed = 1"
else
  not_ok "a uid not allowed is refused, told why, counted" "$(cat "$tmp/e1.out")" "$(status_json | head -c 600)"
fi
run_engine "$tmp/e2a.out" setpriv --reuid=65533 --regid=65533 --groups=4242 "$eng_bin" -- --name grouped
run_engine "$tmp/e2b.out" "${u65533[@]}" "$eng_bin" -- --name grouped
if grep -q "engine grouped (pid [0-9]*, uid 65533) joined" "$tmp/agent1.log" && ! grep -q "agent refused" "$tmp/e2a.out" &&
   grep -q "agent refused engine grouped: uid 65533 gid 65533 is not in allowed_uids/allowed_gids" "$tmp/e2b.out"; then
  ok "allowed_gids = [4242]: uid 65533 with supplementary group 4242 joins, without it is refused"
else
  not_ok "supplementary groups count for allowed_gids" "$(cat "$tmp/e2a.out" "$tmp/e2b.out")" "$(tail -5 "$tmp/agent1.log")"
fi
stop_agent

# 3 and 4: a configured engine is matched by its uid and its executable.
start_agent "$tmp/agent3.log" || not_ok "agent did not start" "$(cat "$tmp/agent3.log")"
run_engine "$tmp/e3a.out" "${u65534[@]}" "$eng_bin" -- --name llm --kind deadline-bound --period-ms 100
run_engine "$tmp/e3b.out" "${u65533[@]}" "$eng_bin" -- --name llm --kind best-effort
if grep -q "agent refused engine llm: engine llm must run as uid 65533, not uid 65534" "$tmp/e3a.out" &&
   [ "$(refusals engine_identity)" = 1 ] && grep -q "engine llm (pid [0-9]*, uid 65533) joined as deadline-bound" "$tmp/agent3.log"; then
  ok "uid 65534 claiming llm (uid = 65533) is refused with the reason, counted; uid 65533 joins as deadline-bound"
else
  not_ok "a configured name is claimed only by its uid" "$(cat "$tmp/e3a.out" "$tmp/e3b.out")" "$(tail -5 "$tmp/agent3.log")"
fi
run_engine "$tmp/e4a.out" "${u65534[@]}" "$tmp/other_engine" -- --name vision
run_engine "$tmp/e4b.out" "${u65534[@]}" "$eng_bin" -- --name vision
if grep -q "agent refused engine vision: engine vision must run $eng_bin, pid [0-9]* runs another executable" "$tmp/e4a.out" &&
   [ "$(refusals engine_identity)" = 2 ] && grep -q "engine vision (pid [0-9]*, uid 65534) joined" "$tmp/agent3.log"; then
  ok "a copy of the engine binary claiming vision (exe = ...) is refused, counted; the configured file joins"
else
  not_ok "a configured name is claimed only by its executable" "$(cat "$tmp/e4a.out" "$tmp/e4b.out")" "$(tail -5 "$tmp/agent3.log")"
fi

# 5: unconfigured engines cannot be deadline-bound.
run_engine "$tmp/e5a.out" "${u65534[@]}" "$eng_bin" -- --name rogue1 --kind deadline-bound --period-ms 50
run_engine "$tmp/e5b.out" "${u65534[@]}" "$eng_bin" -- --name rogue2 --kind deadline-bound --period-ms 50
said=$(grep -c "is not configured: admitted as best-effort" "$tmp/agent3.log")
if grep -q "engine rogue1 (pid [0-9]*, uid 65534) joined as best-effort" "$tmp/agent3.log" &&
   grep -q "engine rogue2 (pid [0-9]*, uid 65534) joined as best-effort" "$tmp/agent3.log" && [ "$said" = 1 ] &&
   [ "$(refusals deadline_claims_downgraded)" = 2 ] && [ "$(refusals unconfigured_admitted)" = 2 ]; then
  ok "two unconfigured engines declaring deadline-bound join as best-effort, said once, counted"
else
  not_ok "an unconfigured engine is best-effort whatever it declares" "said=$said" "$(tail -5 "$tmp/agent3.log")"
fi
status_json > "$tmp/status3.json"
timeout 10 "$B/bin/ripplectl" status --socket "$tmp/control.sock" > "$tmp/status3.txt" 2>&1
stop_agent

# 6: unconfigured_engines = "refuse".
start_agent "$tmp/agent6.log" 'unconfigured_engines = "refuse"' || not_ok "agent did not start" "$(cat "$tmp/agent6.log")"
run_engine "$tmp/e6a.out" "${u65534[@]}" "$eng_bin" -- --name rogue
run_engine "$tmp/e6b.out" "${u65534[@]}" "$eng_bin" -- --name vision
if grep -q 'agent refused engine rogue: engine rogue is not configured (\[\[engine\]\]) and agent.unconfigured_engines is "refuse"' "$tmp/e6a.out" &&
   [ "$(refusals unconfigured)" = 1 ] && grep -q "engine vision (pid [0-9]*, uid 65534) joined" "$tmp/agent6.log"; then
  ok "unconfigured_engines = \"refuse\": rogue is refused with the reason, counted; vision joins"
else
  not_ok "unconfigured engines refused" "$(cat "$tmp/e6a.out" "$tmp/e6b.out")" "$(tail -5 "$tmp/agent6.log")"
fi
stop_agent

# 7: an impostor serves the engine socket (nobody can bind in a world-writable dir).
mkdir -m 1777 "$tmp/imp"
cat > "$tmp/impostor.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(8)
got = 0
s.settimeout(5)
try:
    while True:
        c, _ = s.accept()
        c.settimeout(0.5)
        try:
            if c.recv(65536): got += 1
        except OSError:
            pass
        print("hellos", got, flush=True)
except OSError:
    pass
PY
"${u65534[@]}" /usr/bin/python3 "$tmp/impostor.py" "$tmp/imp/engine.sock" > "$tmp/imp.out" 2>&1 &
imp=$!; pids+=("$imp")
for _ in $(seq 50); do [ -S "$tmp/imp/engine.sock" ] && break; sleep 0.1; done
timeout 20 "$eng_bin" --socket "$tmp/imp/engine.sock" --name llm --unit-mb 1 --units 2 --duration-s 0.3 --quiet > "$tmp/e7.out" 2>&1
rc=$?
kill "$imp" 2>/dev/null; wait "$imp" 2>/dev/null
if [ "$rc" = 0 ] && grep -q "no agent (.*is served by pid [0-9]* uid 65534, not by root or uid 0 (RIPPLE_AGENT_UID): not the agent): running UNMANAGED" "$tmp/e7.out" &&
   ! grep -q "hellos [1-9]" "$tmp/imp.out"; then
  ok "an impostor socket (uid 65534) is no agent: the engine runs unmanaged and sends it no Hello"
else
  not_ok "an impostor socket is no agent" "rc=$rc" "$(cat "$tmp/e7.out")" "$(cat "$tmp/imp.out")"
fi

# 8: what status shows.
if python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["refusals"]; sys.exit(0 if r["engine_identity"]==2 and r["deadline_claims_downgraded"]==2 else 1)' "$tmp/status3.json" &&
   grep -q "refused.*engine identity 2" "$tmp/status3.txt"; then
  ok "ripplectl status --json and the text status show the refusals by reason"
else
  not_ok "status shows refusals by reason" "$(cat "$tmp/status3.txt")" "$(head -c 800 "$tmp/status3.json")"
fi

# 9: bytes that are not UTF-8, from a control client and from an engine.
start_agent "$tmp/agent9.log" || not_ok "agent did not start" "$(cat "$tmp/agent9.log")"
ctl_raw() { # HEX: sends the bytes as one control request, prints the reply
  python3 - "$tmp/control.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
s.send(bytes.fromhex(sys.argv[2]))
print(s.recv(65536).decode("utf-8"))
PY
}
r1=$(ctl_raw ff 2>&1)
r2=$(ctl_raw "$(printf '61%.0s' $(seq 31))c3a9" 2>&1)
run_engine "$tmp/e9.out" "$eng_bin" -- --name $'bad\xffname'
s9=$(status_json)
if [ "$r1" = '{"error":"unknown command '"'"'\\xff'"'"' (status, top, explain)"}' ] &&
   printf '%s' "$r2" | grep -q 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\\\\xc3' && [ -n "$s9" ] &&
   kill -0 "$agent_pid" 2>/dev/null && grep -q "hello.name: not UTF-8" "$tmp/agent9.log"; then
  ok "bytes that are not UTF-8: control requests answered with them escaped, an engine name refused, the agent alive"
else
  not_ok "bytes that are not UTF-8" "r1=$r1" "r2=$r2" "status: $(printf '%s' "$s9" | head -c 200)" "$(tail -5 "$tmp/agent9.log")" "$(cat "$tmp/e9.out")"
fi
stop_agent

# 10: sessions per uid. uid 65534 holds two: one idle (no Hello), one joined engine.
start_agent "$tmp/agent10.log" $'max_sessions_per_uid = 2\nhello_timeout_ms = 60000' ||
  not_ok "agent did not start" "$(cat "$tmp/agent10.log")"
limit() { status_json | jq_ "d['limits']['$1']"; }
cat > "$tmp/idle.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
time.sleep(60)
PY
"${u65534[@]}" /usr/bin/python3 "$tmp/idle.py" "$tmp/engine.sock" > "$tmp/idle10.out" 2>&1 &
idle=$!; pids+=("$idle")
"${u65534[@]}" "$eng_bin" --socket "$tmp/engine.sock" --name held --unit-mb 1 --units 2 --duration-s 60 --quiet \
  > "$tmp/e10a.out" 2>&1 &
held=$!; pids+=("$held")
for _ in $(seq 100); do [ "$(limit sessions)" = 2 ] && grep -q "engine held (pid" "$tmp/agent10.log" && break; sleep 0.1; done
run_engine "$tmp/e10b.out" "${u65534[@]}" "$eng_bin" -- --name third
run_engine "$tmp/e10c.out" "${u65533[@]}" "$eng_bin" -- --name other
over=$(limit sessions_over_uid_limit)
timeout 10 "$B/bin/ripplectl" status --socket "$tmp/control.sock" > "$tmp/status10.txt" 2>&1
kill -KILL "$idle" "$held"; wait "$idle" "$held" 2>/dev/null
for _ in $(seq 50); do [ "$(limit sessions)" = 0 ] && break; sleep 0.1; done
run_engine "$tmp/e10d.out" "${u65534[@]}" "$eng_bin" -- --name again
if grep -q "agent refused engine third: too many engine sessions for uid 65534 (2, agent.max_sessions_per_uid)" "$tmp/e10b.out" &&
   [ "$over" = 1 ] && grep -q "sessions: .*(2 a uid); .*over a uid's 1" "$tmp/status10.txt" &&
   grep -q "engine other (pid [0-9]*, uid 65533) joined" "$tmp/agent10.log" &&
   grep -q "engine again (pid [0-9]*, uid 65534) joined" "$tmp/agent10.log" && ! grep -q "agent refused" "$tmp/e10d.out"; then
  ok "max_sessions_per_uid = 2: a third session of uid 65534 is refused with the reason, counted; uid 65533 joins; after a kill uid 65534 joins again"
else
  not_ok "engine sessions are bounded per uid" "over=$over" "$(cat "$tmp/e10b.out" "$tmp/e10d.out")" \
    "$(cat "$tmp/status10.txt" | head -3)" "$(tail -8 "$tmp/agent10.log")"
fi
stop_agent
