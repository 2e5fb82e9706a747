#pragma once
// The GPU RANSAC plane's workspace, shared with the device-resident pipeline
// (objects/cuda/chain_gpu.cu), which fits the plane to points already on the device. Private to
// the backend.
#include <algorithm>

#include "core/cuda/buffer.cuh"
#include "core/cuda/stage_clock.cuh"
#include "ground/cuda/moments.cuh"
#include "ground/ground_impl.h"

namespace cumulus {

struct GroundWorkspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<Point3f> points;
  cuda::DeviceBuffer<float4> planes;
  cuda::DeviceBuffer<int> first, kept;
  cuda::DeviceBuffer<unsigned> inliers, selected;
  cuda::DeviceBuffer<Moments> moments;
  cuda::DeviceBuffer<unsigned char> keep, temp;
  cuda::PinnedBuffer<unsigned> host_inliers, host_selected;
  cuda::PinnedBuffer<float4> host_planes;
  cuda::PinnedBuffer<int> host_first;
  cuda::PinnedBuffer<Moments> host_moments;
  cuda::PinnedBuffer<Point3f> host_point;

  void temp_at_least(std::size_t bytes) { temp.reserve(std::max<std::size_t>(bytes, 1)); }
};

// RANSAC on the n points in ws.points: the plane, and its inliers both as ascending indices
// (fit.inliers, on the host) and as a flag per point in ws.keep (on the device). Syncs the stream
// at each step that reads back (the best hypothesis, each refit, the inlier count).
PlaneFit fit_plane_on_device(GroundWorkspace& ws, int n, const GroundPlaneParams& params,
                             cuda::StageClock& clock);

}  // namespace cumulus
