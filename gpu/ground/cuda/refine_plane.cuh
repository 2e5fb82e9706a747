#pragma once
// The GPU RANSAC's last steps in one cooperative kernel: the best hypothesis, PCL's refinement
// repeated while it gains inliers, and the final plane's inliers flagged. Each refit needs the
// previous one's inlier sums, which the host used to read back (a stream sync each, 15-20 us,
// more than the sums themselves); here the grid waits on itself instead.
#include <cooperative_groups.h>

#include <cub/block/block_reduce.cuh>

#include "core/point_cloud.h"
#include "ground/cuda/ground_workspace.cuh"
#include "ground/plane_refit.h"

namespace cumulus {

constexpr int kRefineThreads = 256;
// The sums are taken in this many fixed slices of the points and the slices summed in order,
// so the plane is the same bits on every GPU whatever the grid it gets.
constexpr int kRefineSlices = 256;

namespace refine {

__device__ inline void set_trial(RefineState& s, const double* p) {
  for (int k = 0; k < 4; ++k)
    s.trial[k] = float(p[k]);
}

// After the sums of step s.step: the hypothesis refit as PCL refits it, the refit's sums, then
// refits again while they gain inliers, at most `max_refits` sums past the first refit.
__device__ inline void advance(RefineState& s, const Moments& sums, int max_refits) {
  if (s.step == 0) {
    plane_refit::refit(sums.m, s.ref, s.hint, s.plane, s.plane + 3);
    set_trial(s, s.plane);
  } else if (s.step == 1 || sums.m[0] > s.accepted.m[0]) {
    if (s.step > 1)
      for (int k = 0; k < 4; ++k)
        s.plane[k] = s.next[k];
    s.accepted = sums;
    if (s.step < max_refits) {
      plane_refit::refit(s.accepted.m, s.ref, s.plane, s.next, s.next + 3);
      set_trial(s, s.next);
    } else {
      s.done = 1;
    }
  } else {
    s.done = 1;
  }
  ++s.step;
}

struct Larger {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a > b ? a : b;
  }
};

__device__ inline bool inlier(const float* q, const Point3f& p, float threshold) {
  return fabsf(q[0] * p.x + q[1] * p.y + q[2] * p.z + q[3]) < threshold;
}

}  // namespace refine

// Launched cooperatively with at most kRefineSlices blocks of kRefineThreads, all resident.
__global__ void __launch_bounds__(kRefineThreads)
    refine_best_plane(const Point3f* points, int n, const float4* planes, const unsigned* inliers,
                      const int* first, int count, float threshold, int max_refits,
                      Moments* partials, RefineState* state, unsigned char* keep) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  using KeyReduce = cub::BlockReduce<unsigned long long, kRefineThreads>;
  using SumReduce = cub::BlockReduce<Moments, kRefineThreads>;
  __shared__ union {
    typename KeyReduce::TempStorage key;
    typename SumReduce::TempStorage sum;
  } temp;
  volatile RefineState* shared_state = state;

  if (blockIdx.x == 0) {
    // The most inliers, ties to the lowest hypothesis: both in one key.
    unsigned long long key = 0;
    for (int h = int(threadIdx.x); h < count; h += kRefineThreads)
      if (!isnan(planes[h].x))
        key = max(
            key, (static_cast<unsigned long long>(inliers[h]) << 32) | (0xffffffffu - unsigned(h)));
    key = KeyReduce(temp.key).Reduce(key, refine::Larger{});
    if (threadIdx.x == 0) {
      RefineState& s = *state;
      s.step = 0;
      s.found = (key >> 32) >= 3;
      s.done = !s.found;
      if (s.found) {
        const int best = int(0xffffffffu - unsigned(key & 0xffffffffu));
        const Point3f p = points[first[best]];
        const float4 q = planes[best];
        const double ref[3] = {p.x, p.y, p.z}, hint[4] = {q.x, q.y, q.z, q.w};
        for (int k = 0; k < 3; ++k) {
          s.ref[k] = ref[k];
          s.hint[k] = hint[k];
        }
        for (int k = 0; k < 4; ++k)
          s.trial[k] = float(hint[k]);
      }
    }
  }
  grid.sync();

  while (!shared_state->done) {
    const float trial[4] = {shared_state->trial[0], shared_state->trial[1], shared_state->trial[2],
                            shared_state->trial[3]};
    const double ref[3] = {shared_state->ref[0], shared_state->ref[1], shared_state->ref[2]};
    for (int slice = int(blockIdx.x); slice < kRefineSlices; slice += int(gridDim.x)) {
      Moments sums{};
      for (int i = slice * kRefineThreads + int(threadIdx.x); i < n;
           i += kRefineSlices * kRefineThreads) {
        const Point3f p = points[i];
        if (refine::inlier(trial, p, threshold))
          sums = AddMoments{}(sums, Moments::of(p.x - ref[0], p.y - ref[1], p.z - ref[2]));
      }
      sums = SumReduce(temp.sum).Reduce(sums, AddMoments{});
      if (threadIdx.x == 0) partials[slice] = sums;
      __syncthreads();
    }
    grid.sync();
    if (blockIdx.x == 0) {
      Moments part{};
      if (threadIdx.x < kRefineSlices)
        for (int k = 0; k < 10; ++k)
          part.m[k] = __ldcg(&partials[threadIdx.x].m[k]);
      const Moments sums = SumReduce(temp.sum).Reduce(part, AddMoments{});
      if (threadIdx.x == 0) refine::advance(*state, sums, max_refits);
    }
    grid.sync();
  }

  float plane[4] = {NAN, 0, 0, 0};  // no plane: nothing is an inlier
  if (shared_state->found)
    for (int k = 0; k < 4; ++k)
      plane[k] = float(shared_state->plane[k]);
  for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += int(gridDim.x * blockDim.x))
    keep[i] = refine::inlier(plane, points[i], threshold);
}

}  // namespace cumulus
