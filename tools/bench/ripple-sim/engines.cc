#include "tools/bench/ripple-sim/engines.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agent/admission/admission.h"
#include "cuhooks/chunker.h"

namespace ripple::sim {

Bytes EngineModel::pass_bytes() const {
  Bytes b = 0;
  for (auto u : pass) b += catalog[u].bytes;
  return b;
}

Nanos EngineModel::pass_ns() const {
  Nanos d = 0;
  for (auto u : pass) d += catalog[u].duration;
  return d;
}

double EngineModel::gbps() const {
  const Nanos d = pass_ns();
  return d > 0 ? static_cast<double>(pass_bytes()) / static_cast<double>(d) : 0.0;
}

admission::EngineSpec EngineModel::spec() const {
  admission::EngineSpec s;
  s.name = name;
  s.kind = kind;
  s.catalog = catalog;
  s.grant_overhead = grant_overhead;
  s.period = period;
  s.deadline = deadline;
  return s;
}

Status validate(const EngineModel& m) {
  if (Status s = admission::validate(m.spec()); !s) return s;
  if (m.pass.empty()) return make_error("engine {}: its pass has no units", m.name);
  if (!(m.h2d_fraction >= 0 && m.h2d_fraction <= 1))
    return make_error("engine {}: h2d_fraction {} must be in [0, 1]", m.name, m.h2d_fraction);
  for (auto u : m.pass)
    if (u >= m.catalog.size()) return make_error("engine {}: pass names unit {} outside the catalog", m.name, u);
  return Status::Ok();
}

EngineModel uniform_engine(std::string name, admission::EngineKind kind, std::uint32_t units, Bytes unit_bytes,
                           Nanos unit_ns) {
  EngineModel m;
  m.name = std::move(name);
  m.kind = kind;
  m.catalog.push_back({"layer", unit_bytes, unit_ns});
  m.pass.assign(units, 0);
  return m;
}

EngineModel chunked_engine(const EngineModel& m, Bytes chunk) {
  if (chunk <= 0) return m;
  EngineModel c = m;
  c.catalog.clear();
  std::vector<std::vector<std::uint32_t>> subs(m.catalog.size());  // catalog index -> its pass entries
  for (std::size_t u = 0; u < m.catalog.size(); ++u) {
    const auto& s = m.catalog[u];
    const auto parts = cuhook::split_unit({s.name, static_cast<std::uint64_t>(s.bytes), static_cast<std::uint64_t>(s.duration)},
                                          static_cast<std::uint64_t>(chunk));
    // One entry per distinct sub-unit size (C, and the rest), as the interposer's Hello.
    const auto full = static_cast<std::uint32_t>(c.catalog.size());
    c.catalog.push_back({parts.front().name, static_cast<Bytes>(parts.front().bytes), static_cast<Nanos>(parts.front().duration_ns)});
    std::uint32_t tail = full;
    if (parts.back().bytes != parts.front().bytes) {
      tail = static_cast<std::uint32_t>(c.catalog.size());
      c.catalog.push_back({parts.back().name, static_cast<Bytes>(parts.back().bytes), static_cast<Nanos>(parts.back().duration_ns)});
    }
    subs[u].assign(parts.size() - 1, full);
    subs[u].push_back(tail);
  }
  c.pass.clear();
  for (auto u : m.pass) c.pass.insert(c.pass.end(), subs[u].begin(), subs[u].end());
  return c;
}

Result<EngineModel> engine_from_profile_json(const std::string& text, const std::string& origin, std::string name,
                                             admission::EngineKind kind, double rate_gbps) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return make_error("{}: not JSON: {}", origin, e.what());
  }
  if (!j.contains("units") || !j["units"].is_array() || j["units"].empty())
    return make_error("{}: no \"units\" array (a ripple-unit-catalog/1 profile)", origin);
  EngineModel m;
  m.name = std::move(name);
  m.kind = kind;
  for (const auto& u : j["units"]) {
    admission::UnitSpec s;
    s.name = u.value("name", std::string("unit"));
    const auto bytes = u.value("bytes", std::uint64_t{0});
    const auto gpu_ns = u.value("gpu_ns", std::uint64_t{0});
    s.bytes = bytes > 0 ? static_cast<Bytes>(bytes) : 1;
    if (gpu_ns > 0) {
      s.duration = static_cast<Nanos>(gpu_ns);
    } else if (bytes > 0) {
      if (!(rate_gbps > 0))
        return make_error("{}: unit {} has no recorded gpu_ns; give the engine a rate (gbps)", origin, s.name);
      s.duration = std::max<Nanos>(1, static_cast<Nanos>(std::llround(static_cast<double>(bytes) / rate_gbps)));
    } else {
      s.duration = 1000;
    }
    m.pass.push_back(static_cast<std::uint32_t>(m.catalog.size()));
    m.catalog.push_back(std::move(s));
  }
  return m;
}

Result<EngineModel> engine_from_profile(const std::string& path, std::string name, admission::EngineKind kind,
                                        double rate_gbps) {
  std::ifstream in(path);
  if (!in) return make_error("cannot read profile {}", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return engine_from_profile_json(ss.str(), path, std::move(name), kind, rate_gbps);
}

GrantCache::Acquired GrantCache::acquire(std::uint64_t work, std::uint32_t first, Nanos now) {
  Acquired out;
  while (!cache_.empty()) {
    const GrantMsg& g = cache_.front();
    if (g.work == work && g.first == first && now <= g.start_by) {
      if (now >= g.not_before) {
        out.grant = g;
        cache_.pop_front();
      } else {
        out.hold_until = g.not_before;
      }
      return out;
    }
    out.discarded.push_back(g.id);
    ++discarded_;
    cache_.pop_front();
  }
  return out;
}

}  // namespace ripple::sim
