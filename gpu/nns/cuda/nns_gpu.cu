// GPU neighbour search: building the structures, the k-nearest kernels, and the host calls of
// both searches (the radius search's kernels are in radius_gpu.cu).
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "core/cuda/host_upload.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/staged_download.cuh"
#include "core/cuda/workspace.cuh"
#include "core/host_pages.h"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"
#include "nns/cuda/nns_gpu.h"
#include "nns/cuda/visitors.cuh"
#include "nns/grid_plan.h"
#include "nns/kdtree_build.h"

namespace cumulus {
namespace nns {

namespace {

__global__ void k_grid_count(const float3* pts, int n, GridView g, int* cell_of, int* count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float3 p = pts[i];
  if (!cuda::finite3(p)) {
    cell_of[i] = -1;
    return;
  }
  const int c = (grid_coord(p.z, g.lo.z, g.inv_cell, g.dims.z) * g.dims.y +
                 grid_coord(p.y, g.lo.y, g.inv_cell, g.dims.y)) *
                    g.dims.x +
                grid_coord(p.x, g.lo.x, g.inv_cell, g.dims.x);
  cell_of[i] = c;
  atomicAdd(&count[c], 1);
}

// With `order`, also lists the points in the cell order (DeviceIndex::cell_order): a finite point
// at its sorted place, a non-finite one after the `finite` others, counted by the cursor's spare
// entry `tail` (zeroed with the counts and never counted into). As a kernel of its own with a
// memset for its tail, the list made the bunny's k = 16 and 32 neighbours stage 5-7 us longer
// (H200).
__global__ void k_grid_scatter(const float3* pts, int n, const int* cell_of, int* cursor,
                               float4* sorted, int* order, int finite, int* tail) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int c = cell_of[i];
  if (c < 0) {
    if (order) order[finite + atomicAdd(tail, 1)] = i;
    return;
  }
  const float3 p = pts[i];
  const int at = atomicAdd(&cursor[c], 1);
  sorted[at] = make_float4(p.x, p.y, p.z, __int_as_float(i));
  if (order) order[at] = i;
}

// Order-preserving unsigned keys of floats, so the bounds reduce with integer atomics.
__device__ __forceinline__ unsigned float_key(float f) {
  const unsigned b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : b | 0x80000000u;
}

float key_float(unsigned k) {
  const unsigned b = (k & 0x80000000u) ? k & 0x7fffffffu : ~k;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

constexpr int kBoundsValues = 7;  // ~key of lo x, y, z; key of hi x, y, z; finite count

// The finite points' bounds into out (zeroed first: 0 is below every key, and the minimum is
// kept as the maximum of complemented keys).
__global__ void k_bounds(const float3* pts, int n, unsigned* out) {
  unsigned v[kBoundsValues] = {0, 0, 0, 0, 0, 0, 0};
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float3 p = pts[i];
    if (!cuda::finite3(p)) continue;
    const unsigned k[3] = {float_key(p.x), float_key(p.y), float_key(p.z)};
    for (int a = 0; a < 3; ++a) {
      v[a] = max(v[a], ~k[a]);
      v[3 + a] = max(v[3 + a], k[a]);
    }
    ++v[6];
  }
  __shared__ unsigned warp_v[8][kBoundsValues];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int j = 0; j < kBoundsValues; ++j) {
    unsigned r = v[j];
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned other = __shfl_xor_sync(0xffffffffu, r, o);
      r = j < 6 ? max(r, other) : r + other;
    }
    if (lane == 0) warp_v[warp][j] = r;
  }
  __syncthreads();
  if (threadIdx.x >= kBoundsValues) return;
  const int j = threadIdx.x;
  unsigned r = 0;
  for (int w = 0; w < int(blockDim.x / 32); ++w)
    r = j < 6 ? max(r, warp_v[w][j]) : r + warp_v[w][j];
  if (j < 6)
    atomicMax(out + j, r);
  else
    atomicAdd(out + j, r);
}

}  // namespace

