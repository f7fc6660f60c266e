// Unit catalogs (cuhooks/profile.h), the kernel-sequence matcher and model catalogs from
// config.json + safetensors headers and from GGUF files (tools/cli/ripple-profile/model_catalog.h).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cuhooks/profile.h"
#include "tools/cli/ripple-profile/model_catalog.h"

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

// A GGUF file written field by field (the GGUF specification, version 3), as llama.cpp's
// gguf-py writes it: metadata (one string array: a vocabulary) and tensor infos; the
// data section is sparse (only the header is read).
class GgufFile {
 public:
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void str(const std::string& s) { u64(s.size()), b_.append(s); }
  void kv_str(const std::string& k, const std::string& v) { str(k), u32(8), str(v); }
  void kv_u32(const std::string& k, std::uint32_t v) { str(k), u32(4), u32(v); }
  void kv_tokens(const std::string& k, int n) {
    str(k), u32(9), u32(8), u64(static_cast<std::uint64_t>(n));
    for (int i = 0; i < n; ++i) str("tok" + std::to_string(i));
  }
  // ne: ggml order (row length first); type: ggml_type.
  void tensor(const std::string& name, std::vector<std::uint64_t> ne, std::uint32_t type) {
    ti_.push_back({name, std::move(ne), type});
  }
  void write(const fs::path& p, std::uint64_t n_kv, std::size_t cut = 0) {
    std::string head = "GGUF";
    std::string body;
    body.swap(b_);
    u32(3), u64(ti_.size()), u64(n_kv);
    head += b_;
    b_.clear();
    for (const auto& t : ti_) {
      str(t.name), u32(static_cast<std::uint32_t>(t.ne.size()));
      for (auto d : t.ne) u64(d);
      u32(t.type), u64(0);
    }
    std::string all = head + body + b_;
    if (cut) all.resize(cut);
    std::ofstream(p, std::ios::binary) << all;
  }

 private:
  void raw(const void* p, std::size_t n) { b_.append(static_cast<const char*>(p), n); }  // x86-64/aarch64: little-endian
  struct Ti {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type;
  };
  std::string b_;
  std::vector<Ti> ti_;
};

GgufFile llama2(std::uint32_t layers_key = 2) {
  GgufFile g;
  g.kv_str("general.architecture", "llama");
  g.kv_str("general.name", "tiny");
  g.kv_u32("llama.block_count", layers_key);
  g.kv_u32("llama.embedding_length", 64);
  g.kv_u32("llama.attention.head_count", 4);
  g.kv_u32("llama.attention.head_count_kv", 2);
  g.kv_tokens("tokenizer.ggml.tokens", 1000);
  g.tensor("token_embd.weight", {64, 1000}, 1);  // f16
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    g.tensor(b + "attn_norm.weight", {64}, 0);   // f32
    g.tensor(b + "attn_q.weight", {64, 64}, 8);  // q8_0: 34 bytes / 32 elements
    g.tensor(b + "ffn_up.weight", {64, 128}, 1);
  }
  g.tensor("output_norm.weight", {64}, 0);
  g.tensor("output.weight", {64, 1000}, 2);  // q4_0: 18 bytes / 32 elements
  return g;
}

// Tests that a GGUF file (llama.cpp) gives the same units as a safetensors directory:
// embed (one row), layers.N from blk.N (every type's block size), the head with the final
// norm, and f16 KV bytes; its vocabulary array is skipped, not read as a tensor.
TEST_F(ModelDir, GgufDenseDecoder) {
  llama2().write(dir_ / "m.gguf", 7);
  auto p = catalog_from_model((dir_ / "m.gguf").string());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->units.size(), 4u);
  EXPECT_EQ(p->model, "tiny");
  EXPECT_EQ(p->units[0].name, "embed");
  EXPECT_EQ(p->units[0].bytes, 64u * 2);
  EXPECT_EQ(p->units[0].total_bytes, 64u * 1000 * 2);
  EXPECT_EQ(p->units[1].name, "layers.0");
  const std::uint64_t layer = 64 * 4 + 64 * 64 / 32 * 34 + 64 * 128 * 2;
  EXPECT_EQ(p->units[1].bytes, layer);
  EXPECT_EQ(p->units[2].bytes, layer);
  EXPECT_EQ(p->units[3].name, "head");
  EXPECT_EQ(p->units[3].bytes, 64u * 1000 / 32 * 18 + 64 * 4);
  EXPECT_EQ(p->kv_bytes_per_token, 2u * 2 * 2 * 16 * 2);  // K+V x layers x kv_heads x head_dim x f16
}

// Tests that merged expert tensors count top-k of the experts per token and that a file
// without an output tensor reads the embedding table as its head (tied).
TEST_F(ModelDir, GgufMoeAndTiedHead) {
  GgufFile g;
  g.kv_str("general.architecture", "qwen3moe");
  g.kv_u32("qwen3moe.block_count", 1);
  g.kv_u32("qwen3moe.embedding_length", 32);
  g.kv_u32("qwen3moe.expert_count", 4);
  g.kv_u32("qwen3moe.expert_used_count", 2);
  g.tensor("token_embd.weight", {32, 100}, 1);
  g.tensor("blk.0.attn_output.weight", {32, 32}, 1);
  g.tensor("blk.0.ffn_up_exps.weight", {32, 16, 4}, 1);
  g.write(dir_ / "moe.gguf", 5);
  auto p = catalog_from_gguf((dir_ / "moe.gguf").string());
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->units.size(), 3u);
  EXPECT_EQ(p->units[1].kind, "moe-decoder");
  EXPECT_EQ(p->units[1].bytes, 32u * 32 * 2 + 32 * 16 * 2 * 2);
  EXPECT_EQ(p->units[1].total_bytes, 32u * 32 * 2 + 32 * 16 * 2 * 4);
  EXPECT_EQ(p->units[2].bytes, 32u * 100 * 2);
}

// Tests that a truncated or foreign file is an error naming the file, never a crash or a
// catalog, and that a tensor outside block_count is refused.
TEST_F(ModelDir, GgufBadFilesAreRefused) {
  const fs::path f = dir_ / "bad.gguf";
  for (std::size_t cut : {3u, 10u, 40u, 120u, 400u}) {
    llama2().write(f, 7, cut);
    auto p = catalog_from_gguf(f.string());
    EXPECT_FALSE(p) << "cut at " << cut;
    if (!p) {
      EXPECT_NE(p.error().message.find("bad.gguf"), std::string::npos) << p.error().message;
    }
  }
  std::ofstream(f) << "not gguf at all";
  auto p = catalog_from_gguf(f.string());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("not a GGUF file"), std::string::npos) << p.error().message;
  llama2(1).write(f, 7);  // blk.1 tensors, block_count 1
  p = catalog_from_gguf(f.string());
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("names layer 1"), std::string::npos) << p.error().message;
}

}  // namespace
