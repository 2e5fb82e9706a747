#pragma once
// How the ICP search kernels find a correspondence: which point a thread searches for (a warp for
// the points whose last correspondence was far, a group of lanes for the rest) and the seeded
// nearest search itself. Included by icp_gpu.cu only.
#include <cuda_runtime.h>

#include "core/cuda/distance.cuh"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/visitors.cuh"
#include "registration/cuda/icp_loop_state.cuh"

namespace cumulus::icp_cuda {
namespace {

constexpr int kSearchThreads = 128;

// The nearest target within `limit`, starting from target `seed` (or none: -1) as the best so
// far (nns::nearest_one for one lane). With Lanes > 1 (grid only) the group of lanes `rank` belongs
// to searches together and every lane gets the answer.
template <int Lanes, class Search>
__device__ void nearest_seeded(const Search& search, const float3* targets, float3 p, bool active,
                               float limit, int seed, int rank, float& d, int& i) {
  if constexpr (Lanes == 1) {
    nns::nearest_one(search, p, active, limit, d, i, targets, seed);
  } else {
    nns::GroupNearestVisitor<Lanes> v(limit);
    if (active && seed >= 0) v.visit(cuda::dist2(p, targets[seed]), seed);
    search.template group<Lanes>(p, active, v, rank);
    d = v.found() ? v.d : INFINITY;
    i = v.found() ? v.i : -1;
  }
}

struct SearchSlot {
  int i;     // the source point (n: none)
  int rank;  // this thread's lane in its group
  bool wide;
};

// Which point this thread searches for, and with how many lanes (see k_icp_correspond).
template <int Lanes>
__device__ __forceinline__ SearchSlot search_slot(int n, const int* order, const Control* ctl,
                                                  int wide_blocks) {
  const bool wide = int(blockIdx.x) < wide_blocks;
  const unsigned far = order ? ctl->far_count : 0u;
  const unsigned mid = order ? ctl->mid_count : 0u;
  const unsigned wide_slots = unsigned(wide_blocks) * (kSearchThreads / 32);
  int slot, rank;
  if (wide) {
    slot = int((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    rank = int(threadIdx.x & 31);
    if (unsigned(slot) >= far) slot = n;
  } else {
    const int t = (int(blockIdx.x) - wide_blocks) * blockDim.x + threadIdx.x;
    slot = t / Lanes + int(min(far, wide_slots));
    rank = t % Lanes;
  }
  // The middling points' list lies in the order's second half (k_icp_solve); without an order
  // there are none.
  const unsigned past_far = unsigned(slot) - far;
  const int i = slot >= n        ? n
                : past_far < mid ? order[n + int(past_far)]
                                 : nns::point_in_order(order, slot);
  return {i, rank, wide};
}

// nearest_seeded for the point of `at`, with a warp or with Lanes lanes as search_slot decided.
template <int Lanes, class Search>
__device__ __forceinline__ void nearest_at(const SearchSlot& at, const Search& search,
                                           const float3* targets, float3 p, int n, float limit,
                                           int seed, float& d, int& i) {
  d = INFINITY;
  i = -1;
  if (at.wide) {
    if constexpr (Lanes > 1)
      nearest_seeded<32>(search, targets, p, at.i < n, limit, seed, at.rank, d, i);
  } else {
    nearest_seeded<Lanes>(search, targets, p, at.i < n, limit, seed, at.rank, d, i);
  }
}

}  // namespace
}  // namespace cumulus::icp_cuda
