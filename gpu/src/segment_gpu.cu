// RDP segmentation on the GPU, after Cebrian and Moure: one kernel for all columns (of all
// images in a batch), a block per column and threads per pixel, the recursion replaced by
// iterations that evaluate every segment of the current level at once. Segments are found
// from cut flags with two block scans (previous and next cut of every row); the farthest point
// of each segment comes from a shared-memory atomicMax on (distance, -row), so ties go to the
// lowest row; a block-wide vote ends the loop. Unlike the paper's kernel (one pixel a thread,
// at most 1024 rows) each thread holds several rows, up to kMaxRows.
#include <cub/block/block_scan.cuh>

#include <bit>
#include <cstring>

#include "cuda/buffer.cuh"
#include "cuda/workspace.cuh"
#include "cumulus/device.h"
#include "segment_gpu.h"
#include "segment_math.h"

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
                  float pitch, int median, unsigned* cut_bits, unsigned char* levels) {
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
    // Farthest point per segment: key (distance, lowest row first), reduced within the warp
    // before the shared atomic, since a long segment would otherwise serialise hundreds of
    // atomics on one word. Lanes of one segment are consecutive (rows grow with the lane), so a
    // segmented suffix-max over the warp leaves each run's maximum in its first lane.
    const int lane = int(threadIdx.x & 31);
    for (int j = 0; j < kItems; ++j) {
      unsigned long long key = seg_first[j] < 0
                                   ? 0ull
                                   : ((unsigned long long)__float_as_uint(dist[j]) << 32) |
                                         (0xffffffffu - unsigned(base + j));
      for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned long long other = __shfl_down_sync(0xffffffffu, key, offset);
        const int other_seg = __shfl_down_sync(0xffffffffu, seg_first[j], offset);
        if (lane + offset < 32 && other_seg == seg_first[j] && other > key) key = other;
      }
      const int before = __shfl_up_sync(0xffffffffu, seg_first[j], 1);
      if (seg_first[j] >= 0 && (lane == 0 || before != seg_first[j]))
        atomicMax(&best[seg_first[j]], key);
    }
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
  // Cut flags as bits, 32 rows a word.
  const int words = (height + 31) / 32;
  unsigned* out = cut_bits + std::size_t(blockIdx.x) * words;
  for (int w = threadIdx.x; w < words; w += kThreads) {
    unsigned bits = 0;
    for (int b = 0; b < 32; ++b) {
      const int r = w * 32 + b;
      if (r < height && cut[r]) bits |= 1u << b;
    }
    out[w] = bits;
  }
  if (threadIdx.x == 0) levels[blockIdx.x] = (unsigned char)min(iterations, 255);
}

template <int kThreads, int kItems>
void launch(int blocks, std::size_t smem, cudaStream_t s, const float* images, int width,
            int height, const SegmentParams& p, unsigned* bits, unsigned char* levels) {
  auto* fn = &k_rdp_columns<kThreads, kItems>;
  CU_CHECK(cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  fn<<<blocks, kThreads, smem, s>>>(images, width, height, p.epsilon,
                                    p.distance == SegmentDistance::Perpendicular, p.row_pitch,
                                    p.median, bits, levels);
  CU_CHECK_LAUNCH("k_rdp_columns");
}

struct SegmentWorkspace {
  cuda::Stream stream, stream2;
  cuda::DeviceBuffer<float> images;
  cuda::DeviceBuffer<unsigned> bits;
  cuda::DeviceBuffer<unsigned char> levels;
  cuda::PinnedBuffer<unsigned> host_bits;
  cuda::PinnedBuffer<unsigned char> host_levels;
};

}  // namespace

std::vector<SegmentResult> segment_gpu(const std::vector<const DepthImage*>& images,
                                       const SegmentParams& p) {
  if (images.empty()) return {};
  std::vector<const float*> data;
  for (auto* im : images) {
    if (im->width != images[0]->width || im->height != images[0]->height)
      throw InvalidArgument("a batch of depth images must share one size");
    data.push_back(im->depth.data());
  }
  return segment_gpu_buffers(data, images[0]->width, images[0]->height, p);
}

