// Unit catalogs from a GGUF file (llama.cpp's model format): the same units and bytes
// as catalog_from_model_dir gives for safetensors, from the GGUF header alone (metadata
// and tensor infos; the tensor data is never read). Format: the GGUF specification
// (ggml's docs/gguf.md), versions 2 and 3, little-endian.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <variant>

#include "tools/cli/ripple-profile/model_catalog.h"

namespace ripple::cuhook {
namespace {

namespace fs = std::filesystem;

// Bytes per block and elements per block of each ggml type a GGUF file may hold
// (ggml.h's enum ggml_type; the block sizes of gguf-py's GGML_QUANT_SIZES).
struct TypeSize {
  std::uint32_t block, bytes;
};
std::optional<TypeSize> type_size(std::uint32_t t) {
  static const std::map<std::uint32_t, TypeSize> k = {
      {0, {1, 4}},      {1, {1, 2}},      {2, {32, 18}},    {3, {32, 20}},    {6, {32, 22}},    {7, {32, 24}},
      {8, {32, 34}},    {9, {32, 40}},    {10, {256, 84}},  {11, {256, 110}}, {12, {256, 144}}, {13, {256, 176}},
      {14, {256, 210}}, {15, {256, 292}}, {16, {256, 66}},  {17, {256, 74}},  {18, {256, 98}},  {19, {256, 50}},
      {20, {32, 18}},   {21, {256, 110}}, {22, {256, 82}},  {23, {256, 136}}, {24, {1, 1}},     {25, {1, 2}},
      {26, {1, 4}},     {27, {1, 8}},     {28, {1, 8}},     {29, {256, 56}},  {30, {1, 2}},     {34, {256, 54}},
      {35, {256, 66}}};
  auto it = k.find(t);
  if (it == k.end()) return std::nullopt;
  return it->second;
}

// A bounded little-endian reader over the file: every length is checked against what is
// left, so a corrupt header is an error, never a huge allocation.
class Reader {
 public:
  Reader(std::ifstream& in, std::uint64_t size, std::string name) : in_(in), left_(size), name_(std::move(name)) {}
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  template <typename T>
  T num() {
    T v{};
    unsigned char b[sizeof(T)];
    if (!take(b, sizeof(T))) return v;
    std::uint64_t u = 0;
    for (int i = static_cast<int>(sizeof(T)) - 1; i >= 0; --i) u = (u << 8) | b[i];
    std::memcpy(&v, &u, sizeof(T));
    return v;
  }
  std::string str() {
    const auto n = num<std::uint64_t>();
    if (!ok_) return {};
    if (n > left_ || n > (1u << 20)) return fail("a string of " + std::to_string(n) + " bytes"), std::string();
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  }
  void skip(std::uint64_t n) {
    if (n > left_) return fail("a value past the end");
    in_.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    left_ -= n;
  }
  std::uint64_t left() const { return left_; }
  void fail(const std::string& what) {
    if (ok_) why_ = name_ + ": header truncated or corrupt (" + what + ")";
    ok_ = false;
  }

