#pragma once
// Host-side sizing of the search grid (nns/grid.cuh): pure arithmetic, tested on the CPU.
#include <array>
#include <cmath>
#include <cstddef>
#include <optional>

#include "core/point_cloud.h"

namespace cumulus::nns {

// How densely a search grid is planned. The defaults measured best on the H200 (ICP and k-NN,
// docs/benchmarks.md); other values are for benchmark sweeps (`bench icp --grid-points-per-cell`).
struct GridDensity {
  float points_per_cell = 2.0f;  // targets a cell, by volume
  float within_reach = 0.5f;     // where cells come out wider than a bounded search's reach
  // A second grid, finer (plan_fine_grid) until a target's cell holds about this many targets
  // (0: none): for bounded searches (a reach) the box of cells their ball touches; for unbounded
  // ones, only where fine_shells > 0, the grid a group's search starts on, reading at most
  // fine_shells shells before it starts again on the first (knn_density).
  float fine_points_per_cell = 6.0f;
  int fine_shells = 0;
};

// The density for a grid that serves only radius searches (radius_search, the features' radius
// neighbourhoods, the radius outlier count), planned with the largest radius as its reach: where
// cells of 2 targets come out wider than the radius, an eighth of a target a cell by volume (at
// most 8 cells a target), and no second, finer grid. A KITTI frame's cells for a 0.5 m search: 1.54
// m -> 0.76 m; on an H200 (ncu, us) its count 452 -> 267 and fill 1,203 -> 1,044, FPFH's neighbours
// stage 1.29-1.31 -> 1.03-1.06 ms (docs/benchmarks.md). The rows are the same: sorted by distance
// and index whatever the cells.
inline GridDensity radius_density() {
  GridDensity d;
  d.within_reach = 0.125f;
  d.fine_points_per_cell = 0;  // none: its build cost as much as it saved
  return d;
}

// The density for a grid that serves unbounded searches for the k nearest (the k-NN from k = 16,
// the statistical outlier scores, the features' and GICP's k neighbourhoods). Cells of 2 targets
// by volume hold hundreds on a scan's surfaces (a KITTI frame 390 a target), and such a search
// reads every target of its cell and of the neighbouring cells its k-th nearest reaches into: 828
// candidates for a KITTI frame's 51 nearest (a CPU simulation of the shells over every 97th
// point). So a second grid of cells that hold about 0.3 k targets each (plan_fine_grid) takes the
// searches first, for at most two shells; a search that needs more (a lone point, whose fine
// shells would be many and mostly empty) starts again on the coarse grid. On an H200
// (docs/benchmarks.md) a KITTI frame's statistical outlier scores 2.03 -> 1.56 ms (ncu), its k = 64
// neighbours for the features 1.68 -> 1.31 ms. Made finer outright, the grid cost the LiDAR
// frames' lone points so many shells that a call took 5x longer. Below k = 16 the usual grid: not
// measured there, and k_knn_group's visitor (k < 8) cannot start again.
constexpr int kFinerKnnFromK = 16;
GridDensity knn_density(int k);

struct GridPlan {
  std::array<float, 3> lo{};
  float cell = 1;
  std::array<int, 3> dims{1, 1, 1};
  float slack = 0;         // absolute margin for float rounding of cell assignment
  std::size_t finite = 0;  // targets that go into the grid
  std::size_t cells() const { return std::size_t(dims[0]) * std::size_t(dims[1]) * dims[2]; }
};

// The bounding box of the finite points and their number.
struct Bounds {
  std::array<float, 3> lo{INFINITY, INFINITY, INFINITY};
  std::array<float, 3> hi{-INFINITY, -INFINITY, -INFINITY};
  std::size_t finite = 0;
};
Bounds scan_bounds(const Point3f* points, std::size_t n);

// Cells of about `points_per_cell` targets by volume, at most 8 cells per target (plus a few
// thousand), so memory stays linear in the cloud however it is spread. With `reach` > 0 (every
// search bounded by that distance), cells that come out wider than the reach are sized for a
// quarter of the points instead: a search would read cells of points far beyond its reach.
// (H200, ICP with a 1 m correspondence distance: LiDAR pair 8.1 -> 7.2 ms, KITTI 7.8 -> 6.2 ms;
// the bunny's cells are within its 1 cm and stay.)
// `within_reach` is that density where cells come out wider than the reach.
GridPlan plan_grid(const Bounds& bounds, float points_per_cell = 2.0f, float reach = 0,
                   float within_reach = 0.5f);
GridPlan plan_grid(const Point3f* points, std::size_t n, float points_per_cell = 2.0f,
                   float reach = 0, float within_reach = 0.5f);

// Targets in a target's cell of the plan, on average over the targets (so a few crowded cells
// weigh as much as the targets in them), estimated from an even sample of 512 to 1,023 of the n.
double occupied_per_target(const Point3f* points, std::size_t n, const GridPlan& plan);

// A finer grid for searches bounded by a near candidate (ICP's, seeded with the last
// correspondence), over the same bounds as `coarse`: where the coarse cells hold more than about
// `occupied` targets each, counted per target and estimated from an even sample. Scans are
// surfaces and fill a small part of their box, so cells sized by its volume hold tens to hundreds
// of targets (the bunny 52, a KITTI frame 455) and such a search compares every one of them;
// on a surface occupancy goes with the square of the edge. At most 64 cells per target and 2^25
// in all; nothing where the coarse cells hold fewer than 100 targets each (the bunny's 52).
std::optional<GridPlan> plan_fine_grid(const Point3f* points, std::size_t n, const GridPlan& coarse,
                                       float occupied = 6.0f);

}  // namespace cumulus::nns
