#include "cuhooks/profile.h"

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

Result<Profile> parse_profile(std::string_view text, const std::string& origin) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error("{}: not a JSON object", origin);
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
    if (pu.name.size() > 23) return make_error("{}: units[{}].name '{}' is longer than 23 bytes", origin, i, pu.name);
    if (!u.contains("bytes") || !u["bytes"].is_number_unsigned())
      return make_error("{}: units[{}].bytes must be a non-negative integer", origin, i);
    pu.bytes = u["bytes"].get<std::uint64_t>();
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

std::string unit_name_for_range(const std::string& range, const std::string& pattern, bool* is_unit) {
  *is_unit = false;
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error&) {
    return {};
  }
  std::smatch m;
  if (!std::regex_search(range, m, re)) return {};
  *is_unit = true;
  if (m.size() > 1 && m[1].matched) return "layers." + m[1].str();
  return range.size() > 23 ? range.substr(0, 23) : range;
}

}  // namespace ripple::cuhook
