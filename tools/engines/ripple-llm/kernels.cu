// ripple-llm's unfused kernels (declared in kernels.h).
#include "tools/engines/ripple-llm/kernels.h"

#include "tools/engines/ripple-llm/device.cuh"

namespace ripple::llm {

__global__ void fill_uniform(bf16* p, size_t n, float scale, uint64_t seed, uint64_t offset) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(scale * hash_uniform(i + offset, seed));
}

__global__ void fill_const(bf16* p, size_t n, float v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = __float2bfloat16(v);
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

// Attention for query token t of head h (grid: heads x T, 512 threads): over positions
// [0, ctx) with ctx = causal ? pos0 + t + 1 : pos0 + T. Decode attention is a latency
// problem, not a bandwidth one (a head's K/V are a few hundred KB), so every thread owns
// whole positions: scores with 16-byte K loads all in flight at once, then V rows
// accumulated by warps with positions unrolled. Scores in shared memory (bounded context).
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

__global__ void advance_pos(int* dpos) {
  pdl_wait();
  ++*dpos;
}

__global__ void add_inplace(float* __restrict__ x, const float* __restrict__ d, size_t n) {
  pdl_trigger();
  pdl_wait();
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) x[i] += d[i];
}

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

}  // namespace ripple::llm
