// ripple-costmap: a Nav2-style layered 2-D costmap updated from simulated LiDAR scans.
//
// Each job (one costmap update cycle):
//   0. voxel layer (Nav2 VoxelLayer): age each cell's 32-bit column of height bits and
//      project columns with enough marked bits into the obstacle layer;
//   1. obstacle layer decay: every cell's observation persistence decays (one streaming
//      read-modify-write pass, like clearing stale marks);
//   2. scans: `--scans` simulated 2-D LiDAR scans of `--beams` beams from a robot that
//      drives a loop; each beam ray-marches the hidden world to its hit, clears the free
//      cells on the way and marks the hit (Nav2 ObstacleLayer raytrace);
//   3. inflation (Nav2 InflationLayer) over the bounds the scans touched, grown by the
//      radius: cost falls off with the distance to the nearest lethal cell up to
//      `--inflation-cells`; computed exactly for that radius as a separable distance
//      transform (row pass, then a column pass over 2R+1 rows);
//   4. master grid: cell-wise max of static, obstacle and inflation layers.
// The full-grid passes (voxels, decay, master) stream every layer through DRAM; at the
// default 6144^2 cells that is about 0.6 GB per job; --size 8192 gives about 1.1 GB, the
// paper's Costmap traffic, but needs a fast core to fit its 100 ms period.
// bytes_per_job() counts those passes.
//
// With --threads N every phase is split over the pool, the same cells as one thread
// computes, so the grids come out identical: the full-grid passes by cell ranges, the
// scans by beams (a beam only reads the static world, clears obstacle cells to 0 and ORs a
// constant into voxel columns, so beams commute; shared cells go through relaxed atomics),
// inflation by rows (row pass, join, column pass).
#include "tools/workloads/periodic.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace ripple::workloads {
namespace {

constexpr uint8_t kLethal = 254;
constexpr uint8_t kInscribed = 253;
constexpr int16_t kFar = 20001;  // > 2 * 100^2: farther than any inflation radius

// out[x] = min over t in [-r, r] of src[x + t*stride] + t^2, for x in [0, n).
// Blocked over x so the running minimum stays in vector registers across the taps.
void min_taps_span(int16_t* __restrict out, const int16_t* __restrict src, ptrdiff_t stride,
                   int n, int t_lo, int t_hi) {
  constexpr int kBlock = 64;
  int x0 = 0;
  for (; x0 + kBlock <= n; x0 += kBlock) {
    int16_t acc[kBlock];
    for (int i = 0; i < kBlock; ++i) acc[i] = kFar;
    for (int t = t_lo; t <= t_hi; ++t) {
      const int16_t* __restrict p = src + t * stride + x0;
      const int16_t t2 = static_cast<int16_t>(t * t);
      for (int i = 0; i < kBlock; ++i) {
        int16_t v = static_cast<int16_t>(p[i] + t2);
        acc[i] = v < acc[i] ? v : acc[i];
      }
    }
    for (int i = 0; i < kBlock; ++i) out[x0 + i] = acc[i];
  }
  for (; x0 < n; ++x0) {
    int16_t a = kFar;
    for (int t = t_lo; t <= t_hi; ++t) a = std::min<int16_t>(a, static_cast<int16_t>(src[t * stride + x0] + t * t));
    out[x0] = a;
  }
}

void min_taps(int16_t* out, const int16_t* src, ptrdiff_t stride, int n, int r) {
  min_taps_span(out, src, stride, n, -r, r);
}

// Column form: `rows` points at row y+t_lo; out[x] = min over t of rows[(t-t_lo)*stride + x] + t^2.
void min_taps_rows(int16_t* out, const int16_t* rows, ptrdiff_t stride, int n, int t_lo, int t_hi) {
  min_taps_span(out, rows - static_cast<ptrdiff_t>(t_lo) * stride, stride, n, t_lo, t_hi);
}

struct CostmapParams {
  int size = 6144;         // cells per side; 8192 moves ~1.1 GB per job, the paper's Costmap
  int scans = 2;           // scans per job
  int beams = 1440;        // beams per scan (0.25 degree)
  int range_cells = 400;   // sensor range in cells (20 m at 5 cm)
  int inflation_cells = 8;  // 40 cm at 5 cm cells
  int inscribed_cells = 3;
  int obstacles = 3000;
};

class Costmap final : public Job {
 public:
  Costmap(const CostmapParams& p, uint64_t seed, WorkerPool& pool) : p_(p), pool_(pool), rng_(seed) {
    if (p.size < 64 || p.size > 65536) throw InputError("--size must be in [64, 65536] cells");
    if (p.inflation_cells < 1 || p.inflation_cells > 100)
      throw InputError("--inflation-cells must be in [1, 100]");
    n_ = static_cast<size_t>(p.size) * static_cast<size_t>(p.size);
    world_.assign(n_, 0);
    static_.assign(n_, 0);
    obstacle_.assign(n_, 0);
    voxels_.assign(n_, 0);
    inflation_.assign(n_, 0);
    master_.assign(n_, 0);
    build_world();
    // Cost of a squared distance: lethal at 0, inscribed inside the robot radius,
    // exponential decay to the inflation radius (Nav2 computeCost), 0 beyond.
    const int r = p.inflation_cells;
    cost_of_d2_.assign(static_cast<size_t>(2 * r * r + 2), 0);  // last entry: beyond r
    for (size_t d2 = 0; d2 < cost_of_d2_.size(); ++d2) {
      double d = std::sqrt(static_cast<double>(d2));
      uint8_t c = 0;
      if (d2 == 0) c = kLethal;
      else if (d <= p.inscribed_cells) c = kInscribed;
      else if (d <= r) c = static_cast<uint8_t>((kInscribed - 1) * std::exp(-0.4 * (d - p.inscribed_cells)));
      cost_of_d2_[d2] = c;
    }
  }

