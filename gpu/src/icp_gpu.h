#pragma once
// Entry point of the CUDA ICP methods (icp_gpu.cu); a stub throws GpuError without CUDA.
#include "cumulus/icp.h"

namespace cumulus {

// source and target hold finite points only. Fills transform, converged, stop, iterations,
// fitness, history and stages of `out`.
void gpu_icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
             const IcpParams& params, IcpMethod method, IcpResult& out);

}  // namespace cumulus
