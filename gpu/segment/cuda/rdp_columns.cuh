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

// The threads that segment one column: a whole block (tall columns), or one warp of a block
// that holds several columns. A column's loop is a chain of barriers, so short columns go a
// warp each: their barriers are __syncwarp, and blocks of several warps keep more columns on an
// SM than blocks of one or two warps can (an SM holds at most 32 blocks).
template <int kThreads>
struct BlockOfThreads {
  using Scan = cub::BlockScan<int, kThreads>;
  struct Storage {
    typename Scan::TempStorage scan;
    unsigned total;
  };
  Storage& storage;
  static constexpr int size = kThreads;
  __device__ int rank() const { return int(threadIdx.x); }
  __device__ void sync() const { __syncthreads(); }
  __device__ bool any(bool v) const { return __syncthreads_or(v); }
  // Inclusive max over the rows, each thread's rows consecutive.
  template <int kItems>
  __device__ void max_scan(int (&v)[kItems]) const {
    Scan(storage.scan).InclusiveScan(v, v, MaxOp{});
    __syncthreads();
  }
  __device__ unsigned sum(unsigned mine) const {
    if (threadIdx.x == 0) storage.total = 0;
    __syncthreads();
    if (mine) atomicAdd(&storage.total, mine);
    __syncthreads();
    return storage.total;
  }
};

struct WarpOfThreads {
  static constexpr int size = 32;
  __device__ int rank() const { return int(threadIdx.x & 31); }
  __device__ void sync() const { __syncwarp(); }
  // The shared stores before it are seen by every lane after it (__syncwarp orders memory).
  __device__ bool any(bool v) const {
    __syncwarp();
    return __any_sync(0xffffffffu, v);
  }
  template <int kItems>
  __device__ void max_scan(int (&v)[kItems]) const {
    for (int j = 1; j < kItems; ++j)
      v[j] = max(v[j], v[j - 1]);
    const int lane = rank();
    int carried = v[kItems - 1];  // becomes the max over this lane's rows and all before
    for (int o = 1; o < 32; o <<= 1) {
      const int x = __shfl_up_sync(0xffffffffu, carried, o);
      if (lane >= o) carried = max(carried, x);
    }
    const int before = __shfl_up_sync(0xffffffffu, carried, 1);
    if (lane > 0)
      for (int j = 0; j < kItems; ++j)
        v[j] = max(v[j], before);
  }
  __device__ unsigned sum(unsigned mine) const {  // shuffles: the PTX is also built for sm_75
    for (int o = 16; o > 0; o >>= 1)
      mine += __shfl_xor_sync(0xffffffffu, mine, o);
    return mine;
  }
};

// Shared memory of one column: the farthest point of each segment (8 bytes a row), the signal
// (4), a float of padding and the cut flags (1 a row), kept 8-byte aligned. The next cut at or
// after each row (4) is only needed before the loop, so it lives in the farthest points' memory:
// 13 bytes a row, not 17, and more columns of a warp each on an SM. The padding is there because
// the compiler may load sig[r + 1] beside sig[r] before it knows r is the last row (the value is
// then unused); it reads the padding, not the flags other lanes are writing.
__host__ __device__ constexpr std::size_t column_bytes(int height) {
  return (std::size_t(height) * 13 + 4 + 7) / 8 * 8;
}

