// ripple-llm: a batch-1 transformer decoder in CUDA C++ with the layer shapes of a
// chosen model and random bf16 weights (no downloads): the inference engine whose memory
// traffic Ripple schedules.
//
//   --weights device   all weights in GPU memory (what a UMA device sees: every byte read
//                      per token comes from the one memory);
//   --weights host     weights in pinned host memory, streamed per layer: --stream copy
//                      (double-buffered cudaMemcpyAsync H2D, overlapped with compute) or
//                      --stream zerocopy (kernels read the mapped host pages over PCIe);
//   --kv host          the KV cache in pinned host memory: attention reads it over PCIe
//                      (H2D) and new K/V are stored to it (D2H);
//   --spill-mb N       per layer, also copy N MB D2H into pinned memory (an emulation of
//                      activation/KV spill at larger batch, labelled as such).
// A unit is one layer (plus the LM head as the last unit); each unit is an NVTX range
// named like its module ("model.layers.N", "lm_head", "visual.blocks.N") so the
// interposer finds the boundaries with its default pattern. It counts the bytes each
// unit moves and prints them beside the model's analytic weight + KV bytes.
//
// --frames runs a VLM-like deadline-bound request every period instead: a vision
// encoder over image patches, a prefill over the merged image tokens and the prompt,
// and a short decode; it reports the request latency against the deadline.
//
// Decode runs five fused kernels per layer (six with --stream copy; see "Fused decode
// kernels"); --no-fuse runs the ten unfused ones, which compute the same values; --check
// compares the two on the GPU.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include "tools/ripple-llm/model.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace ripple::llm {

using bf16 = __nv_bfloat16;

#define CUDA_CHECK(x)                                                                       \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "ripple-llm: error: %s failed: %s (%s:%d)\n", #x,                \
                   cudaGetErrorString(e_), __FILE__, __LINE__);                             \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)
#define CUBLAS_CHECK(x)                                                                     \
  do {                                                                                      \
    cublasStatus_t s_ = (x);                                                                \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
      std::fprintf(stderr, "ripple-llm: error: %s failed: status %d\n", #x, (int)s_);      \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Model shapes and the analytic byte model: tools/ripple-llm/model.h.

// ---------------------------------------------------------------------------------------
// Kernels.

__device__ __forceinline__ float hash_uniform(uint64_t i, uint64_t seed) {
  uint64_t z = i + seed * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
}

__global__ void fill_uniform(bf16* p, size_t n, float scale, uint64_t seed, uint64_t offset) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(scale * hash_uniform(i + offset, seed));
}

__global__ void fill_const(bf16* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(v);
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

// y[t][r] = sum_i W[r][i] x[t][i]: one warp per output row, 16-byte loads, T = 1.
// Batch-1 decode is a stream of weight bytes: this kernel is memory-bound by design.
__global__ void __launch_bounds__(256) gemv_bf16(const bf16* __restrict__ w, const bf16* __restrict__ x,
                                                 float* __restrict__ y, int rows, int cols) {
  pdl_trigger();
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const uint4* wr = reinterpret_cast<const uint4*>(w + size_t(min(warp, rows - 1)) * cols);
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  const int n8 = cols / 8;
  float acc = 0.f;
  // The first round of weights is loaded before waiting for the predecessor (the input
  // vector's producer): weights are constant, so their stream starts under its tail.
  uint4 p0 = make_uint4(0, 0, 0, 0), p1 = p0, p2 = p0, p3 = p0;
  if (lane + 96 < n8) p0 = __ldcs(&wr[lane]), p1 = __ldcs(&wr[lane + 32]), p2 = __ldcs(&wr[lane + 64]), p3 = __ldcs(&wr[lane + 96]);
  pdl_wait();
  if (warp >= rows) return;
  auto dot8 = [](const uint4& a, const uint4& b) {
    const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&b);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      float2 fa = __bfloat1622float2(a2[k]), fb = __bfloat1622float2(b2[k]);
      s += fa.x * fb.x + fa.y * fb.y;
    }
    return s;
  };
  int i = lane;
  if (i + 96 < n8) {
    acc += dot8(p0, __ldg(&xr[i])) + dot8(p1, __ldg(&xr[i + 32])) + dot8(p2, __ldg(&xr[i + 64])) +
           dot8(p3, __ldg(&xr[i + 96]));
    i += 128;
  }
  // Four independent streaming loads in flight per lane (weights are read once: bypass L1).
  for (; i + 96 < n8; i += 128) {
    uint4 a0 = __ldcs(&wr[i]), a1 = __ldcs(&wr[i + 32]), a2 = __ldcs(&wr[i + 64]), a3 = __ldcs(&wr[i + 96]);
    acc += dot8(a0, __ldg(&xr[i])) + dot8(a1, __ldg(&xr[i + 32])) + dot8(a2, __ldg(&xr[i + 64])) +
           dot8(a3, __ldg(&xr[i + 96]));
  }
  for (; i < n8; i += 32) acc += dot8(__ldcs(&wr[i]), __ldg(&xr[i]));
  acc = warp_sum(acc);
  if (lane == 0) y[warp] = acc;
}

// If d != nullptr, x[t] += d[t] first (the residual add of the previous sublayer, fused).
// Then out[t] = bf16(x[t] * rsqrt(mean(x[t]^2) + eps) * w). One block per token.
__global__ void add_rmsnorm(float* __restrict__ x, const float* __restrict__ d, const bf16* __restrict__ w,
                            bf16* __restrict__ out, int n) {
  pdl_trigger();
  pdl_wait();
  float* xr = x + size_t(blockIdx.x) * n;
  const float* dr = d ? d + size_t(blockIdx.x) * n : nullptr;
  bf16* orow = out + size_t(blockIdx.x) * n;
  __shared__ float red[32];
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = xr[i];
    if (dr) xr[i] = v = v + dr[i];
    s += v * v;
  }
  s = warp_sum(s);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0.f;
    v = warp_sum(v);
    if (threadIdx.x == 0) red[0] = v;
  }
  __syncthreads();
  const float r = rsqrtf(red[0] / n + 1e-6f);
  for (int i = threadIdx.x; i < n; i += blockDim.x) orow[i] = __float2bfloat16(xr[i] * r * __bfloat162float(w[i]));
}

// Per token and head: Qwen3's per-head RMSNorm on q and k, rotary embedding, then q to
// `q_out` and k, v appended to the cache at position pos0 + t. One warp per (t, head).
__global__ void qk_norm_rope_append(const float* __restrict__ qkv, const bf16* __restrict__ qn,
                                    const bf16* __restrict__ kn, bf16* __restrict__ q_out, bf16* kc, bf16* vc,
                                    int T, int heads, int kv_heads, int hd, int pos0, int max_ctx,
                                    const int* __restrict__ dpos) {
  pdl_trigger();
  pdl_wait();
  if (dpos != nullptr) pos0 = *dpos;  // graph replay: the position lives on the device
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const int per_t = heads + 2 * kv_heads;
  if (warp >= T * per_t) return;
  const int t = warp / per_t, h = warp % per_t, pos = pos0 + t;
  const float* src = qkv + size_t(t) * per_t * hd + size_t(h) * hd;
  if (h >= heads + kv_heads) {  // v: copy
    bf16* dst = vc + (size_t(h - heads - kv_heads) * max_ctx + pos) * hd;
    for (int i = lane; i < hd; i += 32) dst[i] = __float2bfloat16(src[i]);
    return;
  }
  const bf16* nw = h < heads ? qn : kn;
  float ss = 0.f;
  for (int i = lane; i < hd; i += 32) ss += src[i] * src[i];
  const float r = rsqrtf(warp_sum(ss) / hd + 1e-6f);
  bf16* dst = h < heads ? q_out + (size_t(t) * heads + h) * hd : kc + (size_t(h - heads) * max_ctx + pos) * hd;
  const int half = hd / 2;
  for (int i = lane; i < half; i += 32) {
    const float inv = exp2f(-2.0f * i / hd * 19.931568569324174f);  // theta^(-2i/hd), Qwen3 rope_theta = 1e6
    float sn, cs;
    sincosf(pos * inv, &sn, &cs);
    const float a = src[i] * r * __bfloat162float(nw[i]), b = src[i + half] * r * __bfloat162float(nw[i + half]);
    dst[i] = __float2bfloat16(a * cs - b * sn);
    dst[i + half] = __float2bfloat16(b * cs + a * sn);
  }
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

// Attention for query token t of head h (grid: heads x T, 512 threads): over positions
// [0, ctx) with ctx = causal ? pos0 + t + 1 : pos0 + T. Decode attention is a latency
// problem, not a bandwidth one (a head's K/V are a few hundred KB), so every thread owns
// whole positions: scores with 16-byte K loads all in flight at once, then V rows
// accumulated by warps with positions unrolled. Scores in shared memory (bounded context).
constexpr int kAttnThreads = 512;
constexpr int kMaxSplits = 16;
__global__ void __launch_bounds__(kAttnThreads) attention(const bf16* __restrict__ q, const bf16* kc, const bf16* vc,
                                                          bf16* __restrict__ out, int heads, int kv_heads, int hd,
                                                          int pos0, int T, int max_ctx, int causal,
                                                          const int* __restrict__ dpos, float* __restrict__ part) {
  extern __shared__ float sm[];
  pdl_trigger();
  pdl_wait();
  if (dpos != nullptr) pos0 = *dpos;
  const int h = blockIdx.x, t = blockIdx.y, kvh = h / (heads / kv_heads);
  const int ctx_all = causal ? pos0 + t + 1 : pos0 + T;
  // Split-K over positions (flash-decoding): block z of gridDim.z covers [p_lo, p_hi);
  // with more than one split it writes (max, sum, unnormalised output) for the combine.
  const int splits = gridDim.z, span = (ctx_all + splits - 1) / splits;
  const int p_lo = min(ctx_all, int(blockIdx.z) * span), ctx = min(ctx_all, p_lo + span) - p_lo;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  float* scores = sm;                // max_ctx
  float* qs = sm + max_ctx;          // hd
  float* accs = qs + 256;            // nw * hd
  __shared__ float red[32];
  const bf16* qr = q + (size_t(t) * heads + h) * hd;
  const bf16* kb = kc + (size_t(kvh) * max_ctx + p_lo) * hd;
  const bf16* vb = vc + (size_t(kvh) * max_ctx + p_lo) * hd;
  const float scale = rsqrtf((float)hd);
  for (int i = threadIdx.x; i < hd; i += blockDim.x) qs[i] = __bfloat162float(qr[i]) * scale;
  __syncthreads();
  // Scores: one position per thread, hd/8 independent 16-byte loads (hd % 8 == 0).
  float mx = -1e30f;
  const int n8 = hd / 8;
  for (int p = threadIdx.x; p < ctx; p += blockDim.x) {
    const uint4* kr = reinterpret_cast<const uint4*>(kb + size_t(p) * hd);
    float s = 0.f;
#pragma unroll 4
    for (int j = 0; j < n8; ++j) {
      uint4 a = kr[j];
      const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        float2 f = __bfloat1622float2(a2[k]);
        s += f.x * qs[j * 8 + 2 * k] + f.y * qs[j * 8 + 2 * k + 1];
      }
    }
    scores[p] = s;
    mx = fmaxf(mx, s);
  }
  const float sum = attn_softmax(scores, ctx, mx, red, warp, lane, nw);
  // V: warp w takes a contiguous chunk of positions; lane l owns dimensions 4l..4l+3
  // (8-byte loads; hd % 4 == 0, hd <= 128) and keeps 8 rows in flight.
  const int chunk = (ctx + nw - 1) / nw, p0 = warp * chunk, p1 = min(ctx, p0 + chunk);
  if (4 * lane < hd) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    const bf16* vl = vb + 4 * lane;
    auto fma4 = [&](int p) {
      const uint2 u = *reinterpret_cast<const uint2*>(vl + size_t(p) * hd);
      const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
      const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
      const float w = scores[p];
      a.x += w * lo.x, a.y += w * lo.y, a.z += w * hi.x, a.w += w * hi.y;
    };
    int p = p0;
    for (; p + 8 <= p1; p += 8) {
      uint2 u[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) u[k] = *reinterpret_cast<const uint2*>(vl + size_t(p + k) * hd);
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u[k].x));
        const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u[k].y));
        const float w = scores[p + k];
        a.x += w * lo.x, a.y += w * lo.y, a.z += w * hi.x, a.w += w * hi.y;
      }
    }
    for (; p < p1; ++p) fma4(p);
    float* dst = accs + warp * hd + 4 * lane;
    dst[0] = a.x, dst[1] = a.y, dst[2] = a.z, dst[3] = a.w;
  }
  __syncthreads();
  if (splits == 1) {
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
      float a = 0.f;
      for (int w = 0; w < nw; ++w) a += accs[w * hd + i];
      out[(size_t(t) * heads + h) * hd + i] = __float2bfloat16(a / sum);
    }
    return;
  }
  float* pr = part + ((size_t(t) * heads + h) * splits + blockIdx.z) * (hd + 2);
  if (threadIdx.x == 0) pr[0] = ctx > 0 ? mx : -1e30f, pr[1] = ctx > 0 ? sum : 0.f;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    float a = 0.f;
    for (int w = 0; w < nw; ++w) a += accs[w * hd + i];
    pr[2 + i] = ctx > 0 ? a : 0.f;
  }
}

