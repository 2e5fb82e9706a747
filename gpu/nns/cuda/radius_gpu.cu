// The GPU radius search over device-resident queries (nns/cuda/device_search.cuh): the grid's
// rows counted, filled and sorted by a warp a query (rows too long for a warp's shared memory by
// a block, the longest of all by CUB's segmented sort); the kd-tree's and brute force's a thread
// a query, sorted by CUB's segmented sort.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <bit>

#include "core/cuda/occupancy.cuh"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"
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

// One step (distance j) of the bitonic network of stage k over `n` keys (a power of two) of the
// block's shared memory, its n / 2 compare-exchanges shared by the block's threads: ascending
// where the pair's lower place has bit k clear.
__device__ __forceinline__ void block_bitonic_step(unsigned long long* keys, unsigned n, unsigned k,
                                                   unsigned j) {
  for (unsigned t = threadIdx.x; t < n / 2; t += 32 * (blockDim.x / 32)) {
    const unsigned i = 2 * t - (t & (j - 1)), l = i + j;  // i has bit j clear
    const unsigned long long a = keys[i], b = keys[l];
    if ((a > b) == ((i & k) == 0)) {
      keys[i] = b;
      keys[l] = a;
    }
  }
  __syncthreads();
}

// Orders two keys of a lane: the smaller into `a` where `up`.
__device__ __forceinline__ void order_keys(unsigned long long& a, unsigned long long& b, bool up) {
  const unsigned long long x = a, y = b;
  if ((x > y) == up) {
    a = y;
    b = x;
  }
}

// A step between lanes `across` apart on each of a lane's E keys: key e keeps the smaller of its
// pair where take_smaller(e), the larger elsewhere.
template <int E, class TakeSmaller>
__device__ __forceinline__ void exchange_across(unsigned long long (&key)[E], unsigned across,
                                                TakeSmaller take_smaller) {
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const unsigned long long other = __shfl_xor_sync(0xffffffffu, key[e], across);
    key[e] = (other < key[e]) == take_smaller(e) ? other : key[e];
  }
}

// One step (distance j) of a bitonic network on 32 E keys held by a warp, entry 32 e + lane in
// key[e]: between entries of one lane (a distance of 32 or more) on registers, the others by
// shuffles. up(e): whether this lane's entry e lies in an ascending part of the network.
template <int E, class Up>
__device__ __forceinline__ void warp_bitonic_step_registers(unsigned long long (&key)[E],
                                                            unsigned lane, int j, Up up) {
  if (j >= 32) {
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int f = e ^ (j / 32);
      if (f > e) order_keys(key[e], key[f], up(e));  // e holds the pair's lower entry
    }
  } else {
    const bool lower = (lane & unsigned(j)) == 0;
    exchange_across(key, unsigned(j), [&](int e) { return lower == up(e); });
  }
}

// Sorts 32 E keys held by a warp ascending: the whole network, step by step as above. On KITTI's
// rows at 0.5 m the network in shared memory kept the L1 and shared memory's data path 96 % busy
// (ncu) while the SMs issued in 44 % of their cycles.
template <int E>
__device__ __forceinline__ void warp_bitonic_sort_registers(unsigned long long (&key)[E],
                                                            unsigned lane) {
#pragma unroll
  for (int k = 2; k <= 32 * E; k <<= 1)
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1)
      warp_bitonic_step_registers<E>(
          key, lane, j, [&](int e) { return ((unsigned(e) * 32u + lane) & unsigned(k)) == 0; });
}

