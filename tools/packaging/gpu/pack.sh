#!/usr/bin/env bash
# Packs what the GPU machine needs into one folder (default .devcarry/, ignored by git) so
# that a run there reproduces Documentation/results/*: the binaries built here (stripped),
# the hook, and the Debian shared libraries they and stress-ng need (that machine has the
# CUDA driver but not Debian's libraries), compressed.
#
#   tools/packaging/gpu/pack.sh [DEST]
# There (from the repo root, DEST carried):
#   tools/packaging/gpu/unpack.sh DEST && export LD_LIBRARY_PATH=/tmp/rdeps/lib PATH=/tmp/rdeps/bin:$PATH PYTHONPATH=/tmp/rdeps/python
#   tools/bench/ripple-bench/ripple-bench --build-dir DEST/build ...
#   DEST/build/bin/ripple-sim calibrate --backend gpu --build-dir DEST/build ...   (Documentation/sim.md)
set -euo pipefail
DEST=${1:-.devcarry}
O=${O:-build}
# BINS: the programs packed (default: all a bench, sim or check needs). A device call's carry
# and the repository's tracked files share 64 MiB, so the llama.cpp check (33 MB of its
# own) carries only what it runs:
#   BINS="ripple-agent ripple-run ripple-profile ripplectl ripple-hook-bench" tools/packaging/gpu/pack.sh .devcarry-eng
# (.devcarry-*/ is ignored by git too).
BINS=${BINS:-"ripple-agent ripple-run ripple-profile ripplectl ripple-llm ripple-costmap ripple-kdnn ripple-sgm ripple-control ripple-sim ripple-hook-bench"}
make -s $(for b in $BINS; do echo "$O/bin/$b"; done) "$O/lib/libripple-cuhook.so" "$O/bin/ripple-standin-engine" >/dev/null
rm -rf "$DEST/build" "$DEST/deps.tar.xz"
mkdir -p "$DEST/build/bin" "$DEST/build/lib" "$DEST/build/tests/integration"
for b in $BINS; do strip -o "$DEST/build/bin/$b" "$O/bin/$b"; done
strip -o "$DEST/build/bin/ripple-standin-engine" "$O/bin/ripple-standin-engine"   # agent_bench.sh
strip -o "$DEST/build/lib/libripple-cuhook.so" "$O/lib/libripple-cuhook.so"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/rdeps/lib" "$stage/rdeps/bin"
extra=""
if command -v stress-ng >/dev/null; then
  cp "$(command -v stress-ng)" "$stage/rdeps/bin/"
  extra=$(command -v stress-ng)
else
  echo "pack.sh: no stress-ng here (apt-get install stress-ng): the adaptivity run needs it" >&2
fi
# Every shared library of those programs except the C/C++ runtime and CUDA's (the machine's own).
for f in $(for b in $BINS; do echo "$O/bin/$b"; done) "$O/bin/ripple-standin-engine" "$O/lib/libripple-cuhook.so" $extra; do
  ldd "$f" | awk '/=> \//{print $3}'
done | sort -u | grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  grep -v -E '/(libcuda|libcudart|libcublas|libcublasLt|libnvrtc|libnvJitLink|libnvToolsExt)[^/]*$' |
  while read -r l; do cp -L "$l" "$stage/rdeps/lib/"; done
# Python modules the bench needs that the GPU machine's Python lacks (Debian's, pure Python):
# there, PYTHONPATH=/tmp/rdeps/python.
mkdir -p "$stage/rdeps/python"
tomli_w=$(/usr/bin/python3 -c 'import os, tomli_w; print(os.path.dirname(tomli_w.__file__))' 2>/dev/null) ||
  { echo "pack.sh: no tomli_w for /usr/bin/python3 (apt-get install python3-tomli-w): ripple-bench needs it" >&2; exit 1; }
cp -r "$tomli_w" "$stage/rdeps/python/"
rm -rf "$stage/rdeps/python/tomli_w/__pycache__"
tar cJf "$DEST/deps.tar.xz" -C "$stage" rdeps
du -sh "$DEST/build" "$DEST/deps.tar.xz"