// Merges the splits of one head (grid: heads x T, hd threads).
__global__ void attention_combine(const float* __restrict__ part, bf16* __restrict__ out, int heads, int hd, int splits) {
  pdl_trigger();
  pdl_wait();
  const int h = blockIdx.x, t = blockIdx.y, i = threadIdx.x;
  const float* pr = part + (size_t(t) * heads + h) * splits * (hd + 2);
  float m = -1e30f;
  for (int s = 0; s < splits; ++s) m = fmaxf(m, pr[s * (hd + 2)]);
  float l = 0.f, o = 0.f;
  for (int s = 0; s < splits; ++s) {
    const float e = __expf(pr[s * (hd + 2)] - m);
    l += pr[s * (hd + 2) + 1] * e;
    if (i < hd) o += pr[s * (hd + 2) + 2 + i] * e;
  }
  if (i < hd) out[(size_t(t) * heads + h) * hd + i] = __float2bfloat16(o / l);
}

size_t attention_smem(int max_ctx, int hd) { return (size_t(max_ctx) + 256 + size_t(kAttnThreads / 32) * hd) * sizeof(float); }

__global__ void advance_pos(int* dpos) {
  pdl_wait();
  ++*dpos;
}

__global__ void add_inplace(float* __restrict__ x, const float* __restrict__ d, size_t n) {
  pdl_trigger();
  pdl_wait();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) x[i] += d[i];
}

// SiLU(g) * u: the one definition, shared by silu_mul and the fused gate/up GEMV's epilogue.
__device__ __forceinline__ float silu_mul_f(float g, float u) { return g / (1.f + __expf(-g)) * u; }

__global__ void silu_mul(const float* __restrict__ gu, bf16* __restrict__ out, int inter, int T) {
  pdl_trigger();
  pdl_wait();
  const size_t n = size_t(T) * inter;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const size_t t = i / inter, j = i % inter;
    const float g = gu[t * 2 * inter + j], u = gu[t * 2 * inter + inter + j];
    out[i] = __float2bfloat16(silu_mul_f(g, u));
  }
}

__global__ void embed(const bf16* __restrict__ table, const int* __restrict__ token, float* __restrict__ x, int h) {
  pdl_trigger();
  pdl_wait();
  const bf16* row = table + size_t(*token) * h;
  for (int i = threadIdx.x; i < h; i += blockDim.x) x[i] = __bfloat162float(row[i]);
}

// Greedy sampling: argmax over the vocabulary, one block.
__global__ void argmax(const float* __restrict__ logits, int n, int* __restrict__ token) {
  pdl_trigger();
  pdl_wait();
  __shared__ float bv[1024];
  __shared__ int bi[1024];
  float v = -1e30f;
  int idx = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    if (logits[i] > v) v = logits[i], idx = i;
  bv[threadIdx.x] = v;
  bi[threadIdx.x] = idx;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && bv[threadIdx.x + s] > bv[threadIdx.x])
      bv[threadIdx.x] = bv[threadIdx.x + s], bi[threadIdx.x] = bi[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) *token = bi[0];
}

__global__ void widen(const bf16* __restrict__ a, float* __restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    b[i] = __bfloat162float(a[i]);
}

__global__ void to_bf16(const float* __restrict__ x, bf16* __restrict__ y, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(x[i]);
}

// ---------------------------------------------------------------------------------------
// Fused decode kernels (T = 1, the default; --no-fuse keeps the kernels above). Five kernels
// per layer instead of ten where the weights are read in place (six with --stream copy).
// Each computes exactly what the unfused kernels compute: the same arithmetic in the same
// order with the same bf16 rounding points, so the greedy fingerprint is unchanged (--check
// compares the two paths on the GPU). Only the loads are scheduled differently and
// intermediate values skip their round trip through memory.
//   add_rmsnorm_fused   input RMSNorm (+ the previous layer's residual); its weights are
//                       loaded before the PDL wait. Only where the previous unit's down
//                       projection did not do it already: layer 0, and every layer with
//                       --stream copy (the next layer's norm weights are not staged yet);
//   gemv_bf16           QKV projection (unchanged: float q, k, v);
//   attention_fused     Qwen3's q/k norm and RoPE (qk_norm_rope_append's arithmetic) on the
//                       GEMV's output, the new K/V row kept in shared memory and appended by
//                       one block per KV head, split-K attention whose last block of a head
//                       merges the splits (attention_combine's arithmetic). Before the wait it
//                       loads the q/k norm weights into shared memory and prefetches its old
//                       cache rows into L2; after it, optionally (--prefetch-mb) a slice of
//                       the o projection's weights;
//   gemv_epi<kEpiNorm>  o projection; the last block to finish adds the residual and runs
//                       the post-attention RMSNorm (add_rmsnorm's reduction tree);
//   gemv_epi<kEpiSiLU>  gate/up projection: a block computes 4 gate rows and the 4 matching
//                       up rows and writes bf16(SiLU(g) * u), silu_mul's arithmetic;
//   gemv_epi<kEpiNorm>  down projection; where the weights are read in place its last block
//                       adds it to the residual stream and runs the next unit's input RMSNorm
//                       (the next layer's, or the LM head's final norm) with that unit's
//                       weights, so the next layer starts with its QKV GEMV. Otherwise
//                       gemv_bf16, and the residual is left for the next add_rmsnorm_fused.
// Cross-block hand-offs use the threadfence-reduction pattern: results stored, fence, a
// ticket (atomicAdd); the block drawing the last ticket fences, reads the others' results
// from L2 and resets the ticket for the next launch. Nothing before a PDL wait writes memory
// or reads what the predecessor may write.

// A load from L2 (never L1) that the compiler keeps in program order: cross-block data.
__device__ __forceinline__ float ld_cg(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ int ld_cg(const int* p) {
  int v;
  asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Asynchronous prefetch of [p, p + bytes) into L2 by the TMA unit (sm_90): a hint that
// moves no data the kernel reads, holds no registers and is not waited for. p 16-byte
// aligned, bytes a multiple of 16 (callers guarantee both). Device memory only.
__device__ __forceinline__ void prefetch_l2(const void* p, size_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const char* c = static_cast<const char*>(p);
  while (bytes >= 16) {
    const uint32_t n = uint32_t(bytes < 65536 ? bytes : 65536) & ~15u;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(c), "r"(n) : "memory");
    c += n;
    bytes -= n;
  }
#endif
}

// gemv_bf16's dot product of 8 weights and 8 inputs.
__device__ __forceinline__ float gemv_dot8(const uint4& a, const uint4& b) {
  const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&b);
  float s = 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 fa = __bfloat1622float2(a2[k]), fb = __bfloat1622float2(b2[k]);
    s += fa.x * fb.x + fa.y * fb.y;
  }
  return s;
}

// add_rmsnorm's computation of one row of n <= 1024 * M elements by a block of NT threads
// (NT divides 1024) playing add_rmsnorm's 1024: virtual thread v = threadIdx.x + NT * k sums
// x[v], x[v + 1024], ... in that order, then the same warp and block reductions, so every
// value is bit-identical to add_rmsnorm's. All loads are issued first. CG: x and d were
// written by other blocks of this kernel (read from L2). wv[k][m] is the norm weight of
// element v + 1024 m, loaded by the caller.
constexpr int kNormThreads = 1024;
template <int NT, int M, bool CG>
__device__ __forceinline__ void rmsnorm_rows(float* x, const float* d, bf16* out, int n, const float (&wv)[kNormThreads / NT][M],
                                             float* red) {
  constexpr int K = kNormThreads / NT;
  const int tid = threadIdx.x, lane = tid & 31;
  float v[K][M], dv[K][M], s[K];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = tid + NT * k + kNormThreads * m;
      v[k][m] = dv[k][m] = 0.f;
      if (i < n) {
        v[k][m] = CG ? ld_cg(x + i) : x[i];
        if (d) dv[k][m] = CG ? ld_cg(d + i) : d[i];
      }
    }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    s[k] = 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = tid + NT * k + kNormThreads * m;
      if (i < n) {
        float xv = v[k][m];
        if (d) x[i] = xv = xv + dv[k][m];
        v[k][m] = xv;
        s[k] += xv * xv;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const float t = warp_sum(s[k]);
    if (lane == 0) red[(tid >> 5) + k * (NT / 32)] = t;
  }
  __syncthreads();
  if (tid < 32) {
    float t = red[tid];
    t = warp_sum(t);
    if (tid == 0) red[0] = t;
  }
  __syncthreads();
  const float r = rsqrtf(red[0] / n + 1e-6f);
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int i = tid + NT * k + kNormThreads * m;
      if (i < n) out[i] = __float2bfloat16(v[k][m] * r * wv[k][m]);
    }
}

// add_rmsnorm for one row (T = 1), n <= 1024 * M; the norm weights are loaded before the wait.
template <int M>
__global__ void __launch_bounds__(kNormThreads) add_rmsnorm_fused(float* __restrict__ x, const float* __restrict__ d,
                                                                  const bf16* __restrict__ w, bf16* __restrict__ out, int n) {
  pdl_trigger();
  float wv[1][M];
#pragma unroll
  for (int m = 0; m < M; ++m) {
    const int i = threadIdx.x + kNormThreads * m;
    wv[0][m] = i < n ? __bfloat162float(w[i]) : 0.f;
  }
  pdl_wait();
  __shared__ float red[32];
  rmsnorm_rows<kNormThreads, M, false>(x, d, out, n, wv, red);
}

enum { kEpiNorm = 0, kEpiSiLU = 1 };
struct GemvEpi {
  // kEpiNorm: y is the residual branch; the last block adds it to resid and writes
  // nout = RMSNorm(resid) * nw. ticket counts finished blocks (zero between launches; each
  // launch in flight needs its own). The o projection (post-attention norm) and the down
  // projection (the next unit's input norm).
  float* resid;
  const bf16* nw;
  bf16* nout;
  int* ticket;
  int l2pf;  // nw may be prefetched into L2 (device memory)
  // kEpiSiLU: rows are [gate (inter); up (inter)]; act[j] = bf16(SiLU(gate_j) * up_j).
  bf16* act;
  int inter;
};

// gemv_bf16 (the same loads and the same per-row arithmetic) with an epilogue. At most 64
// registers, so that four blocks fit an SM as gemv_bf16's do.
template <int EPI, int M>
__global__ void __launch_bounds__(256, 4) gemv_epi(const bf16* __restrict__ w, const bf16* __restrict__ x, float* y,
                                                   int rows, int cols, GemvEpi e) {
  pdl_trigger();
  const int wib = threadIdx.x >> 5, lane = threadIdx.x & 31;
  int row;
  bool valid;
  if (EPI == kEpiSiLU) {  // warps 0-3: gate rows 4b .. 4b+3; warps 4-7: the matching up rows
    const int j = blockIdx.x * 4 + (wib & 3);
    valid = j < e.inter;
    row = (wib >= 4 ? e.inter : 0) + min(j, e.inter - 1);
  } else {
    const int r = blockIdx.x * 8 + wib;
    valid = r < rows;
    row = min(r, rows - 1);
    if (blockIdx.x == 0 && threadIdx.x == 0 && e.l2pf) prefetch_l2(e.nw, size_t(rows) * sizeof(bf16));
  }
  const uint4* wr = reinterpret_cast<const uint4*>(w + size_t(row) * cols);
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  const int n8 = cols / 8;
  float acc = 0.f;
  uint4 p0 = make_uint4(0, 0, 0, 0), p1 = p0, p2 = p0, p3 = p0;
  if (lane + 96 < n8) p0 = __ldcs(&wr[lane]), p1 = __ldcs(&wr[lane + 32]), p2 = __ldcs(&wr[lane + 64]), p3 = __ldcs(&wr[lane + 96]);
  pdl_wait();
  int i = lane;
  if (i + 96 < n8) {
    acc += gemv_dot8(p0, __ldg(&xr[i])) + gemv_dot8(p1, __ldg(&xr[i + 32])) + gemv_dot8(p2, __ldg(&xr[i + 64])) +
           gemv_dot8(p3, __ldg(&xr[i + 96]));
    i += 128;
  }
  for (; i + 96 < n8; i += 128) {
    uint4 a0 = __ldcs(&wr[i]), a1 = __ldcs(&wr[i + 32]), a2 = __ldcs(&wr[i + 64]), a3 = __ldcs(&wr[i + 96]);
    acc += gemv_dot8(a0, __ldg(&xr[i])) + gemv_dot8(a1, __ldg(&xr[i + 32])) + gemv_dot8(a2, __ldg(&xr[i + 64])) +
           gemv_dot8(a3, __ldg(&xr[i + 96]));
  }
  for (; i < n8; i += 32) acc += gemv_dot8(__ldcs(&wr[i]), __ldg(&xr[i]));
  acc = warp_sum(acc);
  if (EPI == kEpiSiLU) {
    __shared__ float gu[8];
    if (lane == 0) gu[wib] = acc;
    __syncthreads();
    const int j = blockIdx.x * 4 + threadIdx.x;
    if (threadIdx.x < 4 && j < e.inter) e.act[j] = __float2bfloat16(silu_mul_f(gu[threadIdx.x], gu[4 + threadIdx.x]));
    return;
  }
  // kEpiNorm
  if (lane == 0 && valid) y[row] = acc;
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) last = atomicAdd(e.ticket, 1) == int(gridDim.x) - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  constexpr int K = kNormThreads / 256;
  float wv[K][M];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int m = 0; m < M; ++m) {
      const int c = threadIdx.x + 256 * k + kNormThreads * m;
      wv[k][m] = c < rows ? __bfloat162float(e.nw[c]) : 0.f;
    }
  __shared__ float red[32];
  rmsnorm_rows<256, M, true>(e.resid, y, e.nout, rows, wv, red);
  if (threadIdx.x == 0) *e.ticket = 0;
}

