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

// The cooperative refinement's state (ground/cuda/refine_plane.cuh). Block 0's thread 0
// writes it between grid syncs; every block reads it (volatile: past L1).
struct RefineState {
  double ref[3];     // the best hypothesis's first point: the sums are about it
  double hint[3];    // the best hypothesis's normal
  double plane[4];   // the plane so far (n, d in the cloud's local coordinates)
  double next[4];    // the refit being tried
  float trial[4];    // the plane whose inliers are being summed, as the inlier test sees it
  Moments accepted;  // the inlier sums of `plane`
  int step;          // sums taken
  int found;         // 0: no hypothesis with 3 inliers
  int done;
};

struct GroundWorkspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<Point3f> points;
  cuda::DeviceBuffer<float4> planes;
  cuda::DeviceBuffer<int> first, kept;
  cuda::DeviceBuffer<unsigned> inliers, selected;
  cuda::DeviceBuffer<Moments> partials;
  cuda::DeviceBuffer<RefineState> state;
  cuda::DeviceBuffer<unsigned char> keep;
  cuda::PinnedBuffer<unsigned> host_selected;
  cuda::PinnedBuffer<RefineState> host_state;
  cuda::DeviceBuffer<unsigned char> temp;
  int refine_blocks = 0;  // how many blocks of the cooperative refinement fit on the device

  void temp_at_least(std::size_t bytes) { temp.reserve(std::max<std::size_t>(bytes, 1)); }
};

// RANSAC on the n points at `points` (on the device), enqueued on ws.stream with nothing read
// back but the plane and the inlier count, into page-locked memory: the caller syncs the stream
// (once, with whatever else it needs), then read_plane_fit. Leaves a flag per point in ws.keep
// (1: on the plane) and the inliers' ascending indices in ws.kept.
void fit_plane_async(GroundWorkspace& ws, const Point3f* points, int n,
                     const GroundPlaneParams& params, cuda::StageClock& clock);

// After that sync: the plane and its inliers, downloaded (which syncs again) unless
// `with_inliers` is false: then fit.inliers stays empty and the caller takes the
// *ws.host_selected indices from ws.kept itself.
PlaneFit read_plane_fit(GroundWorkspace& ws, const GroundPlaneParams& params,
                        bool with_inliers = true);

}  // namespace cumulus
