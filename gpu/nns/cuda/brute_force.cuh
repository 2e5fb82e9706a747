#pragma once
// Exhaustive search: each thread owns a query; the block stages the targets in shared memory
// tile by tile, so each target is read from global memory once per block.
#include <cuda_runtime.h>

#include "core/cuda/distance.cuh"

namespace cumulus::nns {

constexpr int kBruteTile = 256;

// Every thread of the block must call this (it synchronises); `active` is false for threads
// without a query. Non-finite targets produce NaN distances, which no visitor accepts.
template <class Visitor>
__device__ void brute_force_visit(float3 q, bool active, const float3* targets, int n, Visitor& v) {
  __shared__ float3 tile[kBruteTile];
  for (int base = 0; base < n; base += kBruteTile) {
    for (int t = int(threadIdx.x); t < kBruteTile && base + t < n; t += int(blockDim.x))
      tile[t] = targets[base + t];
    __syncthreads();
    const int m = min(kBruteTile, n - base);
    if (active)
      for (int t = 0; t < m; ++t)
        v.visit(cuda::dist2(q, tile[t]), base + t);
    __syncthreads();
  }
}

}  // namespace cumulus::nns
