#pragma once
// What filter.cpp dispatches to and shares with its methods; private to the filter folder.
#include <array>
#include <cstdint>

#include "filter/filter.h"

namespace cumulus {

// PCL VoxelGrid's lattice for a cloud whose finite points lie in [lo, hi] (local float
// coordinates), computed with PCL's float arithmetic so that every method bins a point into
// the same voxel: voxel of p = floor(p * inverse) - min_b per axis, its index i.x * mul.x +
// i.y * mul.y + i.z * mul.z. `voxels` (div.x * div.y * div.z) is one past the largest index.
struct VoxelLattice {
  std::array<float, 3> inverse{};
  std::array<int, 3> min_b{};
  std::array<std::uint32_t, 3> mul{};
  std::uint64_t voxels = 0;
};
// InvalidArgument where PCL would overflow its 32-bit voxel index (and return the input).
VoxelLattice voxel_lattice(const Point3f& lo, const Point3f& hi, const VoxelGridParams& params);

// The local box of a world-coordinate crop box.
struct LocalBox {
  Point3f min, max;
};
LocalBox local_box(const PointCloud& cloud, const CropBoxParams& params);

// The references (filter_pcl.cpp): PCL's CropBox and VoxelGrid.
std::vector<std::int32_t> crop_box_pcl(const PointCloud& cloud, const LocalBox& box, bool negative);
void voxel_grid_pcl(const PointCloud& cloud, const VoxelGridParams& params, PointCloud& out);

std::vector<std::int32_t> statistical_outliers_pcl(const PointCloud& cloud,
                                                   const StatisticalOutlierParams& params);
std::vector<std::int32_t> radius_outliers_pcl(const PointCloud& cloud,
                                              const RadiusOutlierParams& params);

// Statistical outlier removal's threshold (outliers.cpp). PCL sums the scores of all points
// (0 for those not finite) and their float squares serially in double, over `valid` finite
// points, then takes mean + stddev_mul * stddev with the sample variance.
struct ScoreSums {
  double sum = 0, sq_sum = 0;
  std::uint64_t valid = 0;
};
// PCL's formula on sums taken in whatever order.
double sor_threshold(const ScoreSums& sums, double stddev_mul);
// An interval holding the threshold PCL computes from the same scores summed serially, given
// sums of them taken in any other order (rounding-error bounds of both summations and of the
// formula); not usable where the variance may be zero or negative within those bounds.
struct ThresholdRange {
  double lo = 0, hi = 0;
  bool usable = false;
};
ThresholdRange sor_threshold_range(const ScoreSums& sums, double stddev_mul);
// PCL's threshold exactly: its serial loop over all n scores.
double sor_threshold_serial(const float* scores, std::size_t n, std::uint64_t valid,
                            double stddev_mul);

// The end of the filters that keep input points (r.kept): their fields gathered into r.cloud,
// the method and the total time recorded.
void finish_kept(const PointCloud& cloud, FilterMethod method, const WallTimer& total,
                 FilterResult& r);

}  // namespace cumulus
