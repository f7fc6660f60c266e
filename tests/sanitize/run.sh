#!/usr/bin/env bash
# Builds the GoogleTest suites with sanitizers into their own tree and runs them, one TAP
# case per binary: ok when every test passes and no process (the suite, or a program it
# starts with the interposer preloaded) reported a sanitizer error.
#
#   tests/sanitize/run.sh [--build-only] [SANITIZERS [BINARY-NAME...]]
#     --build-only  build the instrumented suites and stop (make check does this in its
#                 build phase, so that the suite's own time bound covers only the runs)
#     SANITIZERS  address,undefined (default) or thread
#     BINARY-NAME only these suites (e.g. cuhook_test); default: every GTEST_SUITES entry
#   O=build  the ordinary tree; the sanitized one is $O/san-<list> (as make SANITIZE=<list>)
#
# Reports go to $SAN_O/sanitize-logs/<suite>/ (log_path: one file per process with an
# error). Suppressions: tests/sanitize/<sanitizer>.supp, each with its reason.
# The nested make does not inherit the calling make's flags (make check runs this).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
O=${O:-build}
case "$O" in /*) ;; *) O="$repo/$O" ;; esac
build_only=0
[ "${1:-}" = --build-only ] && { build_only=1; shift; }
san=${1:-address,undefined}
shift || true
# The same tree as `make SANITIZE=$san` (build/san-<list>), inside $O: `make clean` removes it.
san_o="$O/san-${san//,/-}"
case $san in
  thread) rt=libtsan.so ;;
  *) rt=libasan.so ;;
esac
logs="$san_o/sanitize-logs"
rm -rf "$logs" && mkdir -p "$logs"

mapfile -t bins < <(env -u MAKEFLAGS -u MAKELEVEL make -C "$repo" -s --no-print-directory sanitize-list O="$san_o" SANITIZE="$san" | tr ' ' '\n' | grep .)
if [ $# -gt 0 ]; then
  want=" $* "
  sel=()
  for b in "${bins[@]}"; do [[ $want == *" $(basename "$b") "* ]] && sel+=("$b"); done
  bins=("${sel[@]}")
fi
t0=$SECONDS
# tests/integration/tracer_test copies the periodic test program from the same tree.
if ! env -u MAKEFLAGS -u MAKELEVEL make -C "$repo" --no-print-directory -j"$(nproc)" O="$san_o" SANITIZE="$san" "${bins[@]}" \
    "$san_o/tests/progs/periodic" >"$logs/build.log" 2>&1; then
  if [ $build_only = 1 ]; then
    echo "tests/sanitize/run.sh: building with -fsanitize=$san failed (log: $logs/build.log)" >&2
    grep -E 'error|Error' "$logs/build.log" | head -n 20 >&2
    exit 1
  fi
  echo "1..1"
  echo "not ok 1 - build with -fsanitize=$san failed"
  grep -E 'error|Error' "$logs/build.log" | head -n 20 | sed 's/^/# /'
  exit 1
fi
if [ $build_only = 1 ]; then
  echo "  SAN      built the suites with -fsanitize=$san into $san_o in $((SECONDS - t0)) s"
  exit 0
fi
echo "# built with -fsanitize=$san into $san_o in $((SECONDS - t0)) s"
echo "1..${#bins[@]}"
preload=$(gcc -print-file-name="$rt")
# die_after_fork=0: the interposer's fork test starts threads in a forked child of a
# threaded process, which TSan refuses by default (its own limitation, not a race).
n=0 status=0
for b in "${bins[@]}"; do
  n=$((n + 1))
  name=$(basename "$b")
  [ "$(basename "$(dirname "$b")")" = integration ] && name="integration-$name"  # two tracer_test
  d="$logs/$name" && mkdir -p "$d"
  t=$SECONDS
  # Left out under sanitizers (they run in the ordinary suite): wall-clock bounds that an
  # instrumented build on a loaded machine misses, not behaviour.
  filter=
  case $name in
    plant_test) filter='-PipeGpu.OverlapsOnlyUnitsSubmittedInTime:PlantMode.StretchFollowsKappaTimesBytes' ;;
  esac
  # Under TSan, left out: the hook inside a program that ripple-profile record starts
  # (not instrumented, hook preloaded without the runtime first): TSan cannot load late
  # there and dies (SEGV at start). The threaded and fork tests all run.
  [ "$san" = thread ] && [ "$name" = cuhook_test ] &&
    filter='-CuhookTest.ProfileRecord*:CuhookTest.RecordedCopyBytesAreAnnouncedAsWholePasses' 
  # verify_asan_link_order=0: programs the suites start (driver_app, /usr/bin/env) are not
  # instrumented; the preloaded runtime comes first anyway, except after ripple-run
  # prepends the hook.
  ASAN_OPTIONS="log_path=$d/asan:detect_leaks=1:halt_on_error=1:verify_asan_link_order=0:detect_stack_use_after_return=0${ASAN_EXTRA:+:$ASAN_EXTRA}" \
  LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="log_path=$d/ubsan:print_stacktrace=1:halt_on_error=1:suppressions=$here/ubsan.supp" \
  TSAN_OPTIONS="log_path=$d/tsan:halt_on_error=0:second_deadlock_stack=1:die_after_fork=0:suppressions=$here/tsan.supp" \
  RIPPLE_TEST_PRELOAD="$preload" \
    timeout -k 10 900 "$b" --gtest_color=no ${filter:+--gtest_filter="$filter"} >"$d/out.log" 2>&1
  rc=$?
  passed=$(grep -cE '^\[       OK \]' "$d/out.log")
  failed=$(grep -cE '^\[  FAILED  \] [^ ]+\.[^ ]+ \(' "$d/out.log")
  # Report files hold errors, or notices ("Running thread ... was not suspended") that are not.
  mapfile -t found < <(grep -lE 'ERROR: |runtime error|WARNING: ThreadSanitizer' "$d"/asan.* "$d"/ubsan.* "$d"/tsan.* 2>/dev/null)
  reports=${#found[@]}
  if [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ]; then
    echo "ok $n - $name under $san: $passed tests ($((SECONDS - t)) s)"
  else
    status=1
    echo "not ok $n - $name under $san: rc $rc, $failed failed of $((passed + failed)), $reports sanitizer report(s) in $d"
    grep -hE '^\[  FAILED  \]' "$d/out.log" | head -n 10 | sed 's/^/# /'
    for f in "${found[@]:0:3}"; do
      grep -hE 'ERROR|WARNING|SUMMARY|runtime error|^    #[0-4] ' "$f" | head -n 14 | sed "s|^|# $(basename "$f"): |"
    done
  fi
done
exit $status
