// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "features/cuda/features_gpu.h"

namespace cumulus {

namespace {
[[noreturn]] void no_cuda(FeatureMethod m) {
  throw GpuError(std::string(method_name(m)) +
                 " needs a GPU, and this build has no CUDA support (nvcc was not found when it was "
                 "configured)");
}
}  // namespace

void gpu_paper_descriptors(const std::vector<Point3f>&, const std::vector<Point3f>&,
                           const HostNeighbours&, Descriptor, FeatureResult&) {
  no_cuda(FeatureMethod::GpuPaper);
}

void gpu_features(const std::vector<Point3f>&, const FeatureParams&, Point3f,
                  const std::vector<Point3f>*, FeatureResult&) {
  no_cuda(FeatureMethod::Gpu);
}

void gpu_normals(const std::vector<Point3f>&, const Neighbourhood&, Point3f, NormalsResult&) {
  no_cuda(FeatureMethod::Gpu);
}

}  // namespace cumulus
