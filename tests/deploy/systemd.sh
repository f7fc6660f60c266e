#!/usr/bin/env bash
# TAP: ripple-agent.service and the agent's side of Type=notify. The installed unit passes
# `systemd-analyze verify` and scores an exposure of at most 3.0 in `systemd-analyze
# security`; the agent, given $NOTIFY_SOCKET as systemd would give it, sends READY=1 only
# when both sockets accept connections and (root) the tracer is attached, WATCHDOG=1
# every WATCHDOG_USEC/2 from its loop, STOPPING=1 on SIGTERM; a refused configuration
# exits 2 (the unit's RestartPreventExitStatus). systemd need not be PID 1.
set -u
O=${O:-build}
O=$(cd "$O" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
tmp=$(mktemp -d /tmp/ripple-systemd-tap.XXXXXX)
chmod 0755 "$tmp"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
echo "TAP version 13"
echo "1..10"

# The unit as installed, with real paths (an install under $tmp, not a DESTDIR, so the
# ExecStart binary exists for verify).
make -s --no-print-directory -C "$src" O="$O" install PREFIX="$tmp/usr" SYSCONFDIR="$tmp/etc" >/dev/null 2>&1
unit=$tmp/usr/lib/systemd/system/ripple-agent.service
if ! command -v systemd-analyze >/dev/null; then
  skip "systemd-analyze missing (apt install systemd)"; skip "systemd-analyze missing"
else
  if systemd-analyze verify "$unit" >"$tmp/verify" 2>&1 && [ ! -s "$tmp/verify" ]; then ok "systemd-analyze verify: no complaint"
  else not_ok "systemd-analyze verify" "$(cat "$tmp/verify")"; fi
  score=$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for ripple-agent.service: \([0-9.]*\).*/\1/p')
  if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }'; then ok "systemd-analyze security: exposure $score (<= 3.0)"
  else not_ok "systemd-analyze security exposure <= 3.0" "score: ${score:-none}"; fi
fi

# The agent under a fake service manager.
task=$tmp/sd-task-$$
cp "$O/tests/progs/periodic" "$task"
{
  echo "[agent]"
  echo "engine_socket = \"$tmp/engine.sock\""
  echo "control_socket = \"$tmp/control.sock\""
  echo "pin_dir = \"\""
  echo "metrics_file = \"$tmp/ripple.prom\""
  echo "metrics_interval_s = 1"
  if [ "$(id -u)" -eq 0 ]; then
    printf '[[task]]\nname = "sd"\nexe = "%s"\nperiod_ms = 20\ndeadline_ms = 15\n' "$task"
  fi
} >"$tmp/ripple.toml"
[ "$(id -u)" -eq 0 ] && { "$task" --period-us 20000 --work-us 500 --jobs 100000 >/dev/null 2>&1 & pids+=($!); }

