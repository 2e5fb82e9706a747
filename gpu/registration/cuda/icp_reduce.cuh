#pragma once
// The ICP sums kernel's reductions: a warp's, a block's and the grid's sums of the V values of
// an iteration (17 point to point, 29 point to plane), in a fixed order so that every run adds
// alike. Included by icp_gpu.cu only.
#include <cuda_runtime.h>

#include "registration/icp_math.h"

namespace cumulus::icp_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kValues = icp_math::Sums::kValues;
constexpr int kPlaneValues = icp_math::PlaneSums::kValues;
constexpr int kMaxValues = kPlaneValues;

// Lane l of the warp gets the warp's sum of v[l] (l < kValues; the other lanes get 0), in a
// fixed order. Each round of shuffles halves the values a lane still carries, 31 double
// shuffles for the 17 values where summing each value over the warp took 85; they were most
// of the sums kernel's instructions.
template <int Half>
__device__ __forceinline__ void transposed_round(double* w, unsigned lane) {
  const bool upper = lane & unsigned(Half);
#pragma unroll
  for (int j = 0; j < Half; ++j) {
    const double send = upper ? w[j] : w[j + Half];
    const double keep = upper ? w[j + Half] : w[j];
    w[j] = keep + __shfl_xor_sync(0xffffffffu, send, Half);
  }
}

template <int V>
__device__ __forceinline__ double warp_sum_transposed(const double (&v)[V]) {
  static_assert(V <= 32, "a lane a value");
  const unsigned lane = threadIdx.x & 31u;
  double w[32];
#pragma unroll
  for (int j = 0; j < 32; ++j)
    w[j] = j < V ? v[j] : 0.0;
  transposed_round<16>(w, lane);
  transposed_round<8>(w, lane);
  transposed_round<4>(w, lane);
  transposed_round<2>(w, lane);
  transposed_round<1>(w, lane);
  return w[0];
}

// The block's sums of v (kValues each), in a fixed order, into `out` (shared), valid to every
// thread after the block's next barrier. Every thread must call it; it contains one barrier.
template <int V>
__device__ __forceinline__ void block_sum_into(const double (&v)[V], double* out) {
  __shared__ double warp_sums[kThreads / 32][V];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const double x = warp_sum_transposed<V>(v);
  if (lane < V) warp_sums[warp][lane] = x;
  __syncthreads();
  if (threadIdx.x < V) {
    double t = 0;
    for (int w = 0; w < kThreads / 32; ++w)
      t += warp_sums[w][threadIdx.x];
    out[threadIdx.x] = t;
  }
}

// Adds the grid's partial sums (value j of block b at partials[j * gridDim.x + b]) into `out`
// (shared) in a fixed order, in the last block; as block_sum_into. Stored value by value, a
// warp's loads of one value are consecutive (stored block by block, each load instruction
// touched 32 cache lines).
template <int V>
__device__ __forceinline__ void grid_sum_into(const double* partials, double* out) {
  double v[V];
#pragma unroll
  for (int j = 0; j < V; ++j)
    v[j] = 0;
  for (int b = threadIdx.x; b < int(gridDim.x); b += kThreads)
#pragma unroll
    for (int j = 0; j < V; ++j)
      v[j] += __ldcg(partials + std::size_t(j) * gridDim.x + b);
  block_sum_into<V>(v, out);
}

// Writes this block's sums (from block_sum_into, after its barrier) as its partial and tells
// whether this block is the last of the grid to finish, and so sees every partial. Every
// thread must call it; the counter is reset by the caller's last block.
template <int V>
__device__ __forceinline__ bool finish_block(const double* block_sums, double* partials,
                                             unsigned* blocks_done) {
  __shared__ bool last;
  if (threadIdx.x < V)
    partials[std::size_t(threadIdx.x) * gridDim.x + blockIdx.x] = block_sums[threadIdx.x];
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
  __syncthreads();
  return last;
}

}  // namespace
}  // namespace cumulus::icp_cuda
