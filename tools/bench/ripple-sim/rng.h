// ripple-sim: a small deterministic random source. The draws are computed here from a
// 64-bit generator (SplitMix64 seeding xoshiro256**), not by <random>'s distributions,
// whose algorithms the standard leaves to the library: the same seed gives the same
// run on every compiler and machine.
#pragma once

#include <cmath>
#include <cstdint>

namespace ripple::sim {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 1) { reseed(seed); }
  void reseed(std::uint64_t seed) {
    std::uint64_t x = seed;
    for (auto& w : s_) w = splitmix(x);
  }
  // An independent stream for a named purpose: (seed, stream) -> generator.
  static Rng stream(std::uint64_t seed, std::uint64_t id) {
    std::uint64_t x = seed ^ (0x9e3779b97f4a7c15ULL * (id + 1));
    return Rng(splitmix(x));
  }
  std::uint64_t next() {
    const std::uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1].
  double uniform_pos() { return 1.0 - uniform(); }
  // Standard normal (Box-Muller; one of the pair is dropped so a draw is one call).
  double normal() {
    const double u1 = uniform_pos(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  // Lomax (Pareto II) with scale and shape alpha: scale (U^(-1/alpha) - 1), U in (0, 1] —
  // the plant's noise (tools/workloads/plant_mode.cc draw_noise_ns).
  double lomax(double scale, double alpha) { return scale * (std::pow(uniform_pos(), -1.0 / alpha) - 1.0); }
  // exp(N(mu, sigma^2)).
  double lognormal(double mu, double sigma) { return std::exp(mu + sigma * normal()); }
  // Exponential with this mean: -mean ln U, U in (0, 1].
  double exponential(double mean) { return -mean * std::log(uniform_pos()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::uint64_t s_[4];
};

}  // namespace ripple::sim
