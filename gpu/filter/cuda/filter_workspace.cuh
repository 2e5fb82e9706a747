#pragma once
// The GPU filters' workspace, shared with the device-resident pipeline (objects/cuda/chain_gpu.cu),
// which runs the voxel grid on points already on the device. Private to the backend.
#include <algorithm>

#include "core/cuda/buffer.cuh"
#include "core/cuda/stage_clock.cuh"
#include "filter/filter_impl.h"

namespace cumulus {

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
  cuda::DeviceBuffer<int> kept_ids;
  cuda::DeviceBuffer<unsigned> selected;
  cuda::PinnedBuffer<FiniteBounds> host_bounds;
  cuda::PinnedBuffer<unsigned> host_count;

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
