// RDP segmentation on the GPU, after Cebrian and Moure: one kernel for all columns (of all
// images in a batch), a block per column and threads per pixel, the recursion replaced by
// iterations that evaluate every segment of the current level at once. Segments are found
// from cut flags with two scans (previous and next cut of every row); the farthest point of
// each segment comes from a shared-memory atomicMax on (distance, -row), so ties go to the
// lowest row; a vote ends the loop. Unlike the paper's kernel (one pixel a thread, at most 1024
// rows) each thread holds several rows, up to kMaxRows, and columns of up to 384 rows go a warp
// each, several to a block (rdp_columns.cuh).
// The cut rows leave the device as the result's own arrays (per-column offsets by a scan of the
// counts, rows written straight into page-locked host memory), so the host only copies them.
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/cuda/workspace.cuh"
#include "core/device.h"
#include "core/parallel.h"
#include "segment/cuda/rdp_columns.cuh"
#include "segment/cuda/segment_gpu.h"

namespace cumulus {

namespace {

// The cut rows of every column at its offset, one warp a column. They go straight to page-locked
// host memory when the total fits there (no second copy, no wait for the total), else to the
// device buffer for a copy afterwards. Rows are staged in shared memory so that each warp's
// stores are contiguous (scattered four-byte stores over PCIe are slow).
constexpr int kWriteWarps = 8;
__global__ void __launch_bounds__(32 * kWriteWarps)
    k_write_rows(const unsigned* cut_bits, const unsigned* offsets, int columns, int words,
                 unsigned* host_rows, std::size_t host_capacity, unsigned* device_rows) {
  __shared__ unsigned stage[kWriteWarps][32 * 32];
  const int warp = int(threadIdx.x / 32), lane = int(threadIdx.x & 31);
  const int column = int(blockIdx.x) * kWriteWarps + warp;
  if (column >= columns) return;  // whole warps leave together
  unsigned* rows = offsets[columns] <= host_capacity ? host_rows : device_rows;
  unsigned* st = stage[warp];
  unsigned at = offsets[column];
  const unsigned* bits = cut_bits + std::size_t(column) * words;
  for (int w0 = 0; w0 < words; w0 += 32) {  // 1024 rows at a time
    const int w = w0 + lane;
    unsigned b = w < words ? bits[w] : 0u;
    const unsigned n = unsigned(__popc(b));
    unsigned before = n;  // inclusive scan of the counts over the lanes
    for (int o = 1; o < 32; o <<= 1) {
      const unsigned x = __shfl_up_sync(0xffffffffu, before, o);
      if (lane >= o) before += x;
    }
    for (unsigned k = before - n; b; b &= b - 1)
      st[k++] = unsigned(w * 32 + __ffs(int(b)) - 1);
    const unsigned total = __shfl_sync(0xffffffffu, before, 31);
    __syncwarp();
    for (unsigned k = unsigned(lane); k < total; k += 32)
      rows[at + k] = st[k];
    __syncwarp();
    at += total;
  }
}

// A batch runs in at most this many chunks (see segment_batch).
constexpr std::size_t kMaxChunks = 8;

struct SegmentWorkspace {
  cuda::Stream streams[3];  // uploads, then two for the chunks' work
  // Events live as long as the workspace: twenty-odd created and destroyed a call were part of
  // a batch's host time.
  cuda::Event start, segmented, joined[2], finished, chunk_uploaded[kMaxChunks],
      chunk_done[kMaxChunks];
  cuda::DeviceBuffer<unsigned char> images;  // the batch as uploaded: floats or raw units
  cuda::DeviceBuffer<unsigned> bits, counts, offsets, rows;
  cuda::DeviceBuffer<unsigned char> levels, scan_temp[2];
  cuda::PinnedBuffer<unsigned> host_offsets, host_rows;
  cuda::PinnedBuffer<unsigned char> host_levels;
  std::size_t row_slice = 0;  // host rows per chunk; grows to the largest chunk seen
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
  std::vector<SegmentResult> out;
  segment_gpu_buffers(data, images[0]->width, images[0]->height, p, out);
  return out;
}

namespace {

// Pixel is float (metres) or std::uint16_t (raw units, scaled on the device).
// Results go into `out`, whose vectors keep their memory: a sequence's batches allocate nothing
// once its images' cuts fit.
template <class Pixel>
void segment_batch(const std::vector<const Pixel*>& data, std::uint32_t w, std::uint32_t h,
                   double metres_per_unit, const SegmentParams& p,
                   std::vector<SegmentResult>& out) {
  cuda::require_device("gpu segmentation");
  out.resize(data.size());
  if (data.empty()) return;
  const int width = int(w), height = int(h);
  if (height > kMaxRows)
    throw InvalidArgument("gpu segmentation takes columns of at most 4096 rows");
  auto [lock, ws] = cuda::acquire_workspace<SegmentWorkspace>();
  const std::size_t n = data.size(), pixels = std::size_t(width) * height,
                    columns = std::size_t(width) * n;
  const int words = (height + 31) / 32;
  if (pixels == 0) {
    for (auto& r : out)
      r.width = w, r.height = h, r.offsets.assign(std::size_t(width) + 1, 0), r.rows.clear(),
      r.levels.assign(std::size_t(width), 0), r.stages.clear();
    return;
  }
  // A batch runs in chunks. The uploads follow each other on a stream of their own (with
  // page-locked sources they are asynchronous DMA, and the copy engine, the batch's bottleneck,
  // never waits for a chunk's kernels); each chunk's work alternates between two more streams
  // and its results are complete on their own (own offsets, own slice of the host rows), so
  // the host copies a chunk into the result vectors while the device works on the next ones.
  const std::size_t chunk = n == 1 ? 1 : std::max<std::size_t>(1, (n + 7) / 8);
  const std::size_t chunks = (n + chunk - 1) / chunk;  // at most kMaxChunks
  const std::size_t chunk_columns = chunk * std::size_t(width), stride = chunk_columns + 1;
  ws.images.reserve(pixels * n * sizeof(Pixel));
  Pixel* images = reinterpret_cast<Pixel*>(ws.images.get());
  ws.bits.reserve(columns * std::size_t(words));
  ws.counts.reserve(columns);
  ws.offsets.reserve(chunks * stride);
  ws.levels.reserve(columns);
  ws.host_offsets.reserve(chunks * stride);
  ws.host_levels.reserve(columns);
  // Room for every row to be cut goes on the device; the host slice of a chunk starts at an
  // eighth of that (real images cut far fewer) and grows to the largest total seen.
  ws.rows.reserve(pixels * n);
  ws.row_slice = std::max({ws.row_slice, pixels * chunk / 8, std::size_t(1024)});
  ws.host_rows.reserve(chunks * ws.row_slice);
  const std::size_t slice = ws.row_slice;
  std::size_t scan_bytes = 0;
  CU_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, ws.counts.get(), ws.offsets.get(),
                                         int(chunk_columns)));
  ws.scan_temp[0].reserve(scan_bytes);
  ws.scan_temp[1].reserve(scan_bytes);
  cuda::Event &start = ws.start, &segmented = ws.segmented, &finished = ws.finished;
  cuda::Event *joined = ws.joined, *chunk_uploaded = ws.chunk_uploaded, *chunk_done = ws.chunk_done;
  cudaStream_t up = ws.streams[0].get();
  // One chunk (one image) runs on the upload stream alone; more use the other two as well.
  const bool spread = chunks > 1;
  start.record(up);
  for (int k = 1; spread && k < 3; ++k)
    CU_CHECK(cudaStreamWaitEvent(ws.streams[k].get(), start.get()));
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * chunk, count = std::min(chunk, n - first);
    const std::size_t m = count * std::size_t(width);  // columns of this chunk
    // Images that lie one after the other in memory go up in one copy.
    for (std::size_t k = first, run = 1; k < first + count; k += run, run = 1) {
      while (k + run < first + count && data[k + run] == data[k] + run * pixels)
        ++run;
      CU_CHECK(cudaMemcpyAsync(images + k * pixels, data[k], run * pixels * sizeof(Pixel),
                               cudaMemcpyHostToDevice, up));
    }
    chunk_uploaded[c].record(up);
    cudaStream_t s = spread ? ws.streams[1 + c % 2].get() : up;
    if (spread) CU_CHECK(cudaStreamWaitEvent(s, chunk_uploaded[c].get()));
    const int blocks = int(m);
    const Pixel* img = images + first * pixels;
    unsigned* bits = ws.bits.get() + first * std::size_t(width) * words;
    unsigned* counts = ws.counts.get() + first * std::size_t(width);
    unsigned char* lev = ws.levels.get() + first * std::size_t(width);
    if constexpr (std::is_same_v<Pixel, float>)
      launch_rdp_columns(blocks, s, MetrePixels{img}, width, height, p, bits, counts, lev);
    else
      launch_rdp_columns(blocks, s, RawPixels{img, metres_per_unit}, width, height, p, bits, counts,
                         lev);
    if (n == 1) segmented.record(s);
    // offsets[0] = 0 and an inclusive scan of the counts after it: offsets[m] is the total.
    unsigned* offsets = ws.offsets.get() + c * stride;
    CU_CHECK(cudaMemsetAsync(offsets, 0, sizeof(unsigned), s));
    std::size_t bytes = scan_bytes;
    CU_CHECK(cub::DeviceScan::InclusiveSum(ws.scan_temp[c % 2].get(), bytes, counts, offsets + 1,
                                           int(m), s));
    k_write_rows<<<cuda::blocks_for(m, kWriteWarps), 32 * kWriteWarps, 0, s>>>(
        bits, offsets, int(m), words, ws.host_rows.get() + c * slice, slice,
        ws.rows.get() + first * pixels);
    CU_CHECK_LAUNCH("k_write_rows");
    CU_CHECK(cudaMemcpyAsync(ws.host_offsets.get() + c * stride, offsets,
                             (m + 1) * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CU_CHECK(cudaMemcpyAsync(ws.host_levels.get() + first * std::size_t(width), lev, m,
                             cudaMemcpyDeviceToHost, s));
    chunk_done[c].record(s);
  }
  for (int k = 0; spread && k < 2; ++k) {
    joined[k].record(ws.streams[1 + k].get());
    CU_CHECK(cudaStreamWaitEvent(up, joined[k].get()));
  }
  finished.record(up);

  std::vector<unsigned> spilled;  // a chunk's rows that did not fit its host slice
  std::size_t largest = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t first = c * chunk, count = std::min(chunk, n - first);
    // The threads that copy the chunk out are woken before the wait, so that they are running
    // when it lands: the last chunk's copies are the call's tail.
    if (count > 1) ready_threads().wake();
    CU_CHECK(cudaEventSynchronize(chunk_done[c].get()));
    const unsigned* offsets = ws.host_offsets.get() + c * stride;
    const std::size_t total = offsets[count * std::size_t(width)];
    largest = std::max(largest, total);
    const unsigned* rows = ws.host_rows.get() + c * slice;
    if (total > slice) {
      spilled.resize(total);
      CU_CHECK(cudaMemcpy(spilled.data(), ws.rows.get() + first * pixels, total * sizeof(unsigned),
                          cudaMemcpyDeviceToHost));
      rows = spilled.data();
    }
    // The images of a chunk side by side, an image a thread.
    ready_threads().run(count, [&](std::size_t i) {
      const std::size_t k = first + i;
      SegmentResult& r = out[k];
      r.width = w;
      r.height = h;
      const unsigned* off = offsets + i * std::size_t(width);
      r.offsets.resize(std::size_t(width) + 1);
      for (std::size_t col = 0; col <= std::size_t(width); ++col)
        r.offsets[col] = off[col] - off[0];
      r.rows.assign(rows + off[0], rows + off[width]);
      r.levels.assign(ws.host_levels.get() + k * width, ws.host_levels.get() + (k + 1) * width);
    });
  }
  if (largest > slice) ws.row_slice = largest + largest / 4;
  CU_CHECK(cudaEventSynchronize(finished.get()));
  StageTimes stages;
  if (n == 1) {
    stages = {{"upload", chunk_uploaded[0].since(start)},
              {"segment", segmented.since(chunk_uploaded[0])},
              {"download", finished.since(segmented)}};
  } else {
    stages = {{"pipeline (per image)", finished.since(start) / double(n)}};
  }
  for (auto& r : out)
    r.stages = stages;
}

}  // namespace

void segment_gpu_buffers(const std::vector<const float*>& data, std::uint32_t w, std::uint32_t h,
                         const SegmentParams& p, std::vector<SegmentResult>& out) {
  segment_batch(data, w, h, 1.0, p, out);
}

void segment_gpu_raw_buffers(const std::vector<const std::uint16_t*>& data, std::uint32_t w,
                             std::uint32_t h, double metres_per_unit, const SegmentParams& p,
                             std::vector<SegmentResult>& out) {
  segment_batch(data, w, h, metres_per_unit, p, out);
}

}  // namespace cumulus