// Sorts 32 E keys held by a warp ascending, entry E lane + e in key[e] (each lane's entries
// side by side): the network's steps between entries less than E apart on a lane's registers,
// the others by shuffles. Where warp_bitonic_sort_registers holds entry 32 e + lane and shuffles
// at every step under 32 apart (30 of the 36 steps for 256 keys, 35 of 45 for 512), this
// shuffles at 15 whatever E. (A shuffled step, two shuffles and a 64-bit comparison a key, made
// the sort about half of the fill's instructions: ncu's source counters, KITTI at 0.5 m, H200;
// the fill 1.03 -> 0.93 ms this way.) Lane l's entries lie in an ascending part of stage k
// where bit k of E l + e is clear: from k = E on that is bit k / E of the lane, the same for all
// its keys.
template <int E>
__device__ __forceinline__ void warp_bitonic_sort_blocked(unsigned long long (&key)[E],
                                                          unsigned lane) {
#pragma unroll
  for (int k = 2; k <= 32 * E; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
      if (j >= E) {
        const unsigned across = unsigned(j / E);
        const bool take_smaller = ((lane & across) == 0) == ((lane & unsigned(k / E)) == 0);
        exchange_across(key, across, [take_smaller](int) { return take_smaller; });
      } else {
#pragma unroll
        for (int e = 0; e < E; ++e)
          if ((e & j) == 0)
            order_keys(key[e], key[e | j], k < E ? (e & k) == 0 : (lane & unsigned(k / E)) == 0);
      }
    }
  }
}

// Where entry i of a sorted row of up to 512 keys waits in the warp's shared memory between the
// blocked sort and the striped stores: its low four bits (which of the 16 pairs of banks a
// 64-bit key takes) turned by the next four, so that a lane's e-th entries (E l + e) and 32
// consecutive entries both spread over every pair of banks.
__device__ __forceinline__ unsigned blocked_place(unsigned i) {
  return i ^ ((i >> 4) & 15u);
}

// A row of m <= 32 E keys (2 <= E <= 16) from the warp's shared memory into registers, sorted
// there (warp_bitonic_sort_blocked) and written out as indices and distances, by way of the
// shared memory again so that the warp's stores coalesce (entry 32 e + lane by lane); the row's
// room holds 32 E keys (m rounded up to a power of two, as k_radius_fill_sorted's cap). A lane
// reads its E entries in an order turned by its place in the half-warp: its first stages sort
// them whatever their order, and the turn spreads each read over the banks.
template <int E>
__device__ __forceinline__ void sort_row_blocked(unsigned long long* row, unsigned m, unsigned lane,
                                                 int* index, float* d2) {
  static_assert(E >= 2 && E <= 16 && (E & (E - 1)) == 0);
  constexpr unsigned kTurnShift = std::countr_zero(16u / unsigned(E));
  unsigned long long key[E];
#pragma unroll
  for (unsigned e = 0; e < unsigned(E); ++e) {
    const unsigned i = unsigned(E) * lane + ((e + (lane >> kTurnShift)) & unsigned(E - 1));
    key[e] = i < m ? row[i] : ~0ull;  // after every key
  }
  warp_bitonic_sort_blocked<E>(key, lane);
  __syncwarp();  // every lane has read its entries before any is overwritten
#pragma unroll
  for (unsigned e = 0; e < unsigned(E); ++e)
    row[blocked_place(unsigned(E) * lane + e)] = key[e];
  __syncwarp();
#pragma unroll
  for (unsigned e = 0; e < unsigned(E); ++e) {
    const unsigned i = e * 32u + lane;
    if (i < m) {
      const unsigned long long k = row[blocked_place(i)];
      index[i] = key_index(k);
      d2[i] = key_distance(k);
    }
  }
}

// A row of m <= 32 keys from the warp's shared memory, sorted by shuffles and written out.
__device__ __forceinline__ void sort_short_row(const unsigned long long* row, unsigned m,
                                               unsigned lane, int* index, float* d2) {
  unsigned long long key[1] = {lane < m ? row[lane] : ~0ull};  // after every key
  warp_bitonic_sort_registers<1>(key, lane);
  if (lane < m) {
    index[lane] = key_index(key[0]);
    d2[lane] = key_distance(key[0]);
  }
}

// The bitonic network's last steps (distances 16 E down to 1) on 32 E keys held by a warp in the
// blocked layout (entry E lane + e in key[e]), ascending or not: a block of a longer network,
// whose steps up to here have made it bitonic.
template <int E>
__device__ __forceinline__ void warp_bitonic_merge_blocked(unsigned long long (&key)[E],
                                                           unsigned lane, bool up) {
#pragma unroll
  for (int j = 16 * E; j > 0; j >>= 1) {
    if (j >= E) {
      const unsigned across = unsigned(j / E);
      const bool take_smaller = ((lane & across) == 0) == up;
      exchange_across(key, across, [take_smaller](int) { return take_smaller; });
    } else {
#pragma unroll
      for (int e = 0; e < E; ++e)
        if ((e & j) == 0) order_keys(key[e], key[e | j], up);
    }
  }
}

