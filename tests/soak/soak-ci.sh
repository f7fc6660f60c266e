#!/usr/bin/env bash
# The soak's short version for `make check` (TAP): 5 minutes in 10 windows of 30 s
# (tests/soak/soak.sh). SOAK_CI_S=0 skips it.
here=$(cd "$(dirname "$0")" && pwd)
s=${SOAK_CI_S:-300}
[ "$s" = 0 ] && { echo "1..0 # SKIP SOAK_CI_S=0"; exit 0; }
# The stall bound here is 500 ms, not the hour-long soak's 250: on 2 shared vCPUs the
# scheduling noise after a 1-s SIGSTOP of the agent reached 246 ms in a 50-minute run
# (Documentation/results/reliability.md). A real stall (the defects of issue 15) is a grant
# that never comes; 500 ms still catches it.
export STALL_MS=${STALL_MS:-500}
exec "$here/soak.sh" "$s" 30
