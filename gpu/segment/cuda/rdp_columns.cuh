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

// A batch's pixels in metres: depth images held as floats, or the raw 16-bit units of depth
// PNGs with their metres a unit. Raw units take half the upload and are scaled here by the rule
// load_depth_image uses on the host (depth_from_unit), so both give the same signal and cut rows.
struct MetrePixels {
  const float* data;
  __device__ float operator()(std::size_t i) const { return data[i]; }
};
struct RawPixels {
  const std::uint16_t* data;
  double metres_per_unit;
  __device__ float operator()(std::size_t i) const {
    return depth_from_unit(data[i], metres_per_unit);
  }
};

template <int kThreads, int kItems, class Pixels>
__global__ void __launch_bounds__(kThreads)
    k_rdp_columns(Pixels images, int width, int height, float epsilon, bool perpendicular,
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
  const std::size_t src = std::size_t(image) * width * height + column;
  const int base = threadIdx.x * kItems;  // this thread's rows: base .. base + kItems - 1

  // Load the column (and median-filter it with the window's valid pixels, like the CPU).
  for (int r = threadIdx.x; r < height; r += kThreads)
    sig[r] = images(src + std::size_t(r) * width);
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
  // Each row's segment: the previous and next cut (an inclusive max-scan over rows, and the same
  // over reversed positions k = height - 1 - row), scanned once. Cuts are only ever added inside
  // a segment, so afterwards a thread moves its rows' ends itself: rows before a segment's new
  // cut take it as their next cut, rows after it as their previous. And a segment whose
  // farthest point is within epsilon is never cut again, so its rows are done: they skip the
  // distance (a rounded division) and the atomics from then on. The cut rows and the levels
  // equal the full re-evaluation's (and the CPU's) by construction.
  int prev[kItems], next[kItems];
  // Bit j: row base + j is a cut, invalid, past the column or in a final segment.
  unsigned done = 0;
  if (column_has_data) {
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
    }
    __syncthreads();
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j;
      if (r >= height || cut[r] || !valid(sig[r]))
        done |= 1u << j;
      else
        next[j] = next_cut[r];  // piece ends are cuts, so both ends exist
    }
  }
  while (column_has_data) {  // the same for the whole block
    ++iterations;
    for (int j = 0; j < kItems; ++j)
      if (base + j < height) best[base + j] = 0;
    __syncthreads();
    float dist[kItems];
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j, p = prev[j], q = next[j];
      dist[j] = done >> j & 1u
                    ? 0.0f
                    : segment_math::distance(sig[p], sig[q], sig[r], p, q, r, perpendicular, pitch);
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
      const int sj = done >> j & 1u ? -1 : prev[j];
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
      if (done >> j & 1u) continue;
      const unsigned long long key = best[prev[j]];
      if (!(__uint_as_float(unsigned(key >> 32)) > epsilon)) {
        done |= 1u << j;  // the segment is final
        continue;
      }
      const int w = int(0xffffffffu - unsigned(key & 0xffffffffu)), r = base + j;
      if (w == r) {
        cut[r] = 1;
        new_cut = true;
        done |= 1u << j;
      } else if (w < r) {
        prev[j] = w;
      } else {
        next[j] = w;
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

template <int kThreads, int kItems, class Pixels>
void launch(int blocks, std::size_t smem, cudaStream_t s, Pixels images, int width, int height,
            const SegmentParams& p, unsigned* bits, unsigned* counts, unsigned char* levels) {
  auto* fn = &k_rdp_columns<kThreads, kItems, Pixels>;
  CU_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fn<<<blocks, kThreads, smem, s>>>(images, width, height, p.epsilon,
                                    p.distance == SegmentDistance::Perpendicular, p.row_pitch,
                                    p.median, bits, counts, levels);
  CU_CHECK_LAUNCH("k_rdp_columns");
}

// Every column of `blocks / width` row-major images of width x height (at most kMaxRows rows)
// on stream s: per column its cut rows as bits (32 rows a word, (height + 31) / 32 words),
// their number and the recursion levels.
template <class Pixels>
void launch_rdp_columns(int blocks, cudaStream_t s, Pixels images, int width, int height,
                        const SegmentParams& p, unsigned* bits, unsigned* counts,
                        unsigned char* levels) {
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
