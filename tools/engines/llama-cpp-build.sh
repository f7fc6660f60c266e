#!/usr/bin/env bash
# Builds upstream llama.cpp at the pinned commit with its CUDA backend for the GPU machine
# (an H200: sm_90), into LLAMA_DIR (default .llamacpp, ignored by git): LLAMA_DIR/src is the
# checkout, LLAMA_DIR/build the CMake build. Only llama.cpp's own code is built; none of it is
# committed here. Then tools/engines/llama-cpp-pack.sh packs it for a device call
# (Documentation/results/engines.md, "llama.cpp: which, and how it reaches the GPU machine").
#
#   tools/engines/llama-cpp-build.sh [--source GIT_URL_OR_DIR] [LLAMA_DIR]
#
# --source: where to clone from when LLAMA_DIR/src does not exist yet (default the public
# repository; a local mirror or clone works the same). An existing LLAMA_DIR/src is checked
# out at the pinned commit, never cloned again. LLAMA_COMMIT overrides the commit; CUDA_ARCH
# the architectures (default 90); JOBS ninja's jobs (default: nproc).
# The build runs on a machine without a GPU: the executables link with
# --allow-shlib-undefined, since libggml-cuda needs the driver's libcuda.so.1, which the GPU
# machine provides. 2 vCPUs: ~11 min for the two targets.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
COMMIT=${LLAMA_COMMIT:-c392e5094deaf2d1a7c18683214f007fad3fe42b}
SOURCE=https://github.com/ggml-org/llama.cpp
D=
while [ $# -gt 0 ]; do
  case $1 in
    --source) [ $# -ge 2 ] || { echo "llama-cpp-build: --source needs a git URL or directory" >&2; exit 2; }
              SOURCE=$2; shift 2;;
    -h|--help) sed -n '2,17p' "$0"; exit 0;;
    -*) echo "llama-cpp-build: unknown option '$1'" >&2; exit 2;;
    *) [ -z "$D" ] || { echo "llama-cpp-build: one LLAMA_DIR, got '$D' and '$1'" >&2; exit 2; }
       D=$1; shift;;
  esac
done
D=${D:-$REPO/.llamacpp}
case $COMMIT in *[!0-9a-f]*|'') echo "llama-cpp-build: LLAMA_COMMIT '$COMMIT': a hexadecimal commit id" >&2; exit 2;; esac
for t in git cmake ninja; do
  command -v "$t" >/dev/null || { echo "llama-cpp-build: '$t' is not installed (apt-get install git cmake ninja-build)" >&2; exit 1; }
done
NVCC=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "llama-cpp-build: no nvcc (set CUDACXX, or install the CUDA toolkit)" >&2; exit 1; }

mkdir -p "$D"
if [ ! -d "$D/src/.git" ]; then
  git clone -q --no-checkout "$SOURCE" "$D/src"
fi
# The repository's large model files (Git LFS) are not needed and may be absent from a
# mirror: check out the commit without failing on them.
git -C "$D/src" -c advice.detachedHead=false checkout -q "$COMMIT" 2>"$D/checkout.log" || true
got=$(git -C "$D/src" rev-parse HEAD)
[ "$got" = "$COMMIT" ] || { echo "llama-cpp-build: $D/src is at $got, not $COMMIT (is the commit in '$SOURCE'?)" >&2; exit 1; }
[ -f "$D/src/CMakeLists.txt" ] || { echo "llama-cpp-build: $D/src has no CMakeLists.txt after the checkout" >&2; exit 1; }

cmake -S "$D/src" -B "$D/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DCMAKE_CUDA_COMPILER="$NVCC" \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined >"$D/cmake.log" 2>&1 ||
  { tail -20 "$D/cmake.log" >&2; echo "llama-cpp-build: cmake failed (log $D/cmake.log)" >&2; exit 1; }
ninja -C "$D/build" -j "${JOBS:-$(nproc)}" llama-simple llama-bench
echo "llama-cpp-build: $D/build/bin at $COMMIT; pack it with tools/engines/llama-cpp-pack.sh $D"
