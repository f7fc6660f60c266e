#!/usr/bin/env bash
# The workloads' measurement run on a GPU machine (one H200 + 16 cores here):
#   1. ripple-llm alone: tokens/s against the measured bandwidth ceilings, counted bytes
#      per token against the model's (weights + KV), frames mode; with ncu, the DRAM bytes
#      of one decode step (SKIP_NCU=1 skips it);
#   2. the transformers offload script: tokens/s, offloaded and not (HF_MODES="" skips);
#   3. each robot task alone (solo p50/p99);
#   4. all five tasks together on their own cores, four phases side by side: GPU idle,
#      beside ripple-llm --weights device, beside --weights host --kv host, and beside
#      that plus D2H spill; slowdown = phase p50/p99 over the idle phase's.
# Usage: tools/workloads/bench/gpu-interference.sh BIN_DIR OUT_DIR [PHASE_SECONDS]
# BIN_DIR holds ripple-{costmap,kdnn,sgm,orb,control,llm}; logs and a summary go to OUT_DIR.
set -u
B=$1 OUT=$2 T=${3:-10}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/run.log"; }
tasks=(costmap kdnn sgm orb control)
declare -A period=([costmap]=100 [kdnn]=100 [sgm]=100 [orb]=100 [control]=20)
first_core=4   # tasks on cores 4..8; ripple-llm's host thread on core 1

log "machine: $(nproc) cores; $(nvidia-smi -L 2>/dev/null | head -1)"

# 1. ripple-llm alone.
llm() { # name args...
  local name=$1; shift
  log "ripple-llm $*"
  timeout 180 taskset -c 1 "$B/ripple-llm" "$@" >"$OUT/llm-$name.log" 2>&1
  grep -E "^ripple-llm: (kernel probe|final token|bytes per token|[0-9]+ tokens in|.*limit|frames)|^RESULT|error" \
    "$OUT/llm-$name.log" | tee -a "$OUT/run.log"
}
llm dev8b --preset qwen3-8b --weights device --context 1024 --tokens 64
llm dev8b-graph --preset qwen3-8b --weights device --context 1024 --tokens 64 --graph
llm dev8b-nopdl --preset qwen3-8b --weights device --context 1024 --tokens 64 --no-pdl
llm dev0.6b --preset qwen3-0.6b --weights device --context 1024 --tokens 64
if [ -z "${QUICK:-}" ]; then
llm host8b --preset qwen3-8b --weights host --stream copy --context 1024 --tokens 6
llm zc8b --preset qwen3-8b --weights host --stream zerocopy --context 1024 --tokens 3 --no-probe
fi
llm hostkv4b --preset qwen3-4b --weights host --kv host --context 4096 --tokens 6
llm frames --preset qwen3-vl-8b --frames --requests 4 --period-ms 2000 --deadline-ms 1000 --no-probe

# 1b. Hardware byte check: DRAM bytes of one decode step (every kernel of it), read by
# Nsight Compute's counters, against the model's weights + KV. qwen3-0.6b: 1.2 GB, 20x L2.
if [ -z "${SKIP_NCU:-}" ]; then
log "ncu: one qwen3-0.6b decode step"
timeout 240 ncu --clock-control none --print-units base --csv --metrics dram__bytes_read.sum,dram__bytes_write.sum \
  "$B/ripple-llm" --preset qwen3-0.6b --weights device --context 1024 --tokens 1 --warmup 0 --no-probe \
  >"$OUT/ncu.csv" 2>"$OUT/ncu.err"
python3 - "$OUT/ncu.csv" "$OUT/llm-ncu-step.log" <<'PY' | tee -a "$OUT/run.log"
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 5]
if not rows:
    print("ncu: no rows"); sys.exit()
h = rows[0]; k = h.index("Kernel Name"); m = h.index("Metric Name"); v = h.index("Metric Value")
rd = wr = 0.0; n = 0
for r in rows[1:]:
    if r[k].startswith(("fill_", "void ripple::llm::fill")) or "fill_" in r[k]:
        continue
    val = float(r[v].replace(",", ""))
    if r[m] == "dram__bytes_read.sum": rd += val; n += 1
    elif r[m] == "dram__bytes_write.sum": wr += val
print(f"ncu: decode step over {n} kernels: DRAM read {rd/1e9:.4f} GB, write {wr/1e9:.4f} GB")
PY
grep -E "bytes per token|RESULT" "$OUT/ncu.csv" | tee -a "$OUT/run.log"
fi

