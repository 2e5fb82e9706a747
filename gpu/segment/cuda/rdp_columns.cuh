#pragma once
// The RDP column kernel, for the segmentation's own batches (segment_gpu.cu) and for callers
// that already hold a depth or range image on the device (the range-image ground). Private to
// the backend's CUDA sources; each includes its own copy (anonymous namespace), so the
// kernels never meet at link time.
#include <cub/block/block_scan.cuh>

#include "core/cuda/check.cuh"
#include "segment/segment.h"
#include "segment/segment_math.h"

namespace cumulus {

namespace {

constexpr int kMaxRows = 4096;  // 256 threads x 16 rows a thread

struct MaxOp {
  __device__ int operator()(int a, int b) const { return a > b ? a : b; }
};

__device__ __forceinline__ bool valid(float d) {
  return isfinite(d) && d > 0.0f;
}

template <int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    k_rdp_columns(const float* images, int width, int height, float epsilon, bool perpendicular,
                  float pitch, int median, unsigned* cut_bits, unsigned* cut_counts,
                  unsigned char* levels) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  extern __shared__ unsigned long long smem[];
  unsigned long long* best = smem;                       // height: farthest point per segment
  float* sig = reinterpret_cast<float*>(best + height);  // height: the signal
  int* next_cut = reinterpret_cast<int*>(sig + height);  // height: next cut at or after a row
  unsigned char* cut = reinterpret_cast<unsigned char*>(next_cut + height);  // height
  const int column = blockIdx.x % width, image = blockIdx.x / width;
  const float* src = images + std::size_t(image) * width * height;
  const int base = threadIdx.x * kItems;  // this thread's rows: base .. base + kItems - 1

  // Load the column (and median-filter it with the window's valid pixels, like the CPU).
  for (int r = threadIdx.x; r < height; r += kThreads)
    sig[r] = src[std::size_t(r) * width + column];
  __syncthreads();
  if (median > 1) {
    float filtered[kItems];
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j;
      filtered[j] = r < height ? sig[r] : 0.0f;
      if (r >= height || !valid(sig[r])) continue;
      float w[5];
      int k = 0;
      for (int dy = -median / 2; dy <= median / 2; ++dy) {
        const int y = r + dy;
        if (y >= 0 && y < height && valid(sig[y])) w[k++] = sig[y];
      }
      for (int a = 1; a < k; ++a)  // insertion sort of at most 5 values
        for (int b = a; b > 0 && w[b - 1] > w[b]; --b) {
          const float t = w[b];
          w[b] = w[b - 1];
          w[b - 1] = t;
        }
      filtered[j] = w[(k - 1) / 2];
    }
    __syncthreads();
    for (int j = 0; j < kItems; ++j)
      if (base + j < height) sig[base + j] = filtered[j];
    __syncthreads();
  }
  // Piece ends are the first cuts.
  bool any_valid = false;
  for (int j = 0; j < kItems; ++j) {
    const int r = base + j;
    if (r >= height) continue;
    const bool v = valid(sig[r]);
    any_valid |= v;
    cut[r] = v && (r == 0 || !valid(sig[r - 1]) || r == height - 1 || !valid(sig[r + 1]));
  }
  const bool column_has_data = __syncthreads_or(any_valid);
  int iterations = 0;
  while (column_has_data) {  // the same for the whole block
    ++iterations;
    // Previous cut of each row (inclusive max-scan over rows) and next cut (the same scan over
    // reversed positions k = height - 1 - row).
    int prev[kItems], next[kItems];
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j, rr = height - 1 - (base + j);
      prev[j] = (r < height && cut[r]) ? r : -1;
      next[j] = (rr >= 0 && cut[rr]) ? base + j : -1;
    }
    Scan(scan_storage).InclusiveScan(prev, prev, MaxOp{});
    __syncthreads();
    Scan(scan_storage).InclusiveScan(next, next, MaxOp{});
    for (int j = 0; j < kItems; ++j) {
      const int k = base + j;
      if (k < height) next_cut[height - 1 - k] = next[j] < 0 ? -1 : height - 1 - next[j];
      if (k < height) best[k] = 0;
    }
    __syncthreads();
    float dist[kItems];
    int seg_first[kItems];
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j;
      seg_first[j] = -1;
      dist[j] = 0.0f;
      if (r >= height || cut[r] || !valid(sig[r])) continue;
      const int p = prev[j], q = next_cut[r];  // piece ends are cuts, so both exist
      seg_first[j] = p;
      dist[j] = segment_math::distance(sig[p], sig[q], sig[r], p, q, r, perpendicular, pitch);
    }
    // Farthest point per segment: key (distance, lowest row first). A thread's rows are
    // consecutive, so it reduces each run of rows of one segment itself. Only its last run can
    // continue into the next thread; those are combined over the warp by one segmented
    // suffix-max (lanes of one segment are consecutive), whose first lane posts the result.
    // Every other run posts its own maximum. Posting is a shared atomicMax, so runs of one
    // segment in several threads or warps meet there.
    int run_seg = -1;
    unsigned long long run_key = 0;
    for (int j = 0; j < kItems; ++j) {
      const int sj = seg_first[j];
      const unsigned long long key = sj < 0 ? 0ull
                                            : ((unsigned long long)__float_as_uint(dist[j]) << 32) |
                                                  (0xffffffffu - unsigned(base + j));
      if (sj != run_seg) {
        if (run_seg >= 0) atomicMax(&best[run_seg], run_key);
        run_seg = sj;
        run_key = key;
      } else if (key > run_key) {
        run_key = key;
      }
    }
    const int lane = int(threadIdx.x & 31);
    for (int offset = 1; offset < 32; offset <<= 1) {
      const unsigned long long other = __shfl_down_sync(0xffffffffu, run_key, offset);
      const int other_seg = __shfl_down_sync(0xffffffffu, run_seg, offset);
      if (lane + offset < 32 && other_seg == run_seg && other > run_key) run_key = other;
    }
    const int before = __shfl_up_sync(0xffffffffu, run_seg, 1);
    if (run_seg >= 0 && (lane == 0 || before != run_seg)) atomicMax(&best[run_seg], run_key);
    __syncthreads();
    bool new_cut = false;
    for (int j = 0; j < kItems; ++j) {
      if (seg_first[j] < 0) continue;
      const unsigned long long key = best[seg_first[j]];
      if (int(0xffffffffu - unsigned(key & 0xffffffffu)) == base + j &&
          __uint_as_float(unsigned(key >> 32)) > epsilon) {
        cut[base + j] = 1;
        new_cut = true;
      }
    }
    if (!__syncthreads_or(new_cut)) break;
  }
  // Cut flags as bits, 32 rows a word, and their number.
  __shared__ unsigned count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  const int words = (height + 31) / 32;
  unsigned* out = cut_bits + std::size_t(blockIdx.x) * words;
  unsigned mine = 0;
  for (int w = threadIdx.x; w < words; w += kThreads) {
    unsigned bits = 0;
    for (int b = 0; b < 32; ++b) {
      const int r = w * 32 + b;
      if (r < height && cut[r]) bits |= 1u << b;
    }
    out[w] = bits;
    mine += unsigned(__popc(bits));
  }
  if (mine) atomicAdd(&count, mine);
  __syncthreads();
  if (threadIdx.x == 0) {
    levels[blockIdx.x] = (unsigned char)min(iterations, 255);
    cut_counts[blockIdx.x] = count;
  }
}

