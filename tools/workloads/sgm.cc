// ripple-sgm: stereo semi-global matching (OpenCV StereoSGBM) on KITTI-sized pairs.
//
// Input: `--frames` generated rectified pairs with known disparity (textured
// fronto-parallel layers, images.h), cycled one per job; or one pair given with
// --left/--right (binary PGM/PPM). Each job computes a dense disparity map. The check
// reports the share of valid pixels more than 2 px off the generated ground truth.
//
// Threads: SGM's vertical path costs carry from each row to the next, so a dense
// disparity map cannot be cut into independent parts exactly. With --stripes S (default:
// one per thread) the image is cut into S horizontal stripes, each computed by its own
// StereoSGBM from kWarmRows rows above it (the vertical paths start there) to block/2
// rows below it (the matching window), as OpenCV's own parallel 3-way mode does; each
// thread computes its range of stripes. The result depends on S, never on the threads:
// --threads 1 --stripes 4 and --threads 4 give the same map. S = 1 is today's single call
// on the whole image.
#include "tools/workloads/images.h"
#include "tools/workloads/periodic.h"

#include <opencv2/calib3d.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ripple::workloads {
namespace {

struct SgmParams {
  int width = 1242, height = 375;  // KITTI
  int disparities = 64;   // 128 with --mode hh is closer to the paper's traffic but misses 10 Hz here
  int block = 5;
  int frames = 4;
  std::string mode = "3way";
  std::string left, right;
  int stripes = 0;  // 0: one per thread
};

// Rows above a stripe that its vertical paths start from (OpenCV's 3-way mode uses
// block/2 + 1 + 10 % of the stripe).
constexpr int kWarmRows = 24;

class Sgm final : public Job {
 public:
  Sgm(const SgmParams& p, uint64_t seed, WorkerPool& pool) : p_(p), pool_(pool) {
    if (p.disparities < 16 || p.disparities % 16 != 0 || p.disparities > 512)
      throw InputError("--disparities must be a multiple of 16 in [16, 512]");
    if (p.block < 1 || p.block % 2 == 0 || p.block > 11) throw InputError("--block must be odd in [1, 11]");
    int mode = 0;
    if (p.mode == "sgbm") mode = cv::StereoSGBM::MODE_SGBM;
    else if (p.mode == "hh") mode = cv::StereoSGBM::MODE_HH;
    else if (p.mode == "3way") mode = cv::StereoSGBM::MODE_SGBM_3WAY;
    else throw InputError("unknown --mode '" + p.mode + "' (sgbm, hh, 3way)");
    if (p.left.empty() != p.right.empty()) throw InputError("--left and --right go together");
    if (!p.left.empty()) {
      StereoScene s;
      s.left = read_pnm_gray(p.left);
      s.right = read_pnm_gray(p.right);
      if (s.left.size() != s.right.size())
        throw InputError("--left and --right differ in size (" + std::to_string(s.left.cols) + "x" +
                         std::to_string(s.left.rows) + " vs " + std::to_string(s.right.cols) + "x" +
                         std::to_string(s.right.rows) + ")");
      scenes_.push_back(std::move(s));
    } else {
      if (p.width < 64 || p.height < 16 || p.width > 8192 || p.height > 8192)
        throw InputError("--width/--height out of range [64x16, 8192x8192]");
      if (p.frames < 1) throw InputError("--frames must be at least 1");
      for (int f = 0; f < p.frames; ++f)
        scenes_.push_back(make_stereo_scene(p.width, p.height, p.disparities, 12, seed, f * 7));
    }
    const int b2 = p.block * p.block;
    for (int i = 0; i < pool.threads(); ++i)  // one per thread: compute() keeps buffers in it
      sgbm_.push_back(cv::StereoSGBM::create(0, p.disparities, p.block, 8 * b2, 32 * b2, 1, 0, 10, 0, 0, mode));
    stripes_ = p.stripes > 0 ? p.stripes : pool.threads();
    const int h = scenes_[0].left.rows;
    if (stripes_ > h / 8) throw InputError("--stripes " + std::to_string(stripes_) + " leaves fewer than 8 rows a stripe");
    // The stripes' input rows, cut once (the scenes are fixed): no copy per job.
    if (stripes_ > 1) {
      for (const auto& sc : scenes_) {
        std::vector<Stripe> cut;
        for (int k = 0; k < stripes_; ++k) {
          auto [y0, y1] = WorkerPool::split(static_cast<size_t>(sc.left.rows), k, stripes_);
          Stripe st;
          st.y0 = static_cast<int>(y0), st.y1 = static_cast<int>(y1);
          st.in0 = std::max(0, st.y0 - kWarmRows);
          const int in1 = std::min(sc.left.rows, st.y1 + p.block / 2);
          st.left = sc.left.rowRange(st.in0, in1).clone();
          st.right = sc.right.rowRange(st.in0, in1).clone();
          cut.push_back(std::move(st));
        }
        stripe_in_.push_back(std::move(cut));
      }
      stripe_out_.resize(static_cast<size_t>(stripes_));
    }
  }

