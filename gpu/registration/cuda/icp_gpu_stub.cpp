// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "registration/cuda/icp_gpu.h"

namespace cumulus {

void gpu_icp(const std::vector<Point3f>&, const std::vector<Point3f>&, const std::vector<Point3f>*,
             const IcpParams&, IcpMethod method, IcpResult&) {
  throw_no_cuda(method_name(method));
}

}  // namespace cumulus