// Column `column` (of images of width x height, one after the other) segmented by `group`,
// with its shared arrays at `smem`.
template <int kItems, class Group, class Pixels>
__device__ void rdp_column(const Group& group, unsigned char* smem, int column, Pixels images,
                           int width, int height, float epsilon, bool perpendicular, float pitch,
                           int median, unsigned* cut_bits, unsigned* cut_counts,
                           unsigned char* levels) {
  auto* best = reinterpret_cast<unsigned long long*>(smem);  // farthest point per segment
  float* sig = reinterpret_cast<float*>(best + height);      // the signal
  int* next_cut = reinterpret_cast<int*>(best);              // next cut at or after a row
  unsigned char* cut = reinterpret_cast<unsigned char*>(sig + height + 1);
  const std::size_t src = std::size_t(column / width) * width * height + column % width;
  const int rank = group.rank(), base = rank * kItems;  // rows base .. base + kItems - 1
  const int lane = int(threadIdx.x & 31);

  // Load the column (and median-filter it with the window's valid pixels, like the CPU).
  for (int r = rank; r < height; r += Group::size)
    sig[r] = images(src + std::size_t(r) * width);
  group.sync();
  if (median > 1) {
    // The filtered signal goes through next_cut's memory (unused until the scans) rather than
    // registers, which would hold a row's value each for the whole kernel's register budget.
    float* filtered = reinterpret_cast<float*>(next_cut);
    for (int r = rank; r < height; r += Group::size) {
      filtered[r] = sig[r];
      if (!valid(sig[r])) continue;
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
      filtered[r] = w[(k - 1) / 2];
    }
    group.sync();
    for (int r = rank; r < height; r += Group::size)
      sig[r] = filtered[r];
    group.sync();
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
  const bool column_has_data = group.any(any_valid);
  int iterations = 0;
  // Each row's segment: the previous and next cut (an inclusive max-scan over rows, and the same
  // over reversed positions k = height - 1 - row), scanned once. Cuts are only ever added inside
  // a segment, so afterwards a thread moves its rows' ends itself: rows before a segment's new
  // cut take it as their next cut, rows after it as their previous. And a segment whose
  // farthest point is within epsilon is never cut again, so its rows are done: they skip the
  // distance (a rounded division) and the atomics from then on. The cut rows and the levels
  // equal the full re-evaluation's (and the CPU's) by construction.
  // A row's ends: the previous cut in the low 16 bits, the next in the high (kMaxRows fits), one
  // register a row rather than two.
  unsigned ends[kItems];
  // Bit j: row base + j is a cut, invalid, past the column or in a final segment.
  unsigned done = 0;
  unsigned cuts = 0;  // bit j: row base + j is a cut, so it may start a segment
  if (column_has_data) {
    int prev[kItems], next[kItems];
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j, rr = height - 1 - (base + j);
      prev[j] = (r < height && cut[r]) ? r : -1;
      next[j] = (rr >= 0 && cut[rr]) ? base + j : -1;
    }
    group.max_scan(prev);
    group.max_scan(next);
    for (int j = 0; j < kItems; ++j) {
      const int k = base + j;
      if (k < height) next_cut[height - 1 - k] = next[j] < 0 ? -1 : height - 1 - next[j];
    }
    group.sync();
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j;
      ends[j] = 0;
      if (r < height && cut[r]) cuts |= 1u << j;
      if (r >= height || cut[r] || !valid(sig[r]))
        done |= 1u << j;
      else  // piece ends are cuts, so both ends exist
        ends[j] = unsigned(prev[j]) | unsigned(next_cut[r]) << 16;
    }
    group.sync();  // next_cut read everywhere before the loop writes over it
  }
  while (column_has_data) {  // the same for the whole group
    ++iterations;
    for (int j = 0; j < kItems; ++j)  // segments start at cuts: only theirs are read
      if (cuts >> j & 1u) best[base + j] = 0;
    group.sync();
    // Farthest point per segment: key (distance, lowest row first). A thread's rows are
    // consecutive, so it reduces each run of rows of one segment itself. Only its last run can
    // continue into the next thread; those are combined over the warp by one segmented
    // suffix-max (lanes of one segment are consecutive), whose first lane posts the result.
    // Every other run posts its own maximum. Posting is a shared atomicMax, so runs of one
    // segment in several threads or warps meet there.
    int run_seg = -1;
    unsigned long long run_key = 0;
    for (int j = 0; j < kItems; ++j) {
      const int r = base + j, sj = done >> j & 1u ? -1 : int(ends[j] & 0xffffu);
      unsigned long long key = 0;
      if (sj >= 0) {
        const int q = int(ends[j] >> 16);
        const float d =
            segment_math::distance(sig[sj], sig[q], sig[r], sj, q, r, perpendicular, pitch);
        key = (unsigned long long)__float_as_uint(d) << 32 | (0xffffffffu - unsigned(r));
      }
      if (sj != run_seg) {
        if (run_seg >= 0) atomicMax(&best[run_seg], run_key);
        run_seg = sj;
        run_key = key;
      } else if (key > run_key) {
        run_key = key;
      }
    }
    for (int offset = 1; offset < 32; offset <<= 1) {
      const unsigned long long other = __shfl_down_sync(0xffffffffu, run_key, offset);
      const int other_seg = __shfl_down_sync(0xffffffffu, run_seg, offset);
      if (lane + offset < 32 && other_seg == run_seg && other > run_key) run_key = other;
    }
    const int before = __shfl_up_sync(0xffffffffu, run_seg, 1);
    if (run_seg >= 0 && (lane == 0 || before != run_seg)) atomicMax(&best[run_seg], run_key);
    group.sync();
    bool new_cut = false;
    for (int j = 0; j < kItems; ++j) {
      if (done >> j & 1u) continue;
      const unsigned long long key = best[ends[j] & 0xffffu];
      if (!(__uint_as_float(unsigned(key >> 32)) > epsilon)) {
        done |= 1u << j;  // the segment is final
        continue;
      }
      const int w = int(0xffffffffu - unsigned(key & 0xffffffffu)), r = base + j;
      if (w == r) {
        cut[r] = 1;
        new_cut = true;
        done |= 1u << j;
        cuts |= 1u << j;
      } else if (w < r) {
        ends[j] = (ends[j] & 0xffff0000u) | unsigned(w);
      } else {
        ends[j] = (ends[j] & 0xffffu) | unsigned(w) << 16;
      }
    }
    if (!group.any(new_cut)) break;
  }
  // Cut flags as bits, 32 rows a word, and their number.
  const int words = (height + 31) / 32;
  unsigned* out = cut_bits + std::size_t(column) * words;
  unsigned mine = 0;
  for (int w = rank; w < words; w += Group::size) {
    unsigned bits = 0;
    for (int b = 0; b < 32; ++b) {
      const int r = w * 32 + b;
      if (r < height && cut[r]) bits |= 1u << b;
    }
    out[w] = bits;
    mine += unsigned(__popc(bits));
  }
  const unsigned count = group.sum(mine);
  if (rank == 0) {
    levels[column] = (unsigned char)min(iterations, 255);
    cut_counts[column] = count;
  }
}

