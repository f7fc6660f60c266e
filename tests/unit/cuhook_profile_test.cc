// Unit catalogs (cuhooks/profile.h), the kernel-sequence matcher and model catalogs from
// config.json + safetensors headers (tools/ripple-profile/model_catalog.h).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuhooks/profile.h"
#include "tools/ripple-profile/model_catalog.h"

namespace {

using namespace ripple::cuhook;
namespace fs = std::filesystem;

Profile two_layers() {
  Profile p;
  p.units.push_back({"embed", "embed", 10, 10, 0, {"embed_k"}});
  p.units.push_back({"layers.0", "decoder", 100, 100, 0, {"a", "b", "c"}});
  p.units.push_back({"layers.1", "decoder", 100, 100, 0, {"a", "b", "c"}});
  p.units.push_back({"head", "head", 50, 50, 0, {"head_k"}});
  return p;
}

// Tests that an in-order launch stream begins and ends each unit at its first and last kernel.
TEST(SequenceMatcher, FindsUnitsInOrder) {
  SequenceMatcher m(two_layers());
  std::vector<int> begins, ends;
  for (const char* k : {"embed_k", "a", "b", "c", "a", "b", "c", "head_k", "embed_k", "a"}) {
    auto s = m.on_kernel(k);
    if (s.begin_unit >= 0) begins.push_back(s.begin_unit);
    if (s.end_unit >= 0) ends.push_back(s.end_unit);
  }
  EXPECT_EQ(begins, (std::vector<int>{0, 1, 2, 3, 0, 1}));
  EXPECT_EQ(ends, (std::vector<int>{0, 1, 2, 3, 0}));
  EXPECT_EQ(m.resyncs(), 0u);
}

// Tests that an unknown kernel stays in the unit in progress and a skipped unit resyncs.
TEST(SequenceMatcher, ToleratesExtraKernelsAndResyncs) {
  SequenceMatcher m(two_layers());
  EXPECT_EQ(m.on_kernel("embed_k").begin_unit, 0);
  EXPECT_FALSE(m.on_kernel("memset_k").matched);
  EXPECT_EQ(m.unmatched(), 1u);
  EXPECT_EQ(m.on_kernel("head_k").begin_unit, 3);  // the layers were skipped
  EXPECT_EQ(m.resyncs(), 1u);
  EXPECT_EQ(m.on_kernel("a").begin_unit, 1);       // a new pass without embed
}

// Tests that the catalog round-trips through JSON and that bad input names the field.
TEST(Profile, RoundTripsAndNamesBadFields) {
  Profile p = two_layers();
  p.kv_bytes_per_token = 4096;
  auto q = parse_profile(profile_to_json(p), "x.json");
  ASSERT_TRUE(q) << q.error().message;
  EXPECT_EQ(q->units.size(), 4u);
  EXPECT_EQ(q->units[1].kernels, p.units[1].kernels);
  EXPECT_EQ(q->kv_bytes_per_token, 4096u);
  auto bad = parse_profile(R"({"format":"ripple-unit-catalog/1","units":[{"name":"a","bytes":-3}]})", "m.json");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("m.json: units[0].bytes"), std::string::npos) << bad.error().message;
  auto fmt = parse_profile(R"({"units":[]})", "m.json");
  ASSERT_FALSE(fmt);
  EXPECT_NE(fmt.error().message.find("'format'"), std::string::npos);
}

// Tests that fields of the wrong JSON type are refused with a message, not thrown out of
// parse_profile: the interposer reads the catalog inside the host application, and an
// exception there aborts it (found by tests/fuzz/fuzz_profile: "model": [...]).
TEST(Profile, WrongFieldTypesAreErrorsNotExceptions) {
  const char* bad[] = {
      R"({"format":"ripple-unit-catalog/1","model":[{"name":"x"}],"units":[{"name":"a","bytes":1}]})",
      R"({"format":7,"units":[{"name":"a","bytes":1}]})",
      R"({"format":"ripple-unit-catalog/1","units":[{"name":"a","bytes":1,"kind":3}]})",
      R"({"format":"ripple-unit-catalog/1","units":[{"name":"a","bytes":1,"total_bytes":"big"}]})",
      R"({"format":"ripple-unit-catalog/1","units":[{"name":"a","bytes":1,"gpu_ns":-5}]})",
  };
  for (const char* text : bad) {
    ripple::Result<Profile> r = ripple::make_error("not run");
    EXPECT_NO_THROW(r = parse_profile(text, "m.json")) << text;
    ASSERT_FALSE(r) << text;
    EXPECT_EQ(r.error().message.rfind("m.json: ", 0), 0u) << r.error().message;
  }
}

