#!/usr/bin/env bash
# Issue 18's llama.cpp checks on a real GPU (Documentation/results/engines.md).
# Not a test (CI has no GPU): a measurement script whose last lines are a short table.
#
#   tools/packaging/gpu/engines-check.sh BUILD OUTDIR [LLAMA_TAR]
# BUILD: a build tree (bin/, lib/libripple-cuhook.so; tools/packaging/gpu/pack.sh makes one).
# LLAMA_TAR: tools/engines/llama-cpp-pack.sh's archive (default .llamacpp/carry/llama.tar.xz).
# GGUF_ARGS: extra gguf_tiny.py arguments (a smaller model for a dry run of the script).
# Needs the machine's CUDA 13 runtime and cuBLAS (found under /usr/local/cuda* or a Python
# package's nvidia/ folder) and python3 with numpy.
#
# 0. A random-weight llama model in GGUF, written by llama.cpp's own gguf-py
#    (tools/engines/gguf_tiny.py: 8 layers, 2048 wide, f16, ~1 GB), and its unit catalog
#    from `ripple-profile model FILE.gguf` (bytes per token = the sum of its units).
# 1. Outputs: llama-simple (greedy) plain and under ripple-run with an always-grant agent
#    (policy unmanaged), CUDA graphs on and off (GGML_CUDA_DISABLE_GRAPHS=1): the
#    generated text's hash per variant.
# 2. Launch counts: the same hooked runs with CUPTI's driver-API callbacks counting in the
#    same process (tools/engines/cupti_count.c): kernel launches, graph launches and
#    copies the driver received against the interposer's counters; llama.cpp's own decode
#    count (its perf line) against the graph launches.
# 3. Boundaries without NVTX: the interposer's unit counters (graph launches, copies
#    with RIPPLE_COPY_MIN_BYTES=65536 so the logits read-back is one too, learned passes);
#    then pace-R agents: the engine's byte rate (tokens/s x bytes per token, each graph
#    launch declared as one token's bytes: RIPPLE_GRAPH_BYTES) against R, over
#    llama-simple's whole timer and over llama.cpp's decode time alone (its eval line),
#    and over the paced interval itself: the agent's grant span for the engine (its first
#    grant's decision to its last Done, and the bytes done in it; `ripplectl status
#    --json`, the engine's total.grant_span), and its marginal rate: the 256-token span
#    less a 64-token run's, over the bytes between them (the start-up inside both cancels).
# 4. Overhead: llama-bench tg256 tokens/s (llama-simple's decode speed over 512 tokens
#    when llama-bench was not carried): plain, gated under ripple-run (unmanaged agent)
#    and, in OVERHEAD_ARMS, with the interposer only counting (RIPPLE_CUHOOK=off);
#    interleaved blocks for OVERHEAD_S seconds (400) or OVERHEAD_RUNS blocks, llama-bench
#    -r OVERHEAD_REPS (2); overhead_ci.py's medians, bootstrap 95 % CI and verdict on the
#    1 % goal (overhead.txt, overhead-reps.txt, overhead-ci.txt).
# 5. Per-call cost: ripple-hook-bench (tools/bench/micro/hook_bench.c) plain / counting
#    only / gated (the unmanaged agent of 4), HOOK_BENCH_RUNS (3) each, interleaved: ns per
#    kernel launch, graph launch, 8-byte H2D copy and generic cuMemcpyAsync, in and out of
#    a stream capture (its own table, after the checks' one).
set -uo pipefail
B=$(cd "$1" && pwd)
OUT=$2
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
TAR=${3:-$REPO/.llamacpp/carry/llama.tar.xz}
export RIPPLE_CUHOOK_LIB=$B/lib/libripple-cuhook.so
tmp=$(mktemp -d /tmp/ripple-engines.XXXXXX)
apid=""
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
ncpu=$(nproc)
# llama.cpp keeps 4 CPU threads (ggml's default, and llama-bench -t 4): 4 cores of their
# own, apart from the agent's, so OpenMP's spinning threads never share one core.
if [ "$ncpu" -ge 8 ]; then ECORE=2-5; else ECORE=0-$((ncpu > 2 ? ncpu - 2 : 0)); fi
ACORE=$((ncpu - 1))
T0=$(date +%s)
log() { echo "== [$(($(date +%s) - T0)) s] $*" | tee -a "$OUT/checks.log"; }
declare -A R   # results for the table

