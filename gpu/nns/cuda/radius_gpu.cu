// The GPU radius search over device-resident queries (nns/cuda/device_search.cuh): the grid's
// rows counted, filled and sorted by a warp a query (rows too long for a warp's shared memory by
// a block, the longest of all by CUB's segmented sort; the sorts are row_sort.cuh's); the
// kd-tree's and brute force's a thread a query, sorted by CUB's segmented sort.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <bit>

#include "core/cuda/occupancy.cuh"
#include "core/device.h"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"
#include "nns/cuda/row_sort.cuh"
#include "nns/cuda/visitors.cuh"

namespace cumulus::nns {

namespace {

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

// Each query's row by a warp: a row of up to `cap` keys is gathered in the warp's shared memory,
// sorted there and written out as indices and distances; a longer one goes to `keys` unsorted,
// or with InPlace where it fits `block_cap` to its own places in `index` and `d2`, and is listed
// in `long_rows` (its count in long_rows_count) for k_sort_long_rows. (CUB's segmented sort gave
// each row over 64 keys a block of its own: 8.6 of the 11.2 ms of KITTI's radius search at 0.5
// m, rows of 180 keys on average.)
// (64 registers: the in-place fill took 72 without the bound, and 3-11 % longer.)
template <bool InPlace>
__global__ void __launch_bounds__(kSearchThreads, 8)
    k_radius_fill_sorted(GridSearch search, const float3* queries, int nq, float r2, unsigned cap,
                         unsigned block_cap, const unsigned* offsets, unsigned long long* keys,
                         unsigned* long_rows, unsigned* long_rows_count, int* index, float* d2) {
  extern __shared__ unsigned long long rows[];  // cap keys a warp
  const int q = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const unsigned lane = threadIdx.x & 31u;
  if (q >= nq) return;  // the whole warp
  const unsigned begin = offsets[q], m = offsets[q + 1] - begin;
  if (m == 0) return;  // also every non-finite query
  unsigned long long* row = rows + std::size_t(threadIdx.x / 32) * cap;
  const bool fits = m <= cap;
  if (InPlace && !fits && m <= block_cap) {
    WarpRadiusFillVisitor v(r2, RadiusRowInPlace{index + begin, d2 + begin}, m);
    search.group<32>(queries[q], true, v, int(lane));
  } else {
    WarpRadiusFillVisitor v(r2, RadiusRowKeys{fits ? row : keys + begin}, m);
    search.group<32>(queries[q], true, v, int(lane));
  }
  if (!fits) {
    if (lane == 0) long_rows[atomicAdd(long_rows_count, 1u)] = unsigned(q);
    return;
  }
  __syncwarp();
  // A row that fits has up to kRadiusRowMax = 512 keys: sorted in registers, up to 16 a lane.
  if (m <= 32) return sort_short_row(row, m, lane, index + begin, d2 + begin);
  if (m <= 64) return sort_row_blocked<2>(row, m, lane, index + begin, d2 + begin);
  if (m <= 128) return sort_row_blocked<4>(row, m, lane, index + begin, d2 + begin);
  if (m <= 256) return sort_row_blocked<8>(row, m, lane, index + begin, d2 + begin);
  sort_row_blocked<16>(row, m, lane, index + begin, d2 + begin);
}

// The rows k_radius_fill_sorted listed (longer than its `cap`) of up to `block_cap` keys, a block
// each: read from `keys` (InPlace: from their places in `index` and `d2`) a block of 256 keys to
// a warp, sorted by all its warps together in the block's shared memory (block_cap keys: the
// longest row rounded up to a whole block of 256) and written out as indices and distances.
// Longer ones are left to the segmented sort. Through the segmented sort and its split, against
// this kernel (ncu, H200): the LiDAR frame's 5,032 rows of 4,097-6,144 keys at 0.5 m 1.98 against
// 1.40 ms, its 20,384 rows over 2,048 at 0.8 m 6.50 against 3.43, KITTI frame 0's at 1.5 m 8.88
// against 4.41.
constexpr int kLongRowThreads = 256;
// Four blocks an SM (64 registers a thread, no spill) where four rooms fit its shared memory
// (the longest row up to about 7,000 keys): against three (70 registers), the LiDAR frame's long
// rows at 0.5 m 1,617 -> 1,589 us, at 0.8 m 2,950 -> 2,824, KITTI frame 0's at 1.5 m 4,490 -> 4,307
// (ncu, H200).
template <bool InPlace>
__global__ void __launch_bounds__(kLongRowThreads, 4)
    k_sort_long_rows(const unsigned* long_rows, const unsigned* long_rows_count,
                     const unsigned* offsets, const unsigned long long* keys, unsigned block_cap,
                     int* index, float* d2) {
  extern __shared__ unsigned long long block_row[];  // block_cap keys
  const unsigned rows = *long_rows_count;
  for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned q = long_rows[r];
    const unsigned begin = offsets[q], m = offsets[q + 1] - begin;
    if (m > block_cap) continue;  // the whole block
    // Its last wait covers the reads of block_row before the next row's writes.
    sort_long_row<kLongRowBlock / 32, InPlace>(InPlace ? nullptr : keys + begin, m, block_row,
                                               index + begin, d2 + begin);
  }
}

// The rows left to the segmented sort (longer than `cap`, k_sort_long_rows' room), split into
// indices and distances.
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
// else its start (an empty segment, sorted already by k_radius_fill_sorted or k_sort_long_rows).
struct LongRowEnd {
  const unsigned* offsets;
  unsigned cap;
  __host__ __device__ unsigned operator()(int q) const {
    return offsets[q + 1] - offsets[q] > cap ? offsets[q + 1] : offsets[q];
  }
};

// Rows up to this long are sorted by their warp in registers (4 KB of shared memory a warp);
// longer ones up to kRadiusBlockRowMax by a block (k_sort_long_rows, 64 KB a block), longer
// still through the segmented sort. The warps had sorted rows up to 2,048 keys themselves (16 KB
// a warp), and the fill ran with as few warps as that room allowed: in ncu on an H200 the fill
// and the blocks' sort, 2,048 / 512 keys a warp, the LiDAR frame at 0.5 m 3.66 / 3.35 ms, at 0.8
// m 6.44 / 5.56, at 0.3 m 2.52 / 2.30, KITTI frame 0 at 0.5 m 0.89 / 0.83.
constexpr unsigned kRadiusRowMax = 512;
static_assert(kRadiusRowMax <= 32 * 16, "k_radius_fill_sorted sorts a row in registers, 16 a lane");
constexpr unsigned kRadiusBlockRowMax = 8192;
static_assert(kRadiusRowMax > kLongRowBlock && kRadiusBlockRowMax % kLongRowBlock == 0,
              "sort_long_row takes rows longer than a block, in room of whole blocks");

}  // namespace