std::vector<SegmentResult> segment_gpu_buffers(const std::vector<const float*>& data,
                                               std::uint32_t w, std::uint32_t h,
                                               const SegmentParams& p) {
  cuda::require_device("gpu segmentation");
  if (data.empty()) return {};
  const int width = int(w), height = int(h);
  if (height > kMaxRows)
    throw InvalidArgument("gpu segmentation takes columns of at most 4096 rows");
  auto [lock, ws] = cuda::acquire_workspace<SegmentWorkspace>();
  const std::size_t n = data.size(), pixels = std::size_t(width) * height,
                    columns = std::size_t(width) * n;
  const int words = (height + 31) / 32;
  std::vector<SegmentResult> out(n);
  if (pixels == 0) {
    for (auto& r : out)
      r.width = w, r.height = h, r.offsets.assign(std::size_t(width) + 1, 0),
      r.levels.assign(std::size_t(width), 0);
    return out;
  }
  ws.images.reserve(pixels * n);
  ws.bits.reserve(columns * std::size_t(words));
  ws.levels.reserve(columns);
  ws.host_bits.reserve(columns * std::size_t(words));
  ws.host_levels.reserve(columns);
  const std::size_t smem = std::size_t(height) * (8 + 4 + 4 + 1);
  // A batch runs in chunks on two streams, so that one chunk's upload overlaps the other's
  // kernel (with page-locked sources the copies are asynchronous DMA).
  const std::size_t chunk = n == 1 ? 1 : std::max<std::size_t>(1, (n + 7) / 8);
  cudaStream_t streams[2] = {ws.stream.get(), ws.stream2.get()};
  cuda::Event start, uploaded, segmented, done, joined;
  start.record(streams[0]);
  CU_CHECK(cudaStreamWaitEvent(streams[1], start.get()));
  for (std::size_t first = 0, index = 0; first < n; first += chunk, ++index) {
    const std::size_t count = std::min(chunk, n - first);
    cudaStream_t s = streams[index % 2];
    for (std::size_t k = first; k < first + count; ++k)
      CU_CHECK(cudaMemcpyAsync(ws.images.get() + k * pixels, data[k], pixels * sizeof(float),
                               cudaMemcpyHostToDevice, s));
    if (n == 1) uploaded.record(s);
    const int blocks = int(count * std::size_t(width));
    const float* img = ws.images.get() + first * pixels;
    unsigned* bits = ws.bits.get() + first * std::size_t(width) * words;
    unsigned char* lev = ws.levels.get() + first * std::size_t(width);
    // Block sizes from 32 to 256 threads measured alike on the H200; eight rows a thread keeps
    // the block small.
    if (height <= 256)
      launch<32, 8>(blocks, smem, s, img, width, height, p, bits, lev);
    else if (height <= 512)
      launch<64, 8>(blocks, smem, s, img, width, height, p, bits, lev);
    else if (height <= 1024)
      launch<128, 8>(blocks, smem, s, img, width, height, p, bits, lev);
    else if (height <= 2048)
      launch<256, 8>(blocks, smem, s, img, width, height, p, bits, lev);
    else
      launch<256, 16>(blocks, smem, s, img, width, height, p, bits, lev);
    if (n == 1) segmented.record(s);
    CU_CHECK(cudaMemcpyAsync(ws.host_bits.get() + first * std::size_t(width) * words, bits,
                             count * std::size_t(width) * words * sizeof(unsigned),
                             cudaMemcpyDeviceToHost, s));
    CU_CHECK(cudaMemcpyAsync(ws.host_levels.get() + first * std::size_t(width), lev,
                             count * std::size_t(width), cudaMemcpyDeviceToHost, s));
  }
  joined.record(streams[1]);
  CU_CHECK(cudaStreamWaitEvent(streams[0], joined.get()));
  done.record(streams[0]);
  CU_CHECK(cudaStreamSynchronize(streams[0]));
  StageTimes stages;
  if (n == 1) {
    stages = {{"upload", uploaded.since(start)},
              {"segment", segmented.since(uploaded)},
              {"download", done.since(segmented)}};
  } else {
    stages = {{"pipeline (per image)", done.since(start) / double(n)}};
  }
  for (std::size_t k = 0; k < n; ++k) {
    SegmentResult& r = out[k];
    r.width = w;
    r.height = h;
    r.offsets.assign(std::size_t(width) + 1, 0);
    r.levels.assign(ws.host_levels.get() + k * width, ws.host_levels.get() + (k + 1) * width);
    const unsigned* b = ws.host_bits.get() + k * std::size_t(width) * words;
    std::size_t total = 0;
    for (std::size_t i = 0; i < std::size_t(width) * words; ++i)
      total += std::size_t(std::popcount(b[i]));
    r.rows.reserve(total);
    for (int c = 0; c < width; ++c) {
      for (int i = 0; i < words; ++i)
        for (unsigned bits = b[std::size_t(c) * words + i]; bits; bits &= bits - 1)
          r.rows.push_back(std::uint32_t(i * 32 + std::countr_zero(bits)));
      r.offsets[std::size_t(c) + 1] = std::uint32_t(r.rows.size());
    }
    r.stages = stages;
  }
  return out;
}

}  // namespace cumulus
