#pragma once
// The canonical relabelling's kernels (canonicalize_on_device in cluster_gpu.cu): the listed
// components ranked in PCL's order, and every point labelled with its component's rank.
#include "cluster/cuda/cluster_gpu_common.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/device_clock.cuh"

namespace cumulus::cluster_cuda {
namespace {

__global__ void k_count_components(const int* component, int n, int* count, int* minidx, int* roots,
                                   int* counters) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  warp_add_to_component(i < n ? component[i] : -1, i, count, minidx, roots, &counters[kClusters]);
}

// A component's key = (n - size, smallest point): ascending keys are PCL's order (largest first)
// with ties broken by the first point, and every key is distinct.
__device__ __forceinline__ unsigned long long component_key(int size, int smallest, int n) {
  return ((unsigned long long)unsigned(n - size) << 32) | unsigned(smallest);
}

// Position of an entry in sorted order -> its rank among kept clusters, and its size.
__device__ __forceinline__ void place(unsigned long long key, int id, int p, int n,
                                      unsigned min_size, unsigned max_size, int big, int* rank,
                                      int* sizes) {
  const unsigned s = unsigned(n) - unsigned(key >> 32);
  if (s > max_size || s < min_size) {
    rank[id] = -1;
    return;
  }
  rank[id] = p - big;
  sizes[p - big] = int(s);
}

// A block's warps rank 32 entries; every block first builds all K keys in shared memory, each
// thread at most kKeysEach of them with their loads side by side (one round of two dependent
// loads: the root, then its count and smallest point).
constexpr int kRankBlock = 1024, kRankBlocks = kRankSmall * 32 / kRankBlock;
constexpr int kKeysEach = kRankSmall / kRankBlock;
static_assert(kRankSmall <= 32767, "labels of the small path fit in 16 bits");
static_assert(kKeysEach * kRankBlock == kRankSmall, "a block builds every key in one round");

// The listed components (k_cell_components or k_count_components: `roots`, K of them) ranked in
// PCL's order. Up to kRankSmall: a warp for each entry counts the keys below its own (keys are
// distinct), its lanes a 32nd of them each, and every block counts the too-large components it
// needs for the ranks itself, so nothing waits for another block (it had taken a kernel to
// collect the entries from a count a node, 3-4 us on an H200 for a KITTI frame, and one more
// boundary). Launched before K is known: with more, it writes the sort's keys and the counts of
// too-large and kept components, and the sorted path ranks them.
__global__ void k_rank_components(const int* roots, const int* count, const int* minidx, int n,
                                  unsigned min_size, unsigned max_size, int* counters,
                                  unsigned long long* keys, int* rank, int* sizes) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  cuda::stamp_start(stamps_in(counters) + kRelabellingStart);  // see run_fast
  const int K = counters[kClusters];
  if (K > kRankSmall) {
    const int stride = int(gridDim.x * blockDim.x);
    for (int e0 = int(blockIdx.x * blockDim.x); e0 < K; e0 += stride) {  // whole warps
      const int e = e0 + int(threadIdx.x);
      int s = 0;
      if (e < K) {
        const int r = roots[e];
        s = count[r];
        keys[e] = component_key(s, minidx[r], n);
      }
      warp_count(&counters[kBig], s > 0 && unsigned(s) > max_size);
      warp_count(&counters[kKept], s > 0 && unsigned(s) >= min_size && unsigned(s) <= max_size);
    }
    return;
  }
  const int warps = kRankBlock / 32, first = int(blockIdx.x) * warps;
  if (first >= K) return;  // the whole block
  __shared__ unsigned long long key_of[kRankSmall];
  __shared__ int big, kept;
  if (threadIdx.x == 0) big = kept = 0;
  int r[kKeysEach];
#pragma unroll
  for (int k = 0; k < kKeysEach; ++k) {
    const int f = int(threadIdx.x) + k * kRankBlock;
    r[k] = f < K ? roots[f] : -1;
  }
  int my_big = 0, my_kept = 0;
#pragma unroll
  for (int k = 0; k < kKeysEach; ++k) {
    if (r[k] < 0) continue;
    const int s = count[r[k]];
    key_of[threadIdx.x + k * kRankBlock] = component_key(s, minidx[r[k]], n);
    my_big += unsigned(s) > max_size;
    my_kept += unsigned(s) >= min_size && unsigned(s) <= max_size;
  }
  __syncthreads();  // big and kept cleared
  if (my_big) atomicAdd(&big, my_big);
  if (my_kept) atomicAdd(&kept, my_kept);
  __syncthreads();  // every key built, every count in
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    counters[kBig] = big;
    counters[kKept] = kept;
  }
  const int e = first + int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  if (e >= K) return;  // whole warps
  const unsigned long long mine = key_of[e];
  int below = 0;
  for (int f = lane; f < K; f += 32)
    below += key_of[f] < mine;
  for (int offset = 16; offset > 0; offset >>= 1)
    below += __shfl_xor_sync(0xffffffffu, below, offset);
  if (lane == 0) place(mine, roots[e], below, n, min_size, max_size, big, rank, sizes);
}

