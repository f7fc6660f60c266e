// ripple-orb: OpenCV ORB features (FAST keypoints + rotated BRIEF) on camera frames.
//
// Input: `--frames` generated KITTI-sized camera frames (the textured layered scenes of
// images.h, objects shifted between frames), cycled one per job; or one image given
// with --image (binary PGM/PPM). Each job detects up to `--features` keypoints over an
// 8-level pyramid and computes their descriptors (ORB-SLAM's extraction step). With
// --match it also brute-force matches them against the previous frame's (Hamming,
// cross-checked), which costs O(features^2) and dominates the job at 2000 features.
#include "tools/workloads/images.h"
#include "tools/workloads/periodic.h"

#include <opencv2/features2d.hpp>

#include <cstdio>
#include <vector>

namespace ripple::workloads {
namespace {

struct OrbParams {
  int width = 1242, height = 375;
  int features = 2000;
  int frames = 4;
  std::string image;
  bool match = false;
};

class Orb final : public Job {
 public:
  Orb(const OrbParams& p, uint64_t seed) : p_(p) {
    if (p.features < 10 || p.features > 100000) throw InputError("--features must be in [10, 100000]");
    if (!p.image.empty()) {
      frames_.push_back(read_pnm_gray(p.image));
    } else {
      if (p.width < 64 || p.height < 64 || p.width > 8192 || p.height > 8192)
        throw InputError("--width/--height out of range [64x64, 8192x8192]");
      if (p.frames < 1) throw InputError("--frames must be at least 1");
      for (int f = 0; f < p.frames; ++f)
        frames_.push_back(make_stereo_scene(p.width, p.height, 64, 12, seed, f * 5).left);
    }
    orb_ = cv::ORB::create(p.features);
    matcher_ = cv::BFMatcher::create(cv::NORM_HAMMING, true);
  }

  void run_job(uint64_t seq) override {
    const cv::Mat& img = frames_[seq % frames_.size()];
    keypoints_.clear();
    orb_->detectAndCompute(img, cv::noArray(), keypoints_, desc_);
    matches_.clear();
    if (p_.match && !prev_desc_.empty() && !desc_.empty()) matcher_->match(desc_, prev_desc_, matches_);
    cv::swap(desc_, prev_desc_);
  }

  double bytes_per_job() const override {
    // The pyramid (8 levels, scale 1.2: ~3.3x the image) is built and read a few times
    // (blur, FAST, descriptors): ~4 passes; plus descriptors (32 B each) matched against
    // the previous frame's (n x n Hamming, from cache).
    const double px = static_cast<double>(frames_[0].total());
    return 4.0 * 3.3 * px + (p_.match ? 2.0 : 1.0) * 32.0 * p_.features;
  }

  std::string check() const override {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%dx%d, %zu keypoints, %zu matches to the previous frame%s",
                  frames_[0].cols, frames_[0].rows, keypoints_.size(), matches_.size(),
                  p_.match ? "" : " (--match off)");
    return buf;
  }

 private:
  OrbParams p_;
  std::vector<cv::Mat> frames_;
  cv::Ptr<cv::ORB> orb_;
  cv::Ptr<cv::BFMatcher> matcher_;
  std::vector<cv::KeyPoint> keypoints_;
  std::vector<cv::DMatch> matches_;
  cv::Mat desc_, prev_desc_;
};

}  // namespace
}  // namespace ripple::workloads

int main(int argc, char** argv) {
  using namespace ripple::workloads;
  PeriodicProgram prog("orb", "ORB features and frame-to-frame matching (OpenCV)", 100.0);
  OrbParams p;
  auto& app = prog.app();
  app.add_option("--width", p.width, "generated frame width")->capture_default_str();
  app.add_option("--height", p.height, "generated frame height")->capture_default_str();
  app.add_option("--features", p.features, "maximum keypoints per frame")->capture_default_str();
  app.add_option("--frames", p.frames, "generated frames, cycled one per job")->capture_default_str();
  app.add_flag("--match", p.match, "also match descriptors to the previous frame's");
  app.add_option("--image", p.image, "one image (binary PGM/PPM) instead of generated frames");
  cv::setNumThreads(1);
  return prog.run(argc, argv, [&] { return std::make_unique<Orb>(p, prog.options().seed); });
}
