#pragma once
// A depth (or range) image in metres. Invalid pixels are 0 or NaN, as in the files they come
// from; `is_valid` is the one test for that.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/hd.h"

namespace cumulus {

struct DepthImage {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
  std::vector<float> depth;   // row-major, metres
  double source_scale = 1.0;  // metres per raw unit of the file it came from (1/256, 1/5000, ...)

  std::size_t size() const { return depth.size(); }
  float at(std::uint32_t row, std::uint32_t col) const {
    return depth[std::size_t(row) * width + col];
  }
  static bool is_valid(float d) { return std::isfinite(d) && d > 0.0f; }
  std::size_t count_valid() const;
  // Smallest and largest valid depth; {0, 0} when there is none.
  std::pair<float, float> valid_range() const;
};

// Metres from a raw 16-bit unit of a depth file: 0 stays "no return", any other unit times the
// scale, rounded once to float. The files' readers and the GPU's raw-unit upload
// (segment_raw_buffers_gpu, on the device) both call it.
CUMULUS_HD inline float depth_from_unit(std::uint16_t unit, double metres_per_unit) {
  return unit ? float(double(unit) * metres_per_unit) : 0.0f;
}
// The unit a 16-bit depth file stores for a depth: round(depth / scale); 0 for invalid depths
// and for those outside 1..65535 units.
inline std::uint16_t depth_to_unit(float depth, double metres_per_unit) {
  const double v = DepthImage::is_valid(depth) ? std::round(depth / metres_per_unit) : 0.0;
  return v >= 1 && v <= 65535 ? std::uint16_t(v) : 0;
}

// Named scales offered when a depth image is opened.
struct DepthScalePreset {
  const char* name;
  const char* label;
  double metres_per_unit;
};
const std::vector<DepthScalePreset>& depth_scale_presets();
// Accepts a preset name ("kitti", "tum", "mm", "velodyne") or a number ("0.002", "1/500").
double parse_depth_scale(const std::string& text);

}  // namespace cumulus
