// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "features/cuda/features_gpu.h"

namespace cumulus {

void gpu_paper_descriptors(const std::vector<Point3f>&, const std::vector<Point3f>&,
                           const HostNeighbours&, Descriptor, FeatureResult&) {
  throw_no_cuda(method_name(FeatureMethod::GpuPaper));
}

void gpu_features(const std::vector<Point3f>&, const FeatureParams&, Point3f,
                  const std::vector<Point3f>*, FeatureResult&) {
  throw_no_cuda(method_name(FeatureMethod::Gpu));
}

void gpu_normals(const std::vector<Point3f>&, const Neighbourhood&, Point3f, bool, NormalsResult&) {
  throw_no_cuda(method_name(FeatureMethod::Gpu));
}

}  // namespace cumulus