# --- setup: llama.cpp, CUDA libraries ------------------------------------------------
L=$tmp/llama
tar xJf "$TAR" -C "$tmp" || { echo "cannot unpack $TAR"; exit 1; }
log "llama.cpp $(cat "$L/COMMIT")"
sp=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
libdirs=""
for n in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
  f=$(ldconfig -p | awk -v n="$n" '$1==n{print $NF; exit}')
  [ -z "$f" ] && f=$(find /usr/local/cuda*/ $sp -name "$n" 2>/dev/null | head -1)
  [ -n "$f" ] && libdirs="$libdirs:$(dirname "$f")"
  [ -z "$f" ] && log "warning: no $n found"
done
[ -e /tmp/rdeps/lib ] && libdirs="$libdirs:/tmp/rdeps/lib"
export LD_LIBRARY_PATH="$L/lib$libdirs"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$OUT/checks.log"
CUPTI=(env CUDA_INJECTION64_PATH="$L/lib/libripple-cupticount.so" RIPPLE_CUPTI_LIB="$L/lib/libcupti.so.13")

. "$(dirname "$0")/agent.sh"   # agent POLICY: (re)starts ripple-agent with that policy
hooked() { # NAME STATS ENV... -- CMD...: CMD under ripple-run as engine NAME
  local name=$1 stats=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env RIPPLE_CUHOOK_STATS="$stats" "${envs[@]}" taskset -c $ECORE \
    "$B/bin/ripple-run" --engine "$name" --socket "$tmp/engine.sock" -- "$@"
}
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); k=sys.argv[2].split(".")
for x in k: d=d.get(x, {}) if isinstance(d, dict) else {}
print(d if d != {} else "n/a")' "$@" 2>/dev/null || echo n/a; }
md5() { md5sum < "$1" | cut -c1-12; }

# --- 0. model ------------------------------------------------------------------------
M=$tmp/tiny.gguf
log "0. model: gguf_tiny.py (llama.cpp's gguf-py)"
python3 "$REPO/tools/engines/gguf_tiny.py" "$M" --gguf-py "$L/gguf-py" ${GGUF_ARGS:-} > "$OUT/gguf.log" 2>&1 || { cat "$OUT/gguf.log"; exit 1; }
cat "$OUT/gguf.log" | tee -a "$OUT/checks.log"
"$B/bin/ripple-profile" model "$M" -o "$OUT/tiny.profile.json" 2>> "$OUT/checks.log"
BPT=$(python3 -c 'import json,sys; print(sum(u["bytes"] for u in json.load(open(sys.argv[1]))["units"]))' "$OUT/tiny.profile.json" 2>/dev/null || echo 0)
R[bpt]=$BPT
log "   ripple-profile model: $(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["units"]; print(len(u), "units:", ", ".join("%s=%d" % (x["name"], x["bytes"]) for x in u[:3]), "...")' "$OUT/tiny.profile.json" 2>/dev/null); bytes per token $BPT"

