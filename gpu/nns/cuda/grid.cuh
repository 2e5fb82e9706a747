#pragma once
// Our exact search structure: a dense uniform grid over the targets' bounds, targets sorted by
// cell (counting sort), each cell a range of that array. A query visits the cells around it in
// growing shells and stops as soon as everything outside the visited block is provably
// farther than what it still wants, so the result is exact for any distance.
#include <cuda_runtime.h>

#include <concepts>
#include <cstdint>

#include "core/cuda/buffer.cuh"
#include "core/cuda/distance.cuh"
#include "core/point_cloud.h"
#include "nns/cuda/visitors.cuh"
#include "nns/grid_plan.h"

namespace cumulus::nns {

struct GridView {
  float3 lo;   // corner of cell (0, 0, 0)
  float cell;  // edge length
  float inv_cell;
  float slack;  // absolute margin covering float rounding of cell assignment
  int3 dims;
  const int* start;      // dims.x * dims.y * dims.z + 1 offsets into `points`
  const float4* points;  // x, y, z and the target index (as int bits) in cell order
};

__device__ __forceinline__ int grid_coord(float v, float lo, float inv_cell, int dim) {
  const float c = floorf((v - lo) * inv_cell);
  return c < 0.f ? 0 : c >= float(dim) ? dim - 1 : int(c);
}

// A query's cell coordinate, unclamped (queries may lie outside the grid), limited to a range
// that cannot overflow.
__device__ __forceinline__ int query_coord(float v, float lo, float inv_cell, int dim) {
  const float c = floorf((v - lo) * inv_cell);
  return c < -1.f ? -1 : c > float(dim) ? dim : int(c);
}

template <class Visitor>
__device__ __forceinline__ void visit_cell(float3 q, const GridView& g, int x, int y, int z,
                                           Visitor& v) {
  const int c = (z * g.dims.y + y) * g.dims.x + x;
  const int end = __ldg(g.start + c + 1);
  for (int j = __ldg(g.start + c); j < end; ++j) {
    const float4 p = __ldg(g.points + j);
    v.visit(cuda::dist2(q, make_float3(p.x, p.y, p.z)), __float_as_int(p.w));
  }
}

// Lower bound of the distance from q to any point outside cells [a, b] along one axis; +inf
// on a side where the grid has no more cells.
__device__ __forceinline__ float side_gap(float qv, float lo, float cell, int a, int b, int dim) {
  float gap = INFINITY;
  if (a > 0) gap = fminf(gap, qv - (lo + float(a) * cell));
  if (b < dim - 1) gap = fminf(gap, (lo + float(b + 1) * cell) - qv);
  return gap;
}

// Lower bound of the distance from q to any point of cell a along one axis. Edge cells are
// open to the outside, since cell assignment clamps points beyond the grid into them.
__device__ __forceinline__ float cell_gap(float qv, float lo, float cell, float slack, int a,
                                          int dim) {
  float gap = 0.f;
  if (a > 0) gap = fmaxf(gap, (lo + float(a) * cell) - qv - slack);
  if (a < dim - 1) gap = fmaxf(gap, qv - (lo + float(a + 1) * cell) - slack);
  return gap;
}

// Whether a cell (or row of cells) whose squared gap is g2 can hold nothing the visitor wants.
// The relative margin covers the rounding of g2 and of the point distances it bounds.
__device__ __forceinline__ bool beyond(float g2, float limit) {
  return g2 > limit * 1.000001f;
}

// The block [c - r, c + r] of cells around the query's cell c, clipped to the grid (empty, some
// low end above its high end, where it lies wholly outside).
struct CellBlock {
  int x0, x1, y0, y1, z0, z1;
};
__device__ __forceinline__ CellBlock shell_block(const GridView& g, int cx, int cy, int cz, int r) {
  return {max(cx - r, 0), min(cx + r, g.dims.x - 1), max(cy - r, 0), min(cy + r, g.dims.y - 1),
          max(cz - r, 0), min(cz + r, g.dims.z - 1)};
}
// The shell after which the block covers the whole grid.
__device__ __forceinline__ int last_shell(const GridView& g) {
  return max(g.dims.x, max(g.dims.y, g.dims.z)) + 1;
}

// Everything not yet visited lies outside the block [c - r, c + r] of cells: whether the
// visitor can stop after shell r.
template <class Visitor>
__device__ __forceinline__ bool shells_done(float3 q, const GridView& g, int cx, int cy, int cz,
                                            int r, const Visitor& v) {
  float gap = side_gap(q.x, g.lo.x, g.cell, cx - r, cx + r, g.dims.x);
  gap = fminf(gap, side_gap(q.y, g.lo.y, g.cell, cy - r, cy + r, g.dims.y));
  gap = fminf(gap, side_gap(q.z, g.lo.z, g.cell, cz - r, cz + r, g.dims.z));
  if (gap == INFINITY) return true;  // the block covers the whole grid
  gap -= g.slack;
  return gap > 0.f && gap * gap > v.limit();
}

template <class Visitor>
__device__ void grid_visit(float3 q, const GridView& g, Visitor& v) {
  const int cx = query_coord(q.x, g.lo.x, g.inv_cell, g.dims.x);
  const int cy = query_coord(q.y, g.lo.y, g.inv_cell, g.dims.y);
  const int cz = query_coord(q.z, g.lo.z, g.inv_cell, g.dims.z);
  for (int r = 0, last = last_shell(g); r <= last; ++r) {
    // Shell r: the cells at Chebyshev distance exactly r from the query's cell, clipped. Rows
    // and cells whose box lies beyond the visitor's limit are skipped without touching memory
    // (a seeded or nearly finished search then reads only the cells its ball touches).
    const auto [x0, x1, y0, y1, z0, z1] = shell_block(g, cx, cy, cz, r);
    if (x0 <= x1 && y0 <= y1 && z0 <= z1) {
      for (int z = z0; z <= z1; ++z) {
        const bool zface = z == cz - r || z == cz + r;
        const float gz = cell_gap(q.z, g.lo.z, g.cell, g.slack, z, g.dims.z), gz2 = gz * gz;
        if (beyond(gz2, v.limit())) continue;
        for (int y = y0; y <= y1; ++y) {
          const bool yface = zface || y == cy - r || y == cy + r;
          const float gy = cell_gap(q.y, g.lo.y, g.cell, g.slack, y, g.dims.y);
          const float gyz2 = gz2 + gy * gy;
          if (beyond(gyz2, v.limit())) continue;
          const auto visit_x = [&](int x) {
            const float gx = cell_gap(q.x, g.lo.x, g.cell, g.slack, x, g.dims.x);
            if (!beyond(gyz2 + gx * gx, v.limit())) visit_cell(q, g, x, y, z, v);
          };
          if (yface) {
            for (int x = x0; x <= x1; ++x)
              visit_x(x);
          } else {
            if (cx - r >= 0 && cx - r < g.dims.x) visit_x(cx - r);
            if (r > 0 && cx + r >= 0 && cx + r < g.dims.x) visit_x(cx + r);
          }
        }
      }
    }
    if (shells_done(q, g, cx, cy, cz, r, v)) return;
  }
}

// The cells [a, b] within [lo_cell, hi_cell] along one axis that are not beyond `limit` once
// their gap to q is added to `base2` (the squared gap along the other axes): an interval around
// the query's cell, estimated from the reach and moved to its exact ends by the shells' own test.
// Empty (a > b) when no cell is within reach.
__device__ __forceinline__ int2 axis_cells(float qv, float lo, float cell, float inv_cell,
                                           float slack, int dim, float base2, float limit,
                                           int lo_cell, int hi_cell) {
  const auto admits = [&](int x) {
    const float g = cell_gap(qv, lo, cell, slack, x, dim);
    return !beyond(base2 + g * g, limit);
  };
  const float reach = sqrtf(fmaxf(limit - base2, 0.f));
  const float fa = floorf((qv - reach - lo) * inv_cell), fb = floorf((qv + reach - lo) * inv_cell);
  int a = fa <= float(lo_cell) ? lo_cell : fa >= float(hi_cell) ? hi_cell : int(fa);
  int b = fb >= float(hi_cell) ? hi_cell : fb <= float(lo_cell) ? lo_cell : int(fb);
  while (a > lo_cell && admits(a - 1))
    --a;
  while (a <= b && !admits(a))
    ++a;
  while (b < hi_cell && admits(b + 1))
    ++b;
  while (b >= a && !admits(b))
    --b;
  return make_int2(a, b);
}

// A cover of the cells axis_cells admits along one axis for a ball of squared radius `limit`
// (base2 = 0, the whole axis): the cells from the two ends of the ball widened by every margin
// the exact test allows (the slack, beyond()'s relative 1e-6, and this float arithmetic's own
// rounding), so it holds every admitted cell, and another only where the ball's edge lies within
// those margins of a face (one more at either end, where the slack is below a cell). A few
// instructions where axis_cells walks each end to its exact cell (most of the box search's
// set-up in ICP: ncu, the 40k bunny's 46th iteration, H200); a search reading one more cell or
// row than it needs finds the same points. Never empty: edge cells are open to the outside.
__device__ __forceinline__ int2 axis_cover(float qv, float lo, float inv_cell, float slack, int dim,
                                           float limit) {
  const float reach = sqrtf(limit) * 1.00001f + slack;
  const float ta = (qv - reach - lo) * inv_cell, tb = (qv + reach - lo) * inv_cell;
  const float fa = floorf(ta - (1e-3f + 1e-6f * fabsf(ta)));
  const float fb = floorf(tb + (1e-3f + 1e-6f * fabsf(tb)));
  const int a = fa <= 0.f ? 0 : fa >= float(dim - 1) ? dim - 1 : int(fa);
  const int b = fb >= float(dim - 1) ? dim - 1 : fb <= 0.f ? 0 : int(fb);
  return make_int2(a, b);
}

// Whether the visitor takes a candidate from every lane of the warp at once (WarpKnnVisitor).
template <class Visitor>
constexpr bool kWholeWarp = requires(Visitor& v) {
  v.visit_all(0.f, 0, true);
};

// Whether a whole-warp visitor can say it needs no more candidates (done(), warp-uniform).
template <class Visitor>
constexpr bool kStopsEarly = requires(const Visitor& v) {
  { v.done() } -> std::convertible_to<bool>;
};

// Whether a whole-warp visitor takes its candidates in any order and rounds (a count), so that
// long ranges can be read one after another (warp_visit_packed).
template <class Visitor>
constexpr bool kAnyRounds = requires {
  requires Visitor::kAnyRounds;
};

// For a whole-warp visitor: every lane's two ranges [a0, b0) and [a1, b1) of g.points laid end
// to end, and the warp visits 32 points of the whole at a time, so a round of rows holding a few
// points each costs one visit rather than one per row. A lane finds the range its point lies in
// by a binary search over the lanes' running totals.
template <class Visitor>
__device__ __forceinline__ void warp_visit_packed(float3 q, const GridView& g, Visitor& v, int rank,
                                                  int a0, int b0, int a1, int b1) {
  const unsigned all = 0xffffffffu;
  const int len0 = max(b0 - a0, 0), len = len0 + max(b1 - a1, 0);
  int end = len;  // where this lane's points end in the whole
  for (int o = 1; o < 32; o <<= 1) {
    const int before = __shfl_up_sync(all, end, o);
    if (rank >= o) end += before;
  }
  const int total = __shfl_sync(all, end, 31);
  // One round: this lane's point g.points[at] where `in`; whether the visitor has all it wants
  // (the same answer in every lane), so that the rest is left unread.
  const auto visit_round = [&](bool in, int at) {
    float d2 = INFINITY;
    int idx = -1;
    if (in) {
      const float4 p = __ldg(g.points + at);
      d2 = cuda::dist2(q, make_float3(p.x, p.y, p.z));
      idx = __float_as_int(p.w);
    }
    v.visit_all(d2, idx, in);
    if constexpr (kStopsEarly<Visitor>) return v.done();
    return false;
  };
  if constexpr (kAnyRounds<Visitor>) {
    // Ranges of 32 points or more on average (a radius search's rows on cells about the radius
    // wide): each lane's ranges read in turn, 32 points a round, where finding every point's lane
    // in the whole, and shuffling its range, was 40 % of the instructions of KITTI's radius count
    // at 0.5 m (ncu's source counters, H200; the count 268 -> 185 us this way, the LiDAR frame's
    // 375 -> 241).
    const unsigned filled = __ballot_sync(all, len > 0);
    if (total >= 32 * __popc(filled)) {
      for (unsigned bits = filled; bits; bits &= bits - 1) {
        const int from = __ffs(int(bits)) - 1;
        const int n = __shfl_sync(all, len, from), first = __shfl_sync(all, len0, from);
        const int o_a0 = __shfl_sync(all, a0, from), o_a1 = __shfl_sync(all, a1, from) - first;
        for (int at = rank; at - rank < n; at += 32)
          if (visit_round(at < n, at < first ? o_a0 + at : o_a1 + at)) return;
      }
      return;
    }
  }
  for (int base = 0; base < total; base += 32) {
    const int t = base + rank;
    int owner = 0;  // lanes whose points end at or before t
    for (int step = 16; step > 0; step >>= 1)
      if (__shfl_sync(all, end, owner + step - 1) <= t) owner += step;
    const int from = owner & 31;
    const int start = __shfl_sync(all, end - len, from), first = __shfl_sync(all, len0, from);
    const int o_a0 = __shfl_sync(all, a0, from), o_a1 = __shfl_sync(all, a1, from);
    const int at = t - start;
    if (visit_round(t < total, at < first ? o_a0 + at : o_a1 + at - first)) return;
  }
}

// Shares out the points of every lane's range [a, b) of g.points over the group. (Merging after
// each range, to skip ranges the best so far has overtaken, measured 2-4 % slower.)
template <int Lanes, class Visitor>
__device__ __forceinline__ void group_visit_ranges(float3 q, const GridView& g, Visitor& v,
                                                   int rank, int a, int b) {
  if constexpr (kWholeWarp<Visitor>) {
    static_assert(Lanes == 32, "a whole-warp visitor searches with all 32 lanes");
    warp_visit_packed(q, g, v, rank, a, b, 0, 0);
  } else {
    const unsigned first_lane = (threadIdx.x & 31u) & ~unsigned(Lanes - 1);
    const unsigned mask = group_mask<Lanes>();
    for (unsigned bits = (__ballot_sync(mask, a < b) & mask) >> first_lane; bits;
         bits &= bits - 1) {
      const int from = __ffs(int(bits)) - 1;
      const int ra = __shfl_sync(mask, a, from, Lanes), rb = __shfl_sync(mask, b, from, Lanes);
      for (int j = ra + rank; j < rb; j += Lanes) {
        const float4 p = __ldg(g.points + j);
        v.visit(cuda::dist2(q, make_float3(p.x, p.y, p.z)), __float_as_int(p.w));
      }
    }
  }
}

// A search bounded by the visitor's limit reads the box of cells the ball touches. Where that
// box has no more rows than the group has lanes, one round reads it all, with no shells and no
// stopping tests (ICP's searches, seeded with the last correspondence, spent most of their
// instructions on shell bookkeeping for a ball that rarely leaves the query's cell). Returns
// false, having read nothing, where the box has more rows. Every lane of the group must call
// it, with the same limit.
template <int Lanes, class Visitor>
__device__ bool grid_visit_box(float3 q, const GridView& g, Visitor& v, int rank) {
  const float limit = v.limit();
  if (!(limit < INFINITY)) return false;
  int2 sx, sy, sz;
  if constexpr (Lanes >= 4) {
    // The box is the same for the whole group: its first three lanes find an axis each and share
    // them. (Every lane finding all three was 39 % of the instructions of ICP's search at the 40k
    // bunny's 46th iteration, ncu on the H200; sharing them made that search 19 % faster.)
    const int axis = rank % 3;
    const float qv = axis == 0 ? q.x : axis == 1 ? q.y : q.z;
    const float lo = axis == 0 ? g.lo.x : axis == 1 ? g.lo.y : g.lo.z;
    const int dim = axis == 0 ? g.dims.x : axis == 1 ? g.dims.y : g.dims.z;
    const int2 s = axis_cover(qv, lo, g.inv_cell, g.slack, dim, limit);
    const unsigned mask = group_mask<Lanes>();
    sx = make_int2(__shfl_sync(mask, s.x, 0, Lanes), __shfl_sync(mask, s.y, 0, Lanes));
    sy = make_int2(__shfl_sync(mask, s.x, 1, Lanes), __shfl_sync(mask, s.y, 1, Lanes));
    sz = make_int2(__shfl_sync(mask, s.x, 2, Lanes), __shfl_sync(mask, s.y, 2, Lanes));
  } else {
    sx = axis_cover(q.x, g.lo.x, g.inv_cell, g.slack, g.dims.x, limit);
    sy = axis_cover(q.y, g.lo.y, g.inv_cell, g.slack, g.dims.y, limit);
    sz = axis_cover(q.z, g.lo.z, g.inv_cell, g.slack, g.dims.z, limit);
  }
  const int ny = sy.y - sy.x + 1, rows = ny * (sz.y - sz.x + 1);
  if (rows > Lanes) return false;
  int a = 0, b = 0;
  if (rank < rows) {
    // rank < rows <= 32: the float quotient is exact here (its rounding lies far inside the
    // 0.5 / ny it has to spare) and costs a few instructions where an integer division costs
    // some thirty.
    const int dz = int(__fdividef(float(rank) + 0.5f, float(ny)));
    const int z = sz.x + dz, y = sy.x + (rank - dz * ny);
    const float gz = cell_gap(q.z, g.lo.z, g.cell, g.slack, z, g.dims.z);
    const float gy = cell_gap(q.y, g.lo.y, g.cell, g.slack, y, g.dims.y);
    if (!beyond(gz * gz + gy * gy, limit)) {
      const int row_cell = (z * g.dims.y + y) * g.dims.x;
      a = __ldg(g.start + row_cell + sx.x);
      b = __ldg(g.start + row_cell + sx.y + 1);
    }
  }
  group_visit_ranges<Lanes>(q, g, v, rank, a, b);
  v.merge();
  return true;
}

// The same shells searched by a group of Lanes consecutive lanes (a power of two) for one
// query, after grid_visit_box where the box is small. A shell's cells lie in rows along x, and
// a row's cells are one contiguous range of points: the lanes take a row each (a face row of
// the shell contributes the cells within reach, an inner row its two end cells), load their
// ranges at once, and then share out the points of every non-empty range; the group merges
// once per round of rows. (One lane walking the cells one after another waited on each cell's
// offsets in turn: a query with no target within reach, reading some 70 mostly empty cells,
// set the pace of its whole kernel.) Every lane of the group must call it, with the same limit;
// the visitor's merge() gives all of them the best.
// With `max_shell`, gives up (returning false, the visitor holding what it has read) where shell
// max_shell is not the last it needs.
template <int Lanes, class Visitor>
__device__ bool grid_visit_group(float3 q, const GridView& g, Visitor& v, int rank,
                                 int max_shell = 1 << 30) {
  if (grid_visit_box<Lanes>(q, g, v, rank)) return true;
  const int cx = query_coord(q.x, g.lo.x, g.inv_cell, g.dims.x);
  const int cy = query_coord(q.y, g.lo.y, g.inv_cell, g.dims.y);
  const int cz = query_coord(q.z, g.lo.z, g.inv_cell, g.dims.z);
  const auto visit_ranges = [&](int a, int b) { group_visit_ranges<Lanes>(q, g, v, rank, a, b); };
  for (int r = 0, last = last_shell(g); r <= last; ++r) {
    if (r > max_shell) return false;
    const auto [x0, x1, y0, y1, z0, z1] = shell_block(g, cx, cy, cz, r);
    if (x0 <= x1 && y0 <= y1 && z0 <= z1) {
      const int ny = y1 - y0 + 1, rows = ny * (z1 - z0 + 1);
      for (int round = 0; round < rows; round += Lanes) {
        int a0 = 0, b0 = 0, a1 = 0, b1 = 0;  // this lane's ranges of points
        const int row = round + rank;
        if (row < rows) {
          const int z = z0 + row / ny, y = y0 + row % ny;
          const float gz = cell_gap(q.z, g.lo.z, g.cell, g.slack, z, g.dims.z);
          const float gy = cell_gap(q.y, g.lo.y, g.cell, g.slack, y, g.dims.y);
          const float gyz2 = gz * gz + gy * gy;
          const int row_cell = (z * g.dims.y + y) * g.dims.x;
          const bool reachable = !beyond(gyz2, v.limit());
          if (reachable && (z == cz - r || z == cz + r || y == cy - r || y == cy + r)) {
            // The whole row is on the shell, and the cells within reach form an interval around
            // the query's x.
            const int2 xs = axis_cells(q.x, g.lo.x, g.cell, g.inv_cell, g.slack, g.dims.x, gyz2,
                                       v.limit(), x0, x1);
            if (xs.x <= xs.y) {
              a0 = __ldg(g.start + row_cell + xs.x);
              b0 = __ldg(g.start + row_cell + xs.y + 1);
            }
          } else if (reachable) {
            // Inside the shell's block only the row's two end cells are new.
            const auto end_cell = [&](int x, int& a, int& b) {
              if (x < 0 || x >= g.dims.x) return;
              const float gx = cell_gap(q.x, g.lo.x, g.cell, g.slack, x, g.dims.x);
              if (beyond(gyz2 + gx * gx, v.limit())) return;
              a = __ldg(g.start + row_cell + x);
              b = __ldg(g.start + row_cell + x + 1);
            };
            end_cell(cx - r, a0, b0);
            end_cell(cx + r, a1, b1);
          }
        }
        if constexpr (kWholeWarp<Visitor>) {
          warp_visit_packed(q, g, v, rank, a0, b0, a1, b1);
        } else {
          visit_ranges(a0, b0);
          visit_ranges(a1, b1);
        }
        v.merge();
      }
    }
    if (shells_done(q, g, cx, cy, cz, r, v)) return true;
  }
  return true;
}

// Device storage of a grid, reused across builds.
struct DeviceGrid {
  cuda::DeviceBuffer<int> start, cursor, cell_of;
  cuda::DeviceBuffer<float4> points;
  cuda::DeviceBuffer<unsigned char> scan_temp;
  GridView view{};
};

// The bounds of the n device-resident points (nns/grid_plan.h), found on stream s, which it
// synchronises to bring them to the host.
Bounds device_bounds(const float3* d_points, std::size_t n, cuda::DeviceBuffer<unsigned>& scratch,
                     cuda::PinnedBuffer<unsigned>& host, cudaStream_t s);

// Fills the grid planned for the n targets (nns/grid_plan.h) on stream s from their device
// copy. Non-finite targets are left out of the grid; `order`, where given (n entries), gets the
// targets in the grid's cell order, the non-finite ones last (DeviceIndex::cell_order).
void build_grid(DeviceGrid& grid, const float3* d_targets, const GridPlan& plan, std::size_t n,
                cudaStream_t s, int* order = nullptr);

}  // namespace cumulus::nns
