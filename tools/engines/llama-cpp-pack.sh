#!/usr/bin/env bash
# Packs a llama.cpp CUDA build for the GPU machine into .llamacpp/carry/ (ignored by git;
# name it in the device run's carry list): llama-simple and (when built) llama-bench, libllama and the
# libggml* libraries, stripped; llama.cpp's Python GGUF writer (gguf-py) of the same
# checkout; and the launch counter of tools/engines/cupti_count.c with the CUPTI library
# it opens, and libgomp (ggml's CPU backend) — compressed, one file.
#
#   tools/engines/llama-cpp-pack.sh [LLAMA_DIR]
# LLAMA_DIR (default .llamacpp): src/ (the llama.cpp checkout), build/ (its CMake build:
# CUDA backend, CUDA graphs on, sm_90; Documentation/results/engines.md names the commit).
# tools/engines/llama-cpp-build.sh makes both (the pinned commit, its CUDA build).
# On the GPU machine tools/packaging/gpu/engines-check.sh unpacks it.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
D=$(cd "${1:-$REPO/.llamacpp}" && pwd)
bin=$D/build/bin
for f in llama-simple libllama.so libggml.so libggml-base.so libggml-cuda.so libggml-cpu.so; do
  [ -e "$bin/$f" ] || { echo "llama-cpp-pack: $bin/$f is missing (build llama.cpp first)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
L=$stage/llama
mkdir -p "$L/bin" "$L/lib" "$L/gguf-py"
strip -o "$L/bin/llama-simple" "$bin/llama-simple"
[ -e "$bin/llama-bench" ] && strip -o "$L/bin/llama-bench" "$bin/llama-bench"   # optional
for l in "$bin"/libllama.so "$bin"/libggml*.so; do strip --strip-unneeded -o "$L/lib/$(basename "$l")" "$l"; done
cp -r "$D/src/gguf-py/gguf" "$L/gguf-py/"
find "$L/gguf-py" -name __pycache__ -prune -exec rm -rf {} +
git -C "$D/src" rev-parse HEAD > "$L/COMMIT"
CUDA=${CUDA_HOME:-/usr/local/cuda}
cc -shared -fPIC -O2 -Wall -I"$CUDA/include" -o "$L/lib/libripple-cupticount.so" "$REPO/tools/engines/cupti_count.c" -ldl
cupti=$(find "$CUDA/" "$CUDA/lib64/" "$CUDA/extras/CUPTI/lib64/" -maxdepth 2 -name 'libcupti.so.13*' 2>/dev/null | head -1 || true)
[ -n "$cupti" ] && cp -L "$cupti" "$L/lib/libcupti.so.13"
gomp=$(ldd "$bin/libggml-cpu.so" | awk '/libgomp/{print $3}')
[ -n "$gomp" ] && cp -L "$gomp" "$L/lib/"
mkdir -p "$D/carry"
tar cJf "$D/carry/llama.tar.xz" -C "$stage" llama
du -sh "$L" "$D/carry/llama.tar.xz"
