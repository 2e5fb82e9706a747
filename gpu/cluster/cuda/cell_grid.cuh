#pragma once
// The fast method's hashed voxel grid: cell keys and their look-up, each cell's tight box of
// points and the distance bounds between boxes, and the method's device counters. Included by
// cluster_fast.cu and cell_joins.cuh only.
#include <cuda_runtime.h>

#include "cluster/cuda/cluster_gpu_common.cuh"

namespace cumulus::cluster_cuda {
namespace {

constexpr unsigned long long kEmptyKey = ~0ull;
constexpr long long kCoordLimit = 1 << 20;  // |cell coordinate| < 2^20 packs exactly into 21 bits

__device__ __forceinline__ unsigned long long pack(long long x, long long y, long long z) {
  return (unsigned long long)(x & 0x1FFFFF) | ((unsigned long long)(y & 0x1FFFFF) << 21) |
         ((unsigned long long)(z & 0x1FFFFF) << 42);
}

__device__ __forceinline__ long long unpack(unsigned long long key, int shift) {
  const long long v = (long long)((key >> shift) & 0x1FFFFF);
  return v >= kCoordLimit ? v - 2 * kCoordLimit : v;  // sign-extend 21 bits
}

// Exact cell of a point in double; false for far points.
__device__ __forceinline__ bool cell_of(float3 p, double inv_cell, long long& x, long long& y,
                                        long long& z) {
  const double fx = floor(double(p.x) * inv_cell), fy = floor(double(p.y) * inv_cell),
               fz = floor(double(p.z) * inv_cell);
  const double lim = double(kCoordLimit);
  if (!(fabs(fx) < lim && fabs(fy) < lim && fabs(fz) < lim)) return false;
  x = (long long)fx, y = (long long)fy, z = (long long)fz;
  return true;
}

__device__ __forceinline__ unsigned hash_key(unsigned long long k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return unsigned(k);
}

__device__ __forceinline__ int find_slot(const unsigned long long* keys, unsigned mask,
                                         unsigned long long key) {
  unsigned slot = hash_key(key) & mask;
  while (true) {
    const unsigned long long k = keys[slot];
    if (k == key) return int(slot);
    if (k == kEmptyKey) return -1;
    slot = (slot + 1) & mask;
  }
}

// A point's slot (point_slot): its cell's slot in the table, -1 for a point left out (not
// finite), or far_slot(f) for the f-th far point.
__device__ __forceinline__ int far_slot(int f) {
  return -2 - f;
}

// A point's node in the union-find, from its slot: a cell's node is its first place among the
// points sorted by cell, so a cell pair's nodes come with their ranges and need no load of their
// own; the f-th far point's is n - 1 - f, above every sorted place (far points are not sorted).
__device__ __forceinline__ int node_of(int slot, const int* cell_start, int n) {
  return slot >= 0 ? cell_start[slot] : n + 1 + slot;
}

// The method's counters on the device: far points, cells, points placed by cell, open pairs.
enum FastCounter { kFar = 0, kCells, kPlaced, kOpenPairs, kFastCounters };

// Floats as ints that order the same way, for atomicMin/atomicMax on coordinates.
__device__ __forceinline__ int ordered(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float unordered(int i) {
  return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff);
}

// Tight bounds of the points of each cell, as ordered ints: min x y z, max x y z.
struct CellBoxes {
  int* v[6];
};

struct Box {
  float lo[3], hi[3];
};

__device__ __forceinline__ Box load_box(const CellBoxes& boxes, int slot) {
  Box b;
  for (int k = 0; k < 3; ++k) {
    b.lo[k] = unordered(boxes.v[k][slot]);
    b.hi[k] = unordered(boxes.v[k + 3][slot]);
  }
  return b;
}

// Box arithmetic's type: double, or float where the tolerance keeps every square in float's
// normal range (run_fast's float_boxes). Either way a box bound is within 1e-6 relative of its
// exact value, far inside the 1e-5 slack of skip2 and accept2. In float the bounds take half the
// registers and no conversions: the joins' kernel had spilled with them in double.
template <class Real>
__device__ __forceinline__ Real larger(Real a, Real b) {
  return a > b ? a : b;
}
template <class Real>
__device__ __forceinline__ Real smaller(Real a, Real b) {
  return a < b ? a : b;
}

// Squared gap between a point (or box) and a box: a lower bound on every distance.
template <class Real>
__device__ __forceinline__ Real gap2(const float lo_a[3], const float hi_a[3], const Box& b) {
  Real d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const Real g =
        larger(larger(Real(b.lo[k]) - Real(hi_a[k]), Real(lo_a[k]) - Real(b.hi[k])), Real(0));
    d2 += g * g;
  }
  return d2;
}

// Squared diagonal of the box around two boxes: an upper bound on every distance between them.
template <class Real>
__device__ __forceinline__ Real span2(const Box& a, const Box& b) {
  Real d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const Real g = larger(Real(a.hi[k]), Real(b.hi[k])) - smaller(Real(a.lo[k]), Real(b.lo[k]));
    d2 += g * g;
  }
  return d2;
}

// Slot of the d-th cell of the 5x5x5 block around cell (x, y, z) in (dz, dy, dx) order, or -1
// when it is empty, outside the block (d >= 125) or beyond the cell coordinates' range.
__device__ __forceinline__ int neighbour_slot(const unsigned long long* keys, unsigned mask,
                                              long long x, long long y, long long z, int d) {
  if (d >= 125) return -1;
  const long long nx = x + d % 5 - 2, ny = y + (d / 5) % 5 - 2, nz = z + d / 25 - 2;
  if (nx > -kCoordLimit && nx < kCoordLimit && ny > -kCoordLimit && ny < kCoordLimit &&
      nz > -kCoordLimit && nz < kCoordLimit)
    return find_slot(keys, mask, pack(nx, ny, nz));
  return -1;
}

}  // namespace
}  // namespace cumulus::cluster_cuda
