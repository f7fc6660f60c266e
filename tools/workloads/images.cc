// Images for the vision tasks. See images.h.
#include "tools/workloads/images.h"

#include "tools/workloads/periodic.h"

#include <opencv2/imgproc.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <vector>

namespace ripple::workloads {
namespace {

// Skips whitespace and '#' comments, then reads one decimal header field.
bool pnm_field(std::istream& in, int* v) {
  for (;;) {
    int c = in.peek();
    if (c == '#') {
      std::string line;
      std::getline(in, line);
    } else if (std::isspace(c)) {
      in.get();
    } else {
      break;
    }
  }
  return static_cast<bool>(in >> *v);
}

cv::Mat layer_texture(int w, int h, std::mt19937_64& rng) {
  cv::Mat noise(h, w, CV_8UC1);
  std::uniform_int_distribution<int> u(0, 255);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) noise.at<uint8_t>(y, x) = static_cast<uint8_t>(u(rng));
  cv::Mat tex;
  cv::GaussianBlur(noise, tex, cv::Size(0, 0), 1.2);
  cv::normalize(tex, tex, 0, 255, cv::NORM_MINMAX);
  return tex;
}

}  // namespace

cv::Mat read_pnm_gray(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read image " + path + ": " + std::strerror(errno));
  char magic[2] = {0, 0};
  in.read(magic, 2);
  if (!in || magic[0] != 'P' || (magic[1] != '5' && magic[1] != '6'))
    throw InputError("cannot read image " + path + ": not a binary PGM (P5) or PPM (P6) file");
  int w = 0, h = 0, maxval = 0;
  if (!pnm_field(in, &w) || !pnm_field(in, &h) || !pnm_field(in, &maxval) || w <= 0 || h <= 0 ||
      w > 65535 || h > 65535 || maxval <= 0 || maxval > 255)
    throw InputError("cannot read image " + path + ": bad header (need 8-bit P5/P6)");
  in.get();  // the single whitespace after maxval
  const int channels = magic[1] == '5' ? 1 : 3;
  cv::Mat img(h, w, channels == 1 ? CV_8UC1 : CV_8UC3);
  in.read(reinterpret_cast<char*>(img.data), static_cast<std::streamsize>(img.total() * channels));
  if (!in) throw InputError("cannot read image " + path + ": file is truncated");
  if (channels == 3) {
    cv::Mat gray;
    cv::cvtColor(img, gray, cv::COLOR_RGB2GRAY);
    return gray;
  }
  return img;
}

StereoScene make_stereo_scene(int width, int height, int max_disparity, int objects,
                              uint64_t seed, int shift) {
  std::mt19937_64 rng(seed);
  const int tw = width + max_disparity;
  StereoScene s;
  s.left = cv::Mat(height, width, CV_8UC1);
  s.right = cv::Mat(height, width, CV_8UC1);
  s.disparity = cv::Mat(height, width, CV_32F);
  // Background plane, far away.
  const int d0 = std::max(1, max_disparity / 16);
  cv::Mat bg = layer_texture(tw, height, rng);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      s.left.at<uint8_t>(y, x) = bg.at<uint8_t>(y, x);
      s.right.at<uint8_t>(y, x) = bg.at<uint8_t>(y, x + d0);
      s.disparity.at<float>(y, x) = static_cast<float>(d0);
    }
  // Objects, painted back to front (increasing disparity).
  std::vector<int> disp(static_cast<size_t>(objects));
  std::uniform_int_distribution<int> ud(d0 + 2, std::max(d0 + 3, max_disparity - 4));
  for (auto& d : disp) d = ud(rng);
  std::sort(disp.begin(), disp.end());
  std::uniform_int_distribution<int> ux(0, width - 1), uy(0, height - 1);
  std::uniform_int_distribution<int> uw(width / 20, width / 5), uh(height / 8, height / 2);
  for (int d : disp) {
    cv::Mat tex = layer_texture(tw, height, rng);
    const int x0 = (ux(rng) + shift) % width, y0 = uy(rng), w = uw(rng), h = uh(rng);
    for (int y = y0; y < std::min(height, y0 + h); ++y)
      for (int x = x0; x < std::min(width, x0 + w); ++x) {
        s.left.at<uint8_t>(y, x) = tex.at<uint8_t>(y, x + max_disparity - d);
        s.disparity.at<float>(y, x) = static_cast<float>(d);
        if (x - d >= 0) s.right.at<uint8_t>(y, x - d) = tex.at<uint8_t>(y, x + max_disparity - d);
      }
  }
  return s;
}

}  // namespace ripple::workloads