# --- 1 + 2. outputs and counts -------------------------------------------------------
S=("$L/bin/llama-simple" -m "$M" -n 64 -ngl 99 "Hello world")
agent unmanaged || exit 1
for g in on off; do
  genv=(); [ $g = off ] && genv=(GGML_CUDA_DISABLE_GRAPHS=1)
  log "1. outputs, graphs $g: ${S[*]##*/}"
  env "${genv[@]}" taskset -c $ECORE "${S[@]}" > "$OUT/simple-plain-$g.out" 2> "$OUT/simple-plain-$g.err"
  hooked llama "$OUT/simple-hook-$g.stats" "${genv[@]}" -- "${S[@]}" > "$OUT/simple-hook-$g.out" 2> "$OUT/simple-hook-$g.err"
  hooked llama "$OUT/simple-count-$g.stats" "${genv[@]}" RIPPLE_CUPTI_COUNT="$OUT/cupti-$g.txt" "${CUPTI[@]:1}" -- "${S[@]}" \
    > "$OUT/simple-count-$g.out" 2> "$OUT/simple-count-$g.err"
  R[out-$g]="plain $(md5 "$OUT/simple-plain-$g.out") / hook $(md5 "$OUT/simple-hook-$g.out") / hook+cupti $(md5 "$OUT/simple-count-$g.out")"
  [ "$(md5 "$OUT/simple-plain-$g.out")" = "$(md5 "$OUT/simple-hook-$g.out")" ] && R[same-$g]=yes || R[same-$g]=NO
  log "   text hashes: ${R[out-$g]} (same: ${R[same-$g]}); $(grep -h 'decoded' "$OUT/simple-plain-$g.err" | head -1)"
  # 2. the interposer's counters against CUPTI's, same run
  st=$OUT/simple-count-$g.stats
  c=$OUT/cupti-$g.txt
  if [ -s "$c" ] && [ -s "$st" ]; then
    read -r cl cg cc < <(awk '$1 ~ /^cuLaunch(Kernel|KernelEx|CooperativeKernel)(_ptsz)?$/ {l+=$2}
                             $1 ~ /^cuGraphLaunch(_ptsz)?$/ {g+=$2}
                             $1 ~ /^cuMem(cpy|set)/ {c+=$2} END {print l+g+0, g+0, c+0}' "$c")
    hl=$(jget "$st" launches)
    # A copy the hook issues in chunks (sub-layer grants) reaches the driver as its chunks.
    hc=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["copies"] - d.get("chunked_copies", 0) + d.get("chunks", 0))' "$st" 2>/dev/null || echo n/a)
    hg=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["calls"]; print(sum(v[0] for k,v in c.items() if k.startswith("cuGraphLaunch")))' "$st" 2>/dev/null || echo n/a)
    evals=$(sed -n 's/.*eval time = .*\/ *\([0-9]*\) runs.*/\1/p' "$OUT/simple-count-$g.err" | tr '\n' '+' | sed 's/+$//')
    R[cnt-$g]="launches hook $hl / cupti $cl; graph launches hook $hg / cupti $cg; copies+sets hook $hc (as issued to the driver: chunks counted) / cupti $cc; llama.cpp eval runs (its perf line) $evals"
  else
    R[cnt-$g]="n/a (cupti counts: $( [ -s "$c" ] && echo yes || echo no); stats: $( [ -s "$st" ] && echo yes || echo no))"
    grep -h cupti_count "$OUT/simple-count-$g.err" | head -2 >> "$OUT/checks.log"
  fi
  log "2. counts, graphs $g: ${R[cnt-$g]}"
done
cp "$c" "$OUT/" 2>/dev/null

