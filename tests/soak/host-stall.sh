#!/usr/bin/env bash
# An emulated host stall (a TEST DOUBLE for a hypervisor's or a noisy neighbour's): every
# EVERY_S seconds both CPUs (0 and 1) are taken at SCHED_FIFO 99 for STALL_MS, for
# DURATION_S seconds. Everything below priority 99 waits, the protected task included: a
# job caught in it overruns its period and the jobs behind it start late.
#   tests/soak/host-stall.sh DURATION_S [STALL_MS] [EVERY_S]     (default 80 ms every 3 s)
# Needs root (SCHED_FIFO 99). Never run it beside `make check`: it stalls the tests too.
set -uo pipefail
duration=${1:?DURATION_S}; stall_ms=${2:-80}; every=${3:-3}
end=$(( $(date +%s) + duration ))
while [ "$(date +%s)" -lt "$end" ]; do
  for c in 0 1; do
    taskset -c "$c" chrt -f 99 python3 -c "import time
t = time.monotonic()
while time.monotonic() - t < $stall_ms / 1e3: pass" &
  done
  wait
  sleep "$every"
done
