// ripple-llm's device helpers, inlined into the unfused kernels (kernels.cu) and the fused
// ones (fused_kernels.cuh) alike, so both compute with the same arithmetic.
#pragma once

#include <cstdint>

#include "tools/engines/ripple-llm/common.h"

namespace ripple::llm {

__device__ __forceinline__ float hash_uniform(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Programmatic dependent launch (sm_90): every decode kernel lets its successor be
// scheduled at once (launch_dependents) and waits for its predecessor's completion and
// memory (wait) before it touches anything the predecessor may write. Without the launch
// attribute both are no-ops. Only weight reads (constant) may come before pdl_wait().
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Block-wide softmax over scores[0, ctx): mx comes in as each thread's running max and
// leaves as the block's; scores become exp(score - max); returns the block's sum (every
// thread). One function for both attention kernels, so their arithmetic stays the same.
__device__ __forceinline__ float attn_softmax(float* scores, int ctx, float& mx, float* red, int warp, int lane,
                                              int nw) {
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  if (lane == 0) red[warp] = mx;
  __syncthreads();
  mx = -1e30f;
  for (int i = 0; i < nw; ++i) mx = fmaxf(mx, red[i]);
  __syncthreads();
  float sum = 0.f;
  for (int p = threadIdx.x; p < ctx; p += blockDim.x) {
    const float e = __expf(scores[p] - mx);
    scores[p] = e;
    sum += e;
  }
  sum = warp_sum(sum);
  if (lane == 0) red[warp] = sum;
  __syncthreads();
  sum = 0.f;
  for (int i = 0; i < nw; ++i) sum += red[i];
  return sum;
}

// SiLU(g) * u: the one definition, shared by silu_mul and the fused gate/up GEMV's epilogue.
__device__ __forceinline__ float silu_mul_f(float g, float u) { return g / (1.f + __expf(-g)) * u; }

}  // namespace ripple::llm
