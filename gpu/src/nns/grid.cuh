#pragma once
// Our exact search structure: a dense uniform grid over the targets' bounds, targets sorted by
// cell (counting sort), each cell a range of that array. A query visits the cells around it in
// growing shells and stops as soon as everything outside the visited block is provably
// farther than what it still wants, so the result is exact for any distance.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/buffer.cuh"
#include "cuda/distance.cuh"
#include "cumulus/point_cloud.h"

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

// With Lanes > 1 a group of that many consecutive lanes searches for one query: each lane takes
// every Lanes-th point of a cell, and the group merges its findings after every cell, so all
// its lanes see the same limit and walk the same cells.
template <int Lanes = 1, class Visitor>
__device__ __forceinline__ void visit_cell(float3 q, const GridView& g, int x, int y, int z,
                                           Visitor& v, int rank = 0) {
  const int c = (z * g.dims.y + y) * g.dims.x + x;
  const int end = __ldg(g.start + c + 1);
  for (int j = __ldg(g.start + c) + rank; j < end; j += Lanes) {
    const float4 p = __ldg(g.points + j);
    v.visit(cuda::dist2(q, make_float3(p.x, p.y, p.z)), __float_as_int(p.w));
  }
  if constexpr (Lanes > 1) v.merge();
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

template <int Lanes = 1, class Visitor>
__device__ void grid_visit(float3 q, const GridView& g, Visitor& v, int rank = 0) {
  const int cx = query_coord(q.x, g.lo.x, g.inv_cell, g.dims.x);
  const int cy = query_coord(q.y, g.lo.y, g.inv_cell, g.dims.y);
  const int cz = query_coord(q.z, g.lo.z, g.inv_cell, g.dims.z);
  const int max_r = max(g.dims.x, max(g.dims.y, g.dims.z)) + 1;
  for (int r = 0; r <= max_r; ++r) {
    // Shell r: the cells at Chebyshev distance exactly r from the query's cell, clipped. Rows
    // and cells whose box lies beyond the visitor's limit are skipped without touching memory
    // (a seeded or nearly finished search then reads only the cells its ball touches).
    const int x0 = max(cx - r, 0), x1 = min(cx + r, g.dims.x - 1);
    const int y0 = max(cy - r, 0), y1 = min(cy + r, g.dims.y - 1);
    const int z0 = max(cz - r, 0), z1 = min(cz + r, g.dims.z - 1);
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
            if (!beyond(gyz2 + gx * gx, v.limit())) visit_cell<Lanes>(q, g, x, y, z, v, rank);
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
    // Everything not yet visited lies outside the block [c - r, c + r].
    float gap = side_gap(q.x, g.lo.x, g.cell, cx - r, cx + r, g.dims.x);
    gap = fminf(gap, side_gap(q.y, g.lo.y, g.cell, cy - r, cy + r, g.dims.y));
    gap = fminf(gap, side_gap(q.z, g.lo.z, g.cell, cz - r, cz + r, g.dims.z));
    if (gap == INFINITY) return;  // the block covers the whole grid
    gap -= g.slack;
    if (gap > 0.f && gap * gap > v.limit()) return;
  }
}

// Device storage of a grid, reused across builds.
struct DeviceGrid {
  cuda::DeviceBuffer<int> start, cursor, cell_of;
  cuda::DeviceBuffer<float4> points;
  cuda::DeviceBuffer<unsigned char> scan_temp;
  GridView view{};
};

// Sizes the grid for the n targets (their finite bounds and count, from the host copy) and
// fills it on stream s from the device copy. Non-finite targets are left out.
void build_grid(DeviceGrid& grid, const float3* d_targets, const Point3f* host_targets,
                std::size_t n, cudaStream_t s);

}  // namespace cumulus::nns
