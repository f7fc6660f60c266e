#!/usr/bin/env bash
# TAP: ripple-sim's table (tools/bench/ripple-sim/report.cc) is the bench's own rendering
# (tools/bench/ripple-bench/benchlib/report.py markdown_table) of the same results.json, byte for
# byte; and a simulated sweep is the same for the same seed.
set -uo pipefail
O=${O:-build}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/ripple-sim-check.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "1..2"
# ripple+u: a variant, whose ratio line both renderings must print too.
args=(--preset plant --policies ripple,ripple+u,unmanaged,pause,cap-1/4,cap-1/2,sigamma,sereno --k 1.5,2 --runs 2
      --variant ripple+u:pricing.untouched_level=true --prep-s 6 --score-s 10 -q)
"$O/bin/ripple-sim" "${args[@]}" --out "$tmp/a" > /dev/null
"$O/bin/ripple-sim" "${args[@]}" --out "$tmp/b" > /dev/null
if python3 "$here/render.py" "$tmp/a/results.json" > "$tmp/py.md" && diff <(cat "$tmp/a/table.md"; echo) "$tmp/py.md" > "$tmp/diff"; then
  echo "ok 1 - ripple-sim's table equals ripple-bench's rendering of its results.json"
else
  echo "not ok 1 - ripple-sim's table differs from ripple-bench's rendering"; sed 's/^/# /' "$tmp/diff" | head -20
fi
if cmp -s "$tmp/a/results.json" "$tmp/b/results.json" || diff <(grep -Ev "cpu_s|command" "$tmp/a/results.json") <(grep -Ev "cpu_s|command" "$tmp/b/results.json") > /dev/null; then
  echo "ok 2 - the same seed gives the same results.json"
else
  echo "not ok 2 - the same seed gave different results"
fi