// qk_norm_rope_append's arithmetic for one q or k head (one warp): RMSNorm over hd, the norm
// weight, RoPE at pos; store(i, value) receives each bf16 output element. nw: the norm weights
// widened to float (in shared memory, loaded before the PDL wait): the same values as
// qk_norm_rope_append's __bfloat162float(nw[i]).
template <typename Store>
__device__ __forceinline__ void qk_rope(const float* __restrict__ src, const float* nw, int hd, int pos, int lane,
                                        Store store) {
  float ss = 0.f;
  for (int i = lane; i < hd; i += 32) ss += src[i] * src[i];
  const float r = rsqrtf(warp_sum(ss) / hd + 1e-6f);
  const int half = hd / 2;
  for (int i = lane; i < half; i += 32) {
    const float inv = exp2f(-2.0f * i / hd * 19.931568569324174f);  // theta^(-2i/hd), Qwen3 rope_theta = 1e6
    float sn, cs;
    sincosf(pos * inv, &sn, &cs);
    const float a = src[i] * r * nw[i], b = src[i + half] * r * nw[i + half];
    store(i, __float2bfloat16(a * cs - b * sn));
    store(i + half, __float2bfloat16(b * cs + a * sn));
  }
}

// attention's score of 8 dimensions: s += k . q, in attention's order.
__device__ __forceinline__ float attn_dot8(float s, const uint4& a, const float* q8) {
  const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float2 f = __bfloat1622float2(a2[k]);
    s += f.x * q8[2 * k] + f.y * q8[2 * k + 1];
  }
  return s;
}

// Decode attention (T = 1, causal) for head h = blockIdx.x, split blockIdx.z (gridDim.z
// splits as in attention), fused with the q/k norm, RoPE and K/V append before it and the
// split merge after it. qkv: the QKV GEMV's float output. The arithmetic is attention's,
// qk_norm_rope_append's and attention_combine's; the row at the new position comes from
// shared memory (it is the last row of the last split, so every sum sees it last, as before).
// At most 64 registers: two blocks per SM, as attention gets.
__global__ void __launch_bounds__(kAttnThreads, 2)
    attention_fused(const float* __restrict__ qkv, const bf16* __restrict__ qn, const bf16* __restrict__ kn, bf16* kc,
                    bf16* vc, bf16* __restrict__ out, int heads, int kv_heads, int hd, int pos0, int max_ctx,
                    const int* dpos, float* part, int* ticket, const void* pf, size_t pf_bytes, int kv_pf) {
  extern __shared__ float sm[];
  __shared__ float red[32];
  __shared__ __align__(16) bf16 knew[128];
  __shared__ __align__(16) bf16 vnew[128];
  __shared__ float msp[kMaxSplits], lsp[kMaxSplits];
  __shared__ float qnw[128], knw[128];  // the q and k norm weights, widened
  __shared__ int last;
  pdl_trigger();
  const int h = blockIdx.x, group = heads / kv_heads, kvh = h / group, splits = gridDim.z;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  // Before the wait: the q/k norm weights (constant) into shared memory, so that the q/k norm
  // after the wait does not wait for them (blockDim >= 2 * hd).
  if (int(threadIdx.x) < hd)
    qnw[threadIdx.x] = __bfloat162float(qn[threadIdx.x]);
  else if (int(threadIdx.x) < 2 * hd)
    knw[threadIdx.x - hd] = __bfloat162float(kn[threadIdx.x - hd]);
  // Before the wait: the cache rows older than this step (written by earlier steps, constant
  // now) into L2. Under graph replay the position read here is only a hint for the prefetch.
  if (kv_pf && threadIdx.x == 0) {
    const int ph = dpos != nullptr ? ld_cg(dpos) : pos0;
    if (ph > 0 && ph < max_ctx) {
      const int all = ph + 1, sp = (all + splits - 1) / splits;
      const int lo = min(all, int(blockIdx.z) * sp), hi = min(ph, lo + sp);
      if (hi > lo) {
        const size_t off = (size_t(kvh) * max_ctx + lo) * hd, bytes = size_t(hi - lo) * hd * sizeof(bf16);
        prefetch_l2(kc + off, bytes);
        prefetch_l2(vc + off, bytes);
      }
    }
  }
  __syncthreads();  // qnw, knw
  pdl_wait();
  if (dpos != nullptr) pos0 = ld_cg(dpos);
  // The o projection's weights (or the first pf_bytes of them) into L2 while attention leaves
  // HBM idle: one slice per block, issued by a thread of warp 3 (idle until the barrier below).
  if (pf != nullptr && threadIdx.x == 96) {
    const size_t nb = size_t(gridDim.x) * gridDim.z, b = blockIdx.x + size_t(gridDim.x) * blockIdx.z;
    const size_t per = ((pf_bytes + nb - 1) / nb + 15) & ~size_t(15), off = b * per;
    if (off < pf_bytes) prefetch_l2(static_cast<const char*>(pf) + off, per < pf_bytes - off ? per : pf_bytes - off);
  }
  const int ctx_all = pos0 + 1, span = (ctx_all + splits - 1) / splits;
  const int p_lo = min(ctx_all, int(blockIdx.z) * span), ctx = min(ctx_all, p_lo + span) - p_lo;
  const bool has_new = ctx > 0 && p_lo + ctx == ctx_all;  // the new position is this block's last row
  const int cn = has_new ? ctx - 1 : ctx;                 // rows read from the cache
  float* scores = sm;            // max_ctx
  float* qs = sm + max_ctx;      // hd
  float* accs = qs + 256;        // nw * hd
  const bf16* kb = kc + (size_t(kvh) * max_ctx + p_lo) * hd;
  const bf16* vb = vc + (size_t(kvh) * max_ctx + p_lo) * hd;
  const float scale = rsqrtf((float)hd);
  // q (warp 0) and, where this block holds the new position, its k (warp 1) and v (warp 2),
  // rounded to bf16 as qk_norm_rope_append stores them; q then scaled as attention does.
  if (warp == 0) {
    qk_rope(qkv + size_t(h) * hd, qnw, hd, pos0, lane, [&](int i, bf16 v) { qs[i] = __bfloat162float(v) * scale; });
  } else if (warp == 1 && has_new) {
    qk_rope(qkv + size_t(heads + kvh) * hd, knw, hd, pos0, lane, [&](int i, bf16 v) { knew[i] = v; });
  } else if (warp == 2 && has_new) {
    const float* src = qkv + size_t(heads + kv_heads + kvh) * hd;
    for (int i = lane; i < hd; i += 32) vnew[i] = __float2bfloat16(src[i]);
  }
  __syncthreads();
  // One block per KV head appends the new row to the cache (no block of this kernel reads it there).
  if (has_new && h % group == 0 && int(threadIdx.x) >= int(blockDim.x) - hd) {
    const int i = threadIdx.x - (blockDim.x - hd);
    const size_t at = (size_t(kvh) * max_ctx + pos0) * hd + i;
    kc[at] = knew[i];
    vc[at] = vnew[i];
  }
  // Scores: one cached position per thread, its 16-byte K loads in batches of 8; the new row
  // by the thread that owns it in attention.
  float mx = -1e30f;
  const int n8 = hd / 8;
  for (int p = threadIdx.x; p < cn; p += blockDim.x) {
    const uint4* kr = reinterpret_cast<const uint4*>(kb + size_t(p) * hd);
    float s = 0.f;
    for (int j0 = 0; j0 < n8; j0 += 8) {
      uint4 a[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) a[k] = j0 + k < n8 ? kr[j0 + k] : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (j0 + k < n8) s = attn_dot8(s, a[k], qs + (j0 + k) * 8);
    }
    scores[p] = s;
    mx = fmaxf(mx, s);
  }
  if (has_new && int(threadIdx.x) == (ctx - 1) % int(blockDim.x)) {
    const uint4* kr = reinterpret_cast<const uint4*>(knew);
    float s = 0.f;
    for (int j = 0; j < n8; ++j) s = attn_dot8(s, kr[j], qs + j * 8);
    scores[ctx - 1] = s;
    mx = fmaxf(mx, s);
  }
  const float sum = attn_softmax(scores, ctx, mx, red, warp, lane, nw);
  // V: attention's chunks and per-lane order; cached rows 8 in flight, then the new row.
  const int chunk = (ctx + nw - 1) / nw, p0 = warp * chunk, p1 = min(ctx, p0 + chunk), pc = min(p1, cn);
  if (4 * lane < hd) {
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    const bf16* vl = vb + 4 * lane;
    auto acc4 = [&](const uint2& u, float w) {
      const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
      const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
      a.x += w * lo.x, a.y += w * lo.y, a.z += w * hi.x, a.w += w * hi.y;
    };
    for (int p = p0; p < pc; p += 8) {
      uint2 u[8];
#pragma unroll
      for (int k = 0; k < 8; ++k) u[k] = p + k < pc ? *reinterpret_cast<const uint2*>(vl + size_t(p + k) * hd) : make_uint2(0, 0);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        if (p + k < pc) acc4(u[k], scores[p + k]);
    }
    if (has_new && p0 < p1 && p1 == ctx) acc4(*reinterpret_cast<const uint2*>(vnew + 4 * lane), scores[ctx - 1]);
    float* dst = accs + warp * hd + 4 * lane;
    dst[0] = a.x, dst[1] = a.y, dst[2] = a.z, dst[3] = a.w;
  }
  __syncthreads();
  if (splits == 1) {
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
      float a = 0.f;
      for (int w = 0; w < nw; ++w) a += accs[w * hd + i];
      out[size_t(h) * hd + i] = __float2bfloat16(a / sum);
    }
    return;
  }
  float* pr = part + (size_t(h) * splits + blockIdx.z) * (hd + 2);
  if (threadIdx.x == 0) pr[0] = ctx > 0 ? mx : -1e30f, pr[1] = ctx > 0 ? sum : 0.f;
  for (int i = threadIdx.x; i < hd; i += blockDim.x) {
    float a = 0.f;
    for (int w = 0; w < nw; ++w) a += accs[w * hd + i];
    pr[2 + i] = ctx > 0 ? a : 0.f;
  }
  // The last block of head h to finish merges its splits (attention_combine's arithmetic).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&ticket[h], 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const float* ph = part + size_t(h) * splits * (hd + 2);
  const int i = threadIdx.x;
  float mv = 0.f, lv = 0.f, ov[kMaxSplits];
  if (i < splits) mv = ld_cg(ph + i * (hd + 2)), lv = ld_cg(ph + i * (hd + 2) + 1);
#pragma unroll
  for (int s = 0; s < kMaxSplits; ++s) ov[s] = i < hd && s < splits ? ld_cg(ph + s * (hd + 2) + 2 + i) : 0.f;
  if (i < splits) msp[i] = mv, lsp[i] = lv;
  __syncthreads();
  if (i < hd) {
    float m = -1e30f;
    for (int s = 0; s < splits; ++s) m = fmaxf(m, msp[s]);
    float l = 0.f, o = 0.f;
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s)
      if (s < splits) {
        const float e = __expf(msp[s] - m);
        l += lsp[s] * e;
        o += ov[s] * e;
      }
    out[size_t(h) * hd + i] = __float2bfloat16(o / l);
  }
  if (i == 0) ticket[h] = 0;
}

// ---------------------------------------------------------------------------------------
// Engine.

enum class Place { kDevice, kHost };
enum class Stream { kCopy, kZeroCopy };

