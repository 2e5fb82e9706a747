#include "core/depth_image.h"

#include <algorithm>
#include <charconv>

#include "core/error.h"

namespace cumulus {

std::size_t DepthImage::count_valid() const {
  return std::size_t(std::count_if(depth.begin(), depth.end(), is_valid));
}

std::pair<float, float> DepthImage::valid_range() const {
  bool any = false;
  float lo = 0, hi = 0;
  for (float d : depth) {
    if (!is_valid(d)) continue;
    if (!any) {
      lo = hi = d;
      any = true;
    }
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  return {lo, hi};
}

const std::vector<DepthScalePreset>& depth_scale_presets() {
  static const std::vector<DepthScalePreset> presets{
      {"kitti", "KITTI depth (1/256 m)", 1.0 / 256.0},
      {"tum", "TUM RGB-D (1/5000 m)", 1.0 / 5000.0},
      {"mm", "Millimetres (1/1000 m)", 1.0 / 1000.0},
      {"velodyne", "Velodyne range image (1/500 m)", 1.0 / 500.0},
  };
  return presets;
}

static bool parse_number(std::string_view s, double& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

double parse_depth_scale(const std::string& text) {
  for (const auto& p : depth_scale_presets())
    if (text == p.name) return p.metres_per_unit;
  double value = 0;
  const auto slash = text.find('/');
  if (slash != std::string::npos) {
    double num = 0, den = 0;
    if (parse_number(std::string_view(text).substr(0, slash), num) &&
        parse_number(std::string_view(text).substr(slash + 1), den) && den != 0)
      value = num / den;
  } else if (!parse_number(text, value)) {
    value = 0;
  }
  if (!(value > 0) || !std::isfinite(value))
    throw InvalidArgument("depth scale '" + text +
                          "' is neither a preset (kitti, tum, mm, velodyne) nor a positive "
                          "number of metres per unit such as 0.001 or 1/500");
  return value;
}

}  // namespace cumulus
