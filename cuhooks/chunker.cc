#include "cuhooks/chunker.h"

#include <algorithm>

namespace ripple::cuhook {

std::uint32_t sub_unit_count(std::uint64_t unit_bytes, std::uint64_t chunk) {
  if (chunk == 0 || unit_bytes <= chunk) return 1;
  const std::uint64_t n = unit_bytes / chunk + (unit_bytes % chunk != 0);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX));
}

std::vector<engine::UnitInfo> split_unit(const engine::UnitInfo& u, std::uint64_t chunk) {
  const std::uint32_t n = sub_unit_count(u.bytes, chunk);
  if (n == 1) return {u};
  // Names fit the field: the unit's name cut to leave room for the two-byte suffix.
  const std::string stem = u.name.substr(0, engine::kUnitNameBytes - 3);
  auto part = [&](std::uint64_t bytes, const char* suffix) {
    engine::UnitInfo s;
    s.name = stem + suffix;
    s.bytes = bytes;
    const double share = static_cast<double>(bytes) / static_cast<double>(u.bytes);
    s.duration_ns = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(u.duration_ns) * share));
    return s;
  };
  std::vector<engine::UnitInfo> out(n - 1, part(chunk, "/c"));
  const std::uint64_t rest = u.bytes - static_cast<std::uint64_t>(n - 1) * chunk;
  out.push_back(rest == chunk ? out.front() : part(rest, "/t"));
  return out;
}

std::vector<Chunk> plan_chunks(std::uint64_t at, std::uint64_t bytes, std::uint64_t unit_bytes, std::uint64_t chunk,
                               std::uint64_t granule) {
  const std::uint32_t n = sub_unit_count(unit_bytes, chunk);
  auto sub_of = [&](std::uint64_t x) {  // x: a byte in unit space
    if (chunk == 0) return 0u;
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(x / chunk, n - 1));
  };
  if (bytes == 0) return {};
  if (chunk == 0) return {{0, bytes, sub_of(at + bytes - 1)}};
  granule = std::max<std::uint64_t>(granule, 1);
  std::vector<Chunk> out;
  std::uint64_t off = 0;
  while (off < bytes) {
    // The next multiple of C after this chunk's first byte, in the copy.
    const std::uint64_t x = at + off;
    std::uint64_t end = (x / chunk + 1) * chunk - at;
    if (end >= bytes) {
      end = bytes;
    } else if (granule > 1) {
      end -= end % granule;                       // whole granules
      if (end <= off) end = off + granule;        // at least one
      end = std::min(end, bytes);
    }
    out.push_back({off, end - off, sub_of(at + end - 1)});
    off = end;
  }
  return out;
}

}  // namespace ripple::cuhook
