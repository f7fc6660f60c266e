// ripple-llm --check: the fused decode kernels against the unfused ones on the GPU (engine.h).
#include "tools/engines/ripple-llm/engine.h"

#include <algorithm>
#include <cmath>

#include "tools/engines/ripple-llm/kernels.h"

namespace ripple::llm {

bool Engine::check() {
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

}  // namespace ripple::llm