// A block of 32 E keys of a longer row, entry i of the block at blocked_place(i) in the warp's
// shared memory, to or from the blocked layout in registers. The places turn only an entry's
// low four bits, so two entries 32 E or more apart keep their distance: the network's steps
// between blocks run on the places as they would on the entries.
template <int E>
__device__ __forceinline__ void load_block(const unsigned long long* block, unsigned lane,
                                           unsigned long long (&key)[E]) {
#pragma unroll
  for (unsigned e = 0; e < unsigned(E); ++e)
    key[e] = block[blocked_place(unsigned(E) * lane + e)];
}
template <int E>
__device__ __forceinline__ void store_block(unsigned long long* block, unsigned lane,
                                            const unsigned long long (&key)[E]) {
#pragma unroll
  for (unsigned e = 0; e < unsigned(E); ++e)
    block[blocked_place(unsigned(E) * lane + e)] = key[e];
}

// A row of m > 512 keys in the block's shared memory (room for m rounded up to a power of two),
// sorted by the bitonic network of that size and written out as indices and distances. The
// network's steps between keys less than 32 E apart run on blocks of 32 E keys, each held in
// registers by one of the block's warps (blocked layout: 15 of a block sort's 36 steps and 5 of a
// merge's 8 shuffled, where the striped layout shuffled 30 of the sort's): its first stages as a
// sort of each block (alternately ascending and descending), and the last steps of each later
// stage as a merge of each block. Only the steps between keys 32 E or more apart read and write
// the row in shared memory, a pass each: three for a row of up to 1,024 keys with E = 8, where
// the whole network in shared memory made 55 passes (KITTI at 0.5 m, 4 % of its rows over 512
// keys: the kernel 1,274 -> 1,206 us, L1 75 -> 61 % busy; ncu, H200).
template <int E>
__device__ __forceinline__ void sort_long_row(unsigned long long* row, unsigned m, int* index,
                                              float* d2) {
  constexpr unsigned kBlock = 32 * E;
  constexpr unsigned kTurnShift = std::countr_zero(16u / unsigned(E));
  const unsigned lane = threadIdx.x & 31u;
  const unsigned first = threadIdx.x / 32 * kBlock, stride = blockDim.x / 32 * kBlock;
  const unsigned n = 1u << (32 - __clz(int(m - 1)));  // m rounded up to a power of two
  for (unsigned i = m + threadIdx.x; i < n; i += 32 * (blockDim.x / 32))
    row[i] = ~0ull;  // after every key
  __syncthreads();
  unsigned long long key[E];
  for (unsigned base = first; base < m; base += stride) {  // blocks of padding alone are sorted
    // A block's keys in any order (its first stages sort them whatever it is), turned as in
    // sort_row_blocked to spread the reads over the banks.
#pragma unroll
    for (unsigned e = 0; e < unsigned(E); ++e)
      key[e] = row[base + unsigned(E) * lane + ((e + (lane >> kTurnShift)) & unsigned(E - 1))];
    warp_bitonic_sort_blocked<E>(key, lane);
    if (base & kBlock) {  // descending: entry i of the block takes the place of entry 32 E - 1 - i
#pragma unroll
      for (unsigned e = 0; e < unsigned(E) / 2; ++e) {
        const unsigned long long t = key[e];
        key[e] = key[E - 1 - e];
        key[E - 1 - e] = t;
      }
    }
    __syncwarp();  // every lane has read the block before any place is overwritten
    store_block<E>(row + base, (base & kBlock) ? 31 - lane : lane, key);
  }
  __syncthreads();
  for (unsigned k = 2 * kBlock; k <= n; k <<= 1) {
    for (unsigned j = k >> 1; j >= kBlock; j >>= 1)
      block_bitonic_step(row, n, k, j);
    const bool last = k == n;
    for (unsigned base = first; base < (last ? m : n); base += stride) {  // the last writes m keys
      load_block<E>(row + base, lane, key);
      warp_bitonic_merge_blocked<E>(key, lane, (base & k) == 0);
      store_block<E>(row + base, lane, key);  // the places each lane read
      if (last) {
        __syncwarp();  // read back striped, from places other lanes wrote
#pragma unroll
        for (unsigned e = 0; e < unsigned(E); ++e) {
          const unsigned i = base + e * 32 + lane;
          if (i < m) {
            const unsigned long long k = row[base + blocked_place(e * 32 + lane)];
            index[i] = key_index(k);
            d2[i] = key_distance(k);
          }
        }
      }
    }
    __syncthreads();
  }
}

