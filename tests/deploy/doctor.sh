#!/usr/bin/env bash
# TAP: `ripplectl doctor` passes the checks this machine satisfies (kernel, BTF, tracefs,
# bpffs, BPF ring buffer and cookies), finds a running agent through both sockets, and
# for an unreachable agent, a hung one, or a missing bpffs prints the FAIL line with
# what to do and exits 1; an unprivileged caller gets warnings only and exit 2.
set -u
O=${O:-build}
CTL=$O/bin/ripplectl
AGENT=$O/bin/ripple-agent
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "#   $l"; done; }
tmp=$(mktemp -d /tmp/ripple-doctor-tap.XXXXXX)
chmod 0755 "$tmp"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
plan=8
echo "TAP version 13"
echo "1..$plan"
if [ "$(id -u)" -ne 0 ]; then
  for _ in $(seq $plan); do n=$((n + 1)); echo "ok $n # SKIP needs root (BPF probes, a private agent)"; done
  exit 0
fi
tools/packaging/deps/mount-fs.sh >/dev/null 2>&1 || true

# 1. This machine, agent not asked.
"$CTL" doctor --no-agent >"$tmp/out" 2>&1
rc=$?
miss=()
for pat in '^  ok    kernel ' '^  ok    caller \(uid 0\)' '^  ok    BPF ring buffer' '^  ok    bpf_get_attach_cookie' \
  '^  ok    kernel BTF ' '^  ok    tracefs at /sys/kernel/tracing with syscall' '^  ok    bpffs at /sys/fs/bpf'; do
  grep -qE "$pat" "$tmp/out" || miss+=("$pat")
done
if { [ $rc -eq 0 ] || [ $rc -eq 2 ]; } && [ ${#miss[@]} -eq 0 ] && ! grep -q FAIL "$tmp/out"; then
  ok "doctor --no-agent here: kernel, caps, ring buffer, cookies, BTF, tracefs, bpffs ok; exit $rc ($(tail -1 "$tmp/out"))"
else not_ok "doctor --no-agent passes this machine's checks" "rc=$rc missing: ${miss[*]}" "$(cat "$tmp/out")"; fi

# 2. Exit 2 iff warnings only: the warnings here (no GPU driver, ...) and no failure.
if { [ $rc -eq 2 ] && grep -q '^  WARN' "$tmp/out"; } || { [ $rc -eq 0 ] && ! grep -q '^  WARN' "$tmp/out"; }; then
  ok "exit status $rc matches the report ($(grep -c '^  WARN' "$tmp/out") warnings, no failure)"
else not_ok "exit status matches warnings" "rc=$rc" "$(grep WARN "$tmp/out")"; fi

# 3. No agent at the socket.
"$CTL" doctor --socket "$tmp/none.sock" --engine-socket "$tmp/none-e.sock" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -qE "^  FAIL  agent control socket $tmp/none.sock: cannot connect: No such file or directory$" "$tmp/out" &&
  grep -A1 "FAIL  agent control socket" "$tmp/out" | grep -q 'fix: start it: systemctl start ripple-agent'; then
  ok "unreachable agent: FAIL line, what to do, exit 1"
else not_ok "unreachable agent" "rc=$rc" "$(grep -A1 FAIL "$tmp/out")"; fi

# 4. Something that accepts and never answers: the timeout bounds the check.
python3 - "$tmp/hung.sock" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(4)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
EOF
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/hung.sock" ] && break; sleep 0.1; done
start=$EPOCHREALTIME
"$CTL" doctor --socket "$tmp/hung.sock" --engine-socket "$tmp/hung.sock" --timeout 0.5 >"$tmp/out" 2>&1
rc=$?
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
if [ $rc -eq 1 ] && grep -q "FAIL  agent control socket $tmp/hung.sock: no status reply within 0.5 s" "$tmp/out" &&
  awk -v s="$secs" 'BEGIN { exit !(s < 3) }'; then
  ok "hung agent: FAIL after the 0.5 s timeout (doctor took $secs s), exit 1"
else not_ok "hung agent times out" "rc=$rc secs=$secs" "$(grep -A1 FAIL "$tmp/out")"; fi

# 5. bpffs missing (a directory that is not bpffs).
mkdir -p "$tmp/notbpf"
"$CTL" doctor --no-agent --bpffs "$tmp/notbpf" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "^  FAIL  bpffs not mounted at $tmp/notbpf" "$tmp/out" &&
  grep -q "fix: mount -t bpf bpf $tmp/notbpf" "$tmp/out"; then
  ok "bpffs missing: FAIL line with the mount command, exit 1"
else not_ok "bpffs missing" "rc=$rc" "$(grep -A1 FAIL "$tmp/out")"; fi

# 6-7. A running agent (no tasks: no tracer) is found through both sockets.
cat >"$tmp/agent.toml" <<EOF
[agent]
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
EOF
"$AGENT" -c "$tmp/agent.toml" >"$tmp/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/control.sock" ] && [ -S "$tmp/engine.sock" ] && break; sleep 0.1; done
"$CTL" doctor --socket "$tmp/control.sock" --engine-socket "$tmp/engine.sock" >"$tmp/out" 2>&1
rc=$?
if grep -qE "^  ok    agent at $tmp/control.sock: policy ripple, up [0-9]+ s, 0 task\(s\), 0 engine\(s\)" "$tmp/out" &&
  grep -q "^  ok    agent engine socket $tmp/engine.sock accepts connections" "$tmp/out"; then
  ok "running agent: control and engine sockets ok"
else not_ok "running agent found" "rc=$rc" "$(grep agent "$tmp/out")" "$(tail -3 "$tmp/agent.log")"; fi
if [ $rc -ne 1 ] && ! grep -q FAIL "$tmp/out"; then ok "with the agent up, no failure (exit $rc)"
else not_ok "no failure with the agent up" "rc=$rc" "$(grep -A1 FAIL "$tmp/out")"; fi

# 8. An unprivileged caller: what it cannot check is a warning, not a failure.
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$CTL" doctor --no-agent >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 2 ] && grep -q '^  WARN  caller (uid 65534) cannot load BPF' "$tmp/out" && ! grep -q FAIL "$tmp/out"; then
  ok "unprivileged caller: warnings only, exit 2"
else not_ok "unprivileged caller" "rc=$rc" "$(grep -E 'WARN|FAIL' "$tmp/out")"; fi
[ "$failed" -eq 0 ]
