// The one percentile routine: nearest rank (Hyndman & Fan type 1), the smallest sample with
// at least p % of the samples at or below it, rank ceil(p n / 100) clamped to [1, n].
//
// The config's `deadline = "K x p99"` (agent/config/config.cc profile_p99) and the
// estimator's solo p99, p_i (agent/pricing/estimator.cc), both call it, so they agree on
// p99 by construction; the daemon's latency samples, ripplectl trace, the robot tasks'
// summaries and the tracer microbenchmark use it too. p n is formed before the division, so
// the rank is exact whenever p n is: p / 100 * n rounds past an integer (p99.9 of 1000
// samples: 0.999 * 1000 = 999.0000000000001, rank 1000), p * n / 100 does not.
// Header-only: no I/O, no allocation beyond the copy.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ripple::pricing {

// The 1-based nearest rank of percentile p (0..100) among n > 0 samples.
inline std::size_t nearest_rank(std::size_t n, double p) {
  const double r = std::ceil(p * static_cast<double>(n) / 100.0);
  if (!(r >= 1.0)) return 1;  // p <= 0, or NaN
  return std::min(static_cast<std::size_t>(r), n);
}

// Percentile p of samples already sorted ascending; T{} when there are none.
template <class T>
T percentile_sorted(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return T{};
  return sorted[nearest_rank(sorted.size(), p) - 1];
}

// Percentile p of unsorted samples (takes a copy and partially sorts it); T{} when none.
template <class T>
T percentile(std::vector<T> v, double p) {
  if (v.empty()) return T{};
  const auto k = static_cast<std::ptrdiff_t>(nearest_rank(v.size(), p) - 1);
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[static_cast<std::size_t>(k)];
}

}  // namespace ripple::pricing