struct Options {
  std::string preset = "qwen3-8b";
  Place weights = Place::kDevice;
  Stream stream = Stream::kCopy;
  Place kv = Place::kDevice;
  int context = 1024;
  int tokens = 32;
  double duration_s = 0;
  double spill_mb = 0;
  int device = 0;
  bool frames = false;
  double period_ms = 5000, deadline_ms = 0;
  int image_tokens = 1024, prompt_tokens = 64, frame_decode_tokens = 16, requests = 5;
  std::string frame_log;  // --frame-log: one CSV line per frame, as it ends
  std::string token_log;  // --token-log: one CSV line per decoded token, as it ends
  bool probe = true;
  bool per_unit = false;
  int warmup = 2;
  bool graph = false;
  bool pdl = true;
  bool fuse = true;          // fused decode kernels (--no-fuse: the unfused reference path)
  double prefetch_mb = 0;    // o-projection weights prefetched into L2 during attention (MB; 0: off)
  bool check = false;        // --check: fused against unfused kernels on random inputs, then exit
};

struct Counters {
  double weight = 0, kv_read = 0, kv_write = 0, embed = 0, spill = 0;
  double total() const { return weight + kv_read + kv_write + embed; }
};

// Each unit is an NVTX range named like the module it runs ("model.layers.3",
// "lm_head", as PyTorch module hooks would name it), so the interposer finds
// the layer boundaries with its default pattern, knowing nothing of this engine.
static void nvtx_push(const char* fmt, int i) {
  char name[64];
  std::snprintf(name, sizeof(name), fmt, i);
  nvtxRangePushA(name);
}

class Engine {
 public:
  Engine(const Preset& p, const Options& o) : p_(p), o_(o) {}

