#pragma once
// Point-cloud filters with PCL's semantics, the first stages from a raw scan to objects.
// - Crop box (PCL CropBox, axis-aligned): keeps the finite points with min <= p <= max on every
//   axis (or, negative, the finite points outside); the kept points keep all their fields.
// - Voxel grid (PCL VoxelGrid): the finite points binned in voxels of the leaf size on the
//   lattice anchored at floor(min / leaf); one point per voxel holding at least
//   min_points_per_voxel points, their centroid (intensity averaged too), voxels in PCL's order.
// - Statistical outlier removal (PCL StatisticalOutlierRemoval, k-d tree searcher): a finite
//   point's score is the mean distance to its mean_k nearest other points; points scoring above
//   mean + stddev_mul * stddev of the finite points' scores are removed. Points that are not
//   finite score 0 and are kept, as PCL keeps them.
// - Radius outlier removal (PCL RadiusOutlierRemoval): a finite point is kept when at least
//   min_neighbors other points lie at distance <= radius (PCL's k-nearest branch on the finite
//   points; its branch for clouds with NaNs asserts on them); points that are not finite have
//   no neighbours and are removed.
// Coordinates are the cloud's local (float) ones; world boxes are converted first. Every
// method keeps the same points; voxel centroids agree to PCL's own float summation error (PCL
// sums a voxel in the unspecified order of its unstable sort; the GPU sums in double).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"

#define CUMULUS_METHOD_ENUM FilterMethod
#define CUMULUS_METHOD_ROWS "filter/filter_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct CropBoxParams {
  std::array<double, 3> min{0, 0, 0};  // world coordinates, metres
  std::array<double, 3> max{0, 0, 0};
  bool negative = false;  // keep what lies outside instead
};

struct VoxelGridParams {
  std::array<float, 3> leaf{0.1f, 0.1f, 0.1f};  // metres along x, y, z
  std::size_t min_points_per_voxel = 0;         // PCL's default: every occupied voxel
};

// PCL's k-nearest search hands back its neighbours in heap order beyond 250, which changes its
// summation order: mean_k stays below.
constexpr int kMaxOutlierMeanK = 249;

struct StatisticalOutlierParams {
  int mean_k = 50;          // neighbours per score (PCL setMeanK)
  double stddev_mul = 1.0;  // PCL setStddevMulThresh
  bool negative = false;    // keep the outliers instead
};

struct RadiusOutlierParams {
  double radius = 0.5;    // metres
  int min_neighbors = 2;  // besides the point itself (PCL setMinNeighborsInRadius)
  bool negative = false;  // keep the outliers instead
};

struct FilterResult {
  PointCloud cloud;                // the output, with the input's origin
  std::vector<std::int32_t> kept;  // crop box: input indices kept, ascending; voxel grid: empty
  std::size_t non_finite = 0;      // input points skipped as not finite
  double threshold = 0;            // statistical outliers: the score threshold used
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

// InvalidArgument for a box with min > max or non-finite corners, a leaf that is not a positive
// finite number, or (voxel grid) a leaf so small that voxel indices would overflow 32 bits,
// where PCL warns and returns the input unfiltered: the message gives the smallest leaf that
// works for the cloud.
void validate(const CropBoxParams& params);
void validate(const VoxelGridParams& params);
// The same for a leaf on this cloud, overflow included (what voxel_grid would throw).
void validate(const VoxelGridParams& params, const PointCloud& cloud);
// mean_k outside 1 .. kMaxOutlierMeanK, a stddev_mul that is not finite, a radius that is not a
// positive finite number, or min_neighbors outside 0 .. 1,000,000.
void validate(const StatisticalOutlierParams& params);
void validate(const RadiusOutlierParams& params);

// A copy of `cloud`'s points `kept` with all their fields (organized layout dropped).
PointCloud gather_points(const PointCloud& cloud, const std::vector<std::int32_t>& kept);
// A copy of the finite points with all their fields (organized layout dropped).
PointCloud finite_only(const PointCloud& cloud);

FilterResult crop_box(const PointCloud& cloud, const CropBoxParams& params, FilterMethod method);
FilterResult voxel_grid(const PointCloud& cloud, const VoxelGridParams& params,
                        FilterMethod method);
// InvalidArgument, besides the parameter checks, for a cloud with fewer than mean_k + 1 finite
// points (PCL would read past its neighbour lists).
FilterResult remove_statistical_outliers(const PointCloud& cloud,
                                         const StatisticalOutlierParams& params,
                                         FilterMethod method);
FilterResult remove_radius_outliers(const PointCloud& cloud, const RadiusOutlierParams& params,
                                    FilterMethod method);

}  // namespace cumulus
