#pragma once
// Ground segmentation: which points of a scan are ground, and the ground's model.
// - RANSAC plane (PCL's SACSegmentation, plane model, coefficients optimized): planes through
//   three sampled points are scored by the points closer than `threshold` (strictly); the best
//   is refined once by a least-squares fit to its inliers (the normal is the covariance's
//   smallest eigenvector, through the inliers' centroid), and the points closer than
//   `threshold` to the refined plane are the ground. With an axis, only planes whose normal
//   lies within max_angle_deg of it count (PCL's perpendicular-plane model), e.g. (0, 0, 1)
//   for a level sensor. Points that are not finite are never ground.
// The GPU scores every hypothesis (PCL stops once 99 % confident) and repeats the refit while
// it gains inliers (PCL refits once). RANSAC is random: methods agree on the plane to within
// its noise, not to the bit; each is reproducible (PCL draws from its own fixed seed, the GPU
// from `seed`).
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"

#define CUMULUS_METHOD_ENUM GroundMethod
#define CUMULUS_METHOD_ROWS "ground/ground_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct GroundPlaneParams {
  double threshold = 0.2;     // metres from the plane
  int max_iterations = 1000;  // hypotheses: PCL stops earlier once 99 % confident, the GPU not
  std::optional<std::array<double, 3>> axis;  // the normal's direction, any length but zero
  double max_angle_deg = 15;                  // from the axis
  std::uint64_t seed = 1;                     // the GPU's hypotheses
};

struct GroundResult {
  // a x + b y + c z + d = 0 in world coordinates, (a, b, c) a unit vector pointing along the
  // axis (up, c >= 0, without one).
  std::array<double, 4> plane{};
  std::vector<std::int32_t> ground;  // input indices, ascending
  std::size_t non_finite = 0;
  int hypotheses = 0;  // planes scored (PCL: its iterations)
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

// InvalidArgument for a threshold that is not a positive finite number, max_iterations outside
// 1 .. 1,000,000, a zero or non-finite axis, or max_angle_deg outside (0, 90].
void validate(const GroundPlaneParams& params);

// Error naming the stage when the cloud has fewer than three finite points or no plane is
// found (every hypothesis degenerate or outside the angle).
GroundResult segment_ground_plane(const PointCloud& cloud, const GroundPlaneParams& params,
                                  GroundMethod method);

// The finite points that are not in `ground` (ascending indices): what clustering takes.
std::vector<std::int32_t> off_ground(const PointCloud& cloud,
                                     const std::vector<std::int32_t>& ground);

// Predicted ground against a generated scene's `semantic` field (value 1: ground), over the
// finite points. InvalidArgument when the cloud has no `semantic` field.
struct GroundScore {
  std::size_t true_positive = 0, false_positive = 0, false_negative = 0;
  double precision = 0, recall = 0, f1 = 0;
};
GroundScore score_ground(const PointCloud& cloud, const std::vector<std::int32_t>& ground);

// The angle in degrees between two planes' normals (0 to 90) and the distance from point p
// (world coordinates) to a plane.
double plane_angle_deg(const std::array<double, 4>& a, const std::array<double, 4>& b);
double plane_distance(const std::array<double, 4>& plane, const std::array<double, 3>& p);
// The world centroid of the points `which` of a cloud (its origin for none): where two planes
// are compared.
std::array<double, 3> world_centroid(const PointCloud& cloud,
                                     const std::vector<std::int32_t>& which);

}  // namespace cumulus
