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
// The same for n points already in device memory (the device-resident pipeline's), with the
// default method, `gpu`: a device-to-device copy instead of the upload. The caller has finished
// writing them (its stream synchronized). With `device_labels` (room for n), the labels are
// also left there, on the device, complete when this returns.
void gpu_cluster_on_device(const Point3f* device_points, std::size_t n, const ClusterParams& params,
                           ClusterResult& out, int* device_labels = nullptr);

}  // namespace cumulus