__global__ void k_rank_sorted(const unsigned long long* sorted_keys, const int* sorted_ids, int n,
                              unsigned min_size, unsigned max_size, const int* counters, int* rank,
                              int* sizes) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= counters[kClusters]) return;
  place(sorted_keys[p], sorted_ids[p], p, n, min_size, max_size, counters[kBig], rank, sizes);
}

// only_if_small: launched beside k_rank_components before the count is known, so it labels nothing
// where k_rank_components ranked nothing. With host_summary (page-locked host memory) its last
// block also writes everything the host reads after the kernel there: the counters, the stamps (the
// last one, the kernel's end, its own) and the small path's sizes; and every block writes its
// labels there too: into the result itself where its storage is page-locked (result_labels),
// else in 16 bits into host_labels16 (at most kRankSmall clusters fit) for the host to widen.
// So no copy follows the kernel: five copies after it (the counters and sizes, the labels in four
// chunks) took 22-30 us on an H200, far more than their 0.25 MB. The last block then writes `done`
// at kDoneAt, after a fence at the system's scope, and the host stops waiting when that word
// lands instead of when the stream's event does. One such fence is enough: PTX's fences are
// cumulative, so it orders for the host every write the last block has seen ordered before the
// other blocks' counts. (A system-scope fence in every block took the relabelling from 12.6-15.4
// to 16.7-17.4 us on KITTI frame 0, H200.)
__global__ void k_labels(PointComponents component, const int* rank, int n, int* counters,
                         bool only_if_small, int* labels, int* result_labels, short* host_labels16,
                         int* host_summary, bool zero_counters, unsigned done) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool small = counters[kClusters] <= kRankSmall;
  if (i < n && (small || !only_if_small)) {
    const int c = component.of(i);
    const int label = c < 0 ? -1 : rank[c];
    labels[i] = label;
    if (result_labels)
      result_labels[i] = label;
    else if (host_labels16)
      host_labels16[i] = short(label);
  }
  if (!host_summary) return;  // the same for the whole grid
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(&counters[kLabelBlocks], 1) == int(gridDim.x) - 1;
  }
  __syncthreads();
  if (!last) return;
  const int ints = kSizesAt + (small ? __ldcg(counters + kKept) : 0);
  for (int w = threadIdx.x; w < ints; w += blockDim.x)
    if (w < kStampsAt + 2 * (kStamps - 1) || w >= kSizesAt) host_summary[w] = __ldcg(counters + w);
  __syncthreads();
  if (threadIdx.x == 0) {
    stamps_in(host_summary)[kLabelsEnd] = cuda::device_now();
    if (done) {
      __threadfence_system();
      *reinterpret_cast<volatile unsigned*>(host_summary + kDoneAt) = done;
    }
  }
  // For the next call of the fast method, whose first kernel then need not (canonicalize's
  // `behind`); the sorted path still reads them.
  if (zero_counters && small && threadIdx.x < kCounters) counters[threadIdx.x] = 0;
}

}  // namespace
}  // namespace cumulus::cluster_cuda
