#pragma once
// The fast method's union-find and its joins of neighbour cells: a warp per cell settling each
// pair it can at once (k_join_cells), then the pairs it left open (k_settle_open_pairs). Included
// by cluster_fast.cu only.
#include <cuda_runtime.h>

#include "cluster/cuda/cell_grid.cuh"
#include "cluster/cuda/cluster_gpu_common.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/device_clock.cuh"

namespace cumulus::cluster_cuda {
namespace {

// Root lookup with path halving; parent[x] <= x, so roots are the smallest node of their tree.
__device__ __forceinline__ int representative(int i, int* parent) {
  int curr = parent[i];
  if (curr != i) {
    int next, prev = i;
    while (curr > (next = parent[curr])) {
      parent[prev] = next;
      prev = curr;
      curr = next;
    }
  }
  return curr;
}

// Hooks the larger root under the smaller; on a lost race, climbs from what won and retries.
__device__ void unite(int a, int b, int* parent) {
  int ra = representative(a, parent), rb = representative(b, parent);
  while (ra != rb) {
    if (ra < rb) {
      const int ret = atomicCAS(&parent[rb], rb, ra);
      if (ret == rb) return;
      rb = representative(ret, parent);
    } else {
      const int ret = atomicCAS(&parent[ra], ra, rb);
      if (ret == ra) return;
      ra = representative(ret, parent);
    }
  }
}

// Whether some point of cell range [begin, end) lies within the tolerance of some point of
// [obegin, oend). The whole warp searches together, so that a dense pair with no neighbours costs
// |A| |B| / 32 steps, not |A| |B|. All 32 lanes call it with the same ranges; the answer is the
// same in every lane.
template <class Real>
__device__ __forceinline__ bool cells_touch(const float3* sorted_pts, int begin, int end,
                                            int obegin, int oend, const Box& theirs, float thr,
                                            Real skip2) {
  const int lane = int(threadIdx.x & 31);
  for (int abase = begin; abase < end; abase += 32) {
    const int ai = abase + lane;
    const float3 p = ai < end ? sorted_pts[ai] : make_float3(NAN, NAN, NAN);
    const float pa[3] = {p.x, p.y, p.z};
    unsigned reach = __ballot_sync(0xffffffffu, ai < end && gap2<Real>(pa, pa, theirs) < skip2);
    while (reach) {
      const int r = __ffs(reach) - 1;
      reach &= reach - 1;
      const float3 q =
          make_float3(__shfl_sync(0xffffffffu, p.x, r), __shfl_sync(0xffffffffu, p.y, r),
                      __shfl_sync(0xffffffffu, p.z, r));
      for (int bbase = obegin; bbase < oend; bbase += 32) {
        const int bi = bbase + lane;
        if (__any_sync(0xffffffffu, bi < oend && dist2(q, sorted_pts[bi]) < thr)) return true;
      }
    }
  }
  return false;
}

// Steps (a point of A looked at, or a pair of points tested) one lane spends on a cell pair in
// k_join_cells before handing it on: on a KITTI frame about half the pairs that need a point
// search are settled within four, and nearly all the others join cells that other pairs have
// joined by then, which only k_settle_open_pairs can see. More steps cost the kernel more than
// they save the next (on an H200: labelling 76 us with 12, 70 with 4).
constexpr int kQuickSteps = 4;

enum class Touch { Yes, No, Undecided };

// One lane's bounded search of a cell pair: the first points of A within reach of B's box,
// each against B's points in order.
template <class Real>
__device__ __forceinline__ Touch quick_touch(const float3* sorted_pts, int begin, int end,
                                             int obegin, int oend, const Box& theirs, float thr,
                                             Real skip2) {
  int steps = 0;
  for (int a = begin; a < end; ++a) {
    if (++steps > kQuickSteps) return Touch::Undecided;
    const float3 p = sorted_pts[a];
    const float pa[3] = {p.x, p.y, p.z};
    if (gap2<Real>(pa, pa, theirs) >= skip2) continue;
    for (int b = obegin; b < oend; ++b) {
      if (++steps > kQuickSteps) return Touch::Undecided;
      if (dist2(p, sorted_pts[b]) < thr) return Touch::Yes;
    }
  }
  return Touch::No;
}

// A cell pair whose point search k_join_cells left open: both slots and both union-find nodes.
using OpenPair = int4;

// A warp's cell and the neighbour cells it found. On a KITTI frame a cell finds about ten of the
// 62 it looks up (empty cells answer most look-ups), so the found ones are tested side by side in
// the warp's first lanes: one pass with a third of the lanes busy instead of two passes with a
// sixth. The cell's own box and range wait here too rather than in every lane's registers through
// the look-ups (40 registers a thread instead of 56: six blocks an SM instead of four). KITTI
// frame 0 on an H200: k_join_cells 53.1 -> 47.6 us in ncu, 41 -> 61 % of the warps active.
constexpr int kAfter = 62;  // neighbour cells after a cell in (dz, dy, dx) order
struct WarpCell {
  int found[kAfter];
  Box box;
  int begin, end;
};

// One cell's joins, by a whole warp: each lane looks up two of the 62 neighbour cells that come
// after this one in (dz, dy, dx) order within the 5x5x5 block; the cells found are then tested a
// lane each and settled where one lane can: tight boxes a tolerance apart, or boxes so close that
// every pair is a neighbour pair (joined at once). A pair that needs a point search gets
// kQuickSteps of one lane; what that leaves open is listed for k_settle_open_pairs, which runs
// once every join of this kernel is in the union-find and so skips the pairs that others have
// joined meanwhile. Past the list's capacity the warp searches the pair itself. skip2 and accept2
// bracket the squared tolerance with slack, so the float test decides every pair that rounding
// could tip either way.
template <class Real>
__device__ __forceinline__ void join_cell(int cell, const unsigned long long* keys,
                                          const int* cell_list, int* fast_counters,
                                          const int* cell_start, const int* cell_count,
                                          unsigned mask, const CellBoxes& boxes,
                                          const float3* sorted_pts, float thr, Real skip2,
                                          Real accept2, int* parent, OpenPair* open,
                                          int open_capacity, WarpCell& w) {
  const int lane = int(threadIdx.x & 31);
  const int slot = cell_list[cell];
  const unsigned long long key = keys[slot];
  if (lane == 0) {
    w.begin = cell_start[slot];
    w.end = w.begin + cell_count[slot];
    w.box = load_box(boxes, slot);
  }
  const long long x = unpack(key, 0), y = unpack(key, 21), z = unpack(key, 42);
  const int near = neighbour_slot(keys, mask, x, y, z, 63 + lane);
  const int far = neighbour_slot(keys, mask, x, y, z, 95 + lane);
  const unsigned below = (1u << lane) - 1;
  const unsigned in_near = __ballot_sync(0xffffffffu, near >= 0),
                 in_far = __ballot_sync(0xffffffffu, far >= 0);
  const int n_near = __popc(in_near), found = n_near + __popc(in_far);
  if (near >= 0) w.found[__popc(in_near & below)] = near;
  if (far >= 0) w.found[n_near + __popc(in_far & below)] = far;
  __syncwarp();
  const int begin = w.begin, end = w.end;
  const int node = begin;  // node_of: a cell's node is its first sorted place
  for (int pass = 0; pass < found; pass += 32) {  // the same trips for every lane
    const int other = pass + lane < found ? w.found[pass + lane] : -1;
    bool hand_on = false;
    int onode = -1;
    if (other >= 0) {
      const Box mine = w.box;
      const Box theirs = load_box(boxes, other);
      const int obegin = cell_start[other], oend = obegin + cell_count[other];
      onode = obegin;
      if (gap2<Real>(mine.lo, mine.hi, theirs) < skip2) {
        const Touch t = span2<Real>(mine, theirs) < accept2
                            ? Touch::Yes
                            : quick_touch(sorted_pts, begin, end, obegin, oend, theirs, thr, skip2);
        if (t == Touch::Yes) unite(node, onode, parent);
        hand_on = t == Touch::Undecided;
      }
    }
    const unsigned votes = __ballot_sync(0xffffffffu, hand_on);
    if (!votes) continue;
    unsigned base = 0;
    if (lane == 0)
      base = atomicAdd(reinterpret_cast<unsigned*>(&fast_counters[kOpenPairs]),
                       unsigned(__popc(votes)));
    base = __shfl_sync(0xffffffffu, base, 0);
    const unsigned at = base + unsigned(__popc(votes & below));
    const bool listed = at < unsigned(open_capacity);
    if (hand_on && listed) open[at] = OpenPair{slot, other, node, onode};
    unsigned left = __ballot_sync(0xffffffffu, hand_on && !listed);
    while (left) {
      const int src = __ffs(left) - 1;
      left &= left - 1;
      const int o = __shfl_sync(0xffffffffu, other, src);
      const int on = __shfl_sync(0xffffffffu, onode, src);
      const int obegin = cell_start[o];
      if (cells_touch(sorted_pts, begin, end, obegin, obegin + cell_count[o], load_box(boxes, o),
                      thr, skip2) &&
          lane == 0)
        unite(node, on, parent);
    }
  }
  __syncwarp();  // the list is read before the warp's next cell writes it
}

// The warps that fill the device once take the cells in strides: with a warp for every point
// (cells <= points) five in six would only read the cell count and leave.
constexpr int kJoinThreads = 256;
template <class Real>
__global__ void __launch_bounds__(kJoinThreads)
    k_join_cells(const unsigned long long* keys, const int* cell_list, int* fast_counters,
                 const int* cell_start, const int* cell_count, unsigned mask, CellBoxes boxes,
                 const float3* sorted_pts, float thr, Real skip2, Real accept2, int* parent,
                 OpenPair* open, int open_capacity, unsigned long long* stamp) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  cuda::stamp_start(stamp);
  __shared__ WarpCell warp_cells[kJoinThreads / 32];
  const int cells = fast_counters[kCells];
  const int warps = int(gridDim.x * blockDim.x >> 5);
  for (int cell = int((blockIdx.x * blockDim.x + threadIdx.x) >> 5); cell < cells; cell += warps)
    join_cell(cell, keys, cell_list, fast_counters, cell_start, cell_count, mask, boxes, sorted_pts,
              thr, skip2, accept2, parent, open, open_capacity, warp_cells[threadIdx.x >> 5]);
}

// The cell pairs k_join_cells left open, a thread each: a pair whose cells are joined by now
// needs nothing; the warp searches the others together, one at a time.
template <class Real>
__global__ void k_settle_open_pairs(const OpenPair* open, int open_capacity,
                                    const int* fast_counters, const int* cell_start,
                                    const int* cell_count, CellBoxes boxes,
                                    const float3* sorted_pts, float thr, Real skip2, int* parent) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int total = int(min(unsigned(fast_counters[kOpenPairs]), unsigned(open_capacity)));
  const int lane = int(threadIdx.x & 31);
  const int warps = int(gridDim.x * blockDim.x >> 5);
  for (int base = int((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 32; base < total;
       base += warps * 32) {  // the same trips for every lane of a warp
    const int e = base + lane;
    OpenPair p{-1, -1, -1, -1};
    bool search = false;
    if (e < total) {
      p = open[e];
      search = representative(p.z, parent) != representative(p.w, parent);
    }
    unsigned left = __ballot_sync(0xffffffffu, search);
    while (left) {
      const int src = __ffs(left) - 1;
      left &= left - 1;
      const int a = __shfl_sync(0xffffffffu, p.x, src), b = __shfl_sync(0xffffffffu, p.y, src);
      const int na = __shfl_sync(0xffffffffu, p.z, src), nb = __shfl_sync(0xffffffffu, p.w, src);
      const int abegin = cell_start[a], bbegin = cell_start[b];
      if (cells_touch(sorted_pts, abegin, abegin + cell_count[a], bbegin, bbegin + cell_count[b],
                      load_box(boxes, b), thr, skip2) &&
          lane == 0)
        unite(na, nb, parent);
    }
  }
}

}  // namespace
}  // namespace cumulus::cluster_cuda
