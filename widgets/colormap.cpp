#include "colormap.h"

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

Rgb8 turbo(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  // Polynomial fit of the Turbo colormap (Mikhailov, 2019), published under Apache-2.0.
  const double r =
      0.13572138 +
      t * (4.61539260 +
           t * (-42.66032258 + t * (132.13108234 + t * (-152.94239396 + t * 59.28637943))));
  const double g =
      0.09140261 +
      t * (2.19418839 + t * (4.84296658 + t * (-14.18503333 + t * (4.27729857 + t * 2.82956604))));
  const double b =
      0.10667330 +
      t * (12.64194608 +
           t * (-60.58204836 + t * (110.36276771 + t * (-89.90310912 + t * 27.34824973))));
  auto u8 = [](double v) { return std::uint8_t(std::clamp(v, 0.0, 1.0) * 255.0 + 0.5); };
  return {u8(r), u8(g), u8(b)};
}

Rgb8 label_color(std::int32_t label) {
  if (label < 0) return {110, 110, 110};
  // Golden-ratio hue steps keep neighbouring labels far apart in hue.
  const double h = std::fmod(0.13 + 0.618033988749895 * label, 1.0);
  const double s = 0.75, v = 0.95;
  // HSV to RGB: each channel is full within 60 degrees of its own hue and falls off linearly
  // over the next 60.
  const auto channel = [&](double n) {
    const double k = std::fmod(n + h * 6, 6.0);
    return v - v * s * std::clamp(std::min(k, 4 - k), 0.0, 1.0);
  };
  return {std::uint8_t(channel(5) * 255), std::uint8_t(channel(3) * 255),
          std::uint8_t(channel(1) * 255)};
}

LabelPalette::LabelPalette(std::span<const std::int32_t> labels) {
  std::int32_t top = -1;
  for (const auto l : labels)
    top = std::max(top, l);
  // Labels read from a file can be anything: a palette longer than the points would cost more
  // than it saves, so larger labels are worked out as they come.
  colours_.resize(std::min(std::size_t(top + 1), labels.size()));
  for (std::size_t k = 0; k < colours_.size(); ++k)
    colours_[k] = label_color(std::int32_t(k));
}

bool supports(const PointCloud& cloud, ColorMode mode) {
  switch (mode) {
    case ColorMode::Height:
      return true;
    case ColorMode::Intensity:
      return cloud.has_intensity();
    case ColorMode::Rgb:
      return cloud.has_rgb();
    case ColorMode::Label:
      return cloud.has_labels();
  }
  return false;
}

namespace {

std::pair<float, float> robust_range(std::vector<float> values) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); }),
      values.end());
  if (values.empty()) return {0, 1};
  const std::size_t lo_i = values.size() / 100, hi_i = values.size() - 1 - values.size() / 100;
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(lo_i), values.end());
  const float lo = values[lo_i];
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(hi_i), values.end());
  const float hi = values[hi_i];
  return {lo, hi > lo ? hi : lo + 1};
}

}  // namespace

Rgb8 ScalarColouring::operator()(const PointCloud& cloud, std::size_t i) const {
  const float v = mode == ColorMode::Height ? cloud.points[i].z : cloud.intensity[i];
  // Turbo's darkest end is nearly black on our dark background; start a little above it.
  return turbo(0.1 + 0.9 * (v - lo) / (hi - lo));
}

std::optional<ScalarColouring> scalar_colouring(const PointCloud& cloud, ColorMode mode) {
  if (!supports(cloud, mode)) mode = ColorMode::Height;
  if (mode != ColorMode::Height && mode != ColorMode::Intensity) return std::nullopt;
  std::vector<float> v(cloud.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = mode == ColorMode::Height ? cloud.points[i].z : cloud.intensity[i];
  const auto [lo, hi] = robust_range(std::move(v));
  return ScalarColouring{mode, lo, hi};
}

std::vector<Rgb8> cloud_colors(const PointCloud& cloud, ColorMode mode) {
  if (!supports(cloud, mode)) mode = ColorMode::Height;
  if (mode == ColorMode::Rgb) return cloud.rgb;
  std::vector<Rgb8> out(cloud.size());
  if (mode == ColorMode::Label) {
    const LabelPalette palette(cloud.labels);
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = palette(cloud.labels[i]);
    return out;
  }
  const auto rule = scalar_colouring(cloud, mode);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = (*rule)(cloud, i);
  return out;
}

QImage depth_to_image(const DepthImage& depth, float lo, float hi) {
  QImage img(int(depth.width), int(depth.height), QImage::Format_RGB32);
  const float span = hi > lo ? hi - lo : 1.0f;
  for (std::uint32_t r = 0; r < depth.height; ++r) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(int(r)));
    for (std::uint32_t c = 0; c < depth.width; ++c) {
      const float d = depth.at(r, c);
      if (!DepthImage::is_valid(d)) {
        line[c] = qRgb(0, 0, 0);
        continue;
      }
      const Rgb8 col = turbo((d - lo) / span);
      line[c] = qRgb(col.r, col.g, col.b);
    }
  }
  return img;
}

}  // namespace cumulus::ui
