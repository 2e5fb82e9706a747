// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "nns/cuda/nns_gpu.h"

namespace cumulus {

namespace {
[[noreturn]] void no_cuda(NnsMethod m) {
  throw GpuError(std::string(method_name(m)) +
                 " needs a GPU, and this build has no CUDA support (nvcc was not found when it was "
                 "configured)");
}
}  // namespace

void gpu_knn(const std::vector<Point3f>&, const std::vector<Point3f>&, int, NnsMethod method, float,
             KnnResult&) {
  no_cuda(method);
}
void gpu_radius(const std::vector<Point3f>&, const std::vector<Point3f>&, float, NnsMethod method,
                RadiusResult&) {
  no_cuda(method);
}

nns::Bounds gpu_bounds(const std::vector<Point3f>&) {
  no_cuda(NnsMethod::Gpu);
}

}  // namespace cumulus