  void run_job(uint64_t seq) override {
    int64_t t0 = monotonic_ns();
    // Decay then voxel projection, each over the thread's cell range (both are per cell).
    pool_.run([&](int i) {
      auto [lo, hi] = pool_.share(n_, i);
      decay(lo, hi);
      project_voxels(lo, hi);
    });
    int64_t t1 = monotonic_ns();
    scans(static_cast<double>(seq) * 0.05);
    int64_t t2 = monotonic_ns();
    inflate();
    int64_t t3 = monotonic_ns();
    pool_.run([&](int i) {
      auto [lo, hi] = pool_.share(n_, i);
      combine(lo, hi);
    });
    int64_t t4 = monotonic_ns();
    phase_ns_[0] += t1 - t0, phase_ns_[1] += t2 - t1, phase_ns_[2] += t3 - t2, phase_ns_[3] += t4 - t3;
    ++jobs_;
  }

  double bytes_per_job() const override {
    // Full-grid streaming passes, in size^2 bytes: voxel columns r+w (8) with the obstacle
    // layer r+w (2), obstacle decay r+w (2), master combine reading 3 layers and writing
    // one (4): 16. Inflation window: mask reads 2, int16 h2 write+read 4, cost write 1: 7.
    // Plus each traced beam cell read and written (2; mostly misses at this size).
    return 16.0 * static_cast<double>(n_) + 7.0 * window_cells_ + 2.0 * cells_traced_per_job_;
  }

  std::string digest() const override {
    uint64_t h = digest_words(master_.data(), n_);
    h = digest_words(obstacle_.data(), n_, h);
    return digest_hex(digest_words(voxels_.data(), n_ * sizeof(uint32_t), h));
  }

  std::string check() const override {
    size_t lethal = 0;
    for (size_t i = 0; i < n_; i += 97) lethal += master_[i] == kLethal;
    char buf[160];
    double j = jobs_ ? 1e6 * static_cast<double>(jobs_) : 1.0;
    std::snprintf(buf, sizeof buf, "mean phase ms: voxels+decay %.1f scans %.1f inflation %.1f combine %.1f",
                  phase_ns_[0] / j, phase_ns_[1] / j, phase_ns_[2] / j, phase_ns_[3] / j);
    return "lethal cells sampled " + std::to_string(lethal) + ", beam cells/job " +
           std::to_string(static_cast<long long>(cells_traced_per_job_)) + "; " + buf;
  }

 private:
  uint8_t& at(std::vector<uint8_t>& g, int x, int y) {
    return g[static_cast<size_t>(y) * static_cast<size_t>(p_.size) + static_cast<size_t>(x)];
  }

  void build_world() {
    const int n = p_.size;
    std::uniform_int_distribution<int> pos(0, n - 1), len(2, std::max(3, n / 200));
    for (int i = 0; i < p_.obstacles; ++i) {
      int x0 = pos(rng_), y0 = pos(rng_), w = len(rng_), h = len(rng_);
      for (int y = y0; y < std::min(n, y0 + h); ++y)
        for (int x = x0; x < std::min(n, x0 + w); ++x) at(world_, x, y) = 1;
    }
    // The static layer knows the border walls and a third of the obstacles (the map);
    // the rest are only seen by the sensor.
    for (int i = 0; i < n; ++i) {
      at(world_, i, 0) = at(world_, i, n - 1) = at(world_, 0, i) = at(world_, n - 1, i) = 1;
    }
    for (size_t i = 0; i < n_; ++i) static_[i] = (world_[i] && (i % 3 == 0 || i < (size_t)n)) ? kLethal : 0;
  }

