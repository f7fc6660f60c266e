#!/usr/bin/env bash
# Issue 6's checks of libripple-cuhook.so on a real GPU (Documentation/results/cuhook.md).
# Not a test (CI has no GPU): a measurement script whose last lines are a short table.
#
#   tools/packaging/gpu/cuhook-checks.sh BUILD OUTDIR [ROUNDS [SECTIONS]]
# BUILD: a build tree (bin/, lib/libripple-cuhook.so; tools/packaging/gpu/pack.sh makes one).
# SECTIONS: which of the checks below to run, as digits (default 1234; e.g. 3 re-runs only
# the transformers check).
#
# 1. Overhead and outputs: ripple-llm (qwen3-1.7b, weights in GPU memory, 300 tokens) run
#    ROUNDS times each, interleaved: plain; under ripple-run with an agent that always
#    grants (policy unmanaged) and no profile (NVTX units, the pass learned at run time);
#    the same with a profile recorded by `ripple-profile record`. Median tokens/s and the
#    final greedy token (the computation's fingerprint) per variant.
# 2. Pace: ripple-llm with host weights streamed per layer (units' bytes = their copies,
#    recorded) under agents with policy pace-R: the engine's byte rate against R.
# 3. A transformers decoder (tools/engines/hf_offload.py, pinned offload: per-layer copies
#    are the boundaries) plain and under ripple-run: tokens fingerprint, tokens/s, and the
#    interposer's launch count against torch.profiler's in the same run.
# 4. The agent's latency benchmark (tests/integration/agent_bench.sh) on isolated cores.
set -uo pipefail
B=$(cd "$1" && pwd)
OUT=$2
R=${3:-5}
S=${4:-1234}
run_section() { [[ $S == *$1* ]]; }
mkdir -p "$OUT"
export RIPPLE_CUHOOK_LIB=$B/lib/libripple-cuhook.so
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
tmp=$(mktemp -d /tmp/ripple-gpu-checks.XXXXXX)
apid=""
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
ncpu=$(nproc)
ECORE=$((ncpu > 4 ? 2 : 0))       # the engine's host thread
ACORE=$((ncpu - 1))               # the agent
log() { echo "== $*" | tee -a "$OUT/checks.log"; }

. "$(dirname "$0")/agent.sh"   # agent POLICY: (re)starts ripple-agent with that policy
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" | tail -1; }   # KEY: from a RESULT line
median() { sort -g | awk '{v[NR]=$1} END{if(NR==0){print "n/a"} else if(NR%2){print v[(NR+1)/2]} else {print (v[NR/2]+v[NR/2+1])/2}}'; }

# --- 1. overhead ---------------------------------------------------------------------
declare -A MED
if run_section 1; then
L=("$B/bin/ripple-llm" --preset qwen3-1.7b --tokens 300 --no-probe)
log "1. overhead: ${L[*]}"
"$B/bin/ripple-profile" record -o "$tmp/llm-dev.json" -- "${L[@]}" --tokens 5 > "$OUT/record-dev.log" 2>&1 ||
  { log "record failed"; tail -5 "$OUT/record-dev.log"; }
agent unmanaged
for i in $(seq "$R"); do
  taskset -c $ECORE "${L[@]}" > "$tmp/plain.$i" 2>&1
  RIPPLE_CUHOOK_STATS="$tmp/learned.$i.stats" taskset -c $ECORE "$B/bin/ripple-run" --engine llm --socket "$tmp/engine.sock" -- \
    "${L[@]}" > "$tmp/learned.$i" 2>&1
  RIPPLE_CUHOOK_STATS="$tmp/profile.$i.stats" taskset -c $ECORE "$B/bin/ripple-run" --engine llm --socket "$tmp/engine.sock" \
    --profile "$tmp/llm-dev.json" -- "${L[@]}" > "$tmp/profile.$i" 2>&1
  for v in plain learned profile; do
    echo "$v $i $(grep '^RESULT' "$tmp/$v.$i" | field tok_s) $(sed -n 's/.*final token \([0-9]*\).*/\1/p' "$tmp/$v.$i")" >> "$OUT/overhead.txt"
  done
done
cp "$tmp/learned.1" "$OUT/learned-run1.log"; cat "$tmp"/learned.1.stats "$tmp"/profile.1.stats > "$OUT/hook-stats.json" 2>/dev/null
for v in plain learned profile; do
  MED[$v]=$(awk -v v=$v '$1==v{print $3}' "$OUT/overhead.txt" | median)
  toks=$(awk -v v=$v '$1==v{print $4}' "$OUT/overhead.txt" | sort -u | tr '\n' ' ')
  log "   $v: median ${MED[$v]} tok/s over $R runs; final tokens: $toks"
done
fi

# --- 2. pace -------------------------------------------------------------------------
if run_section 2; then
H=("$B/bin/ripple-llm" --preset qwen3-1.7b --weights host --stream copy --no-probe)
log "2. pace: ${H[*]}"
"$B/bin/ripple-profile" record -o "$tmp/llm-host.json" -- "${H[@]}" --tokens 3 > "$OUT/record-host.log" 2>&1 ||
  { log "record failed"; tail -5 "$OUT/record-host.log"; }
