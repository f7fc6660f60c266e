#include "cuhooks/profile.h"

#include <cctype>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ripple::cuhook {

int Profile::find(std::string_view name) const {
  for (std::size_t i = 0; i < units.size(); ++i)
    if (units[i].name == name) return static_cast<int>(i);
  return -1;
}

namespace {
// json::value() throws when a present field has another type; the interposer reads the
// catalog inside the host application, where an exception would abort it. So every
// optional field is checked first (found by tests/fuzz/fuzz_profile).
bool wrong_type(const nlohmann::json& o, const char* key, bool (nlohmann::json::*is)() const noexcept) {
  auto it = o.find(key);
  return it != o.end() && !((*it).*is)();
}
}  // namespace

Result<Profile> parse_profile(std::string_view text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("{}: not a JSON object", origin);
  using J = nlohmann::json;
  if (wrong_type(j, "format", &J::is_string) || wrong_type(j, "model", &J::is_string))
    return make_error("{}: fields 'format' and 'model' must be strings", origin);
  if (j.value("format", "") != kCatalogFormat)
    return make_error("{}: field 'format' must be \"{}\"", origin, kCatalogFormat);
  Profile p;
  p.model = j.value("model", "");
  if (j.contains("kv_bytes_per_token")) {
    if (!j["kv_bytes_per_token"].is_number_unsigned())
      return make_error("{}: field 'kv_bytes_per_token' must be a non-negative integer", origin);
    p.kv_bytes_per_token = j["kv_bytes_per_token"].get<std::uint64_t>();
  }
  if (!j.contains("units") || !j["units"].is_array() || j["units"].empty())
    return make_error("{}: field 'units' must be a non-empty array", origin);
  std::size_t i = 0;
  for (const auto& u : j["units"]) {
    ProfileUnit pu;
    if (!u.is_object() || !u.contains("name") || !u["name"].is_string() || u["name"].get<std::string>().empty())
      return make_error("{}: units[{}].name must be a non-empty string", origin, i);
    pu.name = u["name"].get<std::string>();
    if (pu.name.size() > kMaxUnitName)
      return make_error("{}: units[{}].name '{}' is longer than {} bytes", origin, i, pu.name, kMaxUnitName);
    if (!u.contains("bytes") || !u["bytes"].is_number_unsigned())
      return make_error("{}: units[{}].bytes must be a non-negative integer", origin, i);
    pu.bytes = u["bytes"].get<std::uint64_t>();
    if (wrong_type(u, "kind", &J::is_string) || wrong_type(u, "total_bytes", &J::is_number_unsigned) ||
        wrong_type(u, "gpu_ns", &J::is_number_unsigned))
      return make_error("{}: units[{}]: 'kind' must be a string, 'total_bytes' and 'gpu_ns' non-negative integers",
                        origin, i);
    pu.kind = u.value("kind", "other");
    pu.total_bytes = u.value("total_bytes", pu.bytes);
    pu.gpu_ns = u.value("gpu_ns", std::uint64_t{0});
    if (u.contains("kernels")) {
      if (!u["kernels"].is_array()) return make_error("{}: units[{}].kernels must be an array", origin, i);
      for (const auto& k : u["kernels"]) {
        if (!k.is_string()) return make_error("{}: units[{}].kernels holds a non-string", origin, i);
        pu.kernels.push_back(k.get<std::string>());
      }
    }
    if (p.find(pu.name) >= 0) return make_error("{}: unit name '{}' appears twice", origin, pu.name);
    p.units.push_back(std::move(pu));
    ++i;
  }
  return p;
}

Result<Profile> load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read profile {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_profile(ss.str(), path);
}

std::string profile_to_json(const Profile& p) {
  nlohmann::ordered_json j;
  j["format"] = kCatalogFormat;
  j["model"] = p.model;
  j["kv_bytes_per_token"] = p.kv_bytes_per_token;
  j["units"] = nlohmann::ordered_json::array();
  for (const auto& u : p.units) {
    nlohmann::ordered_json ju;
    ju["name"] = u.name;
    ju["kind"] = u.kind;
    ju["bytes"] = u.bytes;
    ju["total_bytes"] = u.total_bytes;
    if (u.gpu_ns) ju["gpu_ns"] = u.gpu_ns;
    if (!u.kernels.empty()) ju["kernels"] = u.kernels;
    j["units"].push_back(std::move(ju));
  }
  return j.dump(2) + "\n";
}

