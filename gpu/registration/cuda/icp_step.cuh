#pragma once
// One ICP iteration's step on the device or the host: moving the source as PCL does (in float
// for point to point, in double for point to plane) and turning an iteration's sums into the
// step, the composed transform, the history entry and the convergence state. Included by
// icp_gpu.cu only.
#include <cuda_runtime.h>

#include "registration/cuda/icp_loop_state.cuh"
#include "registration/icp_math.h"

namespace cumulus::icp_cuda {

namespace {

// PCL's transformCloud: the double step cast to float, multiplied as Eigen's packet product
// (columns accumulated in order, no FMA).
__device__ __forceinline__ float3 apply_float(const float* m, float3 p) {
  const auto row = [&](int r) {
    return __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(m[4 * r], p.x), __fmul_rn(m[4 * r + 1], p.y)),
                               __fmul_rn(m[4 * r + 2], p.z)),
                     m[4 * r + 3]);
  };
  return make_float3(row(0), row(1), row(2));
}

// pcl::transformPointCloud with a double matrix (SSE2 path): translation first, then the
// columns in order, in double, rounded to float at the end.
__device__ __forceinline__ float3 apply_double(const double* m, float3 p) {
  const auto row = [&](int r) {
    double acc = m[4 * r + 3];
    acc = __dadd_rn(__dmul_rn(double(p.x), m[4 * r]), acc);
    acc = __dadd_rn(__dmul_rn(double(p.y), m[4 * r + 1]), acc);
    acc = __dadd_rn(__dmul_rn(double(p.z), m[4 * r + 2]), acc);
    return float(acc);
  };
  return make_float3(row(0), row(1), row(2));
}

}  // namespace

// After a step of n pairs with squared distances summing to d2: composes it, counts the
// iteration, records it and tests convergence (PCL's order: transform, compose, count, test).
CUMULUS_HD inline void take_step(Control& c, const double* step, double n, double d2,
                                 const im::Criteria& k, HistoryEntry* history) {
  im::multiply(step, c.final_transform, c.final_transform);
  c.apply_step = 1;
  c.iterations += 1;
  const double mse = d2 / n;
  HistoryEntry& h = history[c.iterations - 1];
  h.correspondences = n;
  h.mse = mse;
  c.state = im::check_convergence(k, c.convergence, c.iterations, step, mse, &h.cos_angle,
                                  &h.translation_sq);
}

// One iteration's decision from its sums: the step, the composed transform and the convergence
// state. Host and device.
CUMULUS_HD inline void solve_step(Control& c, const im::Sums& sums, const im::Criteria& k,
                                  HistoryEntry* history) {
  // A robust kernel can weigh every pair to nothing (Tukey's, all beyond its scale).
  if (sums.n < 3 || !(sums.w > 0)) {
    c.state = im::kNoCorrespondences;
    return;
  }
  double step[16];
  im::estimate_rigid(sums, c.centre, step, c.jacobi_v, c.rotation);
  for (int i = 0; i < 16; ++i)
    c.step[i] = float(step[i]);
  take_step(c, step, sums.n, sums.d2, k, history);
}

// The same for point to plane: PCL's linear least squares step, applied to the source in double
// next pass (PCL's transformPointCloudWithNormals).
CUMULUS_HD inline void solve_step_plane(Control& c, const im::PlaneSums& sums,
                                        const im::Criteria& k, HistoryEntry* history) {
  // A robust kernel can weigh every pair to nothing (Tukey's, all beyond its scale).
  if (sums.n < 3 || !(sums.w > 0)) {
    c.state = im::kNoCorrespondences;
    return;
  }
  double x[6], step[16];
  im::solve_plane(sums, x);
  im::plane_transform(x, step);
  for (int i = 0; i < 16; ++i)
    c.step_d[i] = step[i];
  take_step(c, step, sums.n, sums.d2, k, history);
}

}  // namespace cumulus::icp_cuda