 private:
  bool take(void* p, std::uint64_t n) {
    if (!ok_) return false;
    if (n > left_ || !in_.read(static_cast<char*>(p), static_cast<std::streamsize>(n))) return fail("read past the end"), false;
    left_ -= n;
    return true;
  }
  std::ifstream& in_;
  std::uint64_t left_;
  std::string name_;
  bool ok_ = true;
  std::string why_;
};

enum : std::uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
std::uint64_t scalar_bytes(std::uint32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    default: return 0;
  }
}

using Value = std::variant<std::monostate, std::uint64_t, std::string>;

// Reads one metadata value; integers are kept (as unsigned: counts and lengths), strings
// kept, arrays skipped (the vocabulary).
Value read_value(Reader& r, std::uint32_t t, int depth = 0) {
  if (t == kString) return r.str();
  if (t == kArray) {
    const auto et = r.num<std::uint32_t>();
    const auto n = r.num<std::uint64_t>();
    if (!r.ok()) return {};
    if (const auto b = scalar_bytes(et)) {
      if (n > r.left() / b) return r.fail("an array past the end"), Value{};
      r.skip(n * b);
    } else if (et == kString || (et == kArray && depth < 2)) {
      for (std::uint64_t i = 0; i < n && r.ok(); ++i) read_value(r, et, depth + 1);
    } else {
      r.fail("array element type " + std::to_string(et));
    }
    return {};
  }
  const auto b = scalar_bytes(t);
  if (!b) return r.fail("value type " + std::to_string(t)), Value{};
  switch (t) {
    case kU8: return static_cast<std::uint64_t>(r.num<std::uint8_t>());
    case kU16: return static_cast<std::uint64_t>(r.num<std::uint16_t>());
    case kU32: return static_cast<std::uint64_t>(r.num<std::uint32_t>());
    case kI32: { const auto v = r.num<std::int32_t>(); return v < 0 ? Value{} : Value{static_cast<std::uint64_t>(v)}; }
    case kU64: return r.num<std::uint64_t>();
    case kI64: { const auto v = r.num<std::int64_t>(); return v < 0 ? Value{} : Value{static_cast<std::uint64_t>(v)}; }
    default: r.skip(b); return {};
  }
}

}  // namespace