// A block a column, kThreads threads of kItems rows each.
template <int kThreads, int kItems, class Pixels>
__global__ void __launch_bounds__(kThreads)
    k_rdp_columns(Pixels images, int width, int height, float epsilon, bool perpendicular,
                  float pitch, int median, unsigned* cut_bits, unsigned* cut_counts,
                  unsigned char* levels) {
  __shared__ typename BlockOfThreads<kThreads>::Storage storage;
  extern __shared__ unsigned long long smem[];
  rdp_column<kItems>(BlockOfThreads<kThreads>{storage}, reinterpret_cast<unsigned char*>(smem),
                     int(blockIdx.x), images, width, height, epsilon, perpendicular, pitch, median,
                     cut_bits, cut_counts, levels);
}

// A warp a column, kWarpColumns columns a block, 32 threads of kItems rows each. Ten blocks of
// four warps an SM hold the registers to 48 (the 12-row kernel then spills 16 bytes): 40 columns
// an SM, measured a little faster than 56 registers and 36 (H200, 1242 x 375 batches).
constexpr int kWarpColumns = 4, kWarpBlocksPerSm = 10;
template <int kItems, class Pixels>
__global__ void __launch_bounds__(32 * kWarpColumns, kWarpBlocksPerSm)
    k_rdp_warp_columns(Pixels images, int columns, int width, int height, float epsilon,
                       bool perpendicular, float pitch, int median, unsigned* cut_bits,
                       unsigned* cut_counts, unsigned char* levels) {
  extern __shared__ unsigned long long smem[];
  const int warp = int(threadIdx.x / 32), column = int(blockIdx.x) * kWarpColumns + warp;
  if (column >= columns) return;  // whole warps leave together
  rdp_column<kItems>(
      WarpOfThreads{}, reinterpret_cast<unsigned char*>(smem) + warp * column_bytes(height), column,
      images, width, height, epsilon, perpendicular, pitch, median, cut_bits, cut_counts, levels);
}

