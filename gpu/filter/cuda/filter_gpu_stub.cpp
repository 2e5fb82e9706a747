// Built instead of filter_gpu.cu and outlier_gpu.cu when nvcc is missing.
#include "core/error.h"
#include "filter/cuda/filter_gpu.h"

namespace cumulus {

std::vector<std::int32_t> crop_box_gpu(const PointCloud&, const LocalBox&, bool, StageTimes&) {
  throw_no_cuda("gpu crop box");
}

void voxel_grid_gpu(const PointCloud&, const VoxelGridParams&, PointCloud&, StageTimes&) {
  throw_no_cuda("gpu voxel grid");
}

std::vector<std::int32_t> statistical_outliers_gpu(const PointCloud&,
                                                   const StatisticalOutlierParams&, StageTimes&) {
  throw_no_cuda("gpu statistical outliers");
}

std::vector<std::int32_t> radius_outliers_gpu(const PointCloud&, const RadiusOutlierParams&, float,
                                              StageTimes&) {
  throw_no_cuda("gpu radius outliers");
}

}  // namespace cumulus