Result<Profile> catalog_from_gguf(const std::string& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) return make_error("cannot read {}", file);
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error("cannot read {}", file);
  char magic[4] = {};
  in.read(magic, 4);
  if (!in || std::memcmp(magic, "GGUF", 4) != 0) return make_error("{}: not a GGUF file (no GGUF magic)", file);
  Reader h(in, size - 4, file);
  const auto version = h.num<std::uint32_t>();
  if (h.ok() && (version < 2 || version > 3)) return make_error("{}: GGUF version {} (2 and 3 are read)", file, version);
  const auto n_tensors = h.num<std::uint64_t>();
  const auto n_kv = h.num<std::uint64_t>();
  if (!h.ok()) return make_error("{}", h.why());
  if (n_tensors > 1'000'000 || n_kv > 1'000'000) return make_error("{}: {} tensors, {} keys: not plausible", file, n_tensors, n_kv);

  std::map<std::string, Value> kv;
  for (std::uint64_t i = 0; i < n_kv && h.ok(); ++i) {
    std::string key = h.str();
    const auto t = h.num<std::uint32_t>();
    Value v = read_value(h, t);
    kv[std::move(key)] = std::move(v);
  }
  if (!h.ok()) return make_error("{}", h.why());
  auto get_str = [&](const std::string& k) -> std::string {
    auto it = kv.find(k);
    return it != kv.end() && std::holds_alternative<std::string>(it->second) ? std::get<std::string>(it->second) : "";
  };
  auto get_u = [&](const std::string& k, std::uint64_t def) -> std::uint64_t {
    auto it = kv.find(k);
    return it != kv.end() && std::holds_alternative<std::uint64_t>(it->second) ? std::get<std::uint64_t>(it->second) : def;
  };
  const std::string arch = get_str("general.architecture");
  if (arch.empty()) return make_error("{}: no general.architecture", file);
  const std::uint64_t layers = get_u(arch + ".block_count", 0);
  const std::uint64_t hidden = get_u(arch + ".embedding_length", 0);
  const std::uint64_t heads = get_u(arch + ".attention.head_count", 0);
  const std::uint64_t kv_heads = get_u(arch + ".attention.head_count_kv", heads);
  const std::uint64_t head_dim = get_u(arch + ".attention.key_length", heads ? hidden / heads : 0);
  const std::uint64_t experts = get_u(arch + ".expert_count", 0);
  const std::uint64_t used = get_u(arch + ".expert_used_count", experts);
  if (layers == 0 || layers > 100'000) return make_error("{}: {}.block_count is missing or not plausible", file, arch);
  if (hidden == 0) return make_error("{}: {}.embedding_length is missing", file, arch);

  struct Layer {
    std::uint64_t dense = 0, experts = 0;
  };
  std::vector<Layer> layer(layers);
  std::uint64_t embed = 0, embed_row = 0, head = 0, final_norm = 0;
  bool has_head = false;
  static const std::regex blk_re(R"(^blk\.([0-9]+)\.)");
  for (std::uint64_t i = 0; i < n_tensors && h.ok(); ++i) {
    const std::string name = h.str();
    const auto n_dims = h.num<std::uint32_t>();
    if (!h.ok()) break;
    if (n_dims == 0 || n_dims > 4) return make_error("{}: tensor '{}' has {} dimensions", file, name, n_dims);
    std::array<std::uint64_t, 4> ne{1, 1, 1, 1};
    for (std::uint32_t d = 0; d < n_dims; ++d) ne[d] = h.num<std::uint64_t>();
    const auto type = h.num<std::uint32_t>();
    h.num<std::uint64_t>();  // offset in the data section
    if (!h.ok()) break;
    const auto ts = type_size(type);
    if (!ts) return make_error("{}: tensor '{}' has ggml type {}, unknown here", file, name, type);
    if (ne[0] % ts->block) return make_error("{}: tensor '{}': {} elements a row, not whole blocks of {}", file, name, ne[0], ts->block);
    const std::uint64_t row = ne[0] / ts->block * ts->bytes;
    std::uint64_t bytes = row;
    for (int d = 1; d < 4; ++d) {
      if (ne[d] && bytes > UINT64_MAX / ne[d]) return make_error("{}: tensor '{}' is too large", file, name);
      bytes *= ne[d];
    }
    std::smatch m;
    if (std::regex_search(name, m, blk_re)) {
      const auto l = std::stoull(m[1].str());
      if (l >= layers) return make_error("{}: tensor '{}' names layer {} but {}.block_count is {}", file, name, l, arch, layers);
      // Merged expert tensors (ffn_up_exps, ...): one tensor holds every expert.
      if (name.find("_exps.") != std::string::npos) layer[l].experts += bytes;
      else layer[l].dense += bytes;
    } else if (name.rfind("token_embd.", 0) == 0) {
      embed += bytes;
      if (name == "token_embd.weight") embed_row = row;
    } else if (name.rfind("output_norm", 0) == 0) {
      final_norm += bytes;
    } else if (name.rfind("output.", 0) == 0) {
      head += bytes;
      has_head = true;
    }
  }
  if (!h.ok()) return make_error("{}", h.why());

  Profile p;
  const std::string name = get_str("general.name");
  p.model = name.empty() ? fs::path(file).stem().string() : name;
  // llama.cpp's default KV cache holds f16 keys and values.
  p.kv_bytes_per_token = 2ull * layers * kv_heads * head_dim * 2;
  if (embed) p.units.push_back({"embed", "embed", embed_row ? embed_row : hidden * 2, embed, 0, {}});
  for (std::uint64_t l = 0; l < layers; ++l) {
    const Layer& L = layer[l];
    ProfileUnit u;
    u.name = "layers." + std::to_string(l);
    u.total_bytes = L.dense + L.experts;
    if (!L.experts) {
      u.kind = "decoder";
      u.bytes = L.dense;
    } else {
      // A batch-1 token reads the shared weights and its top-k routed experts.
      u.kind = "moe-decoder";
      u.bytes = L.dense + (experts ? L.experts / experts * std::min(used, experts) : L.experts);
    }
    p.units.push_back(std::move(u));
  }
  const std::uint64_t out = has_head ? head : embed;  // tied: the head reads the embedding table
  p.units.push_back({"head", "head", out + final_norm, out + final_norm, 0, {}});
  return p;
}

Result<Profile> catalog_from_model(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return catalog_from_gguf(path);
  return catalog_from_model_dir(path);
}

}  // namespace ripple::cuhook
