// The counters (cuhooks/counters.h): every accessor is generated from the list.
#include "cuhooks/counters.h"

#include <cstdio>

namespace ripple::cuhook {

Counters g_c;

ripple_cuhook_stats snapshot(const Counters& c) {
  ripple_cuhook_stats s{};
#define RH_LOAD(name, doc) s.name = c.name.load(std::memory_order_relaxed);
  RIPPLE_CUHOOK_COUNTERS(RH_LOAD)
#undef RH_LOAD
  return s;
}

std::string stats_json(const Counters& c, int pid, const std::string& extra) {
  const ripple_cuhook_stats s = snapshot(c);
  std::string o = "{\"pid\":" + std::to_string(pid);
#define RH_JSON(name, doc) o += ",\"" #name "\":" + std::to_string(s.name);
  RIPPLE_CUHOOK_COUNTERS(RH_JSON)
#undef RH_JSON
  if (!extra.empty()) o += "," + extra;
  o += ",\"calls\":{";
  bool first = true;
  for (int i = 0; i < kHookCount; ++i) {
    const std::uint64_t n = c.calls[i].load(std::memory_order_relaxed);
    if (!n) continue;
    o += std::string(first ? "" : ",") + "\"" + kHookNames[i] + "\":[" + std::to_string(n) + "," +
         std::to_string(c.bytes[i].load(std::memory_order_relaxed)) + "]";
    first = false;
  }
  return o + "}}";
}

}  // namespace ripple::cuhook