template <int kThreads, int kItems, class Pixels>
void launch_blocks(int columns, cudaStream_t s, Pixels images, int width, int height,
                   const SegmentParams& p, unsigned* bits, unsigned* counts,
                   unsigned char* levels) {
  auto* fn = &k_rdp_columns<kThreads, kItems, Pixels>;
  const std::size_t smem = column_bytes(height);
  CU_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fn<<<columns, kThreads, smem, s>>>(images, width, height, p.epsilon,
                                     p.distance == SegmentDistance::Perpendicular, p.row_pitch,
                                     p.median, bits, counts, levels);
  CU_CHECK_LAUNCH("k_rdp_columns");
}

template <int kItems, class Pixels>
void launch_warps(int columns, cudaStream_t s, Pixels images, int width, int height,
                  const SegmentParams& p, unsigned* bits, unsigned* counts, unsigned char* levels) {
  auto* fn = &k_rdp_warp_columns<kItems, Pixels>;
  const std::size_t smem = kWarpColumns * column_bytes(height);
  CU_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fn<<<(columns + kWarpColumns - 1) / kWarpColumns, 32 * kWarpColumns, smem, s>>>(
      images, columns, width, height, p.epsilon, p.distance == SegmentDistance::Perpendicular,
      p.row_pitch, p.median, bits, counts, levels);
  CU_CHECK_LAUNCH("k_rdp_warp_columns");
}

// Every column of `columns / width` row-major images of width x height (at most kMaxRows rows)
// on stream s: per column its cut rows as bits (32 rows a word, (height + 31) / 32 words),
// their number and the recursion levels.
template <class Pixels>
void launch_rdp_columns(int columns, cudaStream_t s, Pixels images, int width, int height,
                        const SegmentParams& p, unsigned* bits, unsigned* counts,
                        unsigned char* levels) {
  // Up to 384 rows a warp a column, rows a thread to match the height (a 1242 x 375 KITTI
  // image: 12). Taller columns a block each: 16 rows a thread took 94 registers, and a warp a
  // column of 512 rows measured 1.5x slower than two (H200); block sizes from 128 to 256 threads
  // measured alike there. With 12 rows a thread, a launch of fewer columns than the SMs hold
  // (40 each) waits on its slowest column rather than on the SMs' issue, and two warps a column
  // finish it sooner (one 1242 x 375 image end to end, H200: 0.145-0.147 ms a warp a column,
  // 0.132-0.133 two).
  const auto fills_the_sms = [&] {  // asked only where it decides
    int device = 0, sms = 0;
    CU_CHECK(cudaGetDevice(&device));
    CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return columns >= kWarpColumns * kWarpBlocksPerSm * sms;
  };
  if (height <= 64)
    launch_warps<2>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 128)
    launch_warps<4>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 256)
    launch_warps<8>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 384 && fills_the_sms())
    launch_warps<12>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 512)
    launch_blocks<64, 8>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 1024)
    launch_blocks<128, 8>(columns, s, images, width, height, p, bits, counts, levels);
  else if (height <= 2048)
    launch_blocks<256, 8>(columns, s, images, width, height, p, bits, counts, levels);
  else
    launch_blocks<256, 16>(columns, s, images, width, height, p, bits, counts, levels);
}

}  // namespace

}  // namespace cumulus
