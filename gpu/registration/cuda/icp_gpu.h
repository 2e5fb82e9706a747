#pragma once
// Entry point of the CUDA ICP methods (icp_gpu.cu); a stub throws GpuError without CUDA.
#include "registration/icp.h"
#include "registration/icp_math.h"

namespace cumulus {

// source and target hold finite points only. Fills transform, converged, stop, iterations,
// fitness, history and stages of `out`.
// PCL's criteria as the shared iteration arithmetic takes them (icp.cpp).
icp_math::Criteria device_criteria(const IcpCriteria& c);
// The public stop reason of an icp_math::State.
IcpStop stop_of_state(int state);

void gpu_icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
             const IcpParams& params, IcpMethod method, IcpResult& out);

}  // namespace cumulus
