#!/usr/bin/env bash
# TAP: `ripple-sim calibrate` end to end with a CPU-only traffic source — the emulated
# interference plant (tests/plant/plant.h, a TEST DOUBLE whose slope is known: 750 ms/GB,
# ripple-bench's default) — on whatever machine runs make check (Documentation/sim.md,
# "Calibrating a platform"). On the GPU machine the same command takes --backend gpu.
#
# One task (costmap at the plant's size), so that on a 2-vCPU VM the engines' and agent's
# own CPU time does not swamp the slope: the fit must land within [400, 1300] ms/GB of the
# plant's 750. That is wide because the VM's load moves the tasks' real work between
# windows (6-s windows at load 8 read 382-1045, the 10-s ones used here 631-1093); a unit slip
# of 1000x, a wrong sign or a fit that ignores the traffic does not land there. About 55 s.
# The one window that moves it most is the reference (no traffic): run beside another build
# it read 5.05 ms where a quiet one reads 3.3, and the slope 249 (a CI run: 368). ripple-bench
# measures the other processes' CPU share beside every scored window and calibrate has it run
# a loaded point again (--rerun-loaded 2); where one stayed loaded in every attempt and the
# slope is off, test 2 says SKIP with the loads (calibrate.json "loaded"), never a silent pass.
set -uo pipefail
O=${O:-build}
tmp=$(mktemp -d /tmp/ripple-sim-cal.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "1..5"
cat > "$tmp/mix.toml" <<'MIX'
name = "calibrate-check"
[[task]]
name = "costmap"
binary = "ripple-costmap"
period_ms = 100
deadline_ms = 0
core = 0
args = []
MIX
sim="$O/bin/ripple-sim"
if "$sim" calibrate --backend plant --build-dir "$O" --mix "$tmp/mix.toml" --rates 0.3,0.6 --score-s 10 \
     --prep-s 2 --profile-s 5 --name plant-check --out "$tmp/cal.toml" > "$tmp/out" 2> "$tmp/err" && [ -s "$tmp/cal.toml" ]; then
  echo "ok 1 - calibrate --backend plant measures and writes a preset"
else
  echo "not ok 1 - calibrate --backend plant failed"; tail -5 "$tmp/err" | sed 's/^/# /'
fi
kappa=$(awk '/^\[task.costmap\]/{t=1} t && /^kappa_ms_per_gb/{print $3; exit}' "$tmp/cal.toml" 2>/dev/null)
loaded=$(python3 -c 'import json, sys; print(int(bool(json.load(open(sys.argv[1])).get("loaded"))))' \
           "$tmp/cal.toml.d/calibrate.json" 2>/dev/null)
if awk -v k="${kappa:-0}" 'BEGIN{exit !(k >= 400 && k <= 1300)}'; then
  echo "ok 2 - the fitted slope ${kappa} ms/GB is the plant's 750 (within [400, 1300])"
elif [ "${loaded:-0}" = 1 ] && [ -n "$kappa" ]; then
  echo "ok 2 - the fitted slope ${kappa} ms/GB is outside [400, 1300] # SKIP a point's window ran beside other" \
       "load in every attempt: $(grep -o "share of the CPUs beside each point's window: [0-9., ]*" "$tmp/err")"
else
  echo "not ok 2 - the fitted slope '${kappa}' ms/GB is not the plant's 750"; grep "calibrate:" "$tmp/err" | sed 's/^/# /'
fi
if "$sim" --preset "$tmp/cal.toml" --mix "$tmp/mix.toml" --policies ripple,unmanaged --k 1.5 --runs 1 --prep-s 2 \
     --score-s 5 -q > "$tmp/sim.md" 2> "$tmp/sim.err" && grep -q "ripple" "$tmp/sim.md"; then
  echo "ok 3 - ripple-sim runs the calibrated preset"
else
  echo "not ok 3 - ripple-sim refused the calibrated preset"; sed 's/^/# /' "$tmp/sim.err" | head -5
fi
if "$sim" calibrate --from "$tmp/cal.toml.d" --backend plant --mix "$tmp/mix.toml" --name again \
     --out "$tmp/again.toml" 2> /dev/null && cmp -s <(grep -A3 '^\[task.costmap\]' "$tmp/cal.toml") \
                                                 <(grep -A3 '^\[task.costmap\]' "$tmp/again.toml"); then
  echo "ok 4 - calibrate --from refits the kept bench folder to the same tasks"
else
  echo "not ok 4 - calibrate --from did not reproduce the fit"
fi
bad=0
check_bad() {  # FIELD ARGS...: exit non-zero with one line that names FIELD
  local field=$1; shift
  "$sim" calibrate "$@" > /dev/null 2> "$tmp/bad"; local rc=$?
  if [ $rc -eq 0 ] || [ "$(wc -l < "$tmp/bad")" -ne 1 ] || ! grep -q -- "$field" "$tmp/bad"; then
    bad=1; echo "# $field: rc $rc: $(head -3 "$tmp/bad")"
  fi
}
check_bad --rates --backend plant --rates 0.3,x --out "$tmp/x.toml"
check_bad --rates --backend plant --rates 0.3,-1 --out "$tmp/x.toml"
check_bad --score-s --backend plant --score-s 0 --out "$tmp/x.toml"
check_bad --backend --backend fpga --out "$tmp/x.toml"
check_bad --out --backend plant
check_bad --base-preset --backend plant --base-preset /nonexistent.toml --out "$tmp/x.toml"
check_bad --mix --backend plant --mix /nonexistent.toml --out "$tmp/x.toml"
check_bad results.json --backend plant --from "$tmp" --out "$tmp/x.toml"
if [ $bad -eq 0 ]; then
  echo "ok 5 - bad input: one line naming the field, non-zero exit"
else
  echo "not ok 5 - bad input not refused in one line naming the field"
fi