Bounds device_bounds(const float3* d_points, std::size_t n, cuda::DeviceBuffer<unsigned>& scratch,
                     cuda::PinnedBuffer<unsigned>& host, cudaStream_t s) {
  scratch.reserve(kBoundsValues);
  host.reserve(kBoundsValues);
  CU_CHECK(cudaMemsetAsync(scratch.get(), 0, kBoundsValues * sizeof(unsigned), s));
  if (n) {
    // At least 8 points a thread and at most a few hundred blocks: enough to fill the GPU,
    // with few atomics on the seven words.
    const int T = 256;
    k_bounds<<<std::min(cuda::blocks_for(n, T * 8), 264), T, 0, s>>>(d_points, int(n),
                                                                     scratch.get());
    CU_CHECK_LAUNCH("k_bounds");
  }
  CU_CHECK(cudaMemcpyAsync(host.get(), scratch.get(), kBoundsValues * sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaStreamSynchronize(s));
  Bounds b;
  const unsigned* k = host.get();
  b.finite = k[6];
  if (b.finite)
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = key_float(~k[a]);
      b.hi[a] = key_float(k[3 + a]);
    }
  return b;
}

void build_grid(DeviceGrid& grid, const float3* d_targets, const GridPlan& plan, std::size_t n,
                cudaStream_t s, int* order) {
  const std::size_t cells = plan.cells();
  GridView& v = grid.view;
  v.lo = make_float3(plan.lo[0], plan.lo[1], plan.lo[2]);
  v.cell = plan.cell;
  v.inv_cell = 1.0f / plan.cell;
  v.slack = plan.slack;
  v.dims = make_int3(plan.dims[0], plan.dims[1], plan.dims[2]);
  grid.start.reserve(cells + 1);
  grid.cursor.reserve(cells + 1);
  grid.cell_of.reserve(std::max<std::size_t>(n, 1));
  grid.points.reserve(std::max<std::size_t>(plan.finite, 1));
  v.start = grid.start.get();
  v.points = grid.points.get();
  if (n == 0) {
    CU_CHECK(cudaMemsetAsync(grid.start.get(), 0, (cells + 1) * sizeof(int), s));
    return;
  }
  CU_CHECK(cudaMemsetAsync(grid.cursor.get(), 0, (cells + 1) * sizeof(int), s));
  const int T = 256;
  k_grid_count<<<cuda::blocks_for(n, T), T, 0, s>>>(d_targets, int(n), v, grid.cell_of.get(),
                                                    grid.cursor.get());
  CU_CHECK_LAUNCH("k_grid_count");
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, grid.cursor.get(), grid.start.get(),
                                         int(cells + 1), s));
  grid.scan_temp.reserve(bytes);
  CU_CHECK(cub::DeviceScan::ExclusiveSum(grid.scan_temp.get(), bytes, grid.cursor.get(),
                                         grid.start.get(), int(cells + 1), s));
  CU_CHECK(cudaMemcpyAsync(grid.cursor.get(), grid.start.get(), cells * sizeof(int),
                           cudaMemcpyDeviceToDevice, s));
  k_grid_scatter<<<cuda::blocks_for(n, T), T, 0, s>>>(d_targets, int(n), grid.cell_of.get(),
                                                      grid.cursor.get(), grid.points.get(), order,
                                                      int(plan.finite), grid.cursor.get() + cells);
  CU_CHECK_LAUNCH("k_grid_scatter");
}

void DeviceIndex::build(NnsMethod m, const Point3f* host, std::size_t count, cudaStream_t s,
                        float reach, const GridDensity& density, const float3* on_device,
                        const Bounds* known_bounds) {
  method = m;
  n = count;
  fine.view = GridView{};
  fine_shells = 0;
  found_bounds = Bounds{};  // only a grid's build finds them; no other build's may be read
  targets.reserve(std::max<std::size_t>(count, 1));
  if (count && on_device)
    CU_CHECK(cudaMemcpyAsync(targets.get(), on_device, count * sizeof(float3),
                             cudaMemcpyDeviceToDevice, s));
  else if (count)
    cuda::upload(targets.get(), host, count * sizeof(float3), s);
  if (m == NnsMethod::GpuKdTree) {
    const LeftBalancedKdTree tree = build_left_balanced(host, count);
    kd_nodes = int(tree.size());
    const std::size_t cap = std::max<std::size_t>(tree.size(), 1);
    kx.reserve(cap);
    ky.reserve(cap);
    kz.reserve(cap);
    kindex.reserve(cap);
    const std::size_t bytes = tree.size() * sizeof(float);
    // The host vectors die at the end of this scope, so the copies must be done when it ends.
    // Copied on s and waited for: cudaMemcpy from pageable memory may return before its DMA
    // has landed, and s does not wait for the legacy stream (it is non-blocking), so a search
    // launched at once could read a tree still arriving.
    if (kd_nodes) {
      CU_CHECK(cudaMemcpyAsync(kx.get(), tree.x.data(), bytes, cudaMemcpyHostToDevice, s));
      CU_CHECK(cudaMemcpyAsync(ky.get(), tree.y.data(), bytes, cudaMemcpyHostToDevice, s));
      CU_CHECK(cudaMemcpyAsync(kz.get(), tree.z.data(), bytes, cudaMemcpyHostToDevice, s));
      CU_CHECK(cudaMemcpyAsync(kindex.get(), tree.index.data(), bytes, cudaMemcpyHostToDevice, s));
      CU_CHECK(cudaStreamSynchronize(s));
    }
  } else if (m == NnsMethod::Gpu) {
    found_bounds =
        known_bounds ? *known_bounds : device_bounds(targets.get(), count, bounds, bounds_host, s);
    plan = plan_grid(found_bounds, density.points_per_cell, reach, density.within_reach);
    order.reserve(std::max<std::size_t>(count, 1));
    build_grid(grid, targets.get(), plan, count, s, order.get());
    // The finer grid serves bounded searches (a reach), and unbounded ones only where the
    // density gives them shells on it (plan_fine_grid declines where it would not pay).
    if (reach > 0 || density.fine_shells > 0)
      if (const auto fine_plan = plan_fine_grid(host, count, plan, density.fine_points_per_cell)) {
        build_grid(fine, targets.get(), *fine_plan, count, s);
        if (reach <= 0) fine_shells = density.fine_shells;
      }
  }
}