# --- 3. boundaries and pace ----------------------------------------------------------
log "3. boundaries without NVTX"
st=$OUT/simple-hook-on.stats
R[units]="units $(jget "$st" units): graph $(jget "$st" units_graph), copy $(jget "$st" units_copy), nvtx $(jget "$st" units_nvtx) (nvtx pushes $(jget "$st" nvtx_pushes)); copy passes learned $(jget "$st" copy_passes_learned); grants $(jget "$st" grants); capture skips $(jget "$st" capture_skips); errors $(jget "$st" errors)"
log "   graphs on, default: ${R[units]}"
hooked llama "$OUT/simple-copymin.stats" RIPPLE_COPY_MIN_BYTES=65536 -- "${S[@]}" > "$OUT/simple-copymin.out" 2> "$OUT/simple-copymin.err"
st=$OUT/simple-copymin.stats
R[units-copy]="units $(jget "$st" units): graph $(jget "$st" units_graph), copy $(jget "$st" units_copy); copy passes learned $(jget "$st" copy_passes_learned), relearns $(jget "$st" relearns); grants $(jget "$st" grants); text same: $([ "$(md5 "$OUT/simple-copymin.out")" = "$(md5 "$OUT/simple-plain-on.out")" ] && echo yes || echo NO)"
log "   RIPPLE_COPY_MIN_BYTES=65536: ${R[units-copy]}"
timeout 120 "$B/bin/ripple-profile" record -o "$OUT/llama.record.json" -- "$L/bin/llama-simple" -m "$M" -n 16 -ngl 99 "Hello world" \
  > "$OUT/record.log" 2>&1
log "   ripple-profile record (no NVTX): exit $? $(python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["units"]; print(len(u), "units:", [(x["name"], len(x.get("kernels", []))) for x in u][:6])' "$OUT/llama.record.json" 2>/dev/null)"
P=("$L/bin/llama-simple" -m "$M" -n 256 -ngl 99 "Hello world")
# The grant span of a run as "done_bytes seconds" (the first listed entry named llama, the
# latest session, carries its process's total), or n/a.
span_of() {
  python3 -c 'import json,sys; e=[x for x in json.load(sys.stdin)["engines"] if x["name"]=="llama"]
s=(e[0].get("total") or e[0]).get("grant_span") if e else None
print(s["done_bytes"], s["s"]) if s else print("n/a")' 2>/dev/null || echo n/a
}
for r in 400 200 100; do
  # The same prompt decoding 64 tokens first: its span holds the same start-up (prompt,
  # first graph captures) as the 256-token run's, so the difference of the two spans is
  # the time of 192 decoded tokens at the paced rate alone (the marginal rate, below).
  agent "pace-$r" || continue
  hooked llama "$OUT/pace-$r-n64.stats" RIPPLE_GRAPH_BYTES="$BPT" -- "${P[@]:0:3}" -n 64 "${P[@]:5}" \
    > "$OUT/pace-$r-n64.out" 2> "$OUT/pace-$r-n64.err"
  "$B/bin/ripplectl" status --json --socket "$tmp/control.sock" > "$OUT/pace-$r-n64.status.json" 2>/dev/null
  short=$(span_of < "$OUT/pace-$r-n64.status.json")
  agent "pace-$r" || continue
  hooked llama "$OUT/pace-$r.stats" RIPPLE_GRAPH_BYTES="$BPT" -- "${P[@]}" > "$OUT/pace-$r.out" 2> "$OUT/pace-$r.err"
  ts=$(sed -n 's/.*speed: *\([0-9.]*\) t\/s.*/\1/p' "$OUT/pace-$r.err" | tail -1)
  stj=$("$B/bin/ripplectl" status --json --socket "$tmp/control.sock" 2>/dev/null)
  ab=$(echo "$stj" | python3 -c 'import json,sys; e=[x for x in json.load(sys.stdin)["engines"] if x["name"]=="llama"]; print(e[0]["bytes"], e[0]["grants"]) if e else print("n/a n/a")' 2>/dev/null)
  # llama.cpp's own decode time (its perf line: "eval time = X ms / N runs", the prompt's
  # line excluded): from each token's decode to its logits, grant waits included, without
  # the start-up inside llama-simple's timer (the first decode, lazy loading), which no
  # pace makes up beyond its bucket (R x H; tests/cuhooks/pace_closed_loop.sh, check 3).
  ev=$(awk '/ eval time/ && !/prompt eval/ {for (i = 1; i <= NF; ++i) { if ($i == "=") ms = $(i + 1); if ($i == "runs") n = $(i - 1) }} END {if (ms > 0) print n / ms * 1000}' "$OUT/pace-$r.err")
  # The paced interval: the agent's grant span for the engine over its sessions (the
  # first listed entry named llama, the latest session, carries its process's total):
  # from its first grant's decision to its last Done, and the bytes of the grants done.
  # Neither llama-simple's start-up before the first grant nor anything after the last
  # Done is in it; the CPU time between decodes is.
  echo "$stj" > "$OUT/pace-$r.status.json"
  pi=$(echo "$stj" | span_of)
  # The marginal rate: (bytes of the 256-token span - the 64-token one's) / (their spans'
  # difference). The start-up inside both spans cancels; what is left is 192 decoded tokens
  # (each a graph launch declared as one token's bytes), the CPU time between them included.
  R[pace-$r]=$(awk -v t="${ts:-0}" -v e="${ev:-0}" -v b="$BPT" -v r=$r -v pi="$pi" -v sh="$short" 'BEGIN{g=t*b/1e9; d=e*b/1e9; printf "%.1f tok/s x %.3f GB = %.1f GB/s (%+.1f %% of R); decode only (eval time) %.1f tok/s = %.1f GB/s (%+.1f %% of R)", t, b/1e9, g, (r > 0 ? 100 * (g / r - 1) : 0), e, d, (r > 0 ? 100 * (d / r - 1) : 0)
    split(pi, p, " ")
    if (p[2] > 0) { q = p[1] / p[2] / 1e9; printf "; paced interval (agent: first grant to last Done) %.1f GB in %.3f s = %.1f GB/s (%+.1f %% of R)", p[1] / 1e9, p[2], q, (r > 0 ? 100 * (q / r - 1) : 0) }
    else printf "; paced interval n/a (no grant span in the agent'\''s status)"
    split(sh, s, " ")
    if (p[2] > 0 && s[2] > 0 && p[2] > s[2]) { m = (p[1] - s[1]) / (p[2] - s[2]) / 1e9; printf "; marginal (n 256 - n 64 spans) %.1f GB in %.3f s = %.1f GB/s (%+.1f %% of R)", (p[1] - s[1]) / 1e9, p[2] - s[2], m, (r > 0 ? 100 * (m / r - 1) : 0) }
    else printf "; marginal n/a (no 64-token span)"}')
  log "   pace-$r: ${R[pace-$r]}; agent bytes/grants $ab; units_graph $(jget "$OUT/pace-$r.stats" units_graph)"
