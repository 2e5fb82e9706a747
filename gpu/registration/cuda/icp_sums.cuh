#pragma once
// The ICP iteration's second kernel: each pair's terms summed over the grid in a fixed order, the
// order of the next search written, and the step solved by the grid's last block. Included by
// icp_gpu.cu only.
#include <cuda_runtime.h>

#include <type_traits>

#include "core/cuda/dependent_launch.cuh"
#include "registration/cuda/icp_loop_state.cuh"
#include "registration/cuda/icp_reduce.cuh"
#include "registration/cuda/icp_step.cuh"
#include "registration/cuda/loop_common.cuh"
#include "registration/icp_math.h"

namespace cumulus::icp_cuda {
namespace {

// One pair's terms added into `acc`: p the moved source point, m its match (target point and
// squared distance), ni the target's index (for its normal).
template <bool Plane>
__device__ __forceinline__ void add_pair(std::conditional_t<Plane, im::PlaneSums, im::Sums>& acc,
                                         float3 p, float4 m, int ni, const float3* normals,
                                         const double* c, const im::Criteria& criteria) {
  const double d2 = double(m.w);
  if constexpr (Plane) {
    // A pair whose target normal is not finite counts for the MSE and the pair count but not in
    // the equations (PCL skips it there).
    const float3 nn = normals[ni];
    if (isfinite(nn.x) && isfinite(nn.y) && isfinite(nn.z)) {
      const float s3[3] = {p.x, p.y, p.z}, t3[3] = {m.x, m.y, m.z}, n3[3] = {nn.x, nn.y, nn.z};
      im::add_plane(acc, s3, t3, n3, d2, criteria.kernel, criteria.kernel_scale);
    } else {
      acc.n += 1;
      acc.d2 += d2;
    }
  } else {
    const double s3[3] = {double(p.x) - c[0], double(p.y) - c[1], double(p.z) - c[2]};
    const double t3[3] = {double(m.x) - c[0], double(m.y) - c[1], double(m.z) - c[2]};
    im::add(acc, s3, t3, d2, im::robust_weight(criteria.kernel, criteria.kernel_scale, sqrt(d2)));
  }
}

// Sums the correspondences, and the grid's last block solves the step (or, for the host solve,
// leaves the sums in ctl).
// The grid is one wave of at most kThreads blocks (solve_blocks), each thread taking a run of
// consecutive points and adding their terms first. The kernel's registers leave room for two
// blocks an SM: KITTI's 124,605 points a point a thread took two waves, the second starting 3.6
// us after the first (H200), and the last block's sum of 487 partials (two rounds of loads for
// some threads) took 4.6 us against 1.3 for at most 256. Runs keep the order below in the
// points' own order within a block, as a point a thread did: with points taken by strides over
// the grid, a late search took 36.6-37.4 us against 34.1-34.8 (KITTI, H200), its groups' points
// no longer neighbours.
// With `order` (`gpu`), also orders the points for the next search: far are those whose
// correspondence lay beyond sqrt(far_d2) or was not found, middling those beyond sqrt(mid_d2).
// Far ones go to the front of the order, middling ones to a list in its second half that the
// search takes next, and the others to the back, counted per block (one atomic per block for
// the far and middling lists together and one for the near: a warp each made thousands of
// atomics on the same counters). The middling ones start before the near ones because a
// search's time grows with its ball: the kernel's end was set by a few of them in its last wave
// (a trace of KITTI 1 -> 0 on an H200, 40th iteration: the SMs' last searches ending 27-33 us
// into the kernel, those with balls of 0.25-0.5 m taking 7-9 us at the 90th percentile against
// 4 for those under 0.19 m).
// The last block works on a copy of ctl in shared memory: the solve reads and writes its fields
// one after another, and each was a round trip to L2.
// Point to plane (Plane) sums PCL's normal equations instead, from the targets' normals.
template <bool Plane>
__global__ void k_icp_solve(const float3* source, int n, const float3* normals, const int* pair,
                            const float4* match, Control* ctl, im::Criteria criteria,
                            double* partials, HistoryEntry* history, int solve_here, int* order,
                            float far_d2, float mid_d2, registration_cuda::LoopProgress* progress) {
  constexpr int V = Plane ? kPlaneValues : kValues;
  cuda::wait_for_previous_grid();
  // Everything the first two points need is requested before the first test: the kernel sits on
  // the iteration's critical path, and each round trip to memory adds to it.
  const int stride = int(gridDim.x * blockDim.x);
  const int per = n / stride + (n % stride != 0);  // points a thread
  const int begin = min(n, int(blockIdx.x * blockDim.x + threadIdx.x) * per);
  const int end = min(n, begin + per);
  const int state = ctl->state;
  struct Terms {  // what one point's terms need
    int ni;
    float4 m;
    float3 p;
  };
  const auto read = [&](int i) { return Terms{pair[i], match[i], source[i]}; };
  const Terms none{-1, make_float4(0, 0, 0, INFINITY), make_float3(0, 0, 0)};
  const Terms first = begin < end ? read(begin) : none;
  const Terms second = begin + 1 < end ? read(begin + 1) : none;
  const auto at = [&](int i) { return i == begin ? first : i == begin + 1 ? second : read(i); };
  const double c[3] = {ctl->centre[0], ctl->centre[1], ctl->centre[2]};
  if (state != im::kNotConverged) return;  // the same for every thread of the grid
  std::conditional_t<Plane, im::PlaneSums, im::Sums> acc;
  // Per list (far, middling, near), counted without an index chosen at run time, which would put
  // the counts in local memory. Near ones are the rest of the thread's run.
  unsigned my_count[3] = {0, 0, 0};
  for (int i = begin; i < end; ++i) {
    const Terms t = at(i);
    if (t.ni >= 0) add_pair<Plane>(acc, t.p, t.m, t.ni, normals, c, criteria);
    my_count[0] += !(t.m.w <= far_d2);  // none found (infinite) or NaN: far
    my_count[1] += t.m.w <= far_d2 && !(t.m.w <= mid_d2);
  }
  my_count[2] = unsigned(end - begin) - my_count[0] - my_count[1];
  double v[V];
#pragma unroll
  for (int j = 0; j < V; ++j)
    v[j] = acc.values()[j];
  // The order's places: this thread's points of each list after those of the warp's lanes
  // before it, of the block's warps before its own, and of the blocks counted before it.
  __shared__ unsigned warp_count[3][kThreads / 32];
  __shared__ unsigned block_base[3];
  const unsigned lane = threadIdx.x & 31u;
  const int warp = int(threadIdx.x >> 5);
  unsigned upto[3] = {my_count[0], my_count[1], 0};  // inclusive over the warp's lanes
  for (int o = 1; o < 32; o <<= 1) {
    unsigned before[2];
    for (int l = 0; l < 2; ++l)
      before[l] = __shfl_up_sync(0xffffffffu, upto[l], o);
    if (lane >= unsigned(o))
      for (int l = 0; l < 2; ++l)
        upto[l] += before[l];
  }
  // The warp's threads take consecutive runs: the points up to this lane's are one difference.
  const int warp_begin = min(n, int(blockIdx.x * blockDim.x + (threadIdx.x & ~31u)) * per);
  upto[2] = unsigned(end - warp_begin) - upto[0] - upto[1];
  if (lane == 31)
    for (int l = 0; l < 3; ++l)
      warp_count[l][warp] = upto[l];
  __shared__ double block_sums[V];
  block_sum_into<V>(v, block_sums);
  if (order && threadIdx.x == 32) {  // a thread the sums leave idle
    unsigned total[3] = {0, 0, 0};
    for (int w = 0; w < kThreads / 32; ++w)
      for (int l = 0; l < 3; ++l)
        total[l] += warp_count[l][w];
    // Every block's atomics queue on the same line of ctl near the grid's end: two a block, as
    // with two lists (three lists with an atomic each measured 0.4-0.6 us longer, H200).
    const unsigned long long far_mid =
        total[0] || total[1]
            ? atomicAdd(&ctl->fill_far_mid, (unsigned long long)total[1] << 32 | total[0])
            : 0ull;
    block_base[0] = unsigned(far_mid);
    block_base[1] = unsigned(far_mid >> 32);
    block_base[2] = total[2] ? atomicAdd(&ctl->fill_near, total[2]) : 0u;
  }
  const bool last = finish_block<V>(block_sums, partials, &ctl->blocks_done);
  if (order && begin < end) {
    unsigned at_list[3];
    for (int l = 0; l < 3; ++l) {
      at_list[l] = block_base[l] + upto[l] - my_count[l];
      for (int w = 0; w < warp; ++w)
        at_list[l] += warp_count[l][w];
    }
    for (int i = begin; i < end; ++i) {
      const float d2 = at(i).m.w;  // only the distance is read again
      if (!(d2 <= far_d2))
        order[int(at_list[0]++)] = i;
      else if (!(d2 <= mid_d2))
        order[n + int(at_list[1]++)] = i;
      else
        order[n - 1 - int(at_list[2]++)] = i;
    }
  }
  if (!last) return;
  constexpr int kWords = int(sizeof(Control) / sizeof(unsigned long long));
  __shared__ unsigned long long control_words[kWords];
  auto* words = reinterpret_cast<unsigned long long*>(ctl);
  for (int w = threadIdx.x; w < kWords; w += kThreads)
    control_words[w] = __ldcg(words + w);
  // Finishing the copy before reading the partials measured 1-2 % faster end to end (H200).
  __syncthreads();
  __shared__ double total[V];
  grid_sum_into<V>(partials, total);
  __syncthreads();
  if (threadIdx.x == 0) {
    Control& k = *reinterpret_cast<Control*>(control_words);
    k.blocks_done = 0;
    k.apply_step = 0;
    k.far_count = unsigned(k.fill_far_mid);
    k.mid_count = unsigned(k.fill_far_mid >> 32);
    k.fill_far_mid = 0;
    k.fill_near = 0;
    double* sums = Plane ? k.plane_sums.values() : k.sums.values();
    for (int j = 0; j < V; ++j)
      sums[j] = total[j];
    if (solve_here) {
      if constexpr (Plane)
        solve_step_plane(k, k.plane_sums, criteria, history);
      else
        solve_step(k, k.sums, criteria, history);
    } else if (sums[0] < 3) {
      k.state = im::kNoCorrespondences;
    }
  }
  __syncthreads();
  for (int w = threadIdx.x; w < kWords; w += kThreads)
    words[w] = control_words[w];
  if (progress && threadIdx.x == 0) {  // for the host's look between chunks, over the bus
    const Control& k = *reinterpret_cast<const Control*>(control_words);
    *reinterpret_cast<volatile unsigned long long*>(progress) =
        (unsigned long long)unsigned(k.state) << 32 | unsigned(k.iterations);
  }
}

}  // namespace
}  // namespace cumulus::icp_cuda
