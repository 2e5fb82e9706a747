#pragma once
// The targets on the device with the search structure of one method, and the three searches as
// small functors, so kernels are written once as templates over the search (brute force
// synchronises its block, hence the `active` flag instead of early returns).
#include <cuda_runtime.h>

#include "core/cuda/buffer.cuh"
#include "nns/cuda/brute_force.cuh"
#include "nns/cuda/cell_order.cuh"
#include "nns/cuda/grid.cuh"
#include "nns/cuda/kdtree_search.cuh"
#include "nns/cuda/visitors.cuh"
#include "nns/nns.h"

namespace cumulus::nns {

struct BruteSearch {
  const float3* targets;
  int n;
  template <class V>
  __device__ void operator()(float3 q, bool active, V& v) const {
    brute_force_visit(q, active, targets, n, v);
  }
};

struct KdSearch {
  KdTreeView tree;
  template <class V>
  __device__ void operator()(float3 q, bool active, V& v) const {
    if (active) kdtree_visit(q, tree, v);
  }
};

struct GridSearch {
  GridView grid;
  GridView fine{};  // a finer grid for bounded searches (start null: none; see plan_fine_grid)
  // Where > 0, unbounded searches of a group start on the finer grid and go back to the coarse one,
  // starting afresh, where this many shells of fine cells do not settle them (knn_density).
  int fine_shells = 0;
  template <class V>
  __device__ void operator()(float3 q, bool active, V& v) const {
    if (active) grid_visit(q, grid, v);
  }
  // A group of Lanes lanes searching for one query (see grid_visit_group); the group must be
  // active or inactive as a whole.
  template <int Lanes, class V>
  __device__ void group(float3 q, bool active, V& v, int rank) const {
    if (!active) return;
    if (fine.start && grid_visit_box<Lanes>(q, fine, v, rank)) return;
    if constexpr (requires { v.reset(); }) {
      if (fine_shells > 0 && !(v.limit() < INFINITY)) {  // set only with the finer grid
        if (grid_visit_group<Lanes>(q, fine, v, rank, fine_shells)) return;
        v.reset();
      }
    }
    grid_visit_group<Lanes>(q, grid, v, rank);
  }
};

// The single nearest target within `limit` (index -1 if none), optionally starting from target
// `seed` of `targets` as the best so far (its distance computed as the search computes it, so
// the result is the unseeded one, ties included). Every thread of the block must call it
// (brute force synchronises).
template <class Search>
__device__ void nearest_one(const Search& s, float3 p, bool active, float limit, float& d, int& i,
                            const float3* targets = nullptr, int seed = -1) {
  KnnVisitor<1> v(1, limit);
  if (active && seed >= 0) v.visit(cuda::dist2(p, targets[seed]), seed);
  s(p, active, v);
  d = v.size ? v.d[0] : INFINITY;
  i = v.size ? v.i[0] : -1;
}

struct DeviceIndex {
  NnsMethod method = NnsMethod::Gpu;
  std::size_t n = 0;
  cuda::DeviceBuffer<float3> targets;
  cuda::DeviceBuffer<float> kx, ky, kz;
  cuda::DeviceBuffer<int> kindex;
  int kd_nodes = 0;
  DeviceGrid grid;
  GridPlan plan;        // the grid's (NnsMethod::Gpu)
  DeviceGrid fine;      // built for bounded searches (reach > 0) where it pays (plan_fine_grid)
  int fine_shells = 0;  // see GridSearch
  cuda::DeviceBuffer<unsigned> bounds;  // the targets' bounds, found on the device
  cuda::PinnedBuffer<unsigned> bounds_host;
  Bounds found_bounds;            // the grid's targets' bounds, as the last build found them
  cuda::DeviceBuffer<int> order;  // cell_order's, listed by the grid's build

  // Uploads the targets and builds the method's structure (the kd-tree on the host, as the
  // paper does; the grid on the device). Asynchronous on s except for the kd-tree upload and,
  // for the grid, one wait for the targets' bounds (found on the device: the host's scan of
  // the targets took longer than the wait).
  // `reach` > 0: every search is bounded by that distance (the grid then keeps its cells within
  // it, see build_grid).
  // `on_device`, where given, holds the same `count` points on the device (ready in s's order):
  // they are copied from there instead of uploaded again (GICP's second index of each cloud: a
  // pageable upload of a KITTI frame's 1.5 MB held the host about 0.1 ms, the copy a few us).
  // `known_bounds`, where given, are those points' bounds (another grid index's found_bounds):
  // the grid is planned from them without the wait for the device's.
  void build(NnsMethod m, const Point3f* host, std::size_t count, cudaStream_t s, float reach = 0,
             const GridDensity& density = {}, const float3* on_device = nullptr,
             const Bounds* known_bounds = nullptr);

  // The targets in the grid's cell order, the non-finite ones last: a permutation of [0, n) in
  // which kernels that take one target (or query among the targets) at a time can take them, so
  // that the points an SM works on at once lie side by side and their neighbours stay in its L1
  // cache. Null where the method has no grid. Listed on build's stream as the grid is filled.
  const int* cell_order() const { return method == NnsMethod::Gpu && n ? order.get() : nullptr; }

  // Whether the method searches the grid (with_search passes grid_search()).
  bool searches_grid() const {
    return method != NnsMethod::GpuBruteForce && method != NnsMethod::GpuKdTree;
  }
  // The grid's search (built by NnsMethod::Gpu), for callers that need the grid's own kernels.
  GridSearch grid_search() const { return GridSearch{grid.view, fine.view, fine_shells}; }

  // Calls f with the search functor of the built method.
  template <class F>
  void with_search(F&& f) const {
    if (searches_grid())
      f(grid_search());
    else if (method == NnsMethod::GpuBruteForce)
      f(BruteSearch{targets.get(), int(n)});
    else
      f(KdSearch{KdTreeView{kx.get(), ky.get(), kz.get(), kindex.get(), kd_nodes}});
  }
};

// Calls f with std::integral_constant<int, MaxK> for the smallest supported bound >= k.
template <class F>
void with_max_k(int k, F&& f) {
  if (k <= 1)
    f(std::integral_constant<int, 1>{});
  else if (k <= 8)
    f(std::integral_constant<int, 8>{});
  else if (k <= 16)
    f(std::integral_constant<int, 16>{});
  else if (k <= 32)
    f(std::integral_constant<int, 32>{});
  else if (k <= 64)
    f(std::integral_constant<int, 64>{});
  else if (k <= 128)
    f(std::integral_constant<int, 128>{});
  else
    f(std::integral_constant<int, 256>{});
}

}  // namespace cumulus::nns