  void init() {
    CUDA_CHECK(cudaSetDevice(o_.device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&cs_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ms_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&ss_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasCreate(&blas_));
    CUBLAS_CHECK(cublasSetStream(blas_, cs_));
    for (int i = 0; i < 2; ++i) {
      CUDA_CHECK(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming));
      CUDA_CHECK(cudaEventCreateWithFlags(&used_[i], cudaEventDisableTiming));
    }
    CUDA_CHECK(cudaEventCreateWithFlags(&computed_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&spilled_, cudaEventDisableTiming));
    const Shape& s = p_.llm;
    for (const Shape* sh : {&p_.llm, &p_.vision})
      if (sh->layers > 0 && (sh->head_dim % 8 != 0 || sh->head_dim > 128)) die("head_dim must be a multiple of 8, at most 128");
    LayerLayout ll(s);
    layer_elems_ = ll.total;
    head_elems_ = size_t(p_.vocab) * s.hidden + s.hidden;  // LM head + final norm
    max_ctx_ = o_.frames ? std::max(o_.context, 8) + o_.image_tokens / p_.merge + o_.prompt_tokens +
                               o_.frame_decode_tokens + 8
                         : o_.context + std::max(o_.tokens, 1) + 8;
    if (max_ctx_ > 32768) die("context too long: at most 32768 positions (have " + std::to_string(max_ctx_) + ")");
    max_t_ = o_.frames ? std::max(o_.image_tokens, o_.image_tokens / p_.merge + o_.prompt_tokens) : 1;

    const size_t wbytes = (layer_elems_ * s.layers + head_elems_) * sizeof(bf16);
    weights_ = alloc(wbytes, o_.weights, "weights");
    fill(weights_, wbytes / sizeof(bf16), o_.weights, 1.0f / std::sqrt((float)s.hidden), 1);
    // Norm weights at 1 so activations stay in range.
    for (int l = 0; l < s.layers; ++l) set_norms(layer_ptr(l), ll, s, o_.weights);
    set_ones(weights_ + layer_elems_ * s.layers + size_t(p_.vocab) * s.hidden, s.hidden, o_.weights);
    // The embedding table is looked up one row per token: device memory in device mode,
    // host memory (read zero-copy) in host mode.
    embed_ = alloc(size_t(p_.vocab) * s.hidden * sizeof(bf16), o_.weights, "embedding");
    fill(embed_, size_t(p_.vocab) * s.hidden, o_.weights, 1.0f, 2);
    if (o_.weights == Place::kHost && o_.stream == Stream::kCopy) {
      const size_t stage = std::max(layer_elems_, head_elems_) * sizeof(bf16);
      for (int i = 0; i < 2; ++i) CUDA_CHECK(cudaMalloc(&stage_[i], stage));
    }
    // KV cache: [layer][kv_head][max_ctx][head_dim], K and V.
    kv_layer_elems_ = size_t(s.kv_heads) * max_ctx_ * s.head_dim;
    const size_t kvbytes = 2 * kv_layer_elems_ * s.layers * sizeof(bf16);
    kv_ = alloc(kvbytes, o_.kv, "KV cache");
    fill(kv_, kvbytes / sizeof(bf16), o_.kv, 1.0f, 3);
    if (o_.frames && p_.vision.layers > 0) {
      LayerLayout vl(p_.vision);
      vlayer_elems_ = vl.total;
      const size_t vbytes = vlayer_elems_ * p_.vision.layers * sizeof(bf16);
      vweights_ = alloc(vbytes, o_.weights, "vision weights");
      fill(vweights_, vbytes / sizeof(bf16), o_.weights, 1.0f / std::sqrt((float)p_.vision.hidden), 4);
      for (int l = 0; l < p_.vision.layers; ++l) set_norms(vweights_ + vlayer_elems_ * l, vl, p_.vision, o_.weights);
      vkv_ = static_cast<bf16*>(dalloc(2 * size_t(p_.vision.kv_heads) * o_.image_tokens * p_.vision.head_dim * sizeof(bf16)));
      if (o_.weights == Place::kHost && o_.stream == Stream::kCopy) {
        const size_t need = std::max({layer_elems_, head_elems_, vlayer_elems_}) * sizeof(bf16);
        for (int i = 0; i < 2; ++i) {
          CUDA_CHECK(cudaFree(stage_[i]));
          CUDA_CHECK(cudaMalloc(&stage_[i], need));
        }
      }
    }
    // Activations (device).
    const int wide = std::max({s.hidden, 2 * s.inter, (s.heads + 2 * s.kv_heads) * s.head_dim, p_.vocab,
                               p_.vision.layers ? std::max(2 * p_.vision.inter, (p_.vision.heads + 2 * p_.vision.kv_heads) * p_.vision.head_dim) : 0});
    x_ = static_cast<float*>(dalloc(size_t(max_t_) * wide * sizeof(float)));
    tmp_ = static_cast<float*>(dalloc(size_t(max_t_) * wide * sizeof(float)));
    big_ = static_cast<float*>(dalloc(size_t(max_t_) * wide * sizeof(float)));
    xb_ = static_cast<bf16*>(dalloc(size_t(max_t_) * wide * sizeof(bf16)));
    qb_ = static_cast<bf16*>(dalloc(size_t(max_t_) * wide * sizeof(bf16)));
    token_ = static_cast<int*>(dalloc(sizeof(int)));
    dpos_buf_ = static_cast<int*>(dalloc(sizeof(int)));
    const int max_heads = std::max(s.heads, p_.vision.heads);
    part_ = static_cast<float*>(dalloc(size_t(max_heads) * kMaxSplits * (128 + 2) * sizeof(float)));
    // PDL only where no copy or event sits between kernels (weights read in place).
    pdl_ = o_.pdl && (o_.weights == Place::kDevice || o_.stream == Stream::kZeroCopy) && o_.spill_mb == 0;
    // Fused decode kernels (T = 1): the norm keeps at most 8 elements per virtual thread.
    fuse_ = o_.fuse && s.hidden <= 8 * kNormThreads;
    tickets_ = static_cast<int*>(dalloc(kTickets * sizeof(int)));
    CUDA_CHECK(cudaMemset(tickets_, 0, kTickets * sizeof(int)));
    nb_ = static_cast<bf16*>(dalloc(size_t(s.hidden) * sizeof(bf16)));
    // L2 prefetches (TMA) only of device memory: weights in HBM, and the KV cache when it is there.
    wpf_ = o_.weights == Place::kDevice;
    kvpf_ = o_.kv == Place::kDevice;
    pf_cap_ = wpf_ ? size_t(o_.prefetch_mb * 1e6) : 0;
    CUDA_CHECK(cudaMemset(token_, 0, sizeof(int)));
    if (o_.spill_mb > 0) {
      spill_bytes_ = size_t(o_.spill_mb * 1e6);
      spill_src_ = dalloc(spill_bytes_);
      CUDA_CHECK(cudaHostAlloc(&spill_dst_, spill_bytes_, cudaHostAllocDefault));
    }
    const int smem = int(attention_smem(std::max(max_ctx_, o_.image_tokens), std::max(s.head_dim, 128)));
    if (smem + 2048 > 227 * 1024) die("context too long for the attention kernel's shared memory");  // + attention_fused's static
    CUDA_CHECK(cudaFuncSetAttribute(attention, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CHECK(cudaFuncSetAttribute(attention_fused, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  // One decode step at position pos: T = 1 through every layer and the LM head.
  // Where the weights are read in place, each layer's down projection also runs the next
  // unit's input norm (the next layer's, or the LM head's final norm), with that unit's norm
  // weights: so those weights are read, and counted, inside the previous unit's NVTX range.
  void decode_step(int pos, Counters* c, std::vector<Counters>* per_unit) {
    const Shape& s = p_.llm;
    LayerLayout ll(s);
    launch(embed, dim3(1), dim3(256), 0, static_cast<const bf16*>(embed_), static_cast<const int*>(token_), x_, s.hidden);
    pending_ = false;
    normed_ = false;
    c->embed += s.hidden * sizeof(bf16);
    const bf16* final_norm = weights_ + layer_elems_ * s.layers + size_t(p_.vocab) * s.hidden;  // in place
    for (int l = 0; l < s.layers; ++l) {
      Counters u;
      nvtx_push("model.layers.%d", l);
      const bf16* w = fetch(layer_ptr(l), layer_elems_, unit_++);
      bf16* kc = kv_ + 2 * kv_layer_elems_ * l;
      const bf16* next = !fuse_next() ? nullptr : l + 1 < s.layers ? layer_ptr(l + 1) + ll.ln1 : final_norm;
      layer(s, w, 1, pos, kc, kc + kv_layer_elems_, max_ctx_, true, &u, next);
      release();
      spill(&u);
      nvtxRangePop();
      if (per_unit) (*per_unit)[l] = u;
      add(c, u);
    }
    nvtxRangePushA("lm_head");
    Counters u;
    const bf16* w = fetch(weights_ + layer_elems_ * s.layers, head_elems_, unit_++);
    input_norm(w + size_t(p_.vocab) * s.hidden, 1, s.hidden, &u);  // the final norm, unless the last layer ran it
    linear(w, xb_, big_, 1, p_.vocab, s.hidden, &u);
    launch(argmax, dim3(1), dim3(1024), 0, static_cast<const float*>(big_), p_.vocab, token_);
    release();
    nvtxRangePop();
    if (per_unit) per_unit->back() = u;
    add(c, u);
  }

  // A VLM request: vision encoder over the patches, prefill over merged image tokens and
  // the prompt, then a short decode.
  void frame_request(Counters* c) {
    const Shape& s = p_.llm;
    int pos = 0;
    if (p_.vision.layers > 0) {
      const Shape& v = p_.vision;
      const int T = o_.image_tokens;
      fill_x(T * v.hidden);
      for (int l = 0; l < v.layers; ++l) {
        Counters u;
        nvtx_push("visual.blocks.%d", l);
        const bf16* w = fetch(vweights_ + vlayer_elems_ * l, vlayer_elems_, unit_++);
        const size_t vk = size_t(v.kv_heads) * T * v.head_dim;
        layer(v, w, T, 0, vkv_, vkv_ + vk, T, false, &u);
        release();
        nvtxRangePop();
        add(c, u);
      }
    }
    const int T = o_.image_tokens / p_.merge + o_.prompt_tokens;
    fill_x(T * s.hidden);
    for (int l = 0; l < s.layers; ++l) {
      Counters u;
      nvtx_push("model.layers.%d", l);
      const bf16* w = fetch(layer_ptr(l), layer_elems_, unit_++);
      bf16* kc = kv_ + 2 * kv_layer_elems_ * l;
      layer(s, w, T, 0, kc, kc + kv_layer_elems_, max_ctx_, true, &u);
      release();
      nvtxRangePop();
      add(c, u);
    }
    pos = T;
    // The first token comes from the last prefill position's logits (the LM head unit, named
    // as decode_step names it).
    {
      nvtxRangePushA("lm_head");
      Counters u;
      const bf16* w = fetch(weights_ + layer_elems_ * s.layers, head_elems_, unit_++);
      if (pending_) {  // the last layer's residual, for all T rows
        launch(add_inplace, dim3(256), dim3(256), 0, x_, static_cast<const float*>(tmp_), size_t(T) * s.hidden);
        pending_ = false;
      }
      norm(x_ + size_t(T - 1) * s.hidden, w + size_t(p_.vocab) * s.hidden, 1, s.hidden);
      linear(w, xb_, big_, 1, p_.vocab, s.hidden, &u);
      u.weight += s.hidden * sizeof(bf16);  // the final norm's weights (run here: prefill layers leave it)
      launch(argmax, dim3(1), dim3(1024), 0, static_cast<const float*>(big_), p_.vocab, token_);
      release();
      nvtxRangePop();
      add(c, u);
    }
    for (int k = 0; k < o_.frame_decode_tokens; ++k) decode_step(pos + k, c, nullptr);
  }

  // --graph: one decode step captured once and replayed; the position is read from
  // device memory and advanced inside the graph. Only for weights the kernels read in
  // place (device or zero-copy): no per-layer copies. Counts the captured step's bytes.
  void capture_step(int pos, Counters* step) {
    CUDA_CHECK(cudaMemcpy(dpos_buf_, &pos, sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamBeginCapture(cs_, cudaStreamCaptureModeThreadLocal));
    dpos_ = dpos_buf_;
    decode_step(pos, step, nullptr);
    launch(advance_pos, dim3(1), dim3(1), 0, dpos_buf_);
    dpos_ = nullptr;
    cudaGraph_t g;
    CUDA_CHECK(cudaStreamEndCapture(cs_, &g));
    CUDA_CHECK(cudaGraphInstantiate(&graph_, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
  }
  void set_pos(int pos) { CUDA_CHECK(cudaMemcpyAsync(dpos_buf_, &pos, sizeof(int), cudaMemcpyHostToDevice, cs_)); }
  void replay() { CUDA_CHECK(cudaGraphLaunch(graph_, cs_)); }
  // K/V bytes of one step at position pos (read pos + 1 positions, write one), per the
  // attention kernel's reads: what decode_step counts eagerly.
  double kv_read_at(int pos) const { return p_.llm.layers * 2.0 * (pos + 1) * p_.llm.kv_heads * p_.llm.head_dim * sizeof(bf16); }

  // Times the pieces of one decode layer in place (device weights): the gate/up GEMV's
  // achieved read bandwidth, the attention kernel at position pos, and the whole layer as it
  // runs in decode (fused: its input norm ran in the previous repetition's down projection,
  // layer 0 standing in for its own successor).
  void kernel_probe(int pos) {
    const Shape& s = p_.llm;
    LayerLayout ll(s);
    const bf16* w = layer_ptr(0);
    bf16* kc = kv_;
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    auto time_us = [&](auto&& f) {
      f();
      CUDA_CHECK(cudaEventRecord(a, cs_));
      for (int i = 0; i < 20; ++i) f();
      CUDA_CHECK(cudaEventRecord(b, cs_));
      CUDA_CHECK(cudaEventSynchronize(b));
      float ms;
      CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
      return ms * 1e3 / 20;
    };
    Counters u;
    const double gemv_us = time_us([&] { linear(w + ll.gu, xb_, big_, 1, 2 * s.inter, s.hidden, &u); });
    const double attn_us = time_us([&] {
      if (fuse_)
        attend_fused(s, w, kc, kc + kv_layer_elems_, pos, max_ctx_);  // with q/k norm, RoPE, append, merge
      else
        attend(s, kc, kc + kv_layer_elems_, 1, pos, max_ctx_, true);
    });
    const bf16* next = fuse_next() ? w + ll.ln1 : nullptr;
    const double layer_us = time_us([&] { layer(s, w, 1, pos, kc, kc + kv_layer_elems_, max_ctx_, true, &u, next); });
    normed_ = pending_ = false;  // decode_step starts from the embedding
    const double gu_bytes = 2.0 * s.inter * s.hidden * sizeof(bf16);
    std::printf("ripple-llm: kernel probe: gate/up GEMV %.1f us (%.0f GB/s), attention at %d positions %.1f us, "
                "whole layer %.1f us (%.0f GB/s of its weights)\n",
                gemv_us, gu_bytes / gemv_us / 1e3, pos + 1, attn_us, layer_us, ll.total * 2.0 / layer_us / 1e3);
  }

  // --check: the fused decode kernels against the unfused ones, on the GPU, on random inputs
  // with layer 0's weights and KV cache: whole layers (residual stream, down projection,
  // SiLU output, post-attention norm, appended K/V rows) at two positions, with the position
  // on the host and in device memory (graph replay), each once as with --stream copy (the
  // residual left pending) and once with the next unit's input norm in the down projection
  // (random norm weights; against the unfused layer followed by add_rmsnorm: the residual
  // stream and the normalized input too); attention alone (q/k norm, RoPE, append, split
  // merge) at positions covering 1 to 16 splits; and one whole decode step (all layers and
  // the LM head as decode runs them in this mode: logits and greedy token). Prints each
  // comparison's largest absolute difference and that difference relative to the largest
  // reference value. Returns true when every difference is within 1e-2 relative and the
  // layers with the next norm and the decode step are bit-identical (the fused kernels are
  // meant to be bit-identical throughout; anything else may change the greedy fingerprint).
  bool check() {
    const Shape& s = p_.llm;
    if (!fuse_) {
      std::printf("ripple-llm: check: the fused kernels are off (--no-fuse, or hidden > %d): nothing to compare\n",
                  8 * kNormThreads);
      return true;
    }
    LayerLayout ll(s);
    const int H = s.hidden, hd = s.head_dim, nqkv = (s.heads + 2 * s.kv_heads) * hd;
    const bf16* w = fetch(layer_ptr(0), layer_elems_, unit_++);
    bf16* kc = kv_;
    bf16* vc = kv_ + kv_layer_elems_;
    float* x0 = static_cast<float*>(dalloc(size_t(H) * sizeof(float)));
    float* d0 = static_cast<float*>(dalloc(size_t(H) * sizeof(float)));
    float* qkv0 = static_cast<float*>(dalloc(size_t(nqkv) * sizeof(float)));
    bf16* nw0 = static_cast<bf16*>(dalloc(size_t(H) * sizeof(bf16)));  // the next unit's norm weights
    auto rnd = [&](float* dst, size_t n, float scale, uint64_t seed) {  // bf16 noise widened, via qb_
      fill_uniform<<<64, 256, 0, cs_>>>(qb_, n, scale, seed, 0);
      widen<<<64, 256, 0, cs_>>>(qb_, dst, n);
      CUDA_CHECK(cudaGetLastError());
    };
    rnd(x0, H, 1.0f, 101);
    rnd(d0, H, 0.5f, 102);
    rnd(qkv0, nqkv, 2.0f, 103);
    fill_uniform<<<64, 256, 0, cs_>>>(nw0, H, 1.0f, 104, 0);
    CUDA_CHECK(cudaGetLastError());
    auto sync = [&] {
      CUDA_CHECK(cudaStreamSynchronize(cs_));
      CUDA_CHECK(cudaGetLastError());
    };
    auto get_f = [&](const float* p, size_t n) {
      std::vector<float> v(n);
      CUDA_CHECK(cudaMemcpy(v.data(), p, n * sizeof(float), cudaMemcpyDefault));
      return v;
    };
    auto get_b = [&](const bf16* p, size_t n) {
      std::vector<bf16> b(n);
      CUDA_CHECK(cudaMemcpy(b.data(), p, n * sizeof(bf16), cudaMemcpyDefault));
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = __bfloat162float(b[i]);
      return v;
    };
    auto rows_at = [&](const bf16* cache, int pos) {  // the cache rows of position pos, all KV heads
      std::vector<float> v;
      for (int k = 0; k < s.kv_heads; ++k) {
        std::vector<float> r = get_b(cache + (size_t(k) * max_ctx_ + pos) * hd, hd);
        v.insert(v.end(), r.begin(), r.end());
      }
      return v;
    };
    using Outs = std::vector<std::pair<const char*, std::vector<float>>>;
    auto set_pos = [&](bool device_pos, int pos) {
      sync();
      if (device_pos) CUDA_CHECK(cudaMemcpyAsync(dpos_buf_, &pos, sizeof(int), cudaMemcpyHostToDevice, cs_));
      dpos_ = device_pos ? dpos_buf_ : nullptr;
    };
    // A whole layer on x0 with the residual d0 pending. With next (norm weights), also the next
    // unit's input norm: in the fused down projection's epilogue, or unfused after the layer.
    auto run_layer = [&](bool fused, bool device_pos, int pos, const bf16* next) {
      CUDA_CHECK(cudaMemcpyAsync(x_, x0, size_t(H) * sizeof(float), cudaMemcpyDeviceToDevice, cs_));
      CUDA_CHECK(cudaMemcpyAsync(tmp_, d0, size_t(H) * sizeof(float), cudaMemcpyDeviceToDevice, cs_));
      set_pos(device_pos, pos);
      pending_ = true;
      normed_ = false;
      const bool f = fuse_;
      fuse_ = fused;
      Counters u;
      layer(s, w, 1, pos, kc, vc, max_ctx_, true, &u, next);
      sync();
      Outs o{{"residual x", {}},
             {"down proj", get_f(tmp_, H)},
             {"SiLU(g)*u", get_b(qb_, s.inter)},
             {"post-attn norm", get_b(fused ? nb_ : xb_, H)}};
      if (next != nullptr && !fused) {  // the next layer's unfused add_rmsnorm (fuse_ is off)
        input_norm(next, 1, H, &u);
        sync();
      }
      fuse_ = f;
      o[0].second = get_f(x_, H);
      if (next != nullptr) o.push_back({"next input norm", get_b(xb_, H)});
      o.push_back({"K row", rows_at(kc, pos)});
      o.push_back({"V row", rows_at(vc, pos)});
      dpos_ = nullptr;
      pending_ = normed_ = false;
      return o;
    };
    // Attention alone on the float q, k, v qkv0.
    auto run_attn = [&](bool fused, bool device_pos, int pos) {
      CUDA_CHECK(cudaMemcpyAsync(big_, qkv0, size_t(nqkv) * sizeof(float), cudaMemcpyDeviceToDevice, cs_));
      set_pos(device_pos, pos);
      if (fused) {
        attend_fused(s, w, kc, vc, pos, max_ctx_);
      } else {
        const int warps = s.heads + 2 * s.kv_heads;
        launch(qk_norm_rope_append, dim3((warps * 32 + 255) / 256), dim3(256), 0, static_cast<const float*>(big_),
               w + ll.qn, w + ll.kn, qb_, kc, vc, 1, s.heads, s.kv_heads, hd, pos, max_ctx_, static_cast<const int*>(dpos_));
        attend(s, kc, vc, 1, pos, max_ctx_, true);
      }
      sync();
      dpos_ = nullptr;
      return Outs{{"attention out", get_b(xb_, size_t(s.heads) * hd)}, {"K row", rows_at(kc, pos)}, {"V row", rows_at(vc, pos)}};
    };
    double worst = 0;
    bool exact = true, strict_exact = true;
    // strict: must be bit-identical (the next-norm fusion and the whole step).
    auto compare = [&](const char* what, int pos, const Outs& ref, const Outs& got, bool strict) {
      for (size_t t = 0; t < ref.size(); ++t) {
        const std::vector<float>& a = ref[t].second;
        const std::vector<float>& b = got[t].second;
        double abs_err = 0, ref_max = 0;
        for (size_t i = 0; i < a.size(); ++i) {
          const double d = std::fabs(double(a[i]) - double(b[i]));
          abs_err = std::max(abs_err, std::isnan(d) ? INFINITY : d);
          ref_max = std::max(ref_max, std::fabs(double(a[i])));
        }
        const double rel = abs_err / std::max(ref_max, 1e-30);
        std::printf("ripple-llm: check: %-18s pos %5d  %-15s max abs err %.3g, max rel err %.3g%s\n", what, pos,
                    ref[t].first, abs_err, rel, strict && abs_err != 0 ? "  (must be bit-identical)" : "");
        exact = exact && abs_err == 0;
        if (strict) strict_exact = strict_exact && abs_err == 0;
        worst = std::max(worst, rel);
      }
    };
    std::vector<int> layer_pos = {std::min(o_.context, max_ctx_ - 2), 3};
    for (int pos : layer_pos) {
      const Outs ref = run_layer(false, false, pos, nullptr);
      compare("layer", pos, ref, run_layer(true, false, pos, nullptr), false);
      compare("layer (graph)", pos, ref, run_layer(true, true, pos, nullptr), false);
      const Outs refn = run_layer(false, false, pos, nw0);
      compare("layer+norm", pos, refn, run_layer(true, false, pos, nw0), true);
      compare("layer+norm (graph)", pos, refn, run_layer(true, true, pos, nw0), true);
    }
    std::vector<int> attn_pos;
    for (int pos : {0, 1, 200, 255, 256, 300, 511, 1000, o_.context, 4100, 8191, max_ctx_ - 2})
      if (pos >= 0 && pos <= max_ctx_ - 2 && std::find(attn_pos.begin(), attn_pos.end(), pos) == attn_pos.end())
        attn_pos.push_back(pos);
    for (int pos : attn_pos) {
      const Outs ref = run_attn(false, false, pos);
      compare("attention", pos, ref, run_attn(true, false, pos), false);
      if (pos == attn_pos.back()) compare("attn (graph)", pos, ref, run_attn(true, true, pos), false);
    }
    release();  // done with layer 0's (staged) weights: decode_step fetches its own
    // One whole decode step from the same token at the same position, unfused then as decode
    // runs in this mode (with --weights device or --stream zerocopy: the next unit's input norm
    // in each down projection, the LM head's final norm in the last layer's). Both write the
    // same new K/V rows; each layer's attention reads only the older rows and its own new one.
    auto run_step = [&](bool fused, int pos) {
      sync();
      const int tok = 4242 % p_.vocab;  // pageable source: staged before the call returns
      CUDA_CHECK(cudaMemcpyAsync(token_, &tok, sizeof(int), cudaMemcpyHostToDevice, cs_));
      const bool f = fuse_;
      fuse_ = fused;
      Counters c;
      decode_step(pos, &c, nullptr);
      fuse_ = f;
      sync();
      return Outs{{"logits", get_f(big_, p_.vocab)}, {"greedy token", {float(last_token())}}};
    };
    {
      const int pos = layer_pos[0];
      const Outs ref = run_step(false, pos);
      compare(fuse_next() ? "step (next norms)" : "step", pos, ref, run_step(true, pos), true);
    }
    CUDA_CHECK(cudaFree(x0));
    CUDA_CHECK(cudaFree(d0));
    CUDA_CHECK(cudaFree(qkv0));
    CUDA_CHECK(cudaFree(nw0));
    const bool pass = worst <= 1e-2 && strict_exact;
    std::printf("ripple-llm: check: %s (%s; largest relative difference %.3g)\n", pass ? "PASS" : "FAIL",
                exact          ? "bit-identical: the fused path computes what the unfused one does"
                : strict_exact ? "not bit-identical: the greedy fingerprint may differ"
                               : "not bit-identical where it must be: layer+norm or the decode step differ",
                worst);
    std::printf("RESULT engine=ripple-llm mode=check preset=%s pass=%d exact=%d max_rel_err=%.3g\n", p_.name, pass ? 1 : 0,
                exact ? 1 : 0, worst);
    return pass;
  }

  int last_token() const {
    int t = -1;
    CUDA_CHECK(cudaMemcpy(&t, token_, sizeof(int), cudaMemcpyDeviceToHost));
    return t;
  }
  bool pdl() const { return pdl_; }
  bool fused() const { return fuse_; }

  cudaStream_t stream() const { return cs_; }
  int max_ctx() const { return max_ctx_; }
  size_t weight_bytes() const { return (layer_elems_ * p_.llm.layers + head_elems_) * sizeof(bf16); }

 private:
  // Launches a kernel on the compute stream, with programmatic dependent launch when on.
  template <typename... KArgs, typename... Args>
  void launch(void (*k)(KArgs...), dim3 grid, dim3 block, size_t smem, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = cs_;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = pdl_ ? 1 : 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, static_cast<KArgs>(args)...));
  }

  // A unit's input norm (x_ += pending residual; xb_ = RMSNorm(x_) * w, its weights counted),
  // unless the previous unit's last kernel already ran it with these weights (normed_).
  void input_norm(const bf16* w, int T, int n, Counters* u) {
    if (normed_) {
      normed_ = false;
      return;
    }
    norm(x_, w, T, n);
    u->weight += double(n) * sizeof(bf16);
  }

  // The next unit's input norm runs in the down projection's epilogue (decode_step): with the
  // fused kernels, where the next unit's weights are read in place (device or zero-copy).
  bool fuse_next() const { return fuse_ && (o_.weights == Place::kDevice || o_.stream == Stream::kZeroCopy); }

  // x += pending residual (if any), then RMSNorm into xb_.
  void norm(float* x, const bf16* w, int T, int n) {
    const float* d = pending_ ? static_cast<const float*>(tmp_) : nullptr;
    if (T == 1 && fuse_ && n <= 4 * kNormThreads)
      launch(add_rmsnorm_fused<4>, dim3(1), dim3(kNormThreads), 0, x, d, w, xb_, n);
    else if (T == 1 && fuse_)
      launch(add_rmsnorm_fused<8>, dim3(1), dim3(kNormThreads), 0, x, d, w, xb_, n);
    else
      launch(add_rmsnorm, dim3(T), dim3(1024), 0, x, d, w, xb_, n);
    pending_ = false;
  }

  [[noreturn]] static void die(const std::string& m) {
    std::fprintf(stderr, "ripple-llm: error: %s\n", m.c_str());
    std::exit(2);
  }

  void* dalloc(size_t n) {
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, n));
    return p;
  }

  bf16* alloc(size_t bytes, Place where, const char* what) {
    void* p = nullptr;
    cudaError_t e = where == Place::kDevice ? cudaMalloc(&p, bytes)
                                            : cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess)
      die(std::string("cannot allocate ") + what + " (" + std::to_string(bytes / 1000000) + " MB in " +
          (where == Place::kDevice ? "GPU" : "pinned host") + " memory): " + cudaGetErrorString(e));
    return static_cast<bf16*>(p);
  }

  // Random init: on the device directly, or through a device staging chunk for host memory.
  void fill(bf16* p, size_t n, Place where, float scale, uint64_t seed) {
    if (where == Place::kDevice) {
      fill_uniform<<<4096, 256>>>(p, n, scale, seed, 0);
      CUDA_CHECK(cudaGetLastError());
      return;
    }
    const size_t chunk = size_t(64) << 20;
    bf16* tmp = static_cast<bf16*>(dalloc(chunk * sizeof(bf16)));
    for (size_t off = 0; off < n; off += chunk) {
      const size_t m = std::min(chunk, n - off);
      fill_uniform<<<4096, 256>>>(tmp, m, scale, seed, off);
      CUDA_CHECK(cudaMemcpy(p + off, tmp, m * sizeof(bf16), cudaMemcpyDeviceToHost));
    }
    CUDA_CHECK(cudaFree(tmp));
  }

  void set_ones(bf16* p, size_t n, Place where) {
    if (where == Place::kDevice) {
      fill_const<<<64, 256>>>(p, n, 1.0f);
    } else {
      for (size_t i = 0; i < n; ++i) p[i] = __float2bfloat16(1.0f);
    }
  }

  void set_norms(bf16* base, const LayerLayout& ll, const Shape& s, Place where) {
    set_ones(base + ll.ln1, s.hidden, where);
    set_ones(base + ll.ln2, s.hidden, where);
    set_ones(base + ll.qn, s.head_dim, where);
    set_ones(base + ll.kn, s.head_dim, where);
  }

  bf16* layer_ptr(int l) const { return weights_ + layer_elems_ * l; }

  // Makes a unit's weight block readable by the compute stream. Device mode and
  // zero-copy: the block itself (a mapped host pointer works in kernels under UVA).
  // Copy mode: an async H2D copy into the staging buffer the unit before last used,
  // once that unit's compute is done; compute waits for the copy.
  const bf16* fetch(const bf16* src, size_t elems, uint64_t unit) {
    if (o_.weights == Place::kDevice || o_.stream == Stream::kZeroCopy) return src;
    cur_ = unit & 1;
    CUDA_CHECK(cudaStreamWaitEvent(ms_, used_[cur_], 0));
    CUDA_CHECK(cudaMemcpyAsync(stage_[cur_], src, elems * sizeof(bf16), cudaMemcpyHostToDevice, ms_));
    CUDA_CHECK(cudaEventRecord(copied_[cur_], ms_));
    CUDA_CHECK(cudaStreamWaitEvent(cs_, copied_[cur_], 0));
    return stage_[cur_];
  }
  void release() {
    if (o_.weights == Place::kHost && o_.stream == Stream::kCopy) CUDA_CHECK(cudaEventRecord(used_[cur_], cs_));
  }

  // The spill belongs to its layer, as a real KV/activation offload does: it starts once
  // the layer's kernels are done, and the next layer's kernels wait for it (the next
  // layer's weight copy on ms_ still overlaps it). Unbounded, the spill stream fell ever
  // further behind the layers it was issued in, so a layer's traffic happened long after
  // the layer, where no gate can place it.
  void spill(Counters* u) {
    if (spill_bytes_ == 0) return;
    CUDA_CHECK(cudaEventRecord(computed_, cs_));
    CUDA_CHECK(cudaStreamWaitEvent(ss_, computed_, 0));
    CUDA_CHECK(cudaMemcpyAsync(spill_dst_, spill_src_, spill_bytes_, cudaMemcpyDeviceToHost, ss_));
    CUDA_CHECK(cudaEventRecord(spilled_, ss_));
    CUDA_CHECK(cudaStreamWaitEvent(cs_, spilled_, 0));
    u->spill += spill_bytes_;
  }

  void linear(const bf16* w, const bf16* x, float* y, int T, int rows, int cols, Counters* u) {
    u->weight += double(rows) * cols * sizeof(bf16);
    if (T == 1) {
      launch(gemv_bf16, dim3((rows * 32 + 255) / 256), dim3(256), 0, w, x, y, rows, cols);
      return;
    }
    const float one = 1.f, zero = 0.f;
    // Column-major view: Y^T (rows x T) = W (cols x rows)^T * X^T (cols x T).
    CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, rows, T, cols, &one, w, CUDA_R_16BF, cols, x,
                              CUDA_R_16BF, cols, &zero, y, CUDA_R_32F, rows, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }

  // One layer over T tokens. next_norm (decode with the fused kernels only; ignored otherwise):
  // the next unit's input-norm weights, read in place; the layer's down projection then also
  // runs that norm (see layer_fused).
  void layer(const Shape& s, const bf16* w, int T, int pos0, bf16* kc, bf16* vc, int max_ctx, bool causal,
             Counters* u, const bf16* next_norm = nullptr) {
    if (T == 1 && causal && fuse_ && &s == &p_.llm) return layer_fused(s, w, pos0, kc, vc, max_ctx, u, next_norm);
    LayerLayout ll(s);
    const int q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    input_norm(w + ll.ln1, T, s.hidden, u);
    linear(w + ll.qkv, xb_, big_, T, q + 2 * kv, s.hidden, u);
    const int warps = T * (s.heads + 2 * s.kv_heads);
    launch(qk_norm_rope_append, dim3((warps * 32 + 255) / 256), dim3(256), 0, static_cast<const float*>(big_),
           w + ll.qn, w + ll.kn, qb_, kc, vc, T, s.heads, s.kv_heads, s.head_dim, pos0, max_ctx,
           static_cast<const int*>(dpos_));
    u->weight += 2.0 * (s.hidden + 2 * s.head_dim);  // post-attention and q/k norm weights
    u->kv_write += 2.0 * T * kv * sizeof(bf16);
    attend(s, kc, vc, T, pos0, max_ctx, causal);
    // Unique K/V bytes read (GQA: each KV head is read once from memory, then cached).
    u->kv_read += 2.0 * (pos0 + T) * kv * sizeof(bf16);
    linear(w + ll.o, xb_, tmp_, T, s.hidden, q, u);
    pending_ = true;
    norm(x_, w + ll.ln2, T, s.hidden);  // x += attention output; xb = norm(x)
    linear(w + ll.gu, xb_, big_, T, 2 * s.inter, s.hidden, u);
    launch(silu_mul, dim3(256), dim3(256), 0, static_cast<const float*>(big_), qb_, s.inter, T);
    linear(w + ll.d, qb_, tmp_, T, s.hidden, s.inter, u);
    pending_ = true;  // added by the next norm (next layer's, or the LM head's)
  }

  // Attention of T query rows at pos0 into xb_. Decode (T = 1) splits the positions over
  // up to 16 blocks per head and merges them; prefill rows are many blocks already.
  void attend(const Shape& s, bf16* kc, bf16* vc, int T, int pos0, int max_ctx, bool causal) {
    const int ctx = pos0 + T;
    const int splits = T == 1 ? std::clamp((ctx + 255) / 256, 1, kMaxSplits) : 1;
    launch(attention, dim3(s.heads, T, splits), dim3(kAttnThreads), attention_smem(max_ctx, s.head_dim),
           static_cast<const bf16*>(qb_), static_cast<const bf16*>(kc), static_cast<const bf16*>(vc), xb_, s.heads,
           s.kv_heads, s.head_dim, pos0, T, max_ctx, causal ? 1 : 0, static_cast<const int*>(dpos_), part_);
    if (splits > 1)
      launch(attention_combine, dim3(s.heads, T), dim3(128), 0, static_cast<const float*>(part_), xb_, s.heads,
             s.head_dim, splits);
  }

  // One decode layer (T = 1) with the fused kernels: five launches (six without next_norm, and
  // layer 0 adds its input norm) instead of ten, the same arithmetic and, per token, the same
  // bytes counted as layer()'s unfused path.
  void layer_fused(const Shape& s, const bf16* w, int pos0, bf16* kc, bf16* vc, int max_ctx, Counters* u,
                   const bf16* next_norm) {
    LayerLayout ll(s);
    const int q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    input_norm(w + ll.ln1, 1, s.hidden, u);                      // unless the previous down projection ran it
    linear(w + ll.qkv, xb_, big_, 1, q + 2 * kv, s.hidden, u);   // float q, k, v
    u->weight += 2.0 * (s.hidden + 2 * s.head_dim);              // post-attention and q/k norm weights
    u->kv_write += 2.0 * kv * sizeof(bf16);
    attend_fused(s, w, kc, vc, pos0, max_ctx);                   // q/k norm, RoPE, append, attention, merge
    u->kv_read += 2.0 * (pos0 + 1) * kv * sizeof(bf16);
    // o projection into tmp_; its last block: x += tmp_, nb_ = norm(x) * ln2.
    u->weight += double(s.hidden) * q * sizeof(bf16);
    GemvEpi e{};
    e.resid = x_, e.nw = w + ll.ln2, e.nout = nb_, e.ticket = tickets_ + kTicketNorm, e.l2pf = wpf_ ? 1 : 0;
    const dim3 rows_grid((s.hidden * 32 + 255) / 256);
    if (s.hidden <= 4 * kNormThreads)
      launch(gemv_epi<kEpiNorm, 4>, rows_grid, dim3(256), 0, w + ll.o, static_cast<const bf16*>(xb_), tmp_, s.hidden, q, e);
    else
      launch(gemv_epi<kEpiNorm, 8>, rows_grid, dim3(256), 0, w + ll.o, static_cast<const bf16*>(xb_), tmp_, s.hidden, q, e);
    pending_ = false;
    // Gate/up projection with SiLU(g) * u into qb_.
    u->weight += 2.0 * s.inter * s.hidden * sizeof(bf16);
    e = GemvEpi{};
    e.act = qb_, e.inter = s.inter;
    launch(gemv_epi<kEpiSiLU, 4>, dim3((s.inter + 3) / 4), dim3(256), 0, w + ll.gu, static_cast<const bf16*>(nb_),
           static_cast<float*>(nullptr), 2 * s.inter, s.hidden, e);
    if (next_norm == nullptr) {
      linear(w + ll.d, qb_, tmp_, 1, s.hidden, s.inter, u);
      pending_ = true;  // added by the next norm (next layer's, or the LM head's)
      return;
    }
    // Down projection into tmp_; its last block: x += tmp_, xb_ = norm(x) * next_norm, the next
    // unit's input norm (its weights counted here, where they are read).
    u->weight += double(s.hidden) * s.inter * sizeof(bf16) + double(s.hidden) * sizeof(bf16);
    e = GemvEpi{};
    e.resid = x_, e.nw = next_norm, e.nout = xb_, e.ticket = tickets_ + kTicketDown;
    e.l2pf = wpf_ && (reinterpret_cast<uintptr_t>(next_norm) & 15) == 0 ? 1 : 0;
    if (s.hidden <= 4 * kNormThreads)
      launch(gemv_epi<kEpiNorm, 4>, rows_grid, dim3(256), 0, w + ll.d, static_cast<const bf16*>(qb_), tmp_, s.hidden, s.inter, e);
    else
      launch(gemv_epi<kEpiNorm, 8>, rows_grid, dim3(256), 0, w + ll.d, static_cast<const bf16*>(qb_), tmp_, s.hidden, s.inter, e);
    pending_ = false;
    normed_ = true;  // xb_ is the next unit's normalized input
  }

  // attention_fused for the decode position pos0 of the layer with weights w: reads the QKV
  // GEMV's output in big_, appends the new K/V row, leaves the attention output in xb_. The
  // same splits as attend(). With --prefetch-mb N it also prefetches up to N MB of the o
  // projection's weights into L2 (device weights only; off by default: it measured slower).
  void attend_fused(const Shape& s, const bf16* w, bf16* kc, bf16* vc, int pos0, int max_ctx) {
    LayerLayout ll(s);
    const int splits = std::clamp((pos0 + 1 + 255) / 256, 1, kMaxSplits);
    const bf16* pf = w + ll.o;
    size_t pf_bytes = std::min(size_t(s.hidden) * s.heads * s.head_dim * sizeof(bf16), pf_cap_) & ~size_t(15);
    if (!wpf_ || (reinterpret_cast<uintptr_t>(pf) & 15) != 0) pf_bytes = 0;
    launch(attention_fused, dim3(s.heads, 1, splits), dim3(kAttnThreads), attention_smem(max_ctx, s.head_dim),
           static_cast<const float*>(big_), w + ll.qn, w + ll.kn, kc, vc, xb_, s.heads, s.kv_heads, s.head_dim, pos0,
           max_ctx, static_cast<const int*>(dpos_), part_, tickets_ + kTicketAttn,
           static_cast<const void*>(pf_bytes > 0 ? pf : nullptr), pf_bytes, kvpf_ ? 1 : 0);
  }

  void fill_x(size_t n) {
    // Stand-in input embeddings (image patches, prompt tokens): bf16 noise, widened.
    fill_uniform<<<256, 256, 0, cs_>>>(xb_, n, 1.0f, 7, 0);
    widen<<<256, 256, 0, cs_>>>(xb_, x_, n);
    pending_ = false;
    normed_ = false;
  }

  static void add(Counters* c, const Counters& u) {
    c->weight += u.weight, c->kv_read += u.kv_read, c->kv_write += u.kv_write, c->embed += u.embed;
    c->spill += u.spill;
  }

  const Preset& p_;
  Options o_;
  cudaStream_t cs_{}, ms_{}, ss_{};
  cublasHandle_t blas_{};
  cudaEvent_t copied_[2]{}, used_[2]{};
  cudaEvent_t computed_{}, spilled_{};  // --spill-mb: the layer's kernels done; its spill done
  bf16* stage_[2]{};
  int cur_ = 0;
  uint64_t unit_ = 0;
  size_t layer_elems_ = 0, head_elems_ = 0, vlayer_elems_ = 0, kv_layer_elems_ = 0;
  int max_ctx_ = 0, max_t_ = 1;
  bf16 *weights_ = nullptr, *embed_ = nullptr, *kv_ = nullptr, *vweights_ = nullptr, *vkv_ = nullptr;
  float *x_ = nullptr, *tmp_ = nullptr, *big_ = nullptr;
  bf16 *xb_ = nullptr, *qb_ = nullptr;
  int* token_ = nullptr;
  bool pdl_ = false;
  bool pending_ = false;     // tmp_ holds a residual not yet added to x_
  bool normed_ = false;      // x_ is complete and xb_ holds the next unit's normalized input
  float* part_ = nullptr;    // split attention partials
  bool fuse_ = false;        // fused decode kernels
  int* tickets_ = nullptr;   // the fused kernels' cross-block tickets (zero between launches)
  static constexpr int kTicketAttn = 0, kTicketNorm = 256, kTicketDown = 384, kTickets = 512;
  bf16* nb_ = nullptr;       // fused path: the post-attention norm's output (gate/up input)
  size_t pf_cap_ = 0;
  bool wpf_ = false, kvpf_ = false;  // weights / KV cache in device memory: L2 prefetches allowed
  int* dpos_ = nullptr;      // non-null while capturing: kernels read the position here
  int* dpos_buf_ = nullptr;
  cudaGraphExec_t graph_{};
  size_t spill_bytes_ = 0;
  void *spill_src_ = nullptr, *spill_dst_ = nullptr;
};

// Measured ceilings: a large device-to-device copy (bytes read + written) and a pinned
// host-to-device copy.
struct Ceilings {
  double hbm_gbs = 0, h2d_gbs = 0, d2h_gbs = 0;
};

Ceilings probe() {
  Ceilings c;
  const size_t n = size_t(2) << 30;
  void *a, *b, *h;
  CUDA_CHECK(cudaMalloc(&a, n));
  CUDA_CHECK(cudaMalloc(&b, n));
  CUDA_CHECK(cudaHostAlloc(&h, n / 2, cudaHostAllocDefault));
  CUDA_CHECK(cudaMemset(a, 1, n));
  std::memset(h, 1, n / 2);
  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));
  auto time = [&](auto&& f, int reps) {
    f();
    CUDA_CHECK(cudaEventRecord(e0));
    for (int i = 0; i < reps; ++i) f();
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float ms;
    CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    return ms / reps / 1e3;
  };
  c.hbm_gbs = 2.0 * n / time([&] { CUDA_CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); }, 10) / 1e9;
  c.h2d_gbs = (n / 2) / time([&] { CUDA_CHECK(cudaMemcpyAsync(a, h, n / 2, cudaMemcpyHostToDevice)); }, 5) / 1e9;
  c.d2h_gbs = (n / 2) / time([&] { CUDA_CHECK(cudaMemcpyAsync(h, a, n / 2, cudaMemcpyDeviceToHost)); }, 5) / 1e9;
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFreeHost(h));
  return c;
}

