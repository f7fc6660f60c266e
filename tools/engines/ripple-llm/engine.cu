// ripple-llm's engine (engine.h): allocation, the decode step, the VLM request, the graph
// capture and the kernel probe, over the unfused (kernels.h) and fused (fused_kernels.cuh)
// kernels.
#include "tools/engines/ripple-llm/engine.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tools/engines/ripple-llm/fused_kernels.cuh"
#include "tools/engines/ripple-llm/kernels.h"

namespace ripple::llm {


// Each unit is an NVTX range named like the module it runs ("model.layers.3",
// "lm_head", as PyTorch module hooks would name it), so the interposer finds
// the layer boundaries with its default pattern, knowing nothing of this engine.
static void nvtx_push(const char* fmt, int i) {
  char name[64];
  std::snprintf(name, sizeof(name), fmt, i);
  nvtxRangePushA(name);
}

void Engine::init() {
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

void Engine::decode_step(int pos, Counters* c, std::vector<Counters>* per_unit) {
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

void Engine::frame_request(Counters* c) {
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

void Engine::capture_step(int pos, Counters* step) {
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

void Engine::set_pos(int pos) { CUDA_CHECK(cudaMemcpyAsync(dpos_buf_, &pos, sizeof(int), cudaMemcpyHostToDevice, cs_)); }

void Engine::replay() { CUDA_CHECK(cudaGraphLaunch(graph_, cs_)); }

void Engine::kernel_probe(int pos) {
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

int Engine::last_token() const {
  int t = -1;
  CUDA_CHECK(cudaMemcpy(&t, token_, sizeof(int), cudaMemcpyDeviceToHost));
  return t;
}

void Engine::input_norm(const bf16* w, int T, int n, Counters* u) {
  if (normed_) {
    normed_ = false;
    return;
  }
  norm(x_, w, T, n);
  u->weight += double(n) * sizeof(bf16);
}

void Engine::norm(float* x, const bf16* w, int T, int n) {
  const float* d = pending_ ? static_cast<const float*>(tmp_) : nullptr;
  if (T == 1 && fuse_ && n <= 4 * kNormThreads)
    launch(add_rmsnorm_fused<4>, dim3(1), dim3(kNormThreads), 0, x, d, w, xb_, n);
  else if (T == 1 && fuse_)
    launch(add_rmsnorm_fused<8>, dim3(1), dim3(kNormThreads), 0, x, d, w, xb_, n);
  else
    launch(add_rmsnorm, dim3(T), dim3(1024), 0, x, d, w, xb_, n);
  pending_ = false;
}

void* Engine::dalloc(size_t n) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, n));
  return p;
}

bf16* Engine::alloc(size_t bytes, Place where, const char* what) {
  void* p = nullptr;
  cudaError_t e = where == Place::kDevice ? cudaMalloc(&p, bytes)
                                          : cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess)
    die(std::string("cannot allocate ") + what + " (" + std::to_string(bytes / 1000000) + " MB in " +
        (where == Place::kDevice ? "GPU" : "pinned host") + " memory): " + cudaGetErrorString(e));
  return static_cast<bf16*>(p);
}

void Engine::fill(bf16* p, size_t n, Place where, float scale, uint64_t seed) {
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

void Engine::set_ones(bf16* p, size_t n, Place where) {
  if (where == Place::kDevice) {
    fill_const<<<64, 256>>>(p, n, 1.0f);
  } else {
    for (size_t i = 0; i < n; ++i) p[i] = __float2bfloat16(1.0f);
  }
}

void Engine::set_norms(bf16* base, const LayerLayout& ll, const Shape& s, Place where) {
  set_ones(base + ll.ln1, s.hidden, where);
  set_ones(base + ll.ln2, s.hidden, where);
  set_ones(base + ll.qn, s.head_dim, where);
  set_ones(base + ll.kn, s.head_dim, where);
}

const bf16* Engine::fetch(const bf16* src, size_t elems, uint64_t unit) {
  if (o_.weights == Place::kDevice || o_.stream == Stream::kZeroCopy) return src;
  cur_ = unit & 1;
  CUDA_CHECK(cudaStreamWaitEvent(ms_, used_[cur_], 0));
  CUDA_CHECK(cudaMemcpyAsync(stage_[cur_], src, elems * sizeof(bf16), cudaMemcpyHostToDevice, ms_));
  CUDA_CHECK(cudaEventRecord(copied_[cur_], ms_));
  CUDA_CHECK(cudaStreamWaitEvent(cs_, copied_[cur_], 0));
  return stage_[cur_];
}

void Engine::release() {
  if (o_.weights == Place::kHost && o_.stream == Stream::kCopy) CUDA_CHECK(cudaEventRecord(used_[cur_], cs_));
}

void Engine::spill(Counters* u) {
  if (spill_bytes_ == 0) return;
  CUDA_CHECK(cudaEventRecord(computed_, cs_));
  CUDA_CHECK(cudaStreamWaitEvent(ss_, computed_, 0));
  CUDA_CHECK(cudaMemcpyAsync(spill_dst_, spill_src_, spill_bytes_, cudaMemcpyDeviceToHost, ss_));
  CUDA_CHECK(cudaEventRecord(spilled_, ss_));
  CUDA_CHECK(cudaStreamWaitEvent(cs_, spilled_, 0));
  u->spill += spill_bytes_;
}

void Engine::linear(const bf16* w, const bf16* x, float* y, int T, int rows, int cols, Counters* u) {
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

void Engine::layer(const Shape& s, const bf16* w, int T, int pos0, bf16* kc, bf16* vc, int max_ctx, bool causal,
           Counters* u, const bf16* next_norm) {
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

void Engine::attend(const Shape& s, bf16* kc, bf16* vc, int T, int pos0, int max_ctx, bool causal) {
  const int ctx = pos0 + T;
  const int splits = T == 1 ? std::clamp((ctx + 255) / 256, 1, kMaxSplits) : 1;
  launch(attention, dim3(s.heads, T, splits), dim3(kAttnThreads), attention_smem(max_ctx, s.head_dim),
         static_cast<const bf16*>(qb_), static_cast<const bf16*>(kc), static_cast<const bf16*>(vc), xb_, s.heads,
         s.kv_heads, s.head_dim, pos0, T, max_ctx, causal ? 1 : 0, static_cast<const int*>(dpos_), part_);
  if (splits > 1)
    launch(attention_combine, dim3(s.heads, T), dim3(128), 0, static_cast<const float*>(part_), xb_, s.heads,
           s.head_dim, splits);
}

void Engine::layer_fused(const Shape& s, const bf16* w, int pos0, bf16* kc, bf16* vc, int max_ctx, Counters* u,
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

void Engine::attend_fused(const Shape& s, const bf16* w, bf16* kc, bf16* vc, int pos0, int max_ctx) {
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

void Engine::fill_x(size_t n) {
  // Stand-in input embeddings (image patches, prompt tokens): bf16 noise, widened.
  fill_uniform<<<256, 256, 0, cs_>>>(xb_, n, 1.0f, 7, 0);
  widen<<<256, 256, 0, cs_>>>(xb_, x_, n);
  pending_ = false;
  normed_ = false;
}

void Engine::add(Counters* c, const Counters& u) {
  c->weight += u.weight, c->kv_read += u.kv_read, c->kv_write += u.kv_write, c->embed += u.embed;
  c->spill += u.spill;
}

}  // namespace ripple::llm