// Tests that a compiled pattern names units as unit_name_for_range does, and that an
// invalid pattern is an error with the regex library's reason, not a pattern that
// matches nothing.
TEST(Profile, InvalidPatternIsAnErrorAndValidOneCompilesOnce) {
  auto bad = NvtxPattern::compile("(");
  ASSERT_FALSE(bad);
  EXPECT_FALSE(bad.error().message.empty());
  auto re = NvtxPattern::compile(kDefaultNvtxPattern);
  ASSERT_TRUE(re) << re.error().message;
  bool unit = false, unit2 = false;
  for (const char* r : {"model.layers.3", "visual.blocks.7", "lm_head", "aten::mm"}) {
    EXPECT_EQ(re->unit_name(r, &unit), unit_name_for_range(r, kDefaultNvtxPattern, &unit2)) << r;
    EXPECT_EQ(unit, unit2) << r;
  }
  EXPECT_EQ(re->unit_name("model.layers.3", &unit), "layers.3");
  EXPECT_TRUE(unit);
}

// Tests that NVTX range names map to layer units by the pattern's capture group.
TEST(Profile, RangeNamesMapToUnits) {
  const std::string pat = "(?:^|[^A-Za-z])(?:layers|layer|h|blocks)[._ ]?([0-9]+)";
  bool unit = false;
  EXPECT_EQ(unit_name_for_range("model.layers.12", pat, &unit), "layers.12");
  EXPECT_TRUE(unit);
  unit_name_for_range("aten::mm", pat, &unit);
  EXPECT_FALSE(unit);
  EXPECT_EQ(unit_name_for_range("lm_head", "lm_head", &unit), "lm_head");
  EXPECT_TRUE(unit);
}

// Tests that a numbered unit keeps the tower before its keyword (minus a model or
// transformer root), so a VLM's vision blocks and its decoder layers do not collide.
TEST(Profile, RangeNamesKeepTheirTower) {
  const std::string pat = kDefaultNvtxPattern;
  auto name = [&](const char* range) {
    bool unit = false;
    std::string n = unit_name_for_range(range, pat, &unit);
    EXPECT_TRUE(unit) << range;
    return n;
  };
  EXPECT_EQ(name("model.layers.3"), "layers.3");
  EXPECT_EQ(name("layers.3"), "layers.3");
  EXPECT_EQ(name("h.3"), "layers.3");
  EXPECT_EQ(name("transformer.h.3"), "layers.3");
  EXPECT_EQ(name("model.model.layers.3"), "layers.3");
  EXPECT_EQ(name("visual.blocks.3"), "visual.layers.3");
  EXPECT_EQ(name("model.visual.blocks.3"), "visual.layers.3");
  EXPECT_EQ(name("vit/encoder/layer_7"), "vit/encoder.layers.7");
  EXPECT_EQ(name("lm_head"), "lm_head");
  EXPECT_NE(name("visual.blocks.3"), name("model.layers.3"));
  EXPECT_EQ(name("modelx.layers.3"), "modelx.layers.3") << "only a whole component is a root";
  bool unit = true;
  unit_name_for_range("visual.merger", pat, &unit);
  EXPECT_FALSE(unit);
}

// Tests the truncation rule: names fit the protocol's unit-name field, "layers.N" is kept
// whole, the tower keeps its leading components that fit, else its first characters.
TEST(Profile, LongRangeNamesAreCutToTheProtocolLimit) {
  static_assert(kMaxUnitName == ripple::engine::kUnitNameBytes - 1);
  const std::string pat = kDefaultNvtxPattern;
  bool unit = false;
  EXPECT_EQ(unit_name_for_range("vision_tower.vision_model.encoder.layers.12", pat, &unit), "vision_tower.layers.12");
  EXPECT_EQ(unit_name_for_range("language_model.model.layers.3", pat, &unit), "language_model.layers.3");
  EXPECT_EQ(unit_name_for_range("language_model.model.layers.3", pat, &unit).size(), kMaxUnitName);
  EXPECT_EQ(unit_name_for_range("averyveryverylongtowername.layers.7", pat, &unit), "averyveryveryl.layers.7");
  EXPECT_EQ(unit_name_for_range("model.layers.123456789012345678901", pat, &unit), "layers.1234567890123456");
  const std::string head = "decoder.a_very_long_output_head_name";
  EXPECT_EQ(unit_name_for_range(head, "head", &unit), head.substr(0, kMaxUnitName));
  for (const char* r : {"vision_tower.vision_model.encoder.layers.12", "x.y.z.w.v.u.t.s.r.q.p.o.layers.99"})
    EXPECT_LE(unit_name_for_range(r, pat, &unit).size(), kMaxUnitName) << r;
}

class ModelDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cuhook-model-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Writes a safetensors file whose header lists tensors of the given byte sizes (the
  // data region is sparse: only the header is read).
  void safetensors(const std::string& file, const std::vector<std::pair<std::string, std::uint64_t>>& tensors) {
    nlohmann::json h = nlohmann::json::object();
    std::uint64_t off = 0;
    for (auto& [n, b] : tensors) {
      h[n] = {{"dtype", "BF16"}, {"shape", {b / 2}}, {"data_offsets", {off, off + b}}};
      off += b;
    }
    const std::string s = h.dump();
    std::ofstream out(dir_ / file, std::ios::binary);
    std::uint64_t n = s.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << s;
    out.close();
    fs::resize_file(dir_ / file, 8 + n + off);
  }
  void config(const nlohmann::json& c) { std::ofstream(dir_ / "config.json") << c.dump(); }
  fs::path dir_;
};

