#!/usr/bin/env bash
# A smoke check of libripple-cuhook.so on a real GPU before a bench call (about 25 s of
# device time): ripple-llm (qwen3-1.7b, host weights copied in per layer) decodes 8 s under
# ripple-run, once with an agent that grants everything (unmanaged) and once paced at
# 5 GB/s, and one SMOKE line a run gives its exit status, wall time, tokens/s and the hook's
# counters: every grant reported (done_reported = grants), no timing event refused, no
# context end that gave up waiting for the watcher (pin_waits_given_up), no error.
# Not a test (CI has no GPU).
#   OUT=DIR tools/packaging/gpu/hook-smoke.sh        (from the repo root, .devcarry carried)
set -u
nvidia-smi -L
tools/packaging/gpu/unpack.sh .devcarry > /dev/null
export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH
B=$PWD/.devcarry/build; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; tmp=$(mktemp -d); ACORE=$(( $(nproc) - 1 )); apid=""
. tools/packaging/gpu/agent.sh
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export RIPPLE_CUHOOK_LIB=$B/lib/libripple-cuhook.so
H=("$B/bin/ripple-llm" --preset qwen3-1.7b --weights host --stream copy --no-probe)
for pol in unmanaged pace-5; do
  agent "$pol" || continue
  s=$(date +%s.%N)
  RIPPLE_CUHOOK_STATS=$OUT/$pol.stats timeout 100 taskset -c 2 "$B/bin/ripple-run" --engine llm --socket "$tmp/engine.sock" -- \
    "${H[@]}" --duration-s 8 > "$OUT/$pol.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  python3 - "$OUT/$pol.stats" "$pol" "$rc" "$s" "$e" "$OUT/$pol.log" <<'PY'
import json, sys, re
f, pol, rc, s, e, log = sys.argv[1:]
try: st = json.load(open(f))
except Exception as x: st = {"error": str(x)}
res = [l for l in open(log) if l.startswith("RESULT")]
tok = re.search(r"tok_s=([^ ]+)", res[-1]).group(1) if res else "n/a"
keys = ["grants", "done_reported", "event_record_failures", "pin_waits_given_up", "event_pools", "boundary_gaps", "errors", "agent_losses", "grant_timeouts"]
print(f"SMOKE {pol} rc={rc} wall={float(e)-float(s):.1f}s tok_s={tok} " + " ".join(f"{k}={st.get(k)}" for k in keys))
PY
done
grep -h "ripple-cuhook" "$OUT"/*.log | sort | uniq -c | head -20
