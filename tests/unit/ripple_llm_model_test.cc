// Tests of ripple-llm's model shapes and analytic byte model (no GPU needed): the numbers
// its per-unit byte counters are checked against.
#include "tools/engines/ripple-llm/model.h"

#include <gtest/gtest.h>

namespace ripple::llm {
namespace {

// Tests that Qwen3-8B's decode reads what the paper measured: 15.19 GB per short-context step.
TEST(LlmModel, Qwen3_8bBytesPerTokenMatchThePaper) {
  const Preset* p = find_preset("qwen3-8b");
  ASSERT_NE(p, nullptr);
  // The paper's evaluation prompt is 37 tokens.
  EXPECT_NEAR(model_bytes_per_token(*p, 37) / 1e9, 15.19, 0.01 * 15.19);
  // K/V grow by 36 layers x 8 heads x 128 x 2 (K, V) x 2 bytes = 147456 bytes per position.
  EXPECT_NEAR(model_bytes_per_token(*p, 1037) - model_bytes_per_token(*p, 37), 1000 * 147456.0, 1.0);
}

// Tests that every preset's layer block keeps the GEMV's weight rows 16-byte aligned and
// holds exactly the weights the byte model counts (padding aside).
TEST(LlmModel, LayerLayoutMatchesTheByteModel) {
  for (const auto& p : kPresets) {
    for (const Shape* s : {&p.llm, &p.vision}) {
      if (s->layers == 0) continue;
      LayerLayout ll(*s);
      for (size_t off : {ll.qkv, ll.o, ll.gu, ll.d}) EXPECT_EQ(off % 8, 0u) << p.name;
      EXPECT_EQ(s->hidden % 8, 0) << p.name;
      EXPECT_EQ(s->inter % 8, 0) << p.name;
      EXPECT_EQ(ll.total % 128, 0u) << p.name;
      const size_t used = ll.kn + s->head_dim;
      EXPECT_LE(used, ll.total);
      EXPECT_GT(used + 128, ll.total);
    }
    // Layers + LM head + final norm + one embedding row, at context 0 (one K/V row read, one written).
    const Shape& s = p.llm;
    LayerLayout ll(s);
    const double weights = 2.0 * ((ll.kn + s.head_dim) * double(s.layers) + double(p.vocab) * s.hidden + 2.0 * s.hidden);
    const double kv = double(s.layers) * 2 * 2 * 2 * s.kv_heads * s.head_dim;
    EXPECT_DOUBLE_EQ(model_bytes_per_token(p, 0), weights + kv) << p.name;
  }
}

// Tests that an unknown preset is not found (the CLI turns that into its error line).
TEST(LlmModel, UnknownPresetIsNotFound) {
  EXPECT_EQ(find_preset("qwen9"), nullptr);
  EXPECT_NE(find_preset("qwen3-vl-8b"), nullptr);
}

}  // namespace
}  // namespace ripple::llm