[[noreturn]] void usage_error(const std::string& m) {
  std::fprintf(stderr, "ripple-llm: error: %s (see --help)\n", m.c_str());
  std::exit(2);
}

void usage() {
  std::printf(
      "ripple-llm: batch-1 transformer decoder with random bf16 weights (no downloads)\n"
      "  --preset NAME        model shapes (default qwen3-8b): ");
  for (const auto& p : kPresets) std::printf("%s ", p.name);
  std::printf(
      "\n  --weights device|host  where the weights live (default device)\n"
      "  --stream copy|zerocopy  host weights: async H2D per layer, or kernels read host memory\n"
      "  --kv device|host     where the KV cache lives (default device)\n"
      "  --spill-mb N         per layer, also copy N MB D2H (spill emulation; labelled)\n"
      "  --context N          KV positions already in the cache (default 1024)\n"
      "  --tokens N           decode tokens to time (default 32)\n"
      "  --duration-s S       decode continuously for S seconds instead (interference mode)\n"
      "  --per-unit           print every unit's counted bytes\n"
      "  --warmup N           untimed decode steps first (default 2)\n"
      "  --no-pdl             plain launches (default: programmatic dependent launch where\n"
      "                       weights are read in place)\n"
      "  --no-fuse            decode with the unfused kernels (ten per layer instead of five;\n"
      "                       the same arithmetic, the reference for --check)\n"
      "  --prefetch-mb N      during attention, prefetch up to N MB of the o projection's weights\n"
      "                       into L2 (device weights; default 0: off, it measured slower)\n"
      "  --check              compare the fused decode kernels with the unfused ones on the GPU\n"
      "                       (random inputs, one layer), print the differences, PASS/FAIL, exit\n"
      "  --graph              replay one captured decode step (CUDA graph) instead of eager\n"
      "                       launches; device or zerocopy weights only. Eager is what Ripple\n"
      "                       gates; the graph shows the bandwidth-bound rate\n"
      "  --no-probe           skip the bandwidth ceilings\n"
      "  --device N           CUDA device\n"
      "  --frames             VLM-like mode: one request (vision encoder, prefill, short decode)\n"
      "                       per --period-ms, checked against --deadline-ms (default: period)\n"
      "  --requests N --image-tokens N --prompt-tokens N --frame-decode-tokens N\n"
      "  --token-log FILE     decode: write token,end_ns (CLOCK_MONOTONIC) per timed token as it\n"
      "                       ends (the stream is synchronised after every token then)\n"
      "  --frame-log FILE     write frame,release_ns,start_ns,end_ns (CLOCK_MONOTONIC) per frame\n"
      "                       as it ends, warm-up frame 0 included; release = its scheduled time\n");
}