# One tracer per machine (/run/ripple/tracer.lock): wait while another checkout's test holds it.
[ "$(id -u)" -eq 0 ] && { mkdir -p /run/ripple; flock -w 120 /run/ripple/tracer.lock true 2>/dev/null; }
python3 - "$O/bin/ripple-agent" "$tmp" >"$tmp/notify.json" 2>"$tmp/notify.err" <<'EOF'
import json, os, signal, socket, subprocess, sys, time
agent, tmp = sys.argv[1], sys.argv[2]
ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
ns.bind(f"{tmp}/notify.sock")
ns.settimeout(0.05)
env = dict(os.environ, NOTIFY_SOCKET=f"{tmp}/notify.sock", WATCHDOG_USEC="300000")
p = subprocess.Popen([agent, "-c", f"{tmp}/ripple.toml"], env=env, stderr=open(f"{tmp}/agent.log", "w"))
out = {"messages": [], "ready_check": None, "watchdogs_1s": 0, "rc": None}
t0 = time.monotonic(); ready_at = None; stop_sent = False
def probe():
    r = {}
    for name in ("control", "engine"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(2)
        try:
            s.connect(f"{tmp}/{name}.sock"); r[name] = True
            if name == "control":
                s.send(b"status"); r["tracer_attached"] = json.loads(s.recv(1 << 22))["tracer"]["attached"]
        except Exception as e:
            r[name] = False; r["error"] = str(e)
        s.close()
    return r
while time.monotonic() - t0 < 20:
    try:
        m = ns.recv(4096).decode()
    except socket.timeout:
        m = None
    now = time.monotonic()
    if m:
        out["messages"].append(m)
        if m.startswith("READY=1") and ready_at is None:
            ready_at = now; out["ready_check"] = probe()
            time.sleep(0.2)
            try:
                out["prom"] = open(f"{tmp}/ripple.prom").read()
            except OSError as e:
                out["prom"] = str(e)
        if m == "WATCHDOG=1" and ready_at is not None and now - ready_at <= 1.0:
            out["watchdogs_1s"] += 1
        if m.startswith("STOPPING=1"):
            break
    if ready_at is not None and now - ready_at > 1.05 and not stop_sent:
        p.send_signal(signal.SIGTERM); stop_sent = True
    if p.poll() is not None and not m:
        break
try:
    out["rc"] = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill(); out["rc"] = "hung"
out["prom_after_exit"] = os.path.exists(f"{tmp}/ripple.prom")
print(json.dumps(out))
EOF
get() { python3 -c "import json,sys; d=json.load(open('$tmp/notify.json')); print($1)" 2>/dev/null; }

if [ "$(get "any(m.startswith('READY=1') for m in d['messages'])")" = True ] &&
  [ "$(get "d['ready_check']['control'] and d['ready_check']['engine']")" = True ]; then
  ok "READY=1 sent, and at that moment both sockets accept connections"
else not_ok "READY=1 when the sockets listen" "$(cat "$tmp/notify.json" "$tmp/notify.err")" "$(tail -3 "$tmp/agent.log")"; fi

if [ "$(id -u)" -ne 0 ]; then skip "tracer needs root"
elif [ "$(get "d['ready_check'].get('tracer_attached')")" = True ]; then ok "at READY=1 the tracer is attached (a [[task]] configured)"
else not_ok "tracer attached at READY=1" "$(cat "$tmp/notify.json")"; fi

w=$(get "d['watchdogs_1s']")
if [ -n "$w" ] && [ "$w" -ge 5 ] && [ "$w" -le 9 ]; then ok "WATCHDOG=1 every 150 ms (WATCHDOG_USEC=300000): $w in the first second"
else not_ok "WATCHDOG=1 at half the watchdog interval" "count in 1 s: ${w:-?}" "$(cat "$tmp/notify.json")"; fi

if [ "$(get "d['messages'][-1].startswith('STOPPING=1') and d['rc'] == 0")" = True ]; then ok "SIGTERM: STOPPING=1, then exit 0"
else not_ok "STOPPING=1 and exit 0 on SIGTERM" "$(cat "$tmp/notify.json")"; fi

tracer_line="ripple_tracer_attached $([ "$(id -u)" -eq 0 ] && echo 1 || echo 0)"
if [ "$(get "'# TYPE ripple_agent_uptime_seconds gauge' in d['prom'] and '$tracer_line' in d['prom']")" = True ]; then
  ok "agent.metrics_file written at start ($tracer_line)"
else not_ok "metrics file written" "$(get "d.get('prom')" | head -5)"; fi
if [ "$(get "d['prom_after_exit']")" = False ]; then ok "the metrics file is removed when the agent stops"
else not_ok "metrics file removed at exit" "$(cat "$tmp/notify.json")"; fi

printf '[agent]\npolicy = "nonesuch"\n' >"$tmp/bad.toml"
"$O/bin/ripple-agent" -c "$tmp/bad.toml" >/dev/null 2>&1
rc=$?
if [ $rc -eq 2 ]; then ok "a refused configuration exits 2 (RestartPreventExitStatus=2: no restart loop)"
else not_ok "refused configuration exits 2" "rc=$rc"; fi

if pkg-config --exists libsystemd 2>/dev/null; then
  if ldd "$O/bin/ripple-agent" | grep -q libsystemd.so.0; then ok "ripple-agent is linked with libsystemd (sd_notify)"
  else not_ok "linked with libsystemd" "$(ldd "$O/bin/ripple-agent" | head -3)"; fi
else skip "libsystemd-dev not installed: the agent writes the datagram itself"; fi
[ "$failed" -eq 0 ]