// Tests that a dense decoder gives embed (one row), every layer, the head and KV bytes.
TEST_F(ModelDir, DenseDecoder) {
  config({{"num_hidden_layers", 2}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
          {"torch_dtype", "bfloat16"}});
  safetensors("model.safetensors", {{"model.embed_tokens.weight", 1000 * 64 * 2},
                                    {"model.layers.0.self_attn.q_proj.weight", 8192},
                                    {"model.layers.0.mlp.up_proj.weight", 16384},
                                    {"model.layers.1.self_attn.q_proj.weight", 8192},
                                    {"model.layers.1.mlp.up_proj.weight", 16384},
                                    {"model.norm.weight", 128},
                                    {"lm_head.weight", 1000 * 64 * 2}});
  auto p = catalog_from_model_dir(dir_.string());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->units.size(), 4u);
  EXPECT_EQ(p->units[0].name, "embed");
  EXPECT_EQ(p->units[0].bytes, 64u * 2);
  EXPECT_EQ(p->units[1].name, "layers.0");
  EXPECT_EQ(p->units[1].bytes, 8192u + 16384u);
  EXPECT_EQ(p->units[3].name, "head");
  EXPECT_EQ(p->units[3].bytes, 1000u * 64 * 2 + 128);
  EXPECT_EQ(p->kv_bytes_per_token, 2u * 2 * 2 * 16 * 2);  // K+V x layers x kv_heads x head_dim x bf16
}

// Tests that an MoE layer counts its shared weights plus top-k experts per token, and
// that a tied head reads the embedding table.
TEST_F(ModelDir, MoeDecoderAndTiedHead) {
  config({{"num_hidden_layers", 1}, {"hidden_size", 32}, {"num_attention_heads", 2}, {"num_experts_per_tok", 2},
          {"tie_word_embeddings", true}});
  safetensors("model-00001-of-00001.safetensors",
              {{"model.embed_tokens.weight", 6400},
               {"model.layers.0.self_attn.o_proj.weight", 1000},
               {"model.layers.0.mlp.experts.0.up_proj.weight", 300},
               {"model.layers.0.mlp.experts.1.up_proj.weight", 300},
               {"model.layers.0.mlp.experts.2.up_proj.weight", 300},
               {"model.layers.0.mlp.experts.3.up_proj.weight", 300}});
  auto p = catalog_from_model_dir(dir_.string());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->units.size(), 3u);
  EXPECT_EQ(p->units[1].kind, "moe-decoder");
  EXPECT_EQ(p->units[1].bytes, 1000u + 2 * 300);
  EXPECT_EQ(p->units[1].total_bytes, 1000u + 4 * 300);
  EXPECT_EQ(p->units[2].bytes, 6400u);
}

// Tests that a VLM's vision blocks become their own units, named as the interposer names
// their NVTX ranges and placed before the decoder, instead of being folded into the
// decoder's layers (three vision blocks against two decoder layers used to be refused).
TEST_F(ModelDir, VisionTowerKeepsItsOwnUnits) {
  config({{"num_hidden_layers", 2}, {"hidden_size", 64}, {"num_attention_heads", 4}});
  safetensors("model.safetensors", {{"model.embed_tokens.weight", 1000 * 64 * 2},
                                    {"model.visual.blocks.0.attn.qkv.weight", 300},
                                    {"model.visual.blocks.0.mlp.fc1.weight", 200},
                                    {"model.visual.blocks.2.attn.qkv.weight", 300},
                                    {"model.visual.blocks.1.attn.qkv.weight", 300},
                                    {"model.layers.0.self_attn.q_proj.weight", 8192},
                                    {"model.layers.1.self_attn.q_proj.weight", 8192},
                                    {"lm_head.weight", 1000 * 64 * 2}});
  auto p = catalog_from_model_dir(dir_.string());
  ASSERT_TRUE(p) << p.error().message;
  std::vector<std::string> names;
  for (const auto& u : p->units) names.push_back(u.name);
  const std::vector<std::string> want = {"visual.layers.0", "visual.layers.1", "visual.layers.2", "embed",
                                         "layers.0",        "layers.1",        "head"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(p->units[0].bytes, 500u);
  EXPECT_EQ(p->units[0].kind, "tower");
  EXPECT_EQ(p->units[4].bytes, 8192u);
}

// Tests that a layout with no layer tensors is refused with a reason naming the expectation.
TEST_F(ModelDir, UnknownLayoutIsRefused) {
  config({{"num_hidden_layers", 2}, {"hidden_size", 64}});
  safetensors("model.safetensors", {{"encoder.block.weight", 100}});
  auto p = catalog_from_model_dir(dir_.string());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("unknown model layout"), std::string::npos) << p.error().message;
}

}  // namespace