  // Nav2 VoxelLayer: a 32-bit column of height bits per cell. Each job ages the columns
  // (shifts the observation bits) and projects them into the obstacle layer.
  void project_voxels(size_t lo, size_t hi) {
    uint32_t* __restrict v = voxels_.data();
    uint8_t* __restrict o = obstacle_.data();
    for (size_t i = lo; i < hi; ++i) {
      uint32_t c = v[i] & 0x7fff7fffu;  // age: clear the top bit of each half
      v[i] = c << 1;
      // Two vertically adjacent marked voxels make an obstacle (a vectorizable stand-in for
      // Nav2's min-marked-voxels count).
      o[i] = (c & (c >> 1)) != 0 ? kLethal : o[i];
    }
  }

  void decay(size_t lo, size_t hi) {
    // Obstacle persistence: marks fade unless re-observed (value 0..kLethal).
    uint8_t* __restrict o = obstacle_.data();
    for (size_t i = lo; i < hi; ++i) o[i] = static_cast<uint8_t>(std::max<uint8_t>(o[i], 16) - 16);
  }

  // `--scans` scans at times t, t + 0.01, ...: each thread traces its range of beams of
  // every scan.
  void scans(double t) {
    const int n = p_.size;
    std::vector<double> cx(static_cast<size_t>(p_.scans)), cy(cx.size());
    bx0_ = by0_ = n;
    bx1_ = by1_ = -1;
    for (int s = 0; s < p_.scans; ++s) {
      // The robot drives a circle around the map centre.
      const double ts = t + s * 0.01;
      cx[s] = n / 2.0 + n / 4.0 * std::cos(ts), cy[s] = n / 2.0 + n / 4.0 * std::sin(ts);
      bx0_ = std::min(bx0_, static_cast<int>(cx[s]) - p_.range_cells);
      bx1_ = std::max(bx1_, static_cast<int>(cx[s]) + p_.range_cells);
      by0_ = std::min(by0_, static_cast<int>(cy[s]) - p_.range_cells);
      by1_ = std::max(by1_, static_cast<int>(cy[s]) + p_.range_cells);
    }
    // Cells traced by the last scan, per thread (integers: the sum is exact in any order).
    std::vector<double> traced(static_cast<size_t>(pool_.threads()), 0.0);
    pool_.run([&](int i) {
      auto [b0, b1] = pool_.share(static_cast<size_t>(p_.beams), i);
      for (int s = 0; s < p_.scans; ++s) {
        const double tr = trace_beams(t + s * 0.01, cx[s], cy[s], static_cast<int>(b0), static_cast<int>(b1));
        if (s == p_.scans - 1) traced[i] = tr;
      }
    });
    double sum = 0;
    for (double v : traced) sum += v;
    cells_traced_per_job_ = sum * p_.scans;
  }

  // Beams [b0, b1) of the scan at time t from (cx, cy); returns the cells they traced.
  double trace_beams(double t, double cx, double cy, int b0, int b1) {
    const int n = p_.size;
    double traced = 0;
    for (int b = b0; b < b1; ++b) {
      const double a = 2.0 * M_PI * b / p_.beams + t;
      const double dx = std::cos(a), dy = std::sin(a);
      double x = cx, y = cy;
      int i = 0;
      for (; i < p_.range_cells; ++i) {
        int xi = static_cast<int>(x), yi = static_cast<int>(y);
        if (xi <= 0 || yi <= 0 || xi >= n - 1 || yi >= n - 1) break;
        const size_t c = static_cast<size_t>(yi) * static_cast<size_t>(n) + static_cast<size_t>(xi);
        if (world_[c]) {  // hit: mark the obstacle's height band in the voxel column
          std::atomic_ref<uint32_t>(voxels_[c]).fetch_or(0x000f000fu, std::memory_order_relaxed);
          break;
        }
        // Clear along the ray (another thread's beam may clear the same cell: same value).
        std::atomic_ref<uint8_t>(obstacle_[c]).store(0, std::memory_order_relaxed);
        x += dx;
        y += dy;
      }
      traced += i + 1;
    }
    return traced;
  }