done

# --- 4. overhead ---------------------------------------------------------------------
# Processes differ far more than llama-bench's reps inside one (engines-runs/s6-call7: a
# process's mean spreads 3-5 %, a rep 1-4 %), so the design is many short processes:
# -r OVERHEAD_REPS (2: a rep spread is still seen), blocks of one run of each arm of
# OVERHEAD_ARMS ("plain hook": the goal's arm; "plain off hook" adds counting only), the
# order rotating block by block (ABC, BCA, CAB), until OVERHEAD_S seconds (400) are spent
# or OVERHEAD_RUNS blocks (no limit) are done. ~1.2 s a process: ~160 runs an arm.
# overhead_ci.py turns them into medians, a bootstrap 95 % CI and a verdict on <= 1 %.
agent unmanaged || exit 1
ARMS=(${OVERHEAD_ARMS:-plain hook})
if [ -x "$L/bin/llama-bench" ]; then
  BN=("$L/bin/llama-bench" -m "$M" -ngl 99 -t 4 -p 0 -n 256 -r "${OVERHEAD_REPS:-2}" -o jsonl)
  # avg_ts to overhead.txt, each rep's tokens/s (samples_ts) to overhead-reps.txt
  fig_of() { python3 -c 'import json,sys
r=[json.loads(x) for x in open(sys.argv[1]) if x.strip()][-1]
with open(sys.argv[4], "a") as f:
    for i, t in enumerate(r["samples_ts"]): print(sys.argv[2], sys.argv[3], i + 1, t, file=f)
print(r["avg_ts"])' "$1" "$2" "$3" "$OUT/overhead-reps.txt" 2>/dev/null || echo n/a; }
  R[tg-what]="llama-bench tg256 -r ${OVERHEAD_REPS:-2}"
else
  # No llama-bench in the carry: llama-simple's own decode speed over 512 greedy tokens.
  BN=("$L/bin/llama-simple" -m "$M" -n 512 -ngl 99 "Hello world")
  fig_of() { v=$(sed -n 's/.*speed: *\([0-9.]*\) t\/s.*/\1/p' "${1%.out}.err" | tail -1); echo "${v:-n/a}"; }
  R[tg-what]="llama-simple -n 512"
fi
log "4. overhead: ${R[tg-what]}, arms ${ARMS[*]} (plain; off: interposer counting only; hook: gated, unmanaged agent), interleaved, ${OVERHEAD_S:-400} s or ${OVERHEAD_RUNS:-unlimited} blocks"
run_arm() { # ARM I
  local f=$OUT/bench-$1.$2.out
  case $1 in
    plain) taskset -c $ECORE "${BN[@]}" > "$f" 2> "${f%.out}.err" ;;
    off)   hooked llama "$OUT/bench-off.$2.stats" RIPPLE_CUHOOK=off -- "${BN[@]}" > "$f" 2> "${f%.out}.err" ;;
    hook)  hooked llama "$OUT/bench-hook.$2.stats" -- "${BN[@]}" > "$f" 2> "${f%.out}.err" ;;
  esac
  echo "$1 $2 $(fig_of "$f" "$1" "$2")" >> "$OUT/overhead.txt"
}
: > "$OUT/overhead.txt"; : > "$OUT/overhead-reps.txt"
t4=$(date +%s) i=0
while [ $((i < ${OVERHEAD_RUNS:-1000000})) = 1 ] && [ $(($(date +%s) - t4)) -lt "${OVERHEAD_S:-400}" ]; do
  i=$((i + 1))
  for k in $(seq 0 $((${#ARMS[@]} - 1))); do run_arm "${ARMS[$(((i - 1 + k) % ${#ARMS[@]}))]}" $i; done
done
R[tg-n]=$i
log "   $i blocks in $(($(date +%s) - t4)) s; $(grep -c 'n/a$' "$OUT/overhead.txt") runs without a figure"
st=$OUT/bench-hook.1.stats
R[tg-units]="units $(jget "$st" units) (graph $(jget "$st" units_graph)), grants $(jget "$st" grants), grant waits $(jget "$st" grant_waits), wait $(jget "$st" wait_ns) ns; works of several passes $(jget "$st" multi_pass_works), passes a work (last) $(jget "$st" passes_per_work), drained $(jget "$st" units_drained); works ahead $(jget "$st" works_ahead) (drained $(jget "$st" ahead_drained)), work starts with the grant in hand $(jget "$st" work_starts_in_hand) of $(jget "$st" work_start_waits), waited at work starts $(jget "$st" work_start_wait_ns) ns"
log "   hooked run 1: ${R[tg-units]}"

# --- 5. per-call cost ----------------------------------------------------------------
HB=("$B/bin/ripple-hook-bench")
mkdir -p "$OUT/hookbench"
if [ -x "${HB[0]}" ]; then
  log "5. per-call cost: ripple-hook-bench plain / counting only / gated (unmanaged), ${HOOK_BENCH_RUNS:-3} runs each"
  for i in $(seq "${HOOK_BENCH_RUNS:-3}"); do
    taskset -c $ECORE "${HB[@]}" > "$OUT/hookbench/plain.$i" 2> "$OUT/hookbench/plain.$i.err"
    hooked hookbench "$OUT/hookbench/off.$i.stats" RIPPLE_CUHOOK=off -- "${HB[@]}" > "$OUT/hookbench/off.$i" 2> "$OUT/hookbench/off.$i.err"
    hooked hookbench "$OUT/hookbench/gated.$i.stats" -- "${HB[@]}" > "$OUT/hookbench/gated.$i" 2> "$OUT/hookbench/gated.$i.err"
  done
  python3 "$REPO/tools/bench/micro/hook_bench_table.py" "$OUT/hookbench" "${HOOK_BENCH_RUNS:-3}" > "$OUT/hookbench/table.md"
  cat "$OUT/hookbench/table.md" >> "$OUT/checks.log"
else
  log "5. per-call cost: no ${HB[0]} in the build (tools/packaging/gpu/pack.sh packs it)"
fi

echo
echo "| llama.cpp check | result |"
echo "|---|---|"
echo "| model | ${R[bpt]} bytes/token (ripple-profile model on the GGUF) |"
for g in on off; do
  echo "| greedy text, graphs $g (plain / hook / hook+CUPTI) | ${R[out-$g]} — same: ${R[same-$g]} |"
  echo "| counts, graphs $g | ${R[cnt-$g]} |"
done
echo "| units, graphs on | ${R[units]} |"
echo "| units, copy min 64 KiB | ${R[units-copy]} |"
for r in 400 200 100; do echo "| pace-$r | ${R[pace-$r]:-n/a} |"; done
median() { sort -g | awk '{v[NR]=$1} END{if(NR==0){print "n/a"} else if(NR%2){print v[(NR+1)/2]} else {print (v[NR/2]+v[NR/2+1])/2}}'; }
tg=""; for v in plain off hook; do tg="$tg / $(awk -v v=$v '$1==v && $3!="n/a"{print $3}' "$OUT/overhead.txt" | median)"; done
echo "| ${R[tg-what]} tok/s medians, ${R[tg-n]} interleaved blocks of ${ARMS[*]} (plain / counting only / gated, unmanaged agent) | ${tg# / } |"
# Against plain: overhead of the medians, bootstrap 95 % CI, verdict on <= 1 % (Documentation/results/engines.md).
acc=(); [ -s "$OUT/hookbench/table.md" ] && for v in off hook; do
  [ -s "$OUT/bench-$v.1.stats" ] && acc+=(--stats "$v=$OUT/bench-$v.1.stats"); done
[ ${#acc[@]} -gt 0 ] && acc+=(--hook-table "$OUT/hookbench/table.md")
reps=(); [ -s "$OUT/overhead-reps.txt" ] && reps=(--reps "$OUT/overhead-reps.txt")
python3 "$REPO/tools/packaging/gpu/overhead_ci.py" "$OUT/overhead.txt" "${acc[@]}" "${reps[@]}" > "$OUT/overhead-ci.txt" 2>&1
if cell=$(python3 "$REPO/tools/packaging/gpu/overhead_ci.py" "$OUT/overhead.txt" "${acc[@]}" --cell 2>&1); then
  echo "$cell" | sed 's/^\([a-z]*\): \(.*\)$/| overhead of \1 against plain: medians [95 % CI], verdict on <= 1 % | \2 |/'
else
  echo "| overhead | n/a: $cell |"
fi
echo "| hooked overhead run | ${R[tg-units]} |"
echo "| wall | $(($(date +%s) - T0)) s |"
if [ -s "$OUT/hookbench/table.md" ]; then
  echo
  echo "ripple-hook-bench on the real driver ($(sed -n 's/^# ripple-hook-bench: //p' "$OUT/hookbench/plain.1"))"
  echo
  cat "$OUT/hookbench/table.md"
fi
echo
echo "overhead_ci.py (the overhead step's analysis; tools/packaging/gpu/overhead_ci.py)"
echo
cat "$OUT/overhead-ci.txt"
