#pragma once
// The CUDA RANSAC plane (ground_gpu.cu), or a stub that throws GpuError without CUDA.
#include "ground/ground_impl.h"

namespace cumulus {

PlaneFit ground_plane_gpu(const PointCloud& cloud, const GroundPlaneParams& params,
                          StageTimes& stages);

}  // namespace cumulus
