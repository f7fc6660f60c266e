#include "tools/cli/ripple-profile/model_catalog.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ripple::cuhook {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Tensor {
  std::string name;
  std::uint64_t bytes;
};

Result<std::vector<Tensor>> read_safetensors_header(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error("cannot read {}", p.string());
  unsigned char len_le[8];
  if (!in.read(reinterpret_cast<char*>(len_le), 8)) return make_error("{}: shorter than the 8-byte header length", p.string());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len_le[i];
  if (n == 0 || n > (100u << 20)) return make_error("{}: header length {} is not plausible", p.string(), n);
  std::string h(n, '\0');
  if (!in.read(h.data(), static_cast<std::streamsize>(n))) return make_error("{}: header truncated ({} bytes declared)", p.string(), n);
  json j = json::parse(h, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("{}: header is not a JSON object", p.string());
  std::vector<Tensor> out;
  for (auto& [name, v] : j.items()) {
    if (name == "__metadata__") continue;
    if (!v.is_object() || !v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      return make_error("{}: tensor '{}' has no data_offsets [begin, end]", p.string(), name);
    const auto b = v["data_offsets"][0].get<std::uint64_t>(), e = v["data_offsets"][1].get<std::uint64_t>();
    if (e < b) return make_error("{}: tensor '{}' ends before it begins", p.string(), name);
    out.push_back({name, e - b});
  }
  return out;
}

std::uint64_t dtype_bytes(const std::string& d) {
  if (d == "float32") return 4;
  if (d.find("float8") != std::string::npos || d == "int8") return 1;
  return 2;  // bfloat16, float16
}

template <typename T>
T first_of(const json& c, std::initializer_list<const char*> keys, T def) {
  for (const char* k : keys)
    if (c.contains(k) && c[k].is_number()) return c[k].get<T>();
  return def;
}

}  // namespace

Result<Profile> catalog_from_model_dir(const std::string& dir) {
  const fs::path d(dir);
  std::ifstream cin(d / "config.json");
  if (!cin) return make_error("{}: no config.json", dir);
  std::stringstream ss;
  ss << cin.rdbuf();
  json cfg = json::parse(ss.str(), nullptr, false);
  if (cfg.is_discarded() || !cfg.is_object()) return make_error("{}/config.json: not a JSON object", dir);
  if (cfg.contains("text_config") && cfg["text_config"].is_object()) cfg = cfg["text_config"];  // VLMs

  std::vector<Tensor> tensors;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (e.path().extension() == ".safetensors") files.push_back(e.path());
  if (files.empty()) return make_error("{}: no *.safetensors file", dir);
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto t = read_safetensors_header(f);
    if (!t) return t.error();
    tensors.insert(tensors.end(), t->begin(), t->end());
  }

  const int layers_cfg = first_of<int>(cfg, {"num_hidden_layers", "n_layer", "num_layers"}, 0);
  const std::uint64_t hidden = first_of<std::uint64_t>(cfg, {"hidden_size", "n_embd", "d_model"}, 0);
  const std::uint64_t heads = first_of<std::uint64_t>(cfg, {"num_attention_heads", "n_head"}, 0);
  const std::uint64_t kv_heads = first_of<std::uint64_t>(cfg, {"num_key_value_heads", "num_kv_heads"}, heads);
  const std::uint64_t head_dim = first_of<std::uint64_t>(cfg, {"head_dim"}, heads ? hidden / heads : 0);
  const std::uint64_t top_k = first_of<std::uint64_t>(cfg, {"num_experts_per_tok", "moe_top_k", "top_k"}, 0);
  const std::uint64_t esize = dtype_bytes(cfg.value("torch_dtype", cfg.value("dtype", "bfloat16")));
  if (layers_cfg <= 0) return make_error("{}/config.json: num_hidden_layers is missing or not positive", dir);
  if (hidden == 0) return make_error("{}/config.json: hidden_size is missing", dir);

  static const std::regex layer_re(R"((?:^|\.)(?:layers|h|blocks)\.([0-9]+)\.)");
  static const std::regex expert_re(R"(\.experts\.([0-9]+)\.)");
  struct Layer {
    std::uint64_t dense = 0;
    std::map<int, std::uint64_t> experts;
  };
  std::vector<Layer> layer(static_cast<std::size_t>(layers_cfg));
  // Layers of another tower (a VLM's vision blocks): named as the interposer names their
  // NVTX ranges (visual.blocks.3 -> visual.layers.3), in the order first seen by number.
  std::map<std::string, std::pair<int, std::uint64_t>> tower;  // name -> (layer number, bytes)
  std::uint64_t embed = 0, head = 0, final_norm = 0, other = 0;
  bool has_head = false;
  for (const auto& t : tensors) {
    std::smatch m;
    if (std::regex_search(t.name, m, layer_re)) {
      const int l = std::stoi(m[1].str());
      bool is_unit = false;
      // The name up to the layer number, e.g. "model.visual.blocks.3".
      const std::string path = t.name.substr(0, static_cast<std::size_t>(m.position(0) + m.length(0) - 1));
      const std::string unit = unit_name_for_range(path, kDefaultNvtxPattern, &is_unit);
      if (is_unit && unit != "layers." + m[1].str()) {
        auto& [num, bytes] = tower[unit];
        num = l;
        bytes += t.bytes;
        continue;
      }
      if (l < 0 || l >= layers_cfg)
        return make_error("{}: tensor '{}' names layer {} but config.json has {} layers", dir, t.name, l, layers_cfg);
      std::smatch em;
      if (std::regex_search(t.name, em, expert_re)) layer[static_cast<std::size_t>(l)].experts[std::stoi(em[1].str())] += t.bytes;
      else layer[static_cast<std::size_t>(l)].dense += t.bytes;
    } else if (t.name.find("embed_tokens") != std::string::npos || t.name.find("wte") != std::string::npos ||
               t.name.find("word_embeddings") != std::string::npos) {
      embed += t.bytes;
    } else if (t.name.find("lm_head") != std::string::npos) {
      head += t.bytes;
      has_head = true;
    } else if (t.name.find("norm") != std::string::npos || t.name.find("ln_f") != std::string::npos) {
      final_norm += t.bytes;
    } else {
      other += t.bytes;
    }
  }
  bool any_layer = false;
  for (const auto& l : layer) any_layer |= l.dense || !l.experts.empty();
  if (!any_layer)
    return make_error("{}: unknown model layout: no tensor names a layer (expected 'model.layers.N.' or 'h.N.')", dir);

  Profile p;
  p.model = cfg.value("_name_or_path", fs::absolute(d).filename().string());
  p.kv_bytes_per_token = 2ull * static_cast<std::uint64_t>(layers_cfg) * kv_heads * head_dim * esize;
  // Another tower runs first (a VLM encodes the image, then the decoder prefills on it).
  std::vector<std::pair<std::string, std::pair<int, std::uint64_t>>> towers(tower.begin(), tower.end());
  std::stable_sort(towers.begin(), towers.end(), [](const auto& a, const auto& b) {
    const std::string ta = a.first.substr(0, a.first.rfind("layers.")), tb = b.first.substr(0, b.first.rfind("layers."));
    return ta != tb ? ta < tb : a.second.first < b.second.first;
  });
  for (const auto& [name, nb] : towers) p.units.push_back({name, "tower", nb.second, nb.second, 0, {}});
  if (embed) p.units.push_back({"embed", "embed", hidden * esize, embed, 0, {}});
  for (int l = 0; l < layers_cfg; ++l) {
    const Layer& L = layer[static_cast<std::size_t>(l)];
    ProfileUnit u;
    u.name = "layers." + std::to_string(l);
    std::uint64_t experts_total = 0;
    for (const auto& [e, b] : L.experts) experts_total += b;
    u.total_bytes = L.dense + experts_total;
    if (L.experts.empty()) {
      u.kind = "decoder";
      u.bytes = L.dense;
    } else {
      // A batch-1 token reads the shared weights and its top-k routed experts.
      u.kind = "moe-decoder";
      const std::uint64_t k = top_k ? std::min<std::uint64_t>(top_k, L.experts.size()) : L.experts.size();
      u.bytes = L.dense + experts_total / L.experts.size() * k;
    }
    p.units.push_back(std::move(u));
  }
  // The head reads the final norm and the output projection (the embedding table when tied).
  const std::uint64_t out = has_head ? head : embed;
  p.units.push_back({"head", "head", out + final_norm, out + final_norm, 0, {}});
  (void)other;
  return p;
}

}  // namespace ripple::cuhook
