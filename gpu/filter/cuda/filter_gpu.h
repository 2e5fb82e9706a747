#pragma once
// The CUDA filters (filter_gpu.cu, outlier_gpu.cu), or stubs that throw GpuError without CUDA.
#include <cstdint>
#include <vector>

#include "filter/filter_impl.h"

namespace cumulus {

// The indices of the finite points inside `box` (outside, when negative), ascending.
std::vector<std::int32_t> crop_box_gpu(const PointCloud& cloud, const LocalBox& box, bool negative,
                                       StageTimes& stages);
// The voxel centroids (and mean intensities) in PCL's order into out.points (out.intensity).
void voxel_grid_gpu(const PointCloud& cloud, const VoxelGridParams& params, PointCloud& out,
                    StageTimes& stages);
// The indices kept by the outlier filters (outlier_gpu.cu), ascending; the cloud is not empty.
// Radius: neighbours count when d2 <= r2.
std::vector<std::int32_t> statistical_outliers_gpu(const PointCloud& cloud,
                                                   const StatisticalOutlierParams& params,
                                                   StageTimes& stages);
std::vector<std::int32_t> radius_outliers_gpu(const PointCloud& cloud,
                                              const RadiusOutlierParams& params, float r2,
                                              StageTimes& stages);

}  // namespace cumulus
