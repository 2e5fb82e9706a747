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

// target_normals: one per target point, for point to plane (null otherwise).
void gpu_icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
             const std::vector<Point3f>* target_normals, const IcpParams& params, IcpMethod method,
             IcpResult& out);

}  // namespace cumulus
