#pragma once
// Entry point of the CUDA GICP (gicp_gpu.cu); a stub throws GpuError without CUDA.
#include <vector>

#include "registration/icp.h"

namespace cumulus {

// source and target hold finite points only; fills the same fields of `out` as gpu_icp.
void gpu_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpMethod method, IcpResult& out);

// Each point's regularised covariance (9 doubles, row-major) from its k nearest points found by
// the method's search, as the loop computes them; for the tests.
std::vector<double> gpu_gicp_covariances(const std::vector<Point3f>& points, int k, double epsilon,
                                         IcpMethod method);

}  // namespace cumulus
