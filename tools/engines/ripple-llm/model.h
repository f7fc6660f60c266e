// ripple-llm's model shapes and byte model: host-only C++, shared by the CUDA engine
// (tools/engines/ripple-llm/engine.cu, main.cc) and its unit test (tests/unit/ripple_llm_model_test.cc).
#pragma once

#include <cstddef>
#include <cstring>

namespace ripple::llm {

struct Shape {
  int hidden, inter, layers, heads, kv_heads, head_dim;
};

struct Preset {
  const char* name;
  Shape llm;
  int vocab;
  Shape vision;  // layers == 0: no vision encoder
  int merge;     // image patches merged per LLM token
};

// Shapes from the models' published config.json files (Qwen3 dense family; the
// Qwen3-VL vision tower for the -vl presets).
constexpr Preset kPresets[] = {
    {"qwen3-0.6b", {1024, 3072, 28, 16, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-1.7b", {2048, 6144, 28, 16, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-4b", {2560, 9728, 36, 32, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-8b", {4096, 12288, 36, 32, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-14b", {5120, 17408, 40, 40, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-32b", {5120, 25600, 64, 64, 8, 128}, 151936, {0, 0, 0, 0, 0, 0}, 1},
    {"qwen3-vl-2b", {2048, 6144, 28, 16, 8, 128}, 151936, {1024, 4096, 24, 16, 16, 64}, 4},
    {"qwen3-vl-8b", {4096, 12288, 36, 32, 8, 128}, 151936, {1152, 4304, 27, 16, 16, 72}, 4},
};

// Element offsets of one layer's weight tensors in its contiguous block (the order the
// copy stream moves them in), and the block's padded size.
struct LayerLayout {
  size_t qkv, o, gu, d, ln1, ln2, qn, kn, total;  // element offsets; total in elements
  explicit LayerLayout(const Shape& s) {
    const size_t h = s.hidden, q = size_t(s.heads) * s.head_dim, kv = size_t(s.kv_heads) * s.head_dim;
    qkv = 0;
    o = qkv + (q + 2 * kv) * h;
    gu = o + h * q;
    d = gu + 2 * size_t(s.inter) * h;
    ln1 = d + h * size_t(s.inter);
    ln2 = ln1 + h;
    qn = ln2 + h;
    kn = qn + s.head_dim;
    total = kn + s.head_dim;
    total = (total + 127) / 128 * 128;  // 256-byte aligned blocks
  }
};

// The model's analytic decode bytes per token at context `ctx` (the K/V of ctx earlier
// tokens read, the new token's K/V written): the reference the counters are checked
// against. Padding is not weight bytes.
inline double model_bytes_per_token(const Preset& p, double ctx) {
  const Shape& s = p.llm;
  const double h = s.hidden, q = double(s.heads) * s.head_dim, kv = double(s.kv_heads) * s.head_dim;
  const double layer_w = 2.0 * ((q + 2 * kv) * h + h * q + 3.0 * h * s.inter + 2 * h + 2.0 * s.head_dim);
  const double kv_tok = 2.0 * 2.0 * kv;  // K and V, bf16, one layer, one token
  // Attention reads the ctx earlier positions and the new one; the new one is written.
  return s.layers * (layer_w + kv_tok * (ctx + 2)) + 2.0 * (double(p.vocab) * h + h) + 2.0 * h;
}

inline const Preset* find_preset(const char* name) {
  for (const auto& p : kPresets)
    if (std::strcmp(p.name, name) == 0) return &p;
  return nullptr;
}

}  // namespace ripple::llm
