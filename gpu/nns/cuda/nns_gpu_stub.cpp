// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "nns/cuda/nns_gpu.h"

namespace cumulus {

void gpu_knn(std::span<const Point3f>, std::span<const Point3f>, int, NnsMethod method, float,
             KnnResult&) {
  throw_no_cuda(method_name(method));
}
void gpu_radius(std::span<const Point3f>, std::span<const Point3f>, float, NnsMethod method,
                RadiusResult&) {
  throw_no_cuda(method_name(method));
}

nns::Bounds gpu_bounds(std::span<const Point3f>) {
  throw_no_cuda(method_name(NnsMethod::Gpu));
}

}  // namespace cumulus
