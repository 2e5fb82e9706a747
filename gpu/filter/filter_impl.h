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

// A copy of `cloud`'s points `kept` with all their fields (organized layout dropped).
PointCloud gather_points(const PointCloud& cloud, const std::vector<std::int32_t>& kept);

}  // namespace cumulus
