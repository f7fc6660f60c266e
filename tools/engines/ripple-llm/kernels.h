// ripple-llm's unfused kernels (defined in kernels.cu, each with the comment that says what
// it computes): the prefill and --no-fuse path, and the reference of --check. Launched from
// engine.cu and checks.cu. The fused decode kernels are in fused_kernels.cuh.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tools/engines/ripple-llm/common.h"

namespace ripple::llm {

constexpr int kAttnThreads = 512;  // attention's block
constexpr int kMaxSplits = 16;     // decode attention: at most this many blocks per head
constexpr int kNormThreads = 1024; // the fused norm's block (add_rmsnorm's 1024 threads)

// Dynamic shared memory of attention (and attention_fused) for max_ctx positions.
inline size_t attention_smem(int max_ctx, int hd) { return (size_t(max_ctx) + 256 + size_t(kAttnThreads / 32) * hd) * sizeof(float); }

__global__ void fill_uniform(bf16* p, size_t n, float scale, uint64_t seed, uint64_t offset);
__global__ void fill_const(bf16* p, size_t n, float v);
__global__ void __launch_bounds__(256) gemv_bf16(const bf16* __restrict__ w, const bf16* __restrict__ x,
                                                 float* __restrict__ y, int rows, int cols);
__global__ void add_rmsnorm(float* __restrict__ x, const float* __restrict__ d, const bf16* __restrict__ w,
                            bf16* __restrict__ out, int n);
__global__ void qk_norm_rope_append(const float* __restrict__ qkv, const bf16* __restrict__ qn,
                                    const bf16* __restrict__ kn, bf16* __restrict__ q_out, bf16* kc, bf16* vc,
                                    int T, int heads, int kv_heads, int hd, int pos0, int max_ctx,
                                    const int* __restrict__ dpos);
__global__ void __launch_bounds__(kAttnThreads) attention(const bf16* __restrict__ q, const bf16* kc, const bf16* vc,
                                                          bf16* __restrict__ out, int heads, int kv_heads, int hd,
                                                          int pos0, int T, int max_ctx, int causal,
                                                          const int* __restrict__ dpos, float* __restrict__ part);
__global__ void attention_combine(const float* __restrict__ part, bf16* __restrict__ out, int heads, int hd, int splits);
__global__ void advance_pos(int* dpos);
__global__ void add_inplace(float* __restrict__ x, const float* __restrict__ d, size_t n);
__global__ void silu_mul(const float* __restrict__ gu, bf16* __restrict__ out, int inter, int T);
__global__ void embed(const bf16* __restrict__ table, const int* __restrict__ token, float* __restrict__ x, int h);
__global__ void argmax(const float* __restrict__ logits, int n, int* __restrict__ token);
__global__ void widen(const bf16* __restrict__ a, float* __restrict__ b, size_t n);
__global__ void to_bf16(const float* __restrict__ x, bf16* __restrict__ y, size_t n);

}  // namespace ripple::llm
