#pragma once
// Entry point of the CUDA clustering methods (cluster_gpu.cu); a stub that throws GpuError
// when the build has no CUDA.
#include <cstddef>
#include <cstdint>
#include <functional>

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

// The host's two ends of a gathered call: where its points come from and where its labels go,
// a chunk at a time through page-locked memory.
struct GatheredIo {
  // Writes the points [begin, end) into `dst`.
  std::function<void(std::size_t begin, std::size_t end, Point3f* dst)> gather;
  // Takes the labels of the points [begin, end) (valid until it returns) and the number of
  // clusters kept, the same in every call; called for the chunks in order.
  std::function<void(std::size_t begin, std::size_t end, const std::int32_t* labels,
                     std::size_t clusters)>
      take_labels;
};
// Clusters n points with GPU method `method` through `io`: a chunk goes up while the next is
// gathered, and the labels come down a chunk at a time while the host takes the one before,
// so a clustering in slabs moves its slabs at page-locked speed without page-locking a slab's
// worth of memory or copying its labels once more. Returns the number of clusters kept (each
// point's label is its canonical one for these n points). The stage times are appended to
// `stages`, the host's share of the chunks as "gather (host)" and "take labels (host)".
std::size_t gpu_cluster_gathered(std::size_t n, const GatheredIo& io, const ClusterParams& params,
                                 ClusterMethod method, StageTimes& stages);

}  // namespace cumulus