namespace {

// k = 1 for the kd-tree and brute force, without the list bookkeeping of k_knn.
template <class Search>
__global__ void k_nearest(Search search, const float3* queries, int nq, float max_d2,
                          int* out_index, float* out_d2) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = q < nq ? queries[q] : make_float3(0, 0, 0);
  const bool active = q < nq && cuda::finite3(p);
  float d;
  int i;
  nearest_one(search, p, active, max_d2, d, i);
  if (q >= nq) return;
  out_index[q] = active ? i : -1;
  out_d2[q] = active && i >= 0 ? d : INFINITY;
}

// This thread's query and its rank among the query's Lanes lanes, for the kernels that search
// with a group of lanes a query.
struct GroupSlot {
  int q, rank;
};
template <int Lanes>
__device__ __forceinline__ GroupSlot group_slot() {
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  return {int(t / Lanes), int(t % Lanes)};
}

// k = 1 on the grid with a group of Lanes lanes a query (GroupNearestVisitor): the same
// answer as k_nearest, ties included.
template <int Lanes>
__global__ void k_nearest_group(GridSearch search, const float3* queries, int nq, float max_d2,
                                int* out_index, float* out_d2) {
  const auto [q, rank] = group_slot<Lanes>();
  if (q >= nq) return;  // the whole group
  const float3 p = queries[q];
  const bool active = cuda::finite3(p);
  GroupNearestVisitor<Lanes> v(max_d2);
  search.group<Lanes>(p, active, v, rank);
  if (rank != 0) return;
  out_index[q] = active && v.found() ? v.i : -1;
  out_d2[q] = active && v.found() ? v.d : INFINITY;
}

template <class Search, int MaxK>
__global__ void k_knn(Search search, const float3* queries, int nq, int k, float max_d2,
                      int* out_index, float* out_d2) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = q < nq ? queries[q] : make_float3(0, 0, 0);
  const bool active = q < nq && cuda::finite3(p);
  KnnVisitor<MaxK> v(k, max_d2);
  search(p, active, v);
  if (q >= nq) return;
  for (int j = 0; j < k; ++j) {
    const bool have = active && j < v.size;
    out_index[std::size_t(q) * k + j] = have ? v.i[j] : -1;
    out_d2[std::size_t(q) * k + j] = have ? v.d[j] : INFINITY;
  }
}

// From this k on, the grid's k-NN runs a warp per query (k_knn_warp) instead of a thread: on an
// H100 at k = 8 it took 1.20 against 2.75 ms for 40,256 bunny queries, 2.08 against 3.38 ms for
// KITTI's 41,556 (end to end, download included). Below it, from k = 2, a group of
// kGroupKnnLanes lanes a query (k_knn_group): the warp left most of its lanes without targets at
// such k. H200, k = 4, search stage: the warp 0.49-0.50 ms for the bunny's 40,256 queries and
// 0.56 for KITTI's 124,605; 16 lanes 0.46-0.47 and 0.42; 8 lanes 0.58 and 0.45-0.46.
constexpr int kWarpKnnMinK = 8;
constexpr int kGroupKnnLanes = 16;
constexpr int kGroupKnnMaxK = kWarpKnnMinK - 1;
static_assert(kGroupKnnMaxK < kGroupKnnLanes, "a lane for each entry");