int main_impl(int argc, char** argv) {
  Options o;
  auto need = [&](int& i, const char* flag) -> std::string {
    if (i + 1 >= argc) usage_error(std::string(flag) + " needs a value");
    return argv[++i];
  };
  auto num = [&](const std::string& v, const char* flag, double lo, double hi) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(d >= lo && d <= hi))
      usage_error(std::string(flag) + " '" + v + "' is not a number in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "]");
    return d;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--preset") {
      o.preset = need(i, "--preset");
    } else if (a == "--weights" || a == "--kv") {
      std::string v = need(i, a.c_str());
      if (v != "device" && v != "host") usage_error(a + " must be device or host, not '" + v + "'");
      (a == "--weights" ? o.weights : o.kv) = v == "host" ? Place::kHost : Place::kDevice;
    } else if (a == "--stream") {
      std::string v = need(i, "--stream");
      if (v != "copy" && v != "zerocopy") usage_error("--stream must be copy or zerocopy, not '" + v + "'");
      o.stream = v == "copy" ? Stream::kCopy : Stream::kZeroCopy;
    } else if (a == "--context") {
      o.context = int(num(need(i, "--context"), "--context", 1, 32000));
    } else if (a == "--tokens") {
      o.tokens = int(num(need(i, "--tokens"), "--tokens", 1, 1e6));
    } else if (a == "--duration-s") {
      o.duration_s = num(need(i, "--duration-s"), "--duration-s", 0.001, 1e6);
    } else if (a == "--spill-mb") {
      o.spill_mb = num(need(i, "--spill-mb"), "--spill-mb", 0, 1e5);
    } else if (a == "--device") {
      o.device = int(num(need(i, "--device"), "--device", 0, 64));
    } else if (a == "--frames") {
      o.frames = true;
    } else if (a == "--period-ms") {
      o.period_ms = num(need(i, "--period-ms"), "--period-ms", 1, 1e7);
    } else if (a == "--deadline-ms") {
      o.deadline_ms = num(need(i, "--deadline-ms"), "--deadline-ms", 1, 1e7);
    } else if (a == "--token-log") {
      o.token_log = need(i, "--token-log");
    } else if (a == "--frame-log") {
      o.frame_log = need(i, "--frame-log");
    } else if (a == "--requests") {
      o.requests = int(num(need(i, "--requests"), "--requests", 1, 1e6));
    } else if (a == "--image-tokens") {
      o.image_tokens = int(num(need(i, "--image-tokens"), "--image-tokens", 4, 16384));
    } else if (a == "--prompt-tokens") {
      o.prompt_tokens = int(num(need(i, "--prompt-tokens"), "--prompt-tokens", 1, 8192));
    } else if (a == "--frame-decode-tokens") {
      o.frame_decode_tokens = int(num(need(i, "--frame-decode-tokens"), "--frame-decode-tokens", 0, 4096));
    } else if (a == "--no-pdl") {
      o.pdl = false;
    } else if (a == "--no-fuse") {
      o.fuse = false;
    } else if (a == "--prefetch-mb") {
      o.prefetch_mb = num(need(i, "--prefetch-mb"), "--prefetch-mb", 0, 1e5);
    } else if (a == "--check") {
      o.check = true;
    } else if (a == "--graph") {
      o.graph = true;
    } else if (a == "--warmup") {
      o.warmup = int(num(need(i, "--warmup"), "--warmup", 0, 1000));
    } else if (a == "--per-unit") {
      o.per_unit = true;
    } else if (a == "--no-probe") {
      o.probe = false;
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  const Preset* preset = nullptr;
  for (const auto& p : kPresets)
    if (o.preset == p.name) preset = &p;
  if (preset == nullptr) {
    std::string names;
    for (const auto& p : kPresets) names += std::string(names.empty() ? "" : ", ") + p.name;
    usage_error("unknown preset '" + o.preset + "' (known: " + names + ")");
  }
  if (o.deadline_ms == 0) o.deadline_ms = o.period_ms;
  if (o.graph && (o.frames || o.spill_mb > 0 || (o.weights == Place::kHost && o.stream == Stream::kCopy)))
    usage_error("--graph needs --weights device or --stream zerocopy, and no --frames or --spill-mb");
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "ripple-llm: error: no CUDA device found\n");
    return 1;
  }
  if (o.device >= ndev) usage_error("--device " + std::to_string(o.device) + " out of range (" + std::to_string(ndev) + " devices)");

  const char* wname = o.weights == Place::kDevice ? "device" : (o.stream == Stream::kCopy ? "host (copy)" : "host (zerocopy)");
  Ceilings ceil;
  if (o.probe && !o.check) ceil = probe();
  Engine eng(*preset, o);
  eng.init();
  if (o.check) {
    std::printf("ripple-llm: check: preset %s, weights in %s memory, KV in %s memory, launches %s\n", preset->name, wname,
                o.kv == Place::kDevice ? "device" : "pinned host", eng.pdl() ? "PDL" : "plain");
    return eng.check() ? 0 : 3;
  }
  const Shape& s = preset->llm;
  std::printf("ripple-llm: preset %s: %d layers, hidden %d, weights %.2f GB bf16 in %s memory, KV in %s memory%s\n",
              preset->name, s.layers, s.hidden, eng.weight_bytes() / 1e9, wname,
              o.kv == Place::kDevice ? "device" : "pinned host",
              o.spill_mb > 0 ? " (+ D2H spill emulation)" : "");
  if (o.probe)
    std::printf("ripple-llm: measured ceilings: HBM copy %.0f GB/s (read+write), H2D %.1f GB/s, D2H %.1f GB/s\n",
                ceil.hbm_gbs, ceil.h2d_gbs, ceil.d2h_gbs);

  cudaEvent_t e0, e1;
  CUDA_CHECK(cudaEventCreate(&e0));
  CUDA_CHECK(cudaEventCreate(&e1));

  if (o.frames) {
    int hits = 0;
    std::vector<double> lat;
    Counters c;
    FILE* flog = nullptr;
    if (!o.frame_log.empty()) {
      flog = std::fopen(o.frame_log.c_str(), "w");
      if (!flog) {
        std::fprintf(stderr, "ripple-llm: error: --frame-log: cannot write %s: %s\n", o.frame_log.c_str(), std::strerror(errno));
        return 2;
      }
      std::fprintf(flog, "frame,release_ns,start_ns,end_ns\n");
      std::fflush(flog);
    }
    auto ns = [](std::chrono::steady_clock::time_point t) {  // steady_clock is CLOCK_MONOTONIC here
      return static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
    };
    auto next = std::chrono::steady_clock::now();
    for (int r = 0; r < o.requests + 1; ++r) {  // request 0 is warm-up
      std::this_thread::sleep_until(next);
      auto t0 = std::chrono::steady_clock::now();
      Counters rc;
      eng.frame_request(&rc);
      CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
      CUDA_CHECK(cudaDeviceSynchronize());
      const auto t1 = std::chrono::steady_clock::now();
      if (flog) {
        std::fprintf(flog, "%d,%lld,%lld,%lld\n", r, ns(next), ns(t0), ns(t1));
        std::fflush(flog);
      }
      double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
      if (r > 0) {
        lat.push_back(ms);
        hits += ms <= o.deadline_ms;
        c = rc;
      }
      next += std::chrono::microseconds(int64_t(o.period_ms * 1e3));
    }
    std::sort(lat.begin(), lat.end());
    std::printf("ripple-llm: frames: %d requests every %.0f ms, deadline %.0f ms: %d hits; latency p50 %.1f ms, max %.1f ms; "
                "%.2f GB per request (weights %.2f, KV %.3f)\n",
                o.requests, o.period_ms, o.deadline_ms, hits, lat[lat.size() / 2], lat.back(), c.total() / 1e9,
                c.weight / 1e9, (c.kv_read + c.kv_write) / 1e9);
    std::printf("RESULT engine=ripple-llm mode=frames preset=%s weights=%s requests=%d hits=%d p50_ms=%.1f max_ms=%.1f\n",
                preset->name, wname, o.requests, hits, lat[lat.size() / 2], lat.back());
    return 0;
  }

  if (o.probe && o.weights == Place::kDevice) eng.kernel_probe(o.context);

  // Decode. Warm up, then count and time.
  int pos = o.context;
  Counters warm;
  for (int i = 0; i < o.warmup; ++i) eng.decode_step(pos++, &warm, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<Counters> units(s.layers + 1);
  Counters c;
  const int ctx_first = pos;
  int steps = 0;
  Counters captured;
  if (o.graph) {
    eng.decode_step(pos, &captured, &units);  // eager once more, for the per-unit table
    CUDA_CHECK(cudaDeviceSynchronize());
    captured = Counters();
    eng.capture_step(pos, &captured);
    eng.set_pos(pos);
  }
  FILE* tlog = nullptr;
  if (!o.token_log.empty()) {
    tlog = std::fopen(o.token_log.c_str(), "w");
    if (!tlog) {
      std::fprintf(stderr, "ripple-llm: error: --token-log: cannot write %s: %s\n", o.token_log.c_str(), std::strerror(errno));
      return 2;
    }
    std::fprintf(tlog, "token,end_ns\n");
    std::fflush(tlog);
  }
  auto wall0 = std::chrono::steady_clock::now();
  CUDA_CHECK(cudaEventRecord(e0, eng.stream()));
  for (;;) {
    if (pos + 1 >= eng.max_ctx()) {  // interference mode: wrap the context
      pos = o.context;
      if (o.graph) eng.set_pos(pos);
    }
    if (o.graph) {
      eng.replay();
      c.weight += captured.weight, c.kv_write += captured.kv_write, c.embed += captured.embed;
      c.kv_read += eng.kv_read_at(pos);
      ++pos;
    } else {
      eng.decode_step(pos++, &c, steps == 0 ? &units : nullptr);
    }
    ++steps;
    if (tlog) {  // the engine's own progress, for throughput measured where it happens
      CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
      const auto now = std::chrono::steady_clock::now();
      std::fprintf(tlog, "%d,%lld\n", steps,
                   static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()));
      std::fflush(tlog);
    }
    if (o.duration_s > 0) {
      if (steps % 4 == 0) {
        CUDA_CHECK(cudaStreamSynchronize(eng.stream()));
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() >= o.duration_s) break;
      }
    } else if (steps >= o.tokens) {
      break;
    }
  }
  CUDA_CHECK(cudaEventRecord(e1, eng.stream()));
  CUDA_CHECK(cudaEventSynchronize(e1));
  CUDA_CHECK(cudaDeviceSynchronize());
  float ms;
  CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  const double tps = steps / (ms / 1e3);
  const double counted = c.total() / steps;
  // The model's bytes at the mean context of the timed steps (no wrap: exact).
  double model = 0;
  for (int k = 0; k < std::min(steps, eng.max_ctx() - ctx_first - 1); ++k) model += model_bytes_per_token(*preset, ctx_first + k);
  model /= std::min(steps, eng.max_ctx() - ctx_first - 1);
  if (o.per_unit) {
    std::printf("unit  weights_MB  kv_read_MB  kv_write_KB  spill_MB\n");
    for (int l = 0; l <= s.layers; ++l)
      std::printf("%-5s %10.3f %11.3f %12.1f %9.1f\n", l == s.layers ? "head" : std::to_string(l).c_str(),
                  units[l].weight / 1e6, units[l].kv_read / 1e6, units[l].kv_write / 1e3, units[l].spill / 1e6);
  } else {
    std::printf("ripple-llm: unit 0 (a layer): weights %.2f MB, KV read %.2f MB, KV write %.1f KB; unit %d (LM head): %.2f MB\n",
                units[0].weight / 1e6, units[0].kv_read / 1e6, units[0].kv_write / 1e3, s.layers,
                units[s.layers].weight / 1e6);
  }
  std::printf("ripple-llm: bytes per token: counted %.4f GB, model (weights + KV) %.4f GB, difference %+.3f%%\n",
              counted / 1e9, model / 1e9, 100.0 * (counted - model) / model);
  std::printf("ripple-llm: %d tokens in %.1f ms: %.2f tokens/s, %.1f GB/s of model bytes", steps, ms, tps,
              counted * tps / 1e9);
  if (c.spill > 0) std::printf(" (+ %.1f GB/s D2H spill)", c.spill / steps * tps / 1e9);
  std::printf("\n");
  double limit = 0;
  const char* limit_name = "";
  if (o.probe) {
    if (o.weights == Place::kDevice && o.kv == Place::kDevice) {
      // Decode reads each byte once: the read-only ceiling is the copy's read+write rate.
      limit = ceil.hbm_gbs * 1e9 / counted;
      limit_name = "HBM copy";
    } else {
      limit = ceil.h2d_gbs * 1e9 / counted;
      limit_name = "H2D copy";
    }
    std::printf("ripple-llm: %s-bandwidth limit %.2f tokens/s: measured/limit %.2f\n", limit_name, limit, tps / limit);
  }
  // The greedy token after the run: a fingerprint of the computation (same weights, same
  // steps, deterministic kernels: equal across launch modes when they compute the same).
  std::printf("ripple-llm: final token %d (launches: %s%s; %s decode kernels)\n", eng.last_token(), eng.pdl() ? "PDL" : "plain",
              o.graph ? ", graph" : "", eng.fused() ? "fused" : "unfused");
  std::printf("RESULT engine=ripple-llm preset=%s weights=%s%s kv=%s tokens=%d tok_s=%.3f counted_gb=%.4f model_gb=%.4f "
              "diff_pct=%.3f limit_tok_s=%.3f ratio=%.3f gbs=%.1f\n",
              preset->name, wname, o.graph ? " launch=graph" : "", o.kv == Place::kDevice ? "device" : "host", steps, tps,
              counted / 1e9, model / 1e9,
              100.0 * (counted - model) / model, limit, limit > 0 ? tps / limit : 0.0, counted * tps / 1e9);
  return 0;
}

}  // namespace ripple::llm

int main(int argc, char** argv) { return ripple::llm::main_impl(argc, argv); }