  // Inflation over the bounds the scans touched, grown by the radius (Nav2's
  // updateBounds/updateCosts): cells outside keep their cost, as in Nav2.
  void inflate() {
    const int n = p_.size, r = p_.inflation_cells;
    const int wx0 = std::max(0, bx0_ - r), wx1 = std::min(n, bx1_ + r + 1);
    const int wy0 = std::max(0, by0_ - r), wy1 = std::min(n, by1_ + r + 1);
    if (wx0 >= wx1 || wy0 >= wy1) return;
    const int w = wx1 - wx0, ry0 = std::max(0, wy0 - r), ry1 = std::min(n, wy1 + r);
    window_cells_ = static_cast<double>(w) * (wy1 - wy0);
    h2_.resize(static_cast<size_t>(ry1 - ry0) * static_cast<size_t>(w));
    // Exact squared distance within radius r, separably:
    //   d2(x, y) = min_dy [ dy^2 + min_dx { dx^2 : lethal(x+dx, y+dy) } ].
    // Both passes are 2r+1 shifted int16 min operations per cell (SSE2 pminsw), so they
    // vectorize on any x86-64 or aarch64 without -march flags.
    // Row pass over rows [ry0, ry1), then (after the join) the column pass over
    // [wy0, wy1): each thread its own rows.
    pool_.run([&](int i) {
      auto [y0, y1] = pool_.share(static_cast<size_t>(ry1 - ry0), i);
      std::vector<int16_t> mask(static_cast<size_t>(w + 2 * r));
      int16_t* __restrict m = mask.data();
      for (int y = ry0 + static_cast<int>(y0); y < ry0 + static_cast<int>(y1); ++y) {
        const uint8_t* __restrict s = &static_[static_cast<size_t>(y) * n];
        const uint8_t* __restrict o = &obstacle_[static_cast<size_t>(y) * n];
        for (int k = 0; k < w + 2 * r; ++k) {
          const int x = wx0 - r + k;
          m[k] = x >= 0 && x < n && ((s[x] == kLethal) | (o[x] == kLethal)) ? 0 : kFar;
        }
        min_taps(&h2_[static_cast<size_t>(y - ry0) * w], m + r, 1, w, r);
      }
    });
    const int16_t cap = static_cast<int16_t>(cost_of_d2_.size() - 1);
    pool_.run([&](int i) {
      auto [y0, y1] = pool_.share(static_cast<size_t>(wy1 - wy0), i);
      std::vector<int16_t> best_row(static_cast<size_t>(w));
      int16_t* __restrict best = best_row.data();
      for (int y = wy0 + static_cast<int>(y0); y < wy0 + static_cast<int>(y1); ++y) {
        // Rows y-r..y+r, clipped at the borders (cells beyond the map are free).
        const int lo = std::max(ry0, y - r), hi = std::min(ry1 - 1, y + r);
        min_taps_rows(best, &h2_[static_cast<size_t>(lo - ry0) * w], w, w, lo - y, hi - y);
        uint8_t* __restrict out = &inflation_[static_cast<size_t>(y) * n + wx0];
        for (int x = 0; x < w; ++x) out[x] = cost_of_d2_[best[x] < cap ? best[x] : cap];
      }
    });
  }

  void combine(size_t lo, size_t hi) {
    const uint8_t *__restrict s = static_.data(), *__restrict o = obstacle_.data(),
                  *__restrict f = inflation_.data();
    uint8_t* __restrict m = master_.data();
    for (size_t i = lo; i < hi; ++i) m[i] = std::max(std::max(s[i], o[i]), f[i]);
  }

  CostmapParams p_;
  WorkerPool& pool_;
  std::mt19937_64 rng_;
  size_t n_ = 0;
  std::vector<uint8_t> world_, static_, obstacle_, inflation_, master_;
  std::vector<uint32_t> voxels_;  // Nav2 VoxelLayer-style height bits per cell
  std::vector<int16_t> h2_;  // squared horizontal distance to the nearest lethal cell (window)
  int bx0_ = 0, bx1_ = 0, by0_ = 0, by1_ = 0;  // bounds the scans touched this job
  double window_cells_ = 0;
  std::vector<uint8_t> cost_of_d2_;
  double cells_traced_per_job_ = 0;
  double phase_ns_[4] = {0, 0, 0, 0};
  uint64_t jobs_ = 0;
};

}  // namespace
}  // namespace ripple::workloads

int main(int argc, char** argv) {
  using namespace ripple::workloads;
  PeriodicProgram prog("costmap", "Nav2-style layered costmap from simulated LiDAR scans", 100.0);
  CostmapParams p;
  auto& app = prog.app();
  app.add_option("--size", p.size, "grid cells per side (data size; ~16 x size^2 bytes per job)")
      ->capture_default_str();
  app.add_option("--scans", p.scans, "LiDAR scans integrated per job")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--beams", p.beams, "beams per scan")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--range-cells", p.range_cells, "sensor range in cells")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--inflation-cells", p.inflation_cells, "inflation radius in cells")->capture_default_str();
  prog.allow_threads();
  return prog.run(argc, argv, [&] { return std::make_unique<Costmap>(p, prog.options().seed, prog.pool()); });
}