// The grid's k nearest, 2 <= k < kWarpKnnMinK, with a group of Lanes lanes a query
// (GroupKnnVisitor): lane e writes entry e.
template <int Lanes>
__global__ void k_knn_group(GridSearch search, const float3* queries, int nq, int k, float max_d2,
                            int* out_index, float* out_d2) {
  const auto [q, rank] = group_slot<Lanes>();
  if (q >= nq) return;  // the whole group
  const float3 p = queries[q];
  const bool active = cuda::finite3(p);
  GroupKnnVisitor<Lanes, kGroupKnnMaxK> v(k, max_d2);
  search.group<Lanes>(p, active, v, rank);
  if (rank >= k) return;
  const std::size_t at = std::size_t(q) * std::size_t(k) + std::size_t(rank);
  const bool have = active && rank < v.found;
  out_index[at] = have ? key_index(v.mine) : -1;
  out_d2[at] = have ? key_distance(v.mine) : INFINITY;
}

// The grid's k nearest with a warp per query (WarpKnnVisitor), for the larger k.
template <int MaxK>
__global__ void k_knn_warp(GridSearch search, const float3* queries, int nq, const int* order,
                           int k, float max_d2, int* out_index, float* out_d2) {
  __shared__ unsigned long long stage[kSearchThreads / 32][MaxK];  // each warp's merges
  const int slot = int((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = int(threadIdx.x & 31);
  if (slot >= nq) return;  // the whole warp
  const int q = point_in_order(order, slot);
  const float3 p = queries[q];
  const bool active = cuda::finite3(p);
  WarpKnnVisitor<MaxK> v(k, max_d2, stage[threadIdx.x / 32]);
  search.group<32>(p, active, v, lane);
  const std::size_t row = std::size_t(q) * std::size_t(k);
#pragma unroll
  for (int r = 0; r < WarpKnnVisitor<MaxK>::kPer; ++r) {
    const int e = lane * WarpKnnVisitor<MaxK>::kPer + r;
    if (e >= k) break;
    const bool have = e < v.size;
    out_index[row + e] = have ? v.i[r] : -1;
    out_d2[row + e] = have ? v.d[r] : INFINITY;
  }
}

// The grid's k = 1 runs 16 lanes a query (k_nearest_group): unbounded queries far from every
// target walk shells of mostly empty cells, one after another for a lone thread. H200, search
// stage, bunny 40,256 / KITTI 124,605 queries: a thread 1.89 / 1.58-1.71 ms, 4 lanes 0.67 /
// 0.26, 8 0.43 / 0.15, 16 0.35 / 0.13, 32 0.34 / 0.16.
constexpr int kNearestLanes = 16;

}  // namespace

void search_knn(const DeviceIndex& index, const float3* queries, int nq, int k, float max_d2,
                int* out_index, float* out_d2, cudaStream_t s, const int* order) {
  if (nq == 0) return;
  index.with_search([&](auto search) {
    if (k == 1) {
      if constexpr (std::is_same_v<decltype(search), GridSearch>) {
        k_nearest_group<kNearestLanes>
            <<<cuda::blocks_for(std::size_t(nq) * kNearestLanes, kSearchThreads), kSearchThreads, 0,
               s>>>(search, queries, nq, max_d2, out_index, out_d2);
        CU_CHECK_LAUNCH("k_nearest_group");
      } else {
        k_nearest<<<cuda::blocks_for(nq, kSearchThreads), kSearchThreads, 0, s>>>(
            search, queries, nq, max_d2, out_index, out_d2);
        CU_CHECK_LAUNCH("k_nearest");
      }
      return;
    }
    if constexpr (std::is_same_v<decltype(search), GridSearch>) {
      if (k < kWarpKnnMinK) {
        k_knn_group<kGroupKnnLanes>
            <<<cuda::blocks_for(std::size_t(nq) * kGroupKnnLanes, kSearchThreads), kSearchThreads,
               0, s>>>(search, queries, nq, k, max_d2, out_index, out_d2);
        CU_CHECK_LAUNCH("k_knn_group");
        return;
      }
      with_max_k(k, [&](auto max_k) {
        k_knn_warp<std::max(32, decltype(max_k)::value)>
            <<<cuda::blocks_for(std::size_t(nq) * 32, kSearchThreads), kSearchThreads, 0, s>>>(
                search, queries, nq, order, k, max_d2, out_index, out_d2);
        CU_CHECK_LAUNCH("k_knn_warp");
      });
      return;
    }
    with_max_k(k, [&](auto max_k) {
      k_knn<decltype(search), decltype(max_k)::value>
          <<<cuda::blocks_for(nq, kSearchThreads), kSearchThreads, 0, s>>>(
              search, queries, nq, k, max_d2, out_index, out_d2);
      CU_CHECK_LAUNCH("k_knn");
    });
  });
}

namespace {

struct Workspace {
  cuda::Stream stream;
  DeviceIndex index;
  cuda::DeviceBuffer<float3> queries;
  cuda::DeviceBuffer<int> out_index;
  cuda::DeviceBuffer<float> out_d2;
  RadiusScratch radius;
  cuda::StagedDownload down;  // the results, over 64 KB through page-locked chunks
};

// What both searches start with: the queries on the device and the method's structure built
// (for a radius search, `reach` is the radius).
void prepare(Workspace& ws, NnsMethod method, std::span<const Point3f> targets,
             std::span<const Point3f> queries, cuda::StageClock& clock, float reach = 0,
             int k = 0) {
  ws.queries.reserve(std::max<std::size_t>(queries.size(), 1));
  if (!queries.empty())
    cuda::upload(ws.queries.get(), queries.data(), queries.size() * sizeof(float3),
                 ws.stream.get());
  ws.index.build(method, targets.data(), targets.size(), ws.stream.get(), reach,
                 reach > 0 ? radius_density() : knn_density(k));
  clock.mark("build");
}

// The first m results to the host, then the stream's stage times. The vectors are sized while
// the search runs: fresh ones get memory that nothing writes before the copy, its pages mapped in
// on all cores (a KITTI frame's k = 64 is 64 MB, which one thread zero-filled page by page).
void download(Workspace& ws, const int* d_index, const float* d_d2, std::size_t m,
              ZeroedVector<std::int32_t>& indices, ZeroedVector<float>& sq_distances,
              cuda::StageClock& clock, StageTimes& stages) {
  cudaStream_t s = ws.stream.get();
  size_for_writing(indices, m);
  size_for_writing(sq_distances, m);
  // Through page-locked chunks: a pageable copy ran at about 10 GB/s (bunny k = 16, 5 MB: 0.47
  // ms on an H200).
  const cuda::StagedDownload::Piece pieces[] = {{indices.data(), d_index, m * sizeof(int)},
                                                {sq_distances.data(), d_d2, m * sizeof(float)}};
  ws.down.copy(pieces, s);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(stages);
}

}  // namespace
}  // namespace nns

