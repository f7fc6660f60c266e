// Camera images for the vision tasks (sgm, orb): a binary PGM/PPM reader (no image
// codec library needed, so the binaries carry few dependencies) and a generator of
// stereo scenes with known disparity.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>

namespace ripple::workloads {

// Reads a binary PGM (P5) or PPM (P6, converted to gray) with maxval < 256.
// Throws InputError naming the file and the problem.
cv::Mat read_pnm_gray(const std::string& path);

struct StereoScene {
  cv::Mat left, right;  // CV_8UC1
  cv::Mat disparity;    // CV_32F, ground truth in left-image pixels
};

// Fronto-parallel textured layers (a far background and `objects` nearer boxes) rendered
// into a rectified pair: right(x - d, y) = left(x, y) for each visible layer of disparity d.
// `shift` moves the objects sideways, so consecutive frames differ.
StereoScene make_stereo_scene(int width, int height, int max_disparity, int objects,
                              uint64_t seed, int shift = 0);

}  // namespace ripple::workloads
