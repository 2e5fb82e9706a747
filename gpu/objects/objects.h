#pragma once
// Objects from clusters: per cluster its centroid, axis-aligned box, oriented box and height
// above the ground. The oriented box stands on the ground: its vertical is the ground plane's
// normal (z without a plane), its heading the principal axis of the points projected on the
// ground (PCA), its extents those of the points along these axes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus {

struct OrientedBox {
  std::array<double, 3> centre{};          // world coordinates
  std::array<double, 3> size{};            // along the heading, across it, up (length >= width)
  std::array<double, 3> heading{1, 0, 0};  // unit, in the ground plane
  std::array<double, 3> up{0, 0, 1};       // unit, the ground's normal
  // The eight corners, bottom face first (counter-clockwise seen from above), then the top.
  std::array<std::array<double, 3>, 8> corners() const;
};

struct DetectedObject {
  int id = 0;  // the cluster's label
  std::size_t points = 0;
  std::array<double, 3> centroid{};    // world coordinates
  std::array<double, 3> min{}, max{};  // axis-aligned box, world coordinates
  OrientedBox box;
  // The lowest point's height above the ground plane (NaN without one).
  double above_ground = 0;
};

// One object per label 0 .. max label of `labels` (one per point of `cloud`, -1 for none), in
// label order; `ground` is a x + b y + c z + d = 0 in world coordinates with a unit normal.
// InvalidArgument when the labels do not match the cloud.
std::vector<DetectedObject> describe_objects(const PointCloud& cloud,
                                             std::span<const std::int32_t> labels,
                                             const std::optional<std::array<double, 4>>& ground);

}  // namespace cumulus
