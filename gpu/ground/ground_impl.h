#pragma once
// What ground.cpp shares with its methods; private to the ground folder.
#include <array>
#include <cstdint>
#include <vector>

#include "ground/ground.h"

namespace cumulus {

// A plane in the cloud's local coordinates: n . p + d = 0, |n| = 1.
struct LocalPlane {
  std::array<double, 3> n{0, 0, 1};
  double d = 0;
};

// The sums of the inliers of a plane about a reference point (for the refit in double).
struct InlierMoments {
  double count = 0;
  std::array<double, 3> sum{};  // of p - ref
  std::array<double, 6> sq{};   // xx xy xz yy yz zz of p - ref
};

// PCL's refinement: the plane through the inliers' centroid normal to the covariance's
// smallest eigenvector; keeps the hint's orientation.
LocalPlane refit_plane(const InlierMoments& m, const std::array<double, 3>& ref,
                       const LocalPlane& hint);

// The plane in world coordinates (a, b, c, d) from local ones about `origin`.
std::array<double, 4> world_plane(const LocalPlane& p, const std::array<double, 3>& origin);

// The axis as a unit vector and the cosine of the largest angle (no axis: cosine -1).
struct AxisRule {
  std::array<double, 3> axis{0, 0, 1};
  double min_cos = -1;
};
AxisRule axis_rule(const GroundPlaneParams& params);

struct PlaneFit {
  LocalPlane plane;
  std::vector<std::int32_t> inliers;
  int hypotheses = 0;
  bool found = false;
};

// The result's plane (turned along the axis, in world coordinates about `origin`), ground and
// hypotheses from a method's fit; Error naming why when it found none.
void finish_ground(PlaneFit fit, const std::array<double, 3>& origin,
                   const GroundPlaneParams& params, GroundResult& r);

// PCL's SACSegmentation on the finite points (ground_pcl.cpp).
PlaneFit ground_plane_pcl(const PointCloud& cloud, const GroundPlaneParams& params);

}  // namespace cumulus
