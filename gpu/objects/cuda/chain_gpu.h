#pragma once
// The device-resident pipeline (chain_gpu.cu): the input uploaded once, the voxel grid, the
// RANSAC ground plane, the points off it and their clusters computed where the previous stage
// left its output, on the device; only what the result holds comes back. Its stages are the
// same kernels as each stage's own GPU call, so it gives their results. A stub without CUDA.
#include "objects/pipeline.h"

namespace cumulus {

// The chain with `gpu` stages; the result is what run_pipeline(..., "gpu-stages") gives, but the
// filtered cloud carries points only (no intensity). The frame is uploaded from `page_locked`
// when given (the cloud's points, page-locked), else from the cloud.
PipelineResult run_chain_gpu(const PointCloud& cloud, const PipelineParams& params,
                             const Point3f* page_locked = nullptr);

}  // namespace cumulus
