// The interposer's counters, generated from the one list in include/ripple/cuhook.h
// (RIPPLE_CUHOOK_COUNTERS): the atomic counters here, the public snapshot
// (ripple_cuhook_get_stats) and the stats file's JSON keys (RIPPLE_CUHOOK_STATS) cannot
// drift apart. Internal to libripple-cuhook.so.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "cuhooks/hooks.h"
#include "include/ripple/cuhook.h"

namespace ripple::cuhook {

struct Counters {
#define RH_COUNTER(name, doc) std::atomic<std::uint64_t> name{0};
  RIPPLE_CUHOOK_COUNTERS(RH_COUNTER)
#undef RH_COUNTER
  // Per hook: calls and bytes (the stats file's "calls").
  std::atomic<std::uint64_t> calls[kHookCount]{}, bytes[kHookCount]{};
};
extern Counters g_c;

// Every listed counter, loaded once.
ripple_cuhook_stats snapshot(const Counters& c);
// The stats file's JSON: {"pid":P, <every listed counter>, <extra>, "calls":{...}}.
// `extra`: more members, each `"key":value`, comma-separated (may be empty).
std::string stats_json(const Counters& c, int pid, const std::string& extra);

}  // namespace ripple::cuhook