template <int kThreads, int kItems>
void launch(int blocks, std::size_t smem, cudaStream_t s, const float* images, int width,
            int height, const SegmentParams& p, unsigned* bits, unsigned* counts,
            unsigned char* levels) {
  auto* fn = &k_rdp_columns<kThreads, kItems>;
  CU_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fn<<<blocks, kThreads, smem, s>>>(images, width, height, p.epsilon,
                                    p.distance == SegmentDistance::Perpendicular, p.row_pitch,
                                    p.median, bits, counts, levels);
  CU_CHECK_LAUNCH("k_rdp_columns");
}

// Every column of `blocks / width` row-major images of width x height (at most kMaxRows rows)
// on stream s: per column its cut rows as bits (32 rows a word, (height + 31) / 32 words),
// their number and the recursion levels.
[[maybe_unused]] void launch_rdp_columns(int blocks, cudaStream_t s, const float* images, int width,
                                         int height, const SegmentParams& p, unsigned* bits,
                                         unsigned* counts, unsigned char* levels) {
  const std::size_t smem = std::size_t(height) * (8 + 4 + 4 + 1);
  // Block sizes from 32 to 256 threads measured alike on the H200; eight rows a thread keeps
  // the block small.
  if (height <= 256)
    launch<32, 8>(blocks, smem, s, images, width, height, p, bits, counts, levels);
  else if (height <= 512)
    launch<64, 8>(blocks, smem, s, images, width, height, p, bits, counts, levels);
  else if (height <= 1024)
    launch<128, 8>(blocks, smem, s, images, width, height, p, bits, counts, levels);
  else if (height <= 2048)
    launch<256, 8>(blocks, smem, s, images, width, height, p, bits, counts, levels);
  else
    launch<256, 16>(blocks, smem, s, images, width, height, p, bits, counts, levels);
}

}  // namespace

}  // namespace cumulus
