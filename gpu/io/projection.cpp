#include "io/projection.h"

#include <cmath>
#include <limits>
#include <numbers>

#include "core/error.h"

namespace cumulus {

namespace {
constexpr double kDeg = std::numbers::pi / 180.0;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void check_model(const RangeImageModel& m) {
  if (m.width == 0 || m.height == 0) throw InvalidArgument("range image must have a size");
  if (!(m.fov_up_deg > m.fov_down_deg))
    throw InvalidArgument("the upper field-of-view limit must be above the lower one");
  if (m.fov_up_deg > 90 || m.fov_down_deg < -90)
    throw InvalidArgument("field of view must stay within +-90 degrees");
}

// Pixel centres: row r looks at elevation up - (r + 0.5) * span / H; column c at azimuth
// pi - (c + 0.5) * 2 pi / W. Both directions use the same formulas, so a cloud made from an
// image projects back onto the same pixels.
double row_elevation(const RangeImageModel& m, double r) {
  return (m.fov_up_deg - (r + 0.5) * (m.fov_up_deg - m.fov_down_deg) / m.height) * kDeg;
}
double col_azimuth(const RangeImageModel& m, double c) {
  return std::numbers::pi - (c + 0.5) * 2.0 * std::numbers::pi / m.width;
}
}  // namespace

PointCloud depth_to_cloud(const DepthImage& image, const PinholeIntrinsics& k) {
  if (!(k.fx > 0) || !(k.fy > 0)) throw InvalidArgument("focal lengths must be positive");
  PointCloud cloud;
  cloud.width = image.width;
  cloud.height = image.height;
  cloud.points.resize(image.size());
  for (std::uint32_t v = 0; v < image.height; ++v)
    for (std::uint32_t u = 0; u < image.width; ++u) {
      const float d = image.at(v, u);
      auto& p = cloud.points[std::size_t(v) * image.width + u];
      if (!DepthImage::is_valid(d)) {
        p = {kNaN, kNaN, kNaN};
        continue;
      }
      p = {float((u - k.cx) * d / k.fx), float((v - k.cy) * d / k.fy), d};
    }
  if (cloud.height <= 1) cloud.width = std::uint32_t(cloud.size()), cloud.height = 1;
  return cloud;
}

PointCloud range_image_to_cloud(const DepthImage& image, const RangeImageModel& model_in) {
  RangeImageModel m = model_in;
  m.width = image.width;
  m.height = image.height;
  check_model(m);
  PointCloud cloud;
  cloud.width = image.width;
  cloud.height = image.height;
  cloud.points.resize(image.size());
  ExtraField ring{"ring", 1, std::vector<double>(image.size())};
  for (std::uint32_t r = 0; r < image.height; ++r) {
    const double el = row_elevation(m, r);
    for (std::uint32_t c = 0; c < image.width; ++c) {
      const std::size_t i = std::size_t(r) * image.width + c;
      ring.values[i] = float(r);
      const float d = image.depth[i];
      if (!DepthImage::is_valid(d)) {
        cloud.points[i] = {kNaN, kNaN, kNaN};
        continue;
      }
      const double az = col_azimuth(m, c);
      cloud.points[i] = {float(d * std::cos(el) * std::cos(az)),
                         float(d * std::cos(el) * std::sin(az)), float(d * std::sin(el))};
    }
  }
  cloud.extra.push_back(std::move(ring));
  if (cloud.height <= 1) cloud.width = std::uint32_t(cloud.size()), cloud.height = 1;
  return cloud;
}

DepthImage cloud_to_range_image(const PointCloud& cloud, const RangeImageModel& m) {
  check_model(m);
  DepthImage img;
  img.width = m.width;
  img.height = m.height;
  img.depth.assign(std::size_t(m.width) * m.height, 0.0f);
  const double up = m.fov_up_deg * kDeg, span = (m.fov_up_deg - m.fov_down_deg) * kDeg;
  for (const auto& p : cloud.points) {
    if (!(std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z))) continue;
    // A range image is about directions from the sensor, so the local frame is the sensor's.
    const double range = std::sqrt(double(p.x) * p.x + double(p.y) * p.y + double(p.z) * p.z);
    if (range <= 0) continue;
    const double el = std::asin(p.z / range);
    const double az = std::atan2(double(p.y), double(p.x));
    const double row = (up - el) / span * m.height;
    if (row < 0 || row >= m.height) continue;
    double col = (std::numbers::pi - az) / (2.0 * std::numbers::pi) * m.width;
    if (col >= m.width) col -= m.width;
    if (col < 0) col = 0;
    float& px = img.depth[std::size_t(row) * m.width + std::size_t(col)];
    if (px == 0.0f || range < px) px = float(range);
  }
  return img;
}

}  // namespace cumulus
