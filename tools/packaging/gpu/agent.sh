# Sourced by the GPU check scripts (cuhook-checks.sh, engines-check.sh): `agent POLICY`
# (re)starts ripple-agent with that policy on its own sockets under $tmp, pinned to $ACORE,
# logging to $OUT/agent.log; $B is the build folder, $apid the running agent's pid.
# Returns non-zero (and says why) when its control socket does not appear within 10 s.
agent() { # POLICY
  [ -n "$apid" ] && { kill $apid 2>/dev/null; wait $apid 2>/dev/null; }
  cat > "$tmp/agent.toml" <<EOC
[agent]
policy = "$1"
engine_socket = "$tmp/engine.sock"
control_socket = "$tmp/control.sock"
pin_dir = ""
core = $ACORE
log_level = "warn"
EOC
  rm -f "$tmp/control.sock"
  "$B/bin/ripple-agent" -c "$tmp/agent.toml" >> "$OUT/agent.log" 2>&1 &
  apid=$!
  for _ in $(seq 100); do [ -S "$tmp/control.sock" ] && return 0; sleep 0.1; done
  echo "agent did not start (policy $1)"; tail -5 "$OUT/agent.log"; return 1
}
