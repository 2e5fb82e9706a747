#pragma once
// The host GICP runs (gicp.cpp) and the iteration report of PCL's loops. Private to
// registration and its tests.
#include <vector>

#include "core/error.h"
#include "registration/icp.h"

namespace cumulus {

// PCL's GeneralizedIterativeClosestPoint (double transforms), the `cpu` method. source and
// target hold finite points only; fills the same fields of `out` as gpu_icp. A robust kernel
// scales each pair's Mahalanobis matrix by its weight before PCL's BFGS runs.
void pcl_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpResult& out, const IcpProgress& progress = {});

// Called by PCL's loops (ICP's and GICP's) after each iteration, from the visualisation callback
// that records it: tells `progress`, and stops the run with Cancelled when it says so. PCL
// unwinds from its callback cleanly (its loop holds only shared pointers and containers).
inline void report_iteration(const IcpProgress& progress, const IcpResult& out,
                             const IcpParams& params) {
  if (progress && !progress(int(out.history.size()), params.criteria.max_iterations))
    throw Cancelled("registration cancelled");
}

// The GPU's loop on one host thread (gicp_math.h's covariances, Mahalanobis matrices and BFGS,
// PCL's kd-tree for the searches): what the tests compare with PCL where there is no GPU.
void host_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
               const IcpParams& params, IcpResult& out);

}  // namespace cumulus
