#pragma once
// A radius row's keys (distance, then index: visitors.cuh's keys) sorted ascending by bitonic
// networks and written out as indices and distances: a row of up to 512 keys by its warp in
// registers (sort_short_row, sort_row_blocked), a longer one by a block, blocks of 256 keys in
// its warps' registers and the steps between them in its shared memory (sort_long_row).
// Included by radius_gpu.cu only.
#include <cuda_runtime.h>

#include <bit>

#include "nns/cuda/visitors.cuh"

namespace cumulus::nns {
namespace {

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

// The steps of a long row's network between keys 32 E or more apart, on the block's shared
// memory (entry i at blocked_place(i), whose turn of the low four bits leaves such steps'
// distances as they are), their compare-exchanges shared by the block's threads. Every
// comparator puts the smaller key at the lower entry, so the padding after a row's m keys never
// moves: the pairs whose upper entry lies past m are left out, and the row needs no room or
// padding past its last block. flip_step is a stage's first step (entry i of each run of k
// against its mirror image, k - 1 - i), half_clean_step one of its later ones (i against i + j).
// Pair t's lower entry grows with t, so the pairs kept are those of t in one or two ranges.
__device__ __forceinline__ void exchange_places(unsigned long long* row, unsigned i, unsigned l) {
  const unsigned pi = blocked_place(i), pl = blocked_place(l);
  const unsigned long long a = row[pi], b = row[pl];
  if (a > b) {
    row[pi] = b;
    row[pl] = a;
  }
}
__device__ __forceinline__ void exchange_pairs(unsigned long long* row, unsigned begin,
                                               unsigned end, unsigned half, bool flip) {
  for (unsigned t = begin + threadIdx.x; t < end; t += 32 * (blockDim.x / 32)) {
    const unsigned i = 2 * t - (t & (half - 1));  // the lower half of its run of 2 half
    exchange_places(row, i, flip ? i ^ (2 * half - 1) : i + half);
  }
}
__device__ __forceinline__ void flip_step(unsigned long long* row, unsigned m, unsigned k) {
  // The runs wholly within m, then in the run that holds m the pairs whose mirror lies below it.
  const unsigned runs = m / k, rest = m % k, whole = runs * (k / 2);
  exchange_pairs(row, 0, whole, k / 2, true);
  if (rest > k / 2) exchange_pairs(row, whole + (k - rest), whole + k / 2, k / 2, true);
  __syncthreads();
}
__device__ __forceinline__ void half_clean_step(unsigned long long* row, unsigned m, unsigned j) {
  // Lower entries below m - j: whole runs of 2 j, then part of the next run's lower half.
  const unsigned below = m - j, runs = below / (2 * j);
  exchange_pairs(row, 0, runs * j + min(below % (2 * j), j), j, false);
  __syncthreads();
}

// A row of m > 32 E keys from `from` (global memory; with InPlace from `index` and `d2`, where
// the row lies unsorted) sorted in the block's shared memory `row` (room for m rounded up to a
// whole block of 32 E keys) and written out as indices and distances. The network is the bitonic
// sort's in the form whose comparators all put the smaller key first (each stage's first step
// compares mirror images), over m rounded up to a power of two, with every pair past m left out:
// a row of 5,032 keys costs the network's pairs within its 5,032 keys, not 8,192's (the LiDAR
// frame's long rows at 0.5 m, 5,032 of them that long, 2,065 -> 1,617 us against the padded
// network; ncu, H200). The network's steps between keys less than 32 E apart run on blocks of 32
// E keys, each held in registers by one of the block's warps (blocked layout: 15 of a block
// sort's 36 steps and 5 of a merge's 8 shuffled): its first stages as an ascending sort of each
// block, and the last steps of each later stage as an ascending merge of each block. Only the
// steps between keys 32 E or more apart read and write the row in shared memory, a pass each
// (KITTI at 0.5 m, 4 % of its rows over 512 keys: the kernel 1,274 -> 1,206 us against the whole
// network in shared memory; ncu, H200).
template <int E, bool InPlace>
__device__ __forceinline__ void sort_long_row(const unsigned long long* from, unsigned m,
                                              unsigned long long* row, int* index, float* d2) {
  constexpr unsigned kBlock = 32 * E;
  constexpr unsigned kTurnShift = std::countr_zero(16u / unsigned(E));
  const unsigned lane = threadIdx.x & 31u;
  const unsigned first = threadIdx.x / 32 * kBlock, stride = blockDim.x / 32 * kBlock;
  const unsigned n = 1u << (32 - __clz(int(m - 1)));  // m rounded up to a power of two
  unsigned long long key[E];
  for (unsigned base = first; base < m; base += stride) {
    // A block's keys in any order (its first stages sort them whatever it is), turned as in
    // sort_row_blocked; the last block's padding sorts to its end.
#pragma unroll
    for (unsigned e = 0; e < unsigned(E); ++e) {
      const unsigned i = base + unsigned(E) * lane + ((e + (lane >> kTurnShift)) & unsigned(E - 1));
      // In place, every key is read before the last stage writes over them (the waits between).
      if constexpr (InPlace)
        key[e] = i < m ? distance_key(d2[i], index[i]) : ~0ull;  // after every key
      else
        key[e] = i < m ? from[i] : ~0ull;
    }
    warp_bitonic_sort_blocked<E>(key, lane);
    store_block<E>(row + base, lane, key);
  }
  __syncthreads();
  for (unsigned k = 2 * kBlock; k <= n; k <<= 1) {
    flip_step(row, m, k);
    for (unsigned j = k >> 2; j >= kBlock; j >>= 1)
      half_clean_step(row, m, j);
    const bool last = k == n;
    for (unsigned base = first; base < m; base += stride) {
      load_block<E>(row + base, lane, key);
      warp_bitonic_merge_blocked<E>(key, lane, true);
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
constexpr unsigned kLongRowBlock = 256;

}  // namespace
}  // namespace cumulus::nns