  void run_job(uint64_t seq) override {
    last_ = seq % scenes_.size();
    if (stripes_ == 1) {
      sgbm_[0]->compute(scenes_[last_].left, scenes_[last_].right, disp_);
      return;
    }
    const auto& sc = scenes_[last_];
    disp_.create(sc.left.rows, sc.left.cols, CV_16S);
    pool_.run([&](int i) {
      auto [k0, k1] = pool_.share(static_cast<size_t>(stripes_), i);
      for (size_t k = k0; k < k1; ++k) {
        const Stripe& st = stripe_in_[last_][k];
        cv::Mat& out = stripe_out_[k];
        sgbm_[static_cast<size_t>(i)]->compute(st.left, st.right, out);
        out.rowRange(st.y0 - st.in0, st.y1 - st.in0).copyTo(disp_.rowRange(st.y0, st.y1));
      }
    });
  }

  std::string digest() const override {
    if (disp_.empty()) return {};
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int y = 0; y < disp_.rows; ++y) h = digest_words(disp_.ptr(y), disp_.cols * disp_.elemSize(), h);
    return digest_hex(h);
  }

  double bytes_per_job() const override {
    // Path costs: W x H x D int16. MODE_HH keeps the full cost volume and the aggregated
    // sums (write + read each: 4 passes); the 5-path modes keep row buffers that stream
    // the same volume through the caches about twice. Plus the images and the output.
    const auto& l = scenes_[0].left;
    const double px = static_cast<double>(l.total());
    const double vol = px * p_.disparities * 2.0;
    return (p_.mode == "hh" ? 4.0 : 2.0) * vol + px * (2.0 + 2.0);
  }

  std::string check() const override {
    const auto& s = scenes_[last_];
    if (s.disparity.empty() || disp_.empty()) return "external images: no ground truth";
    size_t valid = 0, bad = 0;
    for (int y = 0; y < disp_.rows; ++y)
      for (int x = p_.disparities; x < disp_.cols; ++x) {
        int16_t d = disp_.at<int16_t>(y, x);
        if (d < 0) continue;
        ++valid;
        bad += std::abs(d / 16.0f - s.disparity.at<float>(y, x)) > 2.0f;
      }
    char buf[128];
    std::snprintf(buf, sizeof buf, "%dx%d, %d disparities, mode %s, %d stripe(s); %.1f%% valid, %.1f%% of valid > 2 px off",
                  disp_.cols, disp_.rows, p_.disparities, p_.mode.c_str(), stripes_,
                  100.0 * valid / std::max<size_t>(1, static_cast<size_t>(disp_.rows) * (disp_.cols - p_.disparities)),
                  100.0 * bad / std::max<size_t>(1, valid));
    return buf;
  }

 private:
  struct Stripe {
    int y0, y1;  // the rows it produces
    int in0;     // its first input row
    cv::Mat left, right;
  };

  SgmParams p_;
  WorkerPool& pool_;
  std::vector<StereoScene> scenes_;
  std::vector<cv::Ptr<cv::StereoSGBM>> sgbm_;
  int stripes_ = 1;
  std::vector<std::vector<Stripe>> stripe_in_;  // [scene][stripe]
  std::vector<cv::Mat> stripe_out_;             // [stripe]: each stripe's disparity rows
  cv::Mat disp_;
  size_t last_ = 0;
};

}  // namespace
}  // namespace ripple::workloads

int main(int argc, char** argv) {
  using namespace ripple::workloads;
  PeriodicProgram prog("sgm", "stereo semi-global matching (OpenCV StereoSGBM)", 100.0);
  SgmParams p;
  auto& app = prog.app();
  app.add_option("--width", p.width, "generated image width")->capture_default_str();
  app.add_option("--height", p.height, "generated image height")->capture_default_str();
  app.add_option("--disparities", p.disparities, "disparity range (multiple of 16)")->capture_default_str();
  app.add_option("--block", p.block, "matching block size (odd)")->capture_default_str();
  app.add_option("--mode", p.mode, "sgbm (5 paths), hh (8 paths, full cost volume), 3way")->capture_default_str();
  app.add_option("--frames", p.frames, "generated pairs, cycled one per job")->capture_default_str();
  app.add_option("--left", p.left, "left image (binary PGM/PPM) instead of generated scenes");
  app.add_option("--right", p.right, "right image (binary PGM/PPM)");
  app.add_option("--stripes", p.stripes,
                 "horizontal stripes computed separately, split over the threads (default: one per thread)")
      ->check(CLI::Range(1, 256));
  // OpenCV's own pool stays off: the task's threads are the driver's, one per core.
  cv::setNumThreads(1);
  prog.allow_threads();
  return prog.run(argc, argv, [&] { return std::make_unique<Sgm>(p, prog.options().seed, prog.pool()); });
}