namespace {

// The rows' start offsets from their counts (b.counts), on the device and in b.offsets_host
// (page-locked), with the longest row's length from b.most where `longest`; waits for them, sizes
// the indices and distances, and returns the number of neighbours. search_radius copies them
// into the caller's vector while the fill runs: through the driver's copy into that pageable
// vector, here, between the count and the fill, the neighbours stage of KITTI's FPFH at 0.5 m
// took 1.46-1.49 ms against 1.30, the bunny's at 5 mm 0.15-0.18 against 0.10-0.11 (H200).
std::size_t offsets_from_counts(RadiusScratch& b, std::size_t n, bool longest, cudaStream_t s) {
  CU_CHECK(cudaMemsetAsync(b.counts.get() + n, 0, sizeof(unsigned), s));  // the sum's last entry
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, b.counts.get(), b.offsets.get(),
                                         int(n + 1), s));
  b.temp.reserve(bytes);
  CU_CHECK(cub::DeviceScan::ExclusiveSum(b.temp.get(), bytes, b.counts.get(), b.offsets.get(),
                                         int(n + 1), s));
  CU_CHECK(cudaMemcpyAsync(b.offsets_host.get(), b.offsets.get(), (n + 1) * sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  if (longest)
    CU_CHECK(cudaMemcpyAsync(b.most_host.get(), b.most.get(), sizeof(unsigned),
                             cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaStreamSynchronize(s));  // the total sizes the output
  const std::size_t total = b.offsets_host.get()[n];
  b.index.reserve(std::max<std::size_t>(total, 1));
  b.d2.reserve(std::max<std::size_t>(total, 1));
  return total;
}

// Whether the long rows' unsorted keys (8 bytes a neighbour, beside the result's 8) get room of
// their own: within the cap of set_gpu_memory_limit with the result, or without a cap nine
// tenths of the free device memory. Without it the rows are filled and sorted where they lie
// in the result (the fill slower: RadiusRowInPlace).
bool keys_fit(const RadiusScratch& b, std::size_t total) {
  if (b.keys.capacity() >= total) return true;
  const std::size_t bytes = total * sizeof(unsigned long long);
  if (const std::size_t cap = gpu_memory_limit()) return 2 * bytes <= cap;
  std::size_t free_bytes = 0, device_bytes = 0;
  CU_CHECK(cudaMemGetInfo(&free_bytes, &device_bytes));
  // The keys held now are freed first.
  free_bytes += b.keys.capacity() * sizeof(unsigned long long);
  return bytes <= free_bytes / 10 * 9;
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
// where it fits kRadiusRowMax (see k_radius_fill_sorted), by a block where it fits
// kRadiusBlockRowMax (k_sort_long_rows), by the segmented sort beyond.
std::size_t search_radius_grid(const GridSearch& search, const float3* queries, int nq, float r2,
                               RadiusScratch& b, cudaStream_t s) {
  const std::size_t n = std::size_t(nq);
  const int B = cuda::blocks_for(n * 32, kSearchThreads);
  b.most.reserve(2);
  b.most_host.reserve(1);
  CU_CHECK(cudaMemsetAsync(b.most.get(), 0, 2 * sizeof(unsigned), s));
  k_radius_count_warp<<<B, kSearchThreads, 0, s>>>(search, queries, nq, r2, b.counts.get(),
                                                   b.most.get());
  CU_CHECK_LAUNCH("k_radius_count_warp");
  const std::size_t total = offsets_from_counts(b, n, true, s);
  if (total == 0) return 0;
  const unsigned most = b.most_host.get()[0];
  // Shared memory for the longest row (at least a warp's width), up to 32 KB a block.
  const unsigned cap = std::min(kRadiusRowMax, std::bit_ceil(std::max(most, 32u)));
  const int warps = int(std::min<std::size_t>(kSearchThreads / 32, 32768 / (cap * 8)));
  const bool long_rows = most > cap;
  // Past the block's room, the longest rows still go through the segmented sort.
  const unsigned block_cap =
      std::min(kRadiusBlockRowMax, (most + kLongRowBlock - 1) / kLongRowBlock * kLongRowBlock);
  const bool longest_rows = most > block_cap;
  // Room for the long rows' keys where the device has it, else rows up to block_cap in place.
  const bool in_place = long_rows && !longest_rows && !keys_fit(b, total);
  if (long_rows) b.long_rows.reserve(n);
  if (long_rows && !in_place) b.keys.reserve(total);
  if (longest_rows) b.sorted_keys.reserve(total);
  const auto fill = in_place ? &k_radius_fill_sorted<true> : &k_radius_fill_sorted<false>;
  fill<<<cuda::blocks_for(n * 32, warps * 32), warps * 32,
         std::size_t(warps) * cap * sizeof(unsigned long long), s>>>(
      search, queries, nq, r2, cap, block_cap, b.offsets.get(), b.keys.get(), b.long_rows.get(),
      b.most.get() + 1, b.index.get(), b.d2.get());
  CU_CHECK_LAUNCH("k_radius_fill_sorted");
  if (long_rows) {
    const std::size_t block_bytes = std::size_t(block_cap) * sizeof(unsigned long long);
    const auto sort = in_place ? &k_sort_long_rows<true> : &k_sort_long_rows<false>;
    CU_CHECK(
        cudaFuncSetAttribute(sort, cudaFuncAttributeMaxDynamicSharedMemorySize, int(block_bytes)));
    // The long rows' count is on the device: one wave of blocks takes them in strides.
    sort<<<cuda::resident_blocks(sort, kLongRowThreads, block_bytes), kLongRowThreads, block_bytes,
           s>>>(b.long_rows.get(), b.most.get() + 1, b.offsets.get(), b.keys.get(), block_cap,
                b.index.get(), b.d2.get());
    CU_CHECK_LAUNCH("k_sort_long_rows");
  }
  if (longest_rows) {
    sort_rows(b, total, n,
              thrust::make_transform_iterator(thrust::make_counting_iterator(0),
                                              LongRowEnd{b.offsets.get(), block_cap}),
              s);
    k_split_long_rows<<<B, kSearchThreads, 0, s>>>(b.sorted_keys.get(), b.offsets.get(), nq,
                                                   block_cap, b.index.get(), b.d2.get());
    CU_CHECK_LAUNCH("k_split_long_rows");
  }
  return total;
}

// The kd-tree's and brute force's radius search: a thread a query, every row through the
// segmented sort.
std::size_t search_radius_tree(const DeviceIndex& index, const float3* queries, int nq, float r2,
                               RadiusScratch& b, cudaStream_t s) {
  const std::size_t n = std::size_t(nq);
  const int B = cuda::blocks_for(n, kSearchThreads);
  index.with_search([&](auto search) {
    k_radius_count<<<B, kSearchThreads, 0, s>>>(search, queries, nq, r2, b.counts.get());
    CU_CHECK_LAUNCH("k_radius_count");
  });
  const std::size_t total = offsets_from_counts(b, n, false, s);
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

}  // namespace

std::size_t search_radius(const DeviceIndex& index, const float3* queries, int nq, float r2,
                          RadiusScratch& b, std::vector<unsigned>& host_offsets, cudaStream_t s) {
  const std::size_t n = std::size_t(nq);
  b.counts.reserve(n + 1);
  b.offsets.reserve(n + 1);
  b.offsets_host.reserve(n + 1);
  if (nq == 0) {
    host_offsets.assign(1, 0);
    return 0;
  }
  const std::size_t total = index.searches_grid()
                                ? search_radius_grid(index.grid_search(), queries, nq, r2, b, s)
                                : search_radius_tree(index, queries, nq, r2, b, s);
  // The fill is queued: the offsets go out while it runs.
  host_offsets.assign(b.offsets_host.get(), b.offsets_host.get() + n + 1);
  return total;
}

}  // namespace cumulus::nns
