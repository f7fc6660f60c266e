// ripple-llm's fused decode kernels: templates and kernels included by engine.cu only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tools/engines/ripple-llm/device.cuh"
#include "tools/engines/ripple-llm/kernels.h"

namespace ripple::llm {

// ---------------------------------------------------------------------------------------
// Fused decode kernels (T = 1, the default; --no-fuse keeps the unfused ones of kernels.cu). Five kernels
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

}  // namespace ripple::llm
