#pragma once
// The pieces of describe_objects that the device-resident pipeline shares (its boxes are summed
// on the GPU, objects/cuda/chain_gpu.cu, and finished here). Private to the backend.
#include <array>
#include <cstddef>
#include <limits>
#include <optional>

#include "objects/objects.h"

namespace cumulus {

// A cluster's sums about the cloud's origin: its points, their sum, in-plane moments (u, v along
// the frame's e1, e2) and axis-aligned bounds, all in local coordinates.
struct ObjectSums {
  double n = 0;
  std::array<double, 3> sum{0, 0, 0};
  double s1 = 0, s2 = 0, s11 = 0, s12 = 0, s22 = 0;
  std::array<double, 3> lo{std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::infinity()};
  std::array<double, 3> hi{-lo[0], -lo[1], -lo[2]};
};

// The ground's unit normal (z without a plane) and two unit vectors spanning the plane normal
// to it.
struct ObjectFrame {
  std::array<double, 3> up{0, 0, 1}, e1{1, 0, 0}, e2{0, 1, 0};
};
ObjectFrame object_frame(const std::optional<std::array<double, 4>>& ground);

// The principal in-plane direction of a cluster (unit, in the ground plane).
std::array<double, 3> object_heading(const ObjectSums& a, const ObjectFrame& f);

// The object from its sums, heading and extents along heading, side (up x heading) and up
// (min, max each; local coordinates).
DetectedObject finish_object(int id, const ObjectSums& a, const std::array<double, 3>& heading,
                             const std::array<double, 6>& extents, const ObjectFrame& f,
                             const std::array<double, 3>& origin,
                             const std::optional<std::array<double, 4>>& ground);

}  // namespace cumulus
