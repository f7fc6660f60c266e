#!/usr/bin/env bash
# `make demo`: Ripple's main job on an embedded default, on whatever machine
# this is. Today that is the job tracer watching an unmodified robot task
# (the costmap, 10 Hz, a 2048^2 grid) for a few seconds: one line per job,
# then the summary a deadline-keeping scheduler starts from. The co-scheduling
# demo (agent + engines) replaces this as those parts land.
set -euo pipefail
O=${O:-build}
secs=${DEMO_SECONDS:-6}

if [ "$(id -u)" -ne 0 ]; then
  echo "make demo: the tracer loads BPF programs; run it as root" >&2
  exit 1
fi
tools/deps/mount-fs.sh

echo "== Ripple demo: tracing an unmodified robot task (costmap, 10 Hz) for ${secs} s"
"$O/bin/ripplectl" trace --exe "$O/bin/ripple-costmap" --deadline 60 --duration $((secs + 2)) &
tracer=$!
sleep 1.5   # attach first: the task is picked up when it starts
"$O/bin/ripple-costmap" --size 2048 --period-ms 100 --deadline-ms 60 --duration-s "$secs" --quiet \
  > "$O/demo-costmap.txt"
wait "$tracer"
echo "== the task's own view:"
cat "$O/demo-costmap.txt"
