#pragma once
// GICP's fitness, PCL's getFitnessScore: every source point moved by the result, its squared
// distance to the nearest target. Included by gicp_gpu.cu only.
#include <cuda_runtime.h>

#include <type_traits>

#include "nns/cuda/device_index.cuh"
#include "registration/cuda/icp_reduce.cuh"
#include "registration/cuda/icp_search.cuh"
#include "registration/gicp_math.h"
#include "registration/icp_math.h"

namespace cumulus::gicp_cuda {
namespace {

// Lanes a point for the fitness's search: unbounded, as PCL's, so on the grid a group of 16
// (as the k-NN's k = 1; a thread a point took 1.28 ms of KITTI's 8.4 on an H200, its lone
// searches walking shells of empty cells one after another); one on the kd-tree and brute force.
template <class Search>
constexpr int kFitnessLanes = std::is_same_v<Search, nns::GridSearch> ? 16 : 1;

// Each source point moved by t * guess (row-major, in double) and its squared distance to the
// nearest target; one partial sum and count per block (of icp_cuda::kThreads threads).
template <int Lanes, class Search>
__global__ void k_fitness(Search search, const float3* source, int n, const float3* targets,
                          const double* t, const double* guess, double* partials) {
  const icp_cuda::SearchSlot at =
      icp_cuda::search_slot<Lanes>(n, nullptr, static_cast<const icp_cuda::Control*>(nullptr), 0);
  const bool active = at.i < n;
  double f[16];
  icp_math::multiply(t, guess, f);
  float q[3] = {0, 0, 0};
  if (active) gicp_math::apply_double(f, &source[at.i].x, q);
  float d;
  int k;
  icp_cuda::nearest_at<Lanes>(at, search, targets, make_float3(q[0], q[1], q[2]), n, INFINITY, -1,
                              d, k);
  const bool counted = active && at.rank == 0 && k >= 0;
  double v[2] = {counted ? double(d) : 0.0, counted ? 1.0 : 0.0};
  __shared__ double sums[2];
  icp_cuda::block_sum_into<2>(v, sums);
  __syncthreads();
  if (threadIdx.x < 2) partials[2 * blockIdx.x + threadIdx.x] = sums[threadIdx.x];
}

// The fitness's blocks for n points on the index's search.
inline int fitness_blocks(const nns::DeviceIndex& index, std::size_t n) {
  int blocks = 1;
  index.with_search([&](auto srch) {
    blocks = cuda::blocks_for(n * kFitnessLanes<decltype(srch)>, icp_cuda::kThreads);
  });
  return blocks;
}

}  // namespace
}  // namespace cumulus::gicp_cuda
