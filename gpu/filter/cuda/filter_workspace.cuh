#pragma once
// The GPU filters' workspace, shared with the device-resident pipeline (objects/cuda/chain_gpu.cu),
// which runs the voxel grid on points already on the device. Private to the backend.
#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/staged_download.cuh"
#include "filter/filter_impl.h"

namespace cumulus {

// Queues the compaction of the n elements of `in` whose flag is set, in order, into `out`, and
// their count into *count; CUB's scratch in `temp`, grown as needed.
template <class In, class T>
void select_flagged(In in, const unsigned char* flags, std::size_t n, T* out, unsigned* count,
                    cuda::DeviceBuffer<unsigned char>& temp, cudaStream_t s) {
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, in, flags, out, count, int(n), s));
  temp.reserve(std::max<std::size_t>(bytes, 1));
  CU_CHECK(cub::DeviceSelect::Flagged(temp.get(), bytes, in, flags, out, count, int(n), s));
}

// The kept indices of a compaction, and its counters, to the host in one trip. Up to
// kKeptIdsInOneTrip points all n slots come down into page-locked memory with the counters, those
// past the kept count too (zeros or an earlier call's ids, never read), so that one wait serves
// both and the DMA runs at the link's speed: reading the count first and then copying the ids
// into pageable memory cost a second wait and the driver's staged copy (0.12-0.21 ms of a KITTI
// frame's 1 ms crop box or radius outlier call on an H200, 0.02-0.05 this way). Past the cap the
// count comes first and only the kept ids follow, into pageable memory, so that a huge cloud pins
// no more host memory.
class KeptIdsDown {
 public:
  static constexpr std::size_t kKeptIdsInOneTrip = std::size_t(1) << 24;  // 64 MB of ids

  // The device array for the compaction's n ids. Storage that grows is zeroed once, so that the
  // trip's copy of every slot reads nothing unwritten (compute-sanitizer's initcheck reports a
  // copy of memory no one wrote; stale ids from an earlier call are written memory, and never
  // read past the count).
  int* device_ids(std::size_t n, cudaStream_t s) {
    if (ids_on_device_.capacity() < n) {
      ids_on_device_.reserve(n);
      CU_CHECK(cudaMemsetAsync(ids_on_device_.get(), 0, ids_on_device_.bytes(), s));
    }
    return ids_on_device_.get();
  }

  // Queues the compaction of the indices whose flag is set, ascending, into device_ids(), and
  // their count into *count.
  void select_kept(const unsigned char* flags, std::size_t n, unsigned* count,
                   cuda::DeviceBuffer<unsigned char>& temp, cudaStream_t s) {
    select_flagged(thrust::counting_iterator<int>(0), flags, n, device_ids(n, s), count, temp, s);
  }

  // Queues the copies of `counters` counters at d_counters (the first the kept count) and, up
  // to the cap, of the n slots of device_ids(); the caller syncs the stream before reading them.
  void queue(const unsigned* d_counters, int counters, std::size_t n, cudaStream_t s) {
    counters_.reserve(std::size_t(counters));
    CU_CHECK(cudaMemcpyAsync(counters_.get(), d_counters, std::size_t(counters) * sizeof(unsigned),
                             cudaMemcpyDeviceToHost, s));
    whole_ = n <= kKeptIdsInOneTrip;
    if (!whole_ || n == 0) return;
    ids_.reserve(n);
    CU_CHECK(cudaMemcpyAsync(ids_.get(), ids_on_device_.get(), n * sizeof(int),
                             cudaMemcpyDeviceToHost, s));
  }
  // After the sync: counter k.
  unsigned counter(int k) const { return counters_.get()[k]; }
  // After the sync: the kept ids (past the cap, copied now and waited for on s), the time taken
  // added to `stages`.
  std::vector<std::int32_t> take(cudaStream_t s, StageTimes& stages) const {
    WallTimer t;
    const unsigned kept = counter(0);
    std::vector<std::int32_t> out;
    if (whole_) {
      out.assign(ids_.get(), ids_.get() + kept);
    } else {
      out.resize(kept);
      CU_CHECK(cudaMemcpyAsync(out.data(), ids_on_device_.get(), std::size_t(kept) * sizeof(int),
                               cudaMemcpyDeviceToHost, s));
      CU_CHECK(cudaStreamSynchronize(s));
    }
    stages.emplace_back("kept ids into the result", t.ms());
    return out;
  }

 private:
  cuda::DeviceBuffer<int> ids_on_device_;
  cuda::PinnedBuffer<unsigned> counters_;
  cuda::PinnedBuffer<int> ids_;
  bool whole_ = false;
};

struct FiniteBounds {
  float lo[3], hi[3];
  unsigned finite;
};

struct FilterWorkspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<Point3f> points, centroids, kept_centroids;
  cuda::DeviceBuffer<float> intensity, means, kept_means;
  cuda::DeviceBuffer<unsigned> keys, sorted_keys, ids, sorted_ids, voxel_keys, counts, starts;
  cuda::DeviceBuffer<unsigned char> keep, temp;
  cuda::DeviceBuffer<FiniteBounds> bounds;
  cuda::DeviceBuffer<unsigned> selected;
  cuda::DeviceBuffer<unsigned> big, big_count;  // the voxels summed by a block each
  cuda::PinnedBuffer<FiniteBounds> host_bounds;
  cuda::PinnedBuffer<unsigned> host_count;
  KeptIdsDown kept_down;      // the crop box's kept ids
  cuda::StagedDownload down;  // the voxels

  void temp_at_least(std::size_t bytes) { temp.reserve(std::max<std::size_t>(bytes, 1)); }
};

// The voxel grid of the n points in ws.points (their intensities in ws.intensity when
// `with_intensity`), on the device, PCL's voxels in PCL's order. Returns the voxels' count, 0 when
// no point is finite; *centroids (and *means) point at them on the device, valid until the
// workspace's next use. Syncs the stream twice (the bounds, the voxel count).
unsigned voxel_grid_on_device(FilterWorkspace& ws, unsigned n, const VoxelGridParams& params,
                              bool with_intensity, cuda::StageClock& clock,
                              const Point3f** centroids, const float** means);

}  // namespace cumulus
