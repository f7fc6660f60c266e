#!/usr/bin/env bash
# ripple-bench --quick on the emulated interference plant — a TEST DOUBLE
# (tests/plant/plant.h): stand-in engines publish the bytes they "execute" and the
# plant-mode robot tasks stretch each job by kappa x those bytes (CI machines have no real
# CPU/GPU memory contention). The real agent, BPF tracer and unmodified tasks run end to end.
# TAP:
#   1  the bench exits 0 (or 1 with a "FAIL: k=" claim line, which 2 and 3 judge) and writes
#      results.json, results.csv, responses.csv, table.md; the closing co-run profile after
#      the last run is in results.json (profile_end, profile_drift for every task) and table.md
#   2  ripple: every task's pooled DMR <= eps (5 %) and no VLM deadline missed, at k = 2
#      (k = 1.5 also separates the policies, but ripple's worst task came within noise
#      of eps there on this shared 2-core VM: one run in seven went over)
#   3  unmanaged, same plant and deadlines: the worst task's DMR > eps. The deadlines are
#      k x the co-run profile's p99: a profile taken beside another busy program (another
#      CI job on this VM or its host) has loose ones that unmanaged meets (one CI run: 1.9 %).
#      The bench profiles again while other processes take > 25 % of the CPUs beside it and
#      reports the load (results.json profile_load); where even its least loaded attempt was
#      loaded AND unmanaged met eps, 3 and 5 say SKIP with those numbers, never a silent pass
#   4  throughput: 0.35 x unmanaged <= ripple < unmanaged (it admits work inside the slack,
#      not only between jobs), and the fluid bound is positive; each task's kappa as the
#      unmanaged run measured it (metrics.unmanaged_kappas) within 0.5-2x the plant's known
#      750 ms/GB (two quick calls on this VM: 741-864; by construction it stays under 1/R,
#      ~970 here, so the upper side catches a unit error, the lower one a method that misses
#      the slowdown), and its bound positive
#   5  the Table-7 markdown has the ripple, unmanaged and bound rows, ✗ only on unmanaged
#   6  bad options are refused with one line naming the option, exit 2
#   7  the LLM stand-in renews its session every 1.5 s (as the interposer does when the chunk
#      size or its catalog changes): the agent's per-engine columns still add up over the
#      sessions (unmanaged: the LLM busy most of the window, not a negative or a fraction),
#      and a variant's fixed chunk size (pricing.chunk_bytes) is what the agent tells the
#      engines in its run only (the A/B of issue 12)
#   8  --trace: each run's admission trace (agent.trace_file) kept compressed with its scored
#      window; trace_report.py counts over that window the jobs the bench counted from the
#      tasks' own logs (within 2 a task: the tracer's edges), and the LLM's grants
set -uo pipefail
O=${O:-build}
B=$(cd "$O" && pwd)
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root for BPF"; exit 0; }
tmp=$(mktemp -d /tmp/ripple-bench-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
echo "1..8"

O=$B "$B/bin/ripple-bench" --quick --backend plant --policies ripple,unmanaged --k 2 --no-plots \
  --check-claim --trace --out "$tmp/out" > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
# --check-claim exits 1 when the claim fails, and says so: tests 2 and 3 judge the claim.
# Any other non-zero status (an error, exit 2; a crash) fails this test.
rc_ok=0
[ "$rc" -eq 0 ] && rc_ok=1
[ "$rc" -eq 1 ] && grep -q '^FAIL: k=' "$tmp/stdout" && rc_ok=1
if [ "$rc_ok" = 1 ] && [ -s "$tmp/out/results.json" ] && [ -s "$tmp/out/results.csv" ] && [ -s "$tmp/out/responses.csv" ] &&
   [ -s "$tmp/out/table.md" ] && grep -q 'TEST DOUBLE' "$tmp/stderr" && grep -q '^Closing profile p99 (ms): costmap ' "$tmp/out/table.md" &&
   python3 -c 'import json, math, sys; s = json.load(open(sys.argv[1])); t = set(s["tasks"])
sys.exit(not (set(s["profile_end"]) == t == set(s["profile_drift"]) and all(v > -1 and math.isfinite(v) for v in s["profile_drift"].values())))' "$tmp/out/results.json"; then
  ok "bench finished (rc $rc), outputs written, plant labelled a test double; $(grep '^Closing profile' "$tmp/out/table.md" | cut -c1-120)"
else
  not_ok "bench finished and wrote its outputs" "rc=$rc" "$(tail -5 "$tmp/stderr")"
fi

# Facts from results.json, one line per check.
facts=$(python3 - "$tmp/out/results.json" <<'PY' 2>&1
import json, sys
s = json.load(open(sys.argv[1]))
p = {x["policy"]: x for x in s["points"]}
r, u = p["ripple"], p["unmanaged"]
# The agent's own count of the misses no grant was admitted into, over the scored windows:
# every task, consistent with itself (misses within untouched jobs within jobs).
ut = r.get("untouched", {})
u_ok = set(ut) == set(r["tasks"]) and all(0 <= t["untouched_misses"] <= t["untouched_jobs"] <= t["jobs"]
                                          and t["jobs"] >= 100 for t in ut.values())
print("ripple", r["worst_dmr"], r["vlm_misses"], r["vlm_frames"], min(t["jobs"] for t in r["tasks"].values()),
      int(u_ok), ",".join(f"{n}={t['misses']}/{t['jobs']}" for n, t in r["tasks"].items()) + ";untouched:" +
      ",".join(f"{n}={t['untouched_misses']}/{t['untouched_jobs']}/{t['jobs']}" for n, t in ut.items()))
print("unmanaged", u["worst_dmr"], ",".join(f"{n}={t['misses']}/{t['jobs']}" for n, t in u["tasks"].items()))
print("tput", r["llm_tok_s"], u["llm_tok_s"], next(iter(s["bound_tok_s"].values())), s["eps"])
km = next(iter(s.get("measured_kappas_ms_per_gb", {}).values()), {}) or {}
print("kappas", min(km.values(), default=0), max(km.values(), default=0), len(km),
      next(iter(s.get("bound_measured_tok_s", {}).values()), 0))
pl = s.get("profile_load") or {}
print("profload", int(bool(pl.get("loaded"))), pl.get("share"), pl.get("peak_share"), pl.get("cpus"),
      ",".join(map(str, pl.get("attempts", []))) or "none")
PY
)
read -r _ r_worst r_vlm r_frames r_minjobs r_untouched r_detail <<< "$(echo "$facts" | grep '^ripple')"
read -r _ u_worst u_detail <<< "$(echo "$facts" | grep '^unmanaged')"
read -r _ r_tok u_tok bound eps <<< "$(echo "$facts" | grep '^tput')"
read -r _ k_min k_max k_n bound_m <<< "$(echo "$facts" | grep '^kappas')"
read -r _ p_loaded p_share p_peak p_cpus p_attempts <<< "$(echo "$facts" | grep '^profload')"
# Why unmanaged may meet the deadlines without the mechanism being broken: the profile they
# come from ran beside other load in every attempt (the bench measured and reported it).
loaded_why="the co-run profile ran beside other load in every attempt (share of the $p_cpus CPUs other processes took: $p_attempts; the kept one $p_share, $p_peak in its busiest second): its deadlines too loose"

if awk -v d="${r_worst:-nan}" -v e="${eps:-0}" -v j="${r_minjobs:-0}" -v v="${r_vlm:-1}" -v f="${r_frames:-0}" \
   -v u="${r_untouched:-0}" 'BEGIN { exit !(d != "nan" && d <= e && j >= 100 && v == 0 && f >= 5 && u == 1) }'; then
  ok "ripple: worst DMR $r_worst <= eps $eps ($r_detail), VLM misses $r_vlm/$r_frames"
else
  not_ok "ripple: worst DMR <= eps, no VLM miss, the agent's untouched counts consistent" "$facts" "$(grep -E 'ok:|FAIL' "$tmp/stdout")"
fi
if awk -v d="${u_worst:-nan}" -v e="${eps:-1}" 'BEGIN { exit !(d != "nan" && d > e) }'; then
  ok "unmanaged: worst DMR $u_worst > eps $eps ($u_detail)"
elif [ "${p_loaded:-0}" = 1 ] && [ "${u_worst:-nan}" != nan ]; then
  ok "unmanaged: worst DMR $u_worst <= eps $eps # SKIP $loaded_why"
else
  not_ok "unmanaged: worst DMR > eps" "$facts"
fi
if awk -v r="${r_tok:-0}" -v u="${u_tok:-0}" -v b="${bound:-0}" -v lo="${k_min:-0}" -v hi="${k_max:-0}" \
       -v n="${k_n:-0}" -v bm="${bound_m:-0}" \
       'BEGIN { exit !(r >= 0.35 * u && r < u && b > 0 && n == 3 && lo >= 375 && hi <= 1500 && bm > 0) }'; then
  ok "throughput: ripple $r_tok, unmanaged $u_tok stand-in tokens/s, fluid bound $bound; kappa from unmanaged $k_min-$k_max ms/GB (plant 750), its bound $bound_m"
else
  not_ok "throughput: 0.35 x unmanaged <= ripple < unmanaged, bound > 0, kappa from unmanaged within 0.5-2x 750 ms/GB" "$facts"
fi
t="$tmp/out/table.md"
if grep -Eq '^\| ripple \| [0-9.]+ / [0-9.]+ \|$' "$t" && grep -Eq '^\| unmanaged \| [0-9.]+ / [0-9.]+ ✗ \|$' "$t" &&
   grep -Eq '^\| bound \(fluid\) \| [0-9.]+ \|$' "$t" && grep -q 'TEST DOUBLE' "$t"; then
  ok "Table-7 markdown: ripple feasible, unmanaged marked ✗, bound row"
elif [ "${p_loaded:-0}" = 1 ] && grep -Eq '^\| ripple \| [0-9.]+ / [0-9.]+ \|$' "$t" &&
     grep -Eq '^\| unmanaged \| [0-9.]+ / [0-9.]+ \|$' "$t" && grep -Eq '^\| bound \(fluid\) \| [0-9.]+ \|$' "$t" &&
     grep -q 'LOADED: every attempt' "$t"; then
  ok "Table-7 markdown: unmanaged not marked ✗, the table says LOADED # SKIP $loaded_why"
else
  not_ok "Table-7 markdown rows" "$(head -14 "$t")"
fi

e1=$("$B/bin/ripple-bench" --backend plant --k 0.5 2>&1); c1=$?
e2=$("$B/bin/ripple-bench" --backend plant --mix "$tmp/none.toml" 2>&1); c2=$?
e3=$("$B/bin/ripple-bench" --backend plant --policies ripple,fifo 2>&1); c3=$?
e4=$("$B/bin/ripple-bench" --backend plant --k 1.5 --k-policies 3:ripple 2>&1); c4=$?
e5=$("$B/bin/ripple-bench" --backend plant --agent-set horizon=60 2>&1); c5=$?
e6=$("$B/bin/ripple-bench" --backend plant --task-args lidar=--size 2>&1); c6=$?
e7=$("$B/bin/ripple-bench" --backend plant --llm-profile "$tmp/none.json" 2>&1); c7=$?
e8=$("$B/bin/ripple-bench" --backend plant --ripple-prep-s 0 2>&1); c8=$?
e9=$("$B/bin/ripple-bench" --backend plant --variant ripple+clip:pricing.margin_clip=true 2>&1); c9=$?
e10=$("$B/bin/ripple-bench" --backend plant --policies ripple,fifo+x --variant fifo+x:agent.lease_ms=5 2>&1); c10=$?
e11=$("$B/bin/ripple-bench" --backend plant --policies ripple --policy-runs unmanaged:1 2>&1); c11=$?
if [ "$c1" = 2 ] && [ "$e1" = "ripple-bench: error: --k: 0.5 outside [1, 10]" ] &&
   [ "$c2" = 2 ] && echo "$e2" | grep -q "^ripple-bench: error: --mix: cannot read $tmp/none.toml" &&
   [ "$c3" = 2 ] && echo "$e3" | grep -q "^ripple-bench: error: --policies: unknown policy 'fifo'" &&
   [ "$c4" = 2 ] && [ "$e4" = "ripple-bench: error: --k-policies: '3:ripple': K must be one of --k (1.5)" ] &&
   [ "$c5" = 2 ] && [ "$e5" = "ripple-bench: error: --agent-set: 'horizon=60' is not agent.KEY=VALUE or pricing.KEY=VALUE" ] &&
   [ "$c6" = 2 ] && echo "$e6" | grep -q "^ripple-bench: error: --task-args: no task 'lidar' in " &&
   [ "$c7" = 2 ] && [ "$e7" = "ripple-bench: error: --llm-profile: no such file $tmp/none.json" ] &&
   [ "$c8" = 2 ] && [ "$e8" = "ripple-bench: error: --ripple-prep-s: must be > 0" ] &&
   [ "$c9" = 2 ] && [ "$e9" = "ripple-bench: error: --variant: 'ripple+clip' is not in --policies" ] &&
   [ "$c10" = 2 ] && echo "$e10" | grep -q "^ripple-bench: error: --variant: 'fifo+x:agent.lease_ms=5' is not POLICY+TAG" &&
   [ "$c11" = 2 ] && [ "$e11" = "ripple-bench: error: --policy-runs: 'unmanaged:1': the policy must be one of --policies" ]; then
  ok "bad options refused: ${e1#ripple-bench: error: }; ${e3#ripple-bench: error: }; ${e5#ripple-bench: error: }"
else
  not_ok "bad options refused" "$c1 $e1" "$c2 $e2" "$c3 $e3" "$c4 $e4" "$c5 $e5" "$c6 $e6" "$c7 $e7" "$c8 $e8" "$c9 $e9" "$c10 $e10" "$c11 $e11"
fi

O=$B "$B/bin/ripple-bench" --backend plant --policies unmanaged,ripple+c32 \
  --variant ripple+c32:pricing.chunk_bytes=33554432 --k 2 --eps 0.05 --runs 2 --policy-runs ripple+c32:1 \
  --prep-s 2 --score-s 6 \
  --profile-s 3 --llm-renew-s 1.5 --no-plots --out "$tmp/renew" > "$tmp/renew.stdout" 2> "$tmp/renew.stderr"
rc=$?
renew=$(python3 - "$tmp/renew/results.json" <<'PY' 2>&1
import json, sys
s = json.load(open(sys.argv[1]))
p = {x["policy"]: x for x in s["points"]}
u, c = p["unmanaged"], p["ripple+c32"]
def sessions(pt):   # the LLM's session ordinal in the last sample of the run
    return max((row["engines"].get("llm") or {}).get("session") or 0 for row in pt["timelines"][0]["samples"])
def chunks(pt):
    return sorted({row.get("chunk_bytes") for row in pt["timelines"][0]["samples"]} - {None})
print(u["gaps"]["busy"], u["llm_grants"]["grants"], sessions(u), sessions(c), c["gaps"]["busy"],
      ",".join(map(str, chunks(c))), ",".join(map(str, chunks(u))) or "none", f'{u["runs"]}/{c["runs"]}', s.get("order"))
PY
)
read -r u_busy u_grants u_sess c_sess c_busy c_chunks u_chunks runs order <<< "$renew"
# The default run order interleaves the policies round by round (options.schedule).
seq=$(sed -n 's/.*\] \([^ ]*\) k=2 run \([0-9]*\): worst DMR.*/\1:\2/p' "$tmp/renew.stderr" | paste -sd' ')
if [ "$rc" = 0 ] && awk -v ub="${u_busy:-nan}" -v g="${u_grants:-0}" -v us="${u_sess:-0}" -v cs="${c_sess:-0}" \
     -v cb="${c_busy:-nan}" 'BEGIN { exit !(ub != "nan" && ub >= 0.5 && ub <= 1 && g > 0 && us >= 4 && cs >= 4 &&
                                          cb != "nan" && cb >= 0 && cb <= 1) }' &&
   [ "$c_chunks" = 33554432 ] && ! echo ",$u_chunks," | grep -q ',33554432,' && [ "$runs" = 2/1 ] &&
   [ "$order" = interleaved ] && [ "$seq" = "unmanaged:1 ripple+c32:1 unmanaged:2" ]; then
  ok "session renewed every 1.5 s (LLM session $u_sess at the end): unmanaged busy $u_busy, $u_grants grants; ripple+c32 busy $c_busy, chunk $c_chunks (unmanaged: $u_chunks); runs $runs (--policy-runs), $order: $seq"