SequenceMatcher::SequenceMatcher(const Profile& p) {
  first_.assign(p.units.size(), std::string::npos);
  last_.assign(p.units.size(), std::string::npos);
  for (std::size_t u = 0; u < p.units.size(); ++u) {
    if (p.units[u].kernels.empty()) continue;
    first_[u] = seq_.size();
    for (const auto& k : p.units[u].kernels) {
      seq_.push_back(k);
      unit_of_.push_back(static_cast<int>(u));
    }
    last_[u] = seq_.size() - 1;
  }
}

SequenceMatcher::Step SequenceMatcher::on_kernel(std::string_view name) {
  Step s;
  if (seq_.empty()) return s;
  if (pos_ >= seq_.size()) pos_ = 0;
  std::size_t at = std::string::npos;
  if (seq_[pos_] == name) {
    at = pos_;
  } else {
    // Resynchronise on the nearest unit start this kernel begins: forward, then wrap.
    auto is_start = [&](std::size_t q) { return first_[static_cast<std::size_t>(unit_of_[q])] == q && seq_[q] == name; };
    for (std::size_t q = pos_ + 1; q < seq_.size() && at == std::string::npos; ++q)
      if (is_start(q)) at = q;
    for (std::size_t q = 0; q <= pos_ && at == std::string::npos; ++q)
      if (is_start(q)) at = q;
    if (at == std::string::npos) {
      ++unmatched_;
      return s;
    }
    ++resyncs_;
  }
  const auto u = static_cast<std::size_t>(unit_of_[at]);
  s.matched = true;
  if (first_[u] == at) s.begin_unit = static_cast<int>(u);
  if (last_[u] == at) s.end_unit = static_cast<int>(u);
  pos_ = at + 1;
  return s;
}

namespace {

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// The tower a numbered range belongs to: the range before the keyword, without
// leading/trailing separators and leading "model"/"transformer" roots.
std::string tower_of(const std::string& range, std::size_t match_pos, const std::string& match) {
  std::size_t end = match_pos;
  for (std::size_t k = 0; k < match.size() && !is_alnum(match[k]); ++k) ++end;
  std::string p = range.substr(0, end);
  auto trim = [&] {
    while (!p.empty() && !is_alnum(p.back())) p.pop_back();
    std::size_t b = 0;
    while (b < p.size() && !is_alnum(p[b])) ++b;
    p.erase(0, b);
  };
  trim();
  for (bool again = true; again;) {
    again = false;
    for (const char* root : {"model", "transformer"}) {
      const std::size_t n = std::strlen(root);
      if (p.compare(0, n, root) == 0 && (p.size() == n || !is_word(p[n]))) {
        p.erase(0, n);
        trim();
        again = true;
      }
    }
  }
  return p;
}

}  // namespace

std::string unit_name_for_range(const std::string& range, const std::string& pattern, bool* is_unit) {
  *is_unit = false;
  auto p = NvtxPattern::compile(pattern);
  return p ? p->unit_name(range, is_unit) : std::string();
}

Result<NvtxPattern> NvtxPattern::compile(const std::string& pattern) {
  try {
    return NvtxPattern(std::regex(pattern, std::regex::ECMAScript));
  } catch (const std::regex_error& e) {
    return make_error("{}", e.what());
  }
}

std::string NvtxPattern::unit_name(const std::string& range, bool* is_unit) const {
  *is_unit = false;
  const std::regex& re = re_;
  std::smatch m;
  if (!std::regex_search(range, m, re)) return {};
  *is_unit = true;
  if (m.size() <= 1 || !m[1].matched) return range.substr(0, kMaxUnitName);
  const std::string base = "layers." + m[1].str();
  if (base.size() + 2 > kMaxUnitName) return base.substr(0, kMaxUnitName);  // no room for a tower
  std::string tower = tower_of(range, static_cast<std::size_t>(m.position(0)), m[0].str());
  if (tower.empty()) return base;
  const std::size_t room = kMaxUnitName - base.size() - 1;
  if (tower.size() > room) {
    // Whole leading components that fit, else the first `room` characters.
    std::size_t cut = 0;
    for (std::size_t q = 1; q <= room && q < tower.size(); ++q)
      if (!is_word(tower[q])) cut = q;
    tower.resize(cut ? cut : room);
    while (!tower.empty() && !is_alnum(tower.back())) tower.pop_back();
  }
  return tower.empty() ? base : tower + "." + base;
}

}  // namespace ripple::cuhook
