// Built instead of the CUDA sources when nvcc is missing: every GPU method reports why it
// cannot run.
#include "cluster/cuda/cluster_gpu.h"
#include "core/error.h"

namespace cumulus {

void gpu_cluster(const Point3f*, std::size_t, const ClusterParams&, ClusterMethod method,
                 ClusterResult&) {
  throw_no_cuda(method_name(method));
}

std::size_t gpu_cluster_gathered(std::size_t, const GatheredIo&, const ClusterParams&,
                                 ClusterMethod method, StageTimes&) {
  throw_no_cuda(method_name(method));
}

}  // namespace cumulus