# 2. transformers offload.
for mode in ${HF_MODES-none pinned}; do
  log "hf_offload --offload $mode"
  PYTHONUNBUFFERED=1 timeout 240 taskset -c 2 python3 tools/engines/hf_offload.py --preset qwen3-1.7b \
    --offload $mode --new-tokens 16 >"$OUT/hf-$mode.log" 2>&1
  tail -2 "$OUT/hf-$mode.log" | tee -a "$OUT/run.log"
done

# 3. Solo runs (SKIP_SOLO=1 skips).
solo_tasks=("${tasks[@]}")
[ -n "${SKIP_SOLO:-}" ] && solo_tasks=()
for t in "${solo_tasks[@]}"; do
  log "solo $t"
  "$B/ripple-$t" --core $first_core --duration-s "$T" --period-ms "${period[$t]}" --quiet >"$OUT/solo-$t.log" 2>&1
  tail -1 "$OUT/solo-$t.log" | tee -a "$OUT/run.log"
done

# 4. Co-run phases.
phase() { # name [ripple-llm args...]
  local name=$1; shift
  local lpid=""
  if [ $# -gt 0 ]; then
    taskset -c 1 "$B/ripple-llm" "$@" --duration-s $((T + 30)) --no-probe >"$OUT/phase-$name-llm.log" 2>&1 &
    lpid=$!
    for _ in $(seq 600); do grep -q "^ripple-llm: preset" "$OUT/phase-$name-llm.log" 2>/dev/null && break; sleep 0.1; done
    sleep 2  # decoding under way
  fi
  log "phase $name ${*:-(GPU idle)}"
  local c=$first_core pids=()
  for t in "${tasks[@]}"; do
    "$B/ripple-$t" --core $c --duration-s "$T" --period-ms "${period[$t]}" --quiet >"$OUT/phase-$name-$t.log" 2>&1 &
    pids+=($!)
    c=$((c + 1))
  done
  wait "${pids[@]}"
  if [ -n "$lpid" ]; then kill -INT $lpid 2>/dev/null; sleep 1; kill $lpid 2>/dev/null; wait $lpid 2>/dev/null; fi
  grep -h RESULT "$OUT"/phase-$name-*.log | tee -a "$OUT/run.log"
}
phases=${PHASES-idle device host spill}  # PHASES="" runs none
for ph in $phases; do
  case $ph in
    idle) phase idle ;;
    device) phase device --preset qwen3-8b --weights device --context 1024 ;;
    host) phase host --preset qwen3-4b --weights host --kv host --context 4096 ;;
    spill) phase spill --preset qwen3-4b --weights host --kv host --context 4096 --spill-mb ${SPILL_MB:-256} ;;
  esac
done

# Summary table.
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import re, sys, glob, os
out = sys.argv[1]
def res(path):
    try:
        for line in open(path):
            if line.startswith("RESULT"):
                return dict(kv.split("=", 1) for kv in line.split()[1:])
    except OSError:
        pass
    return None
print("| task | solo p50 / p99 ms | MB/job (est.) | co-run idle p50 / p99 | beside --weights device (p50 / p99 ratio) | beside --weights host --kv host | + D2H spill |")
print("|---|---|---|---|---|---|---|")
for t in ["costmap", "kdnn", "sgm", "orb", "control"]:
    s = res(f"{out}/solo-{t}.log"); i = res(f"{out}/phase-idle-{t}.log")
    row = [t]
    row.append(f"{float(s['p50_ms']):.2f} / {float(s['p99_ms']):.2f}" if s else "-")
    row.append(s["mb_per_job"] if s else "-")
    row.append(f"{float(i['p50_ms']):.2f} / {float(i['p99_ms']):.2f}" if i else "-")
    for ph in ["device", "host", "spill"]:
        r = res(f"{out}/phase-{ph}-{t}.log")
        if r and i:
            row.append(f"{float(r['p50_ms']):.2f} / {float(r['p99_ms']):.2f} ({float(r['p50_ms'])/float(i['p50_ms']):.2f} / {float(r['p99_ms'])/float(i['p99_ms']):.2f})")
        else:
            row.append("-")
    print("| " + " | ".join(row) + " |")
print()
for f in sorted(glob.glob(f"{out}/llm-*.log")) + sorted(glob.glob(f"{out}/phase-*-llm.log")) + sorted(glob.glob(f"{out}/hf-*.log")):
    for line in open(f):
        if line.startswith("RESULT") or "bytes per token" in line or "ceilings" in line:
            print(os.path.basename(f) + ": " + line.strip())
PY
