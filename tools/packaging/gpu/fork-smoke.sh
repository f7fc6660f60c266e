#!/usr/bin/env bash
# A check of libripple-cuhook.so's fork handlers on a real driver (about 40 s of device
# time): a PyTorch process under ripple-run keeps two threads copying 64 MiB host -> device
# through the hook while its main thread forks FORKS times (a DataLoader's workers, a
# subprocess); each child exits at once. Run under an agent that grants everything
# (unmanaged) and one that paces at 5 GB/s, so that forks also meet a boundary waiting for
# its grant (the hook then tries its gate lock for 10 ms and the child runs unmanaged:
# Documentation/cuhook.md, "fork"). One FORK line a run: exit status, children that exited
# non-zero or hung, fork() latency p50/max, and the copies made meanwhile. Not a test (CI has
# no GPU); tests/cuhooks' CuhookTest.Fork* run the same shape against the fake driver.
#   OUT=DIR tools/packaging/gpu/fork-smoke.sh        (from the repo root, .devcarry carried)
set -u
nvidia-smi -L
tools/packaging/gpu/unpack.sh .devcarry > /dev/null
export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH
B=$PWD/.devcarry/build; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; tmp=$(mktemp -d); ACORE=$(( $(nproc) - 1 )); apid=""
FORKS=${FORKS:-200}
. tools/packaging/gpu/agent.sh
trap '[ -n "$apid" ] && kill $apid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export RIPPLE_CUHOOK_LIB=$B/lib/libripple-cuhook.so
cat > "$tmp/forker.py" <<'PY'
import os, statistics, sys, threading, time
import torch
forks = int(sys.argv[1])
stop = threading.Event()
copies = [0, 0]
def worker(i):
    h = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
    d = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    while not stop.is_set():
        with torch.cuda.stream(s):
            d.copy_(h, non_blocking=True)
        s.synchronize()
        copies[i] += 1
threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
for t in threads: t.start()
time.sleep(2)  # both copying
lat, bad = [], 0
for _ in range(forks):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    lat.append((time.monotonic() - t0) * 1e3)
    deadline = time.monotonic() + 10
    while True:
        r, st = os.waitpid(pid, os.WNOHANG)
        if r:
            bad += st != 0
            break
        if time.monotonic() > deadline:
            bad += 1; os.kill(pid, 9); os.waitpid(pid, 0)
            break
        time.sleep(0.001)
before = sum(copies)
time.sleep(1)
stop.set()
for t in threads: t.join(30)
alive = any(t.is_alive() for t in threads)
print(f"FORKRESULT forks={forks} bad_children={bad} fork_p50_ms={statistics.median(lat):.2f} "
      f"fork_max_ms={max(lat):.2f} copies={sum(copies)} copies_after_forks={sum(copies) - before} threads_hung={alive}")
sys.exit(1 if bad or alive else 0)
PY
for pol in unmanaged pace-5; do
  agent "$pol" || continue
  RIPPLE_CUHOOK_STATS=$OUT/fork-$pol.stats timeout 120 taskset -c 2-5 "$B/bin/ripple-run" --engine llm --socket "$tmp/engine.sock" -- \
    python3 "$tmp/forker.py" "$FORKS" > "$OUT/fork-$pol.log" 2>&1
  rc=$?
  python3 - "$OUT/fork-$pol.stats" "$pol" "$rc" "$OUT/fork-$pol.log" >> "$tmp/fork-lines" <<'PY'
import json, sys
f, pol, rc, log = sys.argv[1:]
try: st = json.load(open(f))
except Exception as x: st = {"error": str(x)}
res = [l.strip() for l in open(log) if l.startswith("FORKRESULT")]
keys = ["grants", "done_reported", "event_record_failures", "errors", "agent_losses", "grant_timeouts"]
print(f"FORK {pol} rc={rc} {res[-1][11:] if res else 'no result'} " + " ".join(f"{k}={st.get(k)}" for k in keys))
PY
done
grep -h "ripple-cuhook" "$OUT"/fork-*.log | sed 's/\[[0-9]*\]//' | sort | uniq -c | head -20
cat "$tmp/fork-lines"  # last, so that a tail of the call's output keeps them
