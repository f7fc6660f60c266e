// The one monotonic clock of Ripple's C++ code.
//
// CLOCK_MONOTONIC nanoseconds: the clock of the tracer's timestamps (bpf_ktime_get_ns reads
// the same clock), of the engine protocol's deadlines and grant times, of the plant's shared
// memory and of the robot tasks' ground truth, so values from any of them compare directly.
// Unsigned like the wire and BPF types; code that keeps signed nanoseconds converts at the
// call (the value fits an int64_t for 292 years of uptime).
#pragma once

#include <time.h>

#include <cstdint>

namespace ripple {

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace ripple
