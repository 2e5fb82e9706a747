#pragma once
// Colouring of clouds and depth images; pure functions so they are testable without a display.
#include <QImage>

#include <optional>
#include <span>
#include <vector>

#include "core/depth_image.h"
#include "core/point_cloud.h"

namespace cumulus::ui {

enum class ColorMode { Height, Intensity, Rgb, Label };

// Perceptually ordered rainbow (Google's Turbo polynomial approximation), t in [0, 1].
Rgb8 turbo(double t);
// A stable, well-separated colour for a label; -1 (no cluster) is grey.
Rgb8 label_color(std::int32_t label);
// label_color for every label up to the largest of `labels`, worked out once: a cloud's points
// then take their label's colour by a lookup, not by a colour worked out a point (on a
// 125k-point frame of a few hundred clusters, 2 ms of the UI thread's way to the view).
class LabelPalette {
 public:
  explicit LabelPalette(std::span<const std::int32_t> labels);
  Rgb8 operator()(std::int32_t label) const {
    return label >= 0 && std::size_t(label) < colours_.size() ? colours_[std::size_t(label)]
                                                              : label_color(label);
  }

 private:
  std::vector<Rgb8> colours_;
};
// Whether `mode` can colour this cloud (intensity, RGB and labels must be present).
bool supports(const PointCloud& cloud, ColorMode mode);
// Height or intensity colouring as a rule: the range worked out once, then any point's colour on
// demand (a view of a huge cloud then holds no colour a point). Height and intensity use the
// 1st..99th percentile range so that a few outliers do not wash out the scale.
struct ScalarColouring {
  ColorMode mode = ColorMode::Height;
  float lo = 0, hi = 1;
  Rgb8 operator()(const PointCloud& cloud, std::size_t i) const;
};
// The rule for height or intensity (intensity falls back to height where the cloud has none);
// nullopt for the RGB and label modes, which are a colour a point by nature.
std::optional<ScalarColouring> scalar_colouring(const PointCloud& cloud, ColorMode mode);
// One colour per point. Height and intensity use the 1st..99th percentile range so that a few
// outliers do not wash out the scale; unsupported modes fall back to height.
std::vector<Rgb8> cloud_colors(const PointCloud& cloud, ColorMode mode);
// Depth image as an RGB32 image: valid pixels by Turbo over [lo, hi], invalid ones black.
QImage depth_to_image(const DepthImage& depth, float lo, float hi);

}  // namespace cumulus::ui
