#!/usr/bin/env bash
# `make demo`: Ripple's main job on whatever machine this is — the quick end-to-end bench
# (tools/bench/ripple-bench, Documentation/bench.md): a robot task mix (Robotic1), the agent, a
# best-effort LLM engine and a deadline-bound VLM engine, under ripple and the baselines, at
# two deadline factors; it ends with the Table-7-style table.
#   - a GPU (`nvidia-smi -L` lists one): ripple-llm engines under ripple-run;
#   - otherwise the emulated interference plant, a TEST DOUBLE (stand-in engines, tasks
#     stretched by kappa x bytes), and it says so.
# About 3 minutes on a 2-core VM. Outputs (CSV, JSON, table.md, PNGs) in $O/demo/.
set -euo pipefail
O=${O:-build}
if [ "$(id -u)" -ne 0 ]; then
  echo "make demo: the agent loads BPF programs; run it as root" >&2
  exit 1
fi
tools/packaging/deps/mount-fs.sh

if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  backend=gpu
  echo "== Ripple demo on $(nvidia-smi -L | head -1): GPU engines (ripple-llm under ripple-run)"
else
  backend=plant
  echo "== Ripple demo: no GPU here, so the GPU side is the EMULATED INTERFERENCE PLANT, a test double:"
  echo "   stand-in engines publish the bytes they 'execute' and the robot tasks stretch each job by"
  echo "   kappa x those bytes. It shows the control loop at work, not a device measurement."
fi
echo "== quick bench: Robotic1 (costmap, kdnn, sgm) + LLM + VLM; ripple vs unmanaged, pause, cap-1/4,"
echo "   sigamma, sereno; deadlines k x co-run p99, k = 1.5 and 2.0 (progress below)"
O=$(cd "$O" && pwd) "$O/bin/ripple-bench" --quick --backend "$backend" --out "$O/demo"
echo "== outputs: $O/demo/{table.md,results.json,results.csv,responses.csv,*.png}"
