#pragma once
// The device-resident pipeline (chain_gpu.cu): the input uploaded once, the voxel grid, the
// RANSAC ground plane, the points off it and their clusters computed where the previous stage
// left its output, on the device; only what the result holds comes back. Its stages are the
// same kernels as each stage's own GPU call, so it gives their results. A stub without CUDA.
#include "objects/pipeline.h"

namespace cumulus {

// Whether the device-resident chain runs these stages: clustering, with or without a voxel
// grid and a ground plane before it; crop boxes, outlier filters and the range-image ground go
// stage by stage.
bool device_chain_takes(const PipelineParams& params);

// The chain with `gpu` stages; the result is what run_pipeline(..., "gpu-stages") gives, but the
// filtered cloud carries points only (no intensity).
PipelineResult run_chain_gpu(const PointCloud& cloud, const PipelineParams& params);

}  // namespace cumulus