for pol in unmanaged pace-20 pace-10 pace-5 pace-2; do
  agent "$pol" || continue
  taskset -c $ECORE "$B/bin/ripple-run" --engine llm --socket "$tmp/engine.sock" --profile "$tmp/llm-host.json" -- \
    "${H[@]}" --duration-s 6 > "$tmp/pace.$pol" 2>&1
  st=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>/dev/null)
  gb=$(grep '^RESULT' "$tmp/pace.$pol" | field counted_gb); ts=$(grep '^RESULT' "$tmp/pace.$pol" | field tok_s)
  echo "$pol $ts $gb $(echo "$st" | python3 -c 'import json,sys; e=[x for x in json.load(sys.stdin)["engines"] if x["name"]=="llm"]; print(e[0]["bytes"], e[0]["grants"]) if e else print("n/a n/a")' 2>/dev/null)" >> "$OUT/pace.txt"
done
log "   policy tok/s counted_GB/token agent_bytes grants: $(tr '\n' ';' < "$OUT/pace.txt")"
fi

# --- 3. transformers -----------------------------------------------------------------
if run_section 3; then
HF=(python3 "$REPO/tools/engines/hf_offload.py" --preset qwen3-1.7b --offload pinned --new-tokens 16 --duration-s 4)
log "3. transformers: ${HF[*]}"
agent unmanaged
for i in $(seq "$R"); do
  taskset -c $ECORE "${HF[@]}" > "$tmp/hf-plain.$i" 2>&1
  RIPPLE_CUHOOK_STATS="$tmp/hf-hook.$i.stats" taskset -c $ECORE "$B/bin/ripple-run" --engine hf --socket "$tmp/engine.sock" -- \
    "${HF[@]}" > "$tmp/hf-hook.$i" 2>&1
done
RIPPLE_CUHOOK_STATS="$tmp/hf-count.stats" taskset -c $ECORE "$B/bin/ripple-run" --engine hf --socket "$tmp/engine.sock" -- \
  "${HF[@]}" --count-launches > "$tmp/hf-count" 2>&1
cat "$tmp"/hf-plain.1 "$tmp"/hf-hook.1 "$tmp"/hf-count > "$OUT/hf.log" 2>/dev/null
cat "$tmp"/hf-hook.1.stats "$tmp"/hf-count.stats >> "$OUT/hook-stats.json" 2>/dev/null
for v in plain hook; do
  tps=$(for i in $(seq "$R"); do grep '^RESULT' "$tmp/hf-$v.$i" | field tok_s; done)
  MED[hf-$v]=$(echo "$tps" | median)
  log "   $v: tok/s $(echo $tps) (median ${MED[hf-$v]}) fingerprints $(for i in $(seq "$R"); do grep '^RESULT' "$tmp/hf-$v.$i" | field tokens_fp; done | sort | uniq -c | tr '\n' ' ')"
done
log "   launches (same run): $(grep '^LAUNCHES' "$tmp/hf-count")"
fi

# --- 4. agent latency ----------------------------------------------------------------
if run_section 4; then
log "4. agent latency (agent core $ACORE, engine core $((ACORE - 1)))"
[ -n "$apid" ] && { kill $apid 2>/dev/null; wait $apid 2>/dev/null; apid=""; }
if [ -x "$B/bin/ripple-standin-engine" ]; then
  O=$B AGENT_CORE=$ACORE ENGINE_CORE=$((ACORE - 1)) timeout 120 "$REPO/tests/integration/agent_bench.sh" 10 > "$OUT/agent-bench.log" 2>&1
  tail -12 "$OUT/agent-bench.log" | tee -a "$OUT/checks.log"
fi
fi

echo
echo "| check | result |"
echo "|---|---|"
if run_section 1; then
echo "| ripple-llm tok/s median (plain / hook learned / hook profile) | ${MED[plain]} / ${MED[learned]} / ${MED[profile]} |"
awk -v p="${MED[plain]}" -v l="${MED[learned]}" -v f="${MED[profile]}" 'BEGIN{if(p>0) printf "| overhead vs plain (learned / profile) | %.2f %% / %.2f %% |\n", 100*(1-l/p), 100*(1-f/p)}'
echo "| final tokens (plain, learned, profile) | $(awk '{print $4}' "$OUT/overhead.txt" | sort | uniq -c | tr '\n' ' ') |"
fi
run_section 2 && awk '{printf "| %s: engine byte rate | %.2f GB/s (%s tok/s x %s GB/token) |\n", $1, $2 * $3, $2, $3}' "$OUT/pace.txt"
if run_section 3; then
awk -v p="${MED[hf-plain]:-}" -v h="${MED[hf-hook]:-}" 'BEGIN{if(p>0) printf "| HF tok/s median (plain / hook) | %s / %s (%.2f %%) |\n", p, h, 100*(1-h/p)}'
echo "| HF launches | $(grep '^LAUNCHES' "$tmp/hf-count" | cut -d' ' -f2-) |"
fi
