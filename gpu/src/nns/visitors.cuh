#pragma once
// What a search does with each candidate target. Every traversal (brute force, kd-tree, grid)
// calls visit(d2, index) for the targets it cannot rule out and asks limit() for the squared
// distance beyond which nothing is wanted any more; it skips only what is provably farther.
#include <cuda_runtime.h>

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