else
  not_ok "per-engine columns across session renewals, and the variant's chunk size" "rc=$rc" "$renew" "order: $seq" \
    "$(tail -3 "$tmp/renew.stderr")"
fi
here=$(cd "$(dirname "$0")" && pwd)
traced=$(python3 - "$tmp/out" "$here/../../tools/bench/ripple-bench/trace_report.py" <<'PY' 2>&1
import json, subprocess, sys
from pathlib import Path
out, tool = Path(sys.argv[1]), sys.argv[2]
s = json.load(open(out / "results.json"))
w = json.load(open(out / "traces" / "windows.json"))
bad = []
for p in s["points"]:
    name = f"{p['policy']}-k{p['k']:g}-run1.jsonl.gz"
    t0, t1 = w[name]
    r = subprocess.run([sys.executable, tool, str(out / "traces" / name), "--origin", "zero", "--window", f"{t0},{t1}",
                        "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        bad.append(f"{name}: {r.stderr.strip()}")
        continue
    tr = json.loads(r.stdout)
    for task, t in p["tasks"].items():
        got = tr["tasks"].get(task, {}).get("jobs", 0)
        if abs(got - t["jobs"]) > 2:
            bad.append(f"{name} {task}: trace {got} jobs, bench {t['jobs']}")
    g = tr["engines"].get("llm", {}).get("grants", 0)
    if g <= 0:
        bad.append(f"{name}: no LLM grant done in the window")
    print(f"{p['policy']}: {g} grants,", ", ".join(f"{k} {v['jobs']}" for k, v in sorted(tr["tasks"].items())))
print("BAD " + "; ".join(bad) if bad else "GOOD")
PY
)
if echo "$traced" | grep -q '^GOOD'; then
  ok "--trace: $(echo "$traced" | grep -v GOOD | tr '\n' ';')"
else
  not_ok "--trace: the kept traces agree with the bench's counts" "$traced"
fi
exit $failed