void gpu_knn(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
             NnsMethod method, float max_d2, KnnResult& out) {
  using namespace nns;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>(method_name(method));
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t nq = queries.size(), m = nq * std::size_t(k);
  prepare(ws, method, targets, queries, clock, 0, k);
  ws.out_index.reserve(std::max<std::size_t>(m, 1));
  ws.out_d2.reserve(std::max<std::size_t>(m, 1));
  search_knn(ws.index, ws.queries.get(), int(nq), k, max_d2, ws.out_index.get(), ws.out_d2.get(),
             s);
  clock.mark("search");
  download(ws, ws.out_index.get(), ws.out_d2.get(), m, out.indices, out.sq_distances, clock,
           out.stages);
}

void gpu_radius(std::span<const Point3f> targets, std::span<const Point3f> queries, float r2,
                NnsMethod method, RadiusResult& out) {
  using namespace nns;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>(method_name(method));
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t nq = queries.size();
  prepare(ws, method, targets, queries, clock, std::sqrt(r2));
  const std::size_t total =
      search_radius(ws.index, ws.queries.get(), int(nq), r2, ws.radius, out.offsets, s);
  clock.mark("search");
  download(ws, ws.radius.index.get(), ws.radius.d2.get(), total, out.indices, out.sq_distances,
           clock, out.stages);
}

nns::Bounds gpu_bounds(std::span<const Point3f> points) {
  cuda::require_device(method_name(NnsMethod::Gpu));
  cuda::Stream stream;
  cuda::DeviceBuffer<float3> d(std::max<std::size_t>(points.size(), 1));
  if (!points.empty())
    cuda::upload(d.get(), points.data(), points.size() * sizeof(float3), stream.get());
  cuda::DeviceBuffer<unsigned> scratch;
  cuda::PinnedBuffer<unsigned> host;
  return nns::device_bounds(d.get(), points.size(), scratch, host, stream.get());
}

}  // namespace cumulus
