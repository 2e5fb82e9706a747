#pragma once
// Entry point of the CUDA clustering methods (cluster_gpu.cu); a stub that throws GpuError
// when the build has no CUDA.
#include <cstddef>

#include "cluster/cluster.h"

namespace cumulus {

// Clusters n points (non-finite ones are skipped and labelled -1) with a GPU method and fills
// labels, sizes, non_finite, dropped_clusters and stages of `out`.
void gpu_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                 ClusterMethod method, ClusterResult& out);

}  // namespace cumulus
