// Basic units of the pricing core (paper §4.2, App. C).
//
// Time is integer nanoseconds on the caller's clock: the pricing core never reads
// a clock itself, every entry point takes `now` (the injected clock). Volumes are
// integer bytes. Slopes are nanoseconds of CPU delay per GPU byte.
#pragma once

#include <cstdint>
#include <limits>

namespace ripple::pricing {

using Nanos = std::int64_t;
using Bytes = std::int64_t;
using TaskId = std::uint32_t;
using JobSeq = std::uint64_t;
using GrantId = std::uint64_t;
using EngineId = std::uint32_t;

inline constexpr Nanos kNsPerUs = 1'000;
inline constexpr Nanos kNsPerMs = 1'000'000;
inline constexpr Nanos kNsPerSec = 1'000'000'000;
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

// B(t) when no active uncertified job limits GPU work (App. C, "Charging").
inline constexpr Bytes kUnlimitedBytes = std::numeric_limits<Bytes>::max();

// Where a release falls relative to the deadline-bound (VLM) engine's period
// (App. C): the first 10 % of a VLM period is the head phase, the rest is kRest.
// Without a deadline-bound engine every release is kRest.
enum class Phase : std::uint8_t { kRest = 0, kVlmHead = 1 };
inline constexpr int kPhaseCount = 2;

}  // namespace ripple::pricing