// Blocks of 256 keys (8 a lane): with 512 the kernel took 96 registers instead of 64.
constexpr int kLongRowBlock = 256;

// Each query's row by a warp: a row of up to `cap` keys is gathered in the warp's shared memory,
// sorted there and written out as indices and distances; a longer row goes to `keys` unsorted,
// listed in `long_rows` (its count in long_rows_count) for k_sort_long_rows. (CUB's segmented
// sort gave each row over 64 keys a block of its own: 8.6 of the 11.2 ms of KITTI's radius search
// at 0.5 m, rows of 180 keys on average.)
__global__ void k_radius_fill_sorted(GridSearch search, const float3* queries, int nq, float r2,
                                     unsigned cap, const unsigned* offsets,
                                     unsigned long long* keys, unsigned* long_rows,
                                     unsigned* long_rows_count, int* index, float* d2) {
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
// each: loaded from `keys` into the block's shared memory, sorted by all its warps together and
// written out as indices and distances. Longer ones are left to the segmented sort. Through the
// segmented sort and its split, against this kernel (ncu, H200): the LiDAR frame's 5,032 rows of
// 4,097-6,144 keys at 0.5 m 1.98 against 1.40 ms, its 20,384 rows over 2,048 at 0.8 m 6.50
// against 3.43, KITTI frame 0's at 1.5 m 8.88 against 4.41.
constexpr int kLongRowThreads = 256;
// Three blocks of 64 KB fill an SM's shared memory: registers up to 85 a thread cost nothing (at
// the default bound ptxas held it to 64 and spilled).
__global__ void __launch_bounds__(kLongRowThreads, 3)
    k_sort_long_rows(const unsigned* long_rows, const unsigned* long_rows_count,
                     const unsigned* offsets, const unsigned long long* keys, unsigned block_cap,
                     int* index, float* d2) {
  extern __shared__ unsigned long long block_row[];  // block_cap keys
  const unsigned rows = *long_rows_count;
  for (unsigned r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned q = long_rows[r];
    const unsigned begin = offsets[q], m = offsets[q + 1] - begin;
    if (m > block_cap) continue;  // the whole block
    for (unsigned i = threadIdx.x; i < m; i += blockDim.x)
      block_row[i] = keys[begin + i];
    // sort_long_row's first wait covers these writes; its last, the reads before the next row's.
    sort_long_row<kLongRowBlock / 32>(block_row, m, index + begin, d2 + begin);
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
  const unsigned block_cap = std::min(kRadiusBlockRowMax, std::bit_ceil(most));
  const bool longest_rows = most > block_cap;
  if (long_rows) {
    b.keys.reserve(total);
    b.long_rows.reserve(n);
  }
  if (longest_rows) b.sorted_keys.reserve(total);
  k_radius_fill_sorted<<<cuda::blocks_for(n * 32, warps * 32), warps * 32,
                         std::size_t(warps) * cap * sizeof(unsigned long long), s>>>(
      search, queries, nq, r2, cap, b.offsets.get(), long_rows ? b.keys.get() : nullptr,
      b.long_rows.get(), b.most.get() + 1, b.index.get(), b.d2.get());
  CU_CHECK_LAUNCH("k_radius_fill_sorted");
  if (long_rows) {
    const std::size_t block_bytes = std::size_t(block_cap) * sizeof(unsigned long long);
    CU_CHECK(cudaFuncSetAttribute(k_sort_long_rows, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(block_bytes)));
    // The long rows' count is on the device: one wave of blocks takes them in strides.
    k_sort_long_rows<<<cuda::resident_blocks(k_sort_long_rows, kLongRowThreads, block_bytes),
                       kLongRowThreads, block_bytes, s>>>(b.long_rows.get(), b.most.get() + 1,
                                                          b.offsets.get(), b.keys.get(), block_cap,
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
