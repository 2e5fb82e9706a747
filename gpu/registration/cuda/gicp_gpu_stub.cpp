// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "registration/cuda/gicp_gpu.h"

namespace cumulus {

void gpu_gicp(const std::vector<Point3f>&, const std::vector<Point3f>&, const IcpParams&,
              IcpMethod method, IcpResult&) {
  throw_no_cuda(method_name(method));
}

std::vector<double> gpu_gicp_covariances(const std::vector<Point3f>&, int, double,
                                         IcpMethod method) {
  throw_no_cuda(method_name(method));
}

}  // namespace cumulus
