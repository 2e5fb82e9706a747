// GPU neighbour search: building the structures and the k-nearest and radius kernels.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <bit>
#include <span>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cuda/stage_clock.cuh"
#include "core/cuda/staged_download.cuh"
#include "core/cuda/workspace.cuh"
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

__global__ void k_grid_scatter(const float3* pts, int n, const int* cell_of, int* cursor,
                               float4* sorted) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int c = cell_of[i];
  if (c < 0) return;
  const float3 p = pts[i];
  sorted[atomicAdd(&cursor[c], 1)] = make_float4(p.x, p.y, p.z, __int_as_float(i));
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
                cudaStream_t s) {
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
                                                      grid.cursor.get(), grid.points.get());
  CU_CHECK_LAUNCH("k_grid_scatter");
}

void DeviceIndex::build(NnsMethod m, const Point3f* host, std::size_t count, cudaStream_t s,
                        float reach, const GridDensity& density) {
  method = m;
  n = count;
  fine.view = GridView{};
  targets.reserve(std::max<std::size_t>(count, 1));
  if (count)
    CU_CHECK(
        cudaMemcpyAsync(targets.get(), host, count * sizeof(float3), cudaMemcpyHostToDevice, s));
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
    const GridPlan plan = plan_grid(device_bounds(targets.get(), count, bounds, bounds_host, s),
                                    density.points_per_cell, reach, density.within_reach);
    build_grid(grid, targets.get(), plan, count, s);
    if (reach > 0)
      if (const auto fine_plan = plan_fine_grid(host, count, plan, density.fine_points_per_cell))
        build_grid(fine, targets.get(), *fine_plan, count, s);
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

// k = 1 on the grid with a group of Lanes lanes a query (GroupNearestVisitor): the same
// answer as k_nearest, ties included.
template <int Lanes>
__global__ void k_nearest_group(GridSearch search, const float3* queries, int nq, float max_d2,
                                int* out_index, float* out_d2) {
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int q = int(t / Lanes), rank = int(t % Lanes);
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

constexpr int kSearchThreads = 128;

// The grid's k nearest with a warp per query (WarpKnnVisitor), for the larger k.
template <int MaxK>
__global__ void k_knn_warp(GridSearch search, const float3* queries, int nq, int k, float max_d2,
                           int* out_index, float* out_d2) {
  __shared__ unsigned long long stage[kSearchThreads / 32][MaxK];  // each warp's merges
  const int q = int((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const int lane = int(threadIdx.x & 31);
  if (q >= nq) return;  // the whole warp
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

template <class Search>
__global__ void k_radius_count(Search search, const float3* queries, int nq, float r2,
                               unsigned* count) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = q < nq ? queries[q] : make_float3(0, 0, 0);
  const bool active = q < nq && cuda::finite3(p);
  RadiusCountVisitor v(r2);
  search(p, active, v);
  if (q < nq) count[q] = active ? v.count : 0u;
}

template <class Search>
__global__ void k_radius_fill(Search search, const float3* queries, int nq, float r2,
                              const unsigned* offsets, unsigned long long* keys) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = q < nq ? queries[q] : make_float3(0, 0, 0);
  const bool active = q < nq && cuda::finite3(p);
  RadiusFillVisitor v(r2, keys + (q < nq ? offsets[q] : 0u));
  search(p, active, v);
}

__global__ void k_split_keys(const unsigned long long* keys, std::size_t m, int* index, float* d2) {
  const std::size_t j = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= m) return;
  index[j] = key_index(keys[j]);
  d2[j] = key_distance(keys[j]);
}

// The grid's radius search with a warp a query (WarpRadiusCountVisitor), and the longest row
// into `most`.
__global__ void k_radius_count_warp(GridSearch search, const float3* queries, int nq, float r2,
                                    unsigned* count, unsigned* most) {
  const int q = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const int lane = int(threadIdx.x & 31);
  if (q >= nq) return;  // the whole warp
  const float3 p = queries[q];
  WarpRadiusCountVisitor v(r2);
  search.group<32>(p, cuda::finite3(p), v, lane);
  if (lane != 0) return;
  count[q] = v.count;
  // Most rows are shorter than the longest so far: a plain read spares their atomics.
  if (v.count > *static_cast<volatile unsigned*>(most)) atomicMax(most, v.count);
}

// Sorts `n` keys (a power of two) of a warp's shared memory ascending: a bitonic network, each
// step's n / 2 compare-exchanges shared by the lanes.
__device__ void warp_bitonic_sort(unsigned long long* keys, unsigned n, unsigned lane) {
  for (unsigned k = 2; k <= n; k <<= 1)
    for (unsigned j = k >> 1; j > 0; j >>= 1) {
      for (unsigned t = lane; t < n / 2; t += 32) {
        const unsigned i = 2 * t - (t & (j - 1)), l = i + j;  // i has bit j clear
        const unsigned long long a = keys[i], b = keys[l];
        if ((a > b) == ((i & k) == 0)) {
          keys[i] = b;
          keys[l] = a;
        }
      }
      __syncwarp();
    }
}

// Each query's row by a warp: a row of up to `cap` keys is gathered in the warp's shared memory,
// sorted there and written out as indices and distances; a longer row goes to `keys` unsorted,
// for the segmented sort. (CUB's segmented sort gave each row over 64 keys a block of its own:
// 8.6 of the 11.2 ms of KITTI's radius search at 0.5 m, rows of 180 keys on average.)
__global__ void k_radius_fill_sorted(GridSearch search, const float3* queries, int nq, float r2,
                                     unsigned cap, const unsigned* offsets,
                                     unsigned long long* keys, int* index, float* d2) {
  extern __shared__ unsigned long long rows[];  // cap keys a warp
  const int q = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const unsigned lane = threadIdx.x & 31u;
  if (q >= nq) return;  // the whole warp
  const unsigned begin = offsets[q], m = offsets[q + 1] - begin;
  if (m == 0) return;  // also every non-finite query
  unsigned long long* row = rows + std::size_t(threadIdx.x / 32) * cap;
  const bool fits = m <= cap;
  WarpRadiusFillVisitor v(r2, fits ? row : keys + begin, m);
  search.group<32>(queries[q], true, v, int(lane));
  if (!fits) return;
  const unsigned n = 1u << (32 - __clz(int(m - 1)));  // m rounded up to a power of two
  for (unsigned i = m + lane; i < n; i += 32)
    row[i] = ~0ull;  // after every key
  __syncwarp();
  if (m > 1) warp_bitonic_sort(row, n, lane);
  for (unsigned i = lane; i < m; i += 32) {
    const unsigned long long key = row[i];
    index[begin + i] = key_index(key);
    d2[begin + i] = key_distance(key);
  }
}

// The rows k_radius_fill_sorted left to the segmented sort, split into indices and distances.
__global__ void k_split_long_rows(const unsigned long long* keys, const unsigned* offsets, int nq,
                                  unsigned cap, int* index, float* d2) {
  const int q = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  if (q >= nq) return;
  const unsigned begin = offsets[q], end = offsets[q + 1];
  if (end - begin <= cap) return;
  for (unsigned j = begin + (threadIdx.x & 31u); j < end; j += 32) {
    index[j] = key_index(keys[j]);
    d2[j] = key_distance(keys[j]);
  }
}

// The end of row q for the segmented sort: its real end where the row is longer than `cap`,
// else its start (an empty segment, already sorted by k_radius_fill_sorted).
struct LongRowEnd {
  const unsigned* offsets;
  unsigned cap;
  __host__ __device__ unsigned operator()(int q) const {
    return offsets[q + 1] - offsets[q] > cap ? offsets[q + 1] : offsets[q];
  }
};

// Rows up to this long are sorted in shared memory (16 KB a warp); a longer one goes through the
// segmented sort.
constexpr unsigned kRadiusRowMax = 2048;

// From this k on, the grid's k-NN runs a warp per query (k_knn_warp) instead of a thread: on an
// H100 at k = 8 it took 1.20 against 2.75 ms for 40,256 bunny queries, 2.08 against 3.38 ms for
// KITTI's 41,556 (end to end, download included); on an H200 at k = 4 0.78 against 2.28 ms for
// the bunny's, 1.07-1.14 against 2.47-2.58 ms for KITTI's 124,605.
constexpr int kWarpKnnMinK = 2;

// The grid's k = 1 runs 16 lanes a query (k_nearest_group): unbounded queries far from every
// target walk shells of mostly empty cells, one after another for a lone thread. H200, search
// stage, bunny 40,256 / KITTI 124,605 queries: a thread 1.89 / 1.58-1.71 ms, 4 lanes 0.67 /
// 0.26, 8 0.43 / 0.15, 16 0.35 / 0.13, 32 0.34 / 0.16.
constexpr int kNearestLanes = 16;

}  // namespace

void search_knn(const DeviceIndex& index, const float3* queries, int nq, int k, float max_d2,
                int* out_index, float* out_d2, cudaStream_t s) {
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
      if (k >= kWarpKnnMinK) {
        with_max_k(k, [&](auto max_k) {
          k_knn_warp<std::max(32, decltype(max_k)::value)>
              <<<cuda::blocks_for(std::size_t(nq) * 32, kSearchThreads), kSearchThreads, 0, s>>>(
                  search, queries, nq, k, max_d2, out_index, out_d2);
          CU_CHECK_LAUNCH("k_knn_warp");
        });
        return;
      }
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

// The rows' start offsets from their counts (b.counts), on the device and in host_offsets, with
// the longest row's length from b.most where `longest`; waits for them, sizes the indices and
// distances, and returns the number of neighbours.
std::size_t offsets_from_counts(RadiusScratch& b, std::size_t n,
                                std::vector<unsigned>& host_offsets, bool longest, cudaStream_t s) {
  CU_CHECK(cudaMemsetAsync(b.counts.get() + n, 0, sizeof(unsigned), s));  // the sum's last entry
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, b.counts.get(), b.offsets.get(),
                                         int(n + 1), s));
  b.temp.reserve(bytes);
  CU_CHECK(cub::DeviceScan::ExclusiveSum(b.temp.get(), bytes, b.counts.get(), b.offsets.get(),
                                         int(n + 1), s));
  CU_CHECK(cudaMemcpyAsync(host_offsets.data(), b.offsets.get(), (n + 1) * sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  if (longest)
    CU_CHECK(cudaMemcpyAsync(b.most_host.get(), b.most.get(), sizeof(unsigned),
                             cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaStreamSynchronize(s));  // the total sizes the output
  const std::size_t total = host_offsets[n];
  b.index.reserve(std::max<std::size_t>(total, 1));
  b.d2.reserve(std::max<std::size_t>(total, 1));
  return total;
}

// Sorts b.keys' rows (row q from b.offsets[q] to ends[q]) into b.sorted_keys.
template <class Ends>
void sort_rows(RadiusScratch& b, std::size_t total, std::size_t n, Ends ends, cudaStream_t s) {
  std::size_t bytes = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the scratch's size, then the sort
    CU_CHECK(cub::DeviceSegmentedSort::SortKeys(pass ? b.temp.get() : nullptr, bytes, b.keys.get(),
                                                b.sorted_keys.get(), int64_t(total), int64_t(n),
                                                b.offsets.get(), ends, s));
    if (!pass) b.temp.reserve(bytes);
  }
}

// The grid's radius search: counted and filled by a warp a query, each row sorted by its warp
// where it fits kRadiusRowMax (see k_radius_fill_sorted).
std::size_t search_radius_grid(const GridSearch& search, const float3* queries, int nq, float r2,
                               RadiusScratch& b, std::vector<unsigned>& host_offsets,
                               cudaStream_t s) {
  const std::size_t n = std::size_t(nq);
  const int B = cuda::blocks_for(n * 32, kSearchThreads);
  b.most.reserve(1);
  b.most_host.reserve(1);
  CU_CHECK(cudaMemsetAsync(b.most.get(), 0, sizeof(unsigned), s));
  k_radius_count_warp<<<B, kSearchThreads, 0, s>>>(search, queries, nq, r2, b.counts.get(),
                                                   b.most.get());
  CU_CHECK_LAUNCH("k_radius_count_warp");
  const std::size_t total = offsets_from_counts(b, n, host_offsets, true, s);
  if (total == 0) return 0;
  const unsigned most = b.most_host.get()[0];
  // Shared memory for the longest row (at least a warp's width), up to 32 KB a block.
  const unsigned cap = std::min(kRadiusRowMax, std::bit_ceil(std::max(most, 32u)));
  const int warps = int(std::min<std::size_t>(kSearchThreads / 32, 32768 / (cap * 8)));
  const bool long_rows = most > cap;
  if (long_rows) {
    b.keys.reserve(total);
    b.sorted_keys.reserve(total);
  }
  k_radius_fill_sorted<<<cuda::blocks_for(n * 32, warps * 32), warps * 32,
                         std::size_t(warps) * cap * sizeof(unsigned long long), s>>>(
      search, queries, nq, r2, cap, b.offsets.get(), long_rows ? b.keys.get() : nullptr,
      b.index.get(), b.d2.get());
  CU_CHECK_LAUNCH("k_radius_fill_sorted");
  if (long_rows) {
    sort_rows(b, total, n,
              thrust::make_transform_iterator(thrust::make_counting_iterator(0),
                                              LongRowEnd{b.offsets.get(), cap}),
              s);
    k_split_long_rows<<<B, kSearchThreads, 0, s>>>(b.sorted_keys.get(), b.offsets.get(), nq, cap,
                                                   b.index.get(), b.d2.get());
    CU_CHECK_LAUNCH("k_split_long_rows");
  }
  return total;
}

}  // namespace

std::size_t search_radius(const DeviceIndex& index, const float3* queries, int nq, float r2,
                          RadiusScratch& b, std::vector<unsigned>& host_offsets, cudaStream_t s) {
  const std::size_t n = std::size_t(nq);
  b.counts.reserve(n + 1);
  b.offsets.reserve(n + 1);
  host_offsets.assign(n + 1, 0);
  if (nq == 0) return 0;
  if (index.searches_grid())
    return search_radius_grid(index.grid_search(), queries, nq, r2, b, host_offsets, s);
  // The kd-tree and brute force: a thread a query, every row through the segmented sort.
  const int B = cuda::blocks_for(n, kSearchThreads);
  index.with_search([&](auto search) {
    k_radius_count<<<B, kSearchThreads, 0, s>>>(search, queries, nq, r2, b.counts.get());
    CU_CHECK_LAUNCH("k_radius_count");
  });
  const std::size_t total = offsets_from_counts(b, n, host_offsets, false, s);
  b.keys.reserve(std::max<std::size_t>(total, 1));
  b.sorted_keys.reserve(std::max<std::size_t>(total, 1));
  index.with_search([&](auto search) {
    k_radius_fill<<<B, kSearchThreads, 0, s>>>(search, queries, nq, r2, b.offsets.get(),
                                               b.keys.get());
    CU_CHECK_LAUNCH("k_radius_fill");
  });
  if (total) {
    sort_rows(b, total, n, b.offsets.get() + 1, s);
    k_split_keys<<<cuda::blocks_for(total, 256), 256, 0, s>>>(b.sorted_keys.get(), total,
                                                              b.index.get(), b.d2.get());
    CU_CHECK_LAUNCH("k_split_keys");
  }
  return total;
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

// What both searches start with: the queries on the device and the method's structure built.
void prepare(Workspace& ws, NnsMethod method, std::span<const Point3f> targets,
             std::span<const Point3f> queries, cuda::StageClock& clock) {
  ws.queries.reserve(std::max<std::size_t>(queries.size(), 1));
  if (!queries.empty())
    CU_CHECK(cudaMemcpyAsync(ws.queries.get(), queries.data(), queries.size() * sizeof(float3),
                             cudaMemcpyHostToDevice, ws.stream.get()));
  ws.index.build(method, targets.data(), targets.size(), ws.stream.get());
  clock.mark("build");
}

// The first m results to the host, then the stream's stage times.
void download(Workspace& ws, const int* d_index, const float* d_d2, std::size_t m,
              std::vector<std::int32_t>& indices, std::vector<float>& sq_distances,
              cuda::StageClock& clock, StageTimes& stages) {
  cudaStream_t s = ws.stream.get();
  indices.resize(m);
  sq_distances.resize(m);
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
  prepare(ws, method, targets, queries, clock);
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
  prepare(ws, method, targets, queries, clock);
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
    CU_CHECK(cudaMemcpyAsync(d.get(), points.data(), points.size() * sizeof(float3),
                             cudaMemcpyHostToDevice, stream.get()));
  cuda::DeviceBuffer<unsigned> scratch;
  cuda::PinnedBuffer<unsigned> host;
  return nns::device_bounds(d.get(), points.size(), scratch, host, stream.get());
}

}  // namespace cumulus
