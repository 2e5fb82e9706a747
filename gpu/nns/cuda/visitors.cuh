#pragma once
// What a search does with each candidate target. Every traversal (brute force, kd-tree, grid)
// calls visit(d2, index) for the targets it cannot rule out and asks limit() for the squared
// distance beyond which nothing is wanted any more; it skips only what is provably farther.
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

namespace cumulus::nns {

// The k nearest so far, sorted by (distance, index) so ties resolve to the lowest index and
// every traversal order gives the same list. MaxK is a compile-time bound (k <= MaxK).
template <int MaxK>
struct KnnVisitor {
  float d[MaxK];
  int i[MaxK];
  int k = 1, size = 0;
  float max_d2;  // only targets with d2 <= max_d2 count

  __device__ KnnVisitor(int k_, float max_d2_) : k(k_), max_d2(max_d2_) {}

  __device__ float limit() const { return size < k ? max_d2 : d[k - 1]; }

  __device__ void visit(float d2, int idx) {
    if (size < k) {
      if (!(d2 <= max_d2)) return;  // also drops NaN
    } else if (!(d2 < d[k - 1] || (d2 == d[k - 1] && idx < i[k - 1]))) {
      return;
    }
    int at = size < k ? size++ : k - 1;
    // Insertion from the back: lists are short and mostly arrive in near-sorted order.
    while (at > 0 && (d[at - 1] > d2 || (d[at - 1] == d2 && i[at - 1] > idx))) {
      d[at] = d[at - 1];
      i[at] = i[at - 1];
      --at;
    }
    d[at] = d2;
    i[at] = idx;
  }
};

// The single nearest target within max_d2 (ties to the lowest index), as KnnVisitor<1>, found
// by a group of Lanes consecutive lanes (a power of two) that split each cell's targets; merge()
// gives every lane of the group the group's best. Every lane of the group must call it.
template <int Lanes>
struct GroupNearestVisitor {
  float d;
  int i = INT_MAX;  // none yet; d then holds max_d2, so the first candidate must be within it
  unsigned mask;

  __device__ explicit GroupNearestVisitor(float max_d2)
      : d(max_d2),
        mask(Lanes == 32 ? 0xffffffffu
                         : ((1u << Lanes) - 1u) << ((threadIdx.x & 31u) & ~(Lanes - 1u))) {}

  __device__ float limit() const { return d; }
  __device__ bool found() const { return i != INT_MAX; }

  __device__ void visit(float d2, int idx) {
    if (d2 < d || (d2 == d && idx < i)) {  // false for NaN
      d = d2;
      i = idx;
    }
  }

  __device__ void merge() {
    for (int o = Lanes / 2; o > 0; o >>= 1) {
      const float od = __shfl_xor_sync(mask, d, o, Lanes);
      const int oi = __shfl_xor_sync(mask, i, o, Lanes);
      if (od < d || (od == d && oi < i)) {
        d = od;
        i = oi;
      }
    }
  }
};

// Counts the targets strictly inside the radius (FLANN's radius rule).
struct RadiusCountVisitor {
  float r2;
  std::uint32_t count = 0;
  __device__ explicit RadiusCountVisitor(float r2_) : r2(r2_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit(float d2, int) { count += d2 < r2 ? 1u : 0u; }
};

// Writes the targets strictly inside the radius to this query's slice, as 64-bit keys
// (distance bits above index: non-negative floats order like their bit patterns), so a
// segmented sort of the keys gives PCL's order with ties by index.
struct RadiusFillVisitor {
  float r2;
  unsigned long long* out;
  std::uint32_t count = 0;
  __device__ RadiusFillVisitor(float r2_, unsigned long long* out_) : r2(r2_), out(out_) {}
  __device__ float limit() const { return r2; }
  __device__ void visit(float d2, int idx) {
    if (d2 < r2)
      out[count++] = (static_cast<unsigned long long>(__float_as_uint(d2)) << 32) | unsigned(idx);
  }
};

}  // namespace cumulus::nns
