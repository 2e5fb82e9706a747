// The range-image ground on the GPU: a thread per point finds its pixel and posts (range,
// index) to the pixel by a 64-bit atomic minimum; a thread per column compacts the column's
// valid pixels; the RDP paper's kernel segments the compacted columns; a thread per column
// classifies its segments near to far (range_math::classify_column, as the CPU does); a thread
// per point tests its chord; the flagged indices are selected in order, and the ground's
// moments (for the model plane) summed in double about its first point.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>

#include <cstring>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "ground/cuda/moments.cuh"
#include "ground/range_ground_impl.h"
#include "segment/cuda/rdp_columns.cuh"

namespace cumulus {

namespace {

constexpr unsigned long long kEmpty = ~0ull;

__device__ bool finite_point(const Point3f& p) {
  return isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
}

__global__ void k_project_points(const Point3f* points, int n, range_math::Tables t, int* pixel,
                                 unsigned long long* winner) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point3f p = points[i];
  int px = -1;
  float range = 0;
  if (finite_point(p)) px = range_math::pixel_of(p, t, &range);
  pixel[i] = px;
  if (px >= 0)
    atomicMin(&winner[px], ((unsigned long long)__float_as_uint(range) << 32) | unsigned(i));
}

// Column c's valid pixels moved to its top: slot k holds the k-th valid row's range and point.
__global__ void k_compact_columns(const unsigned long long* winner, int width, int height,
                                  float* compact, int* slot_point, int* pixel_slot, int* valid) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  int k = 0;
  for (int r = 0; r < height; ++r) {
    const unsigned long long key = winner[std::size_t(r) * width + c];
    pixel_slot[std::size_t(r) * width + c] = key == kEmpty ? -1 : k;
    if (key == kEmpty) continue;
    compact[std::size_t(k) * width + c] = __uint_as_float(unsigned(key >> 32));
    slot_point[std::size_t(k) * width + c] = int(key & 0xffffffffu);
    ++k;
  }
  valid[c] = k;
  for (int j = k; j < height; ++j)
    compact[std::size_t(j) * width + c] = 0.0f;
}

__global__ void k_classify_columns(const Point3f* points, const unsigned* cut_bits, int words,
                                   const int* slot_point, const int* valid, int width,
                                   range_math::Rules rules, int* chord_a, int* chord_b) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  const unsigned* bits = cut_bits + std::size_t(c) * words;
  const auto slot = [&](int k) { return slot_point[std::size_t(k) * width + c]; };
  range_math::classify_column(
      valid[c], [&](int k) { return (bits[k / 32] >> (k % 32)) & 1u; },
      [&](int k) { return points[slot(k)]; },
      [&](int k, int a, int b) {
        chord_a[std::size_t(k) * width + c] = a < 0 ? -1 : slot(a);
        chord_b[std::size_t(k) * width + c] = b < 0 ? -1 : slot(b);
      },
      rules);
}

__global__ void k_label_points(const Point3f* points, int n, const int* pixel,
                               const int* pixel_slot, const int* chord_a, const int* chord_b,
                               int width, range_math::Rules rules, char* ground) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  char g = 0;
  const int px = pixel[i];
  if (px >= 0) {
    const std::size_t s = std::size_t(pixel_slot[px]) * width + px % width;
    const int a = chord_a[s];
    if (a >= 0) g = range_math::near_chord(points[i], points[a], points[chord_b[s]], rules);
  }
  ground[i] = g;
}

struct GroundTerms {
  const Point3f* points;
  const int* ground;
  __device__ Moments operator()(int j) const {
    const Point3f p = points[ground[j]], r = points[ground[0]];
    return Moments::of(double(p.x) - r.x, double(p.y) - r.y, double(p.z) - r.z);
  }
};

struct RangeGroundWorkspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<Point3f> points;
  cuda::DeviceBuffer<double> tables;
  cuda::DeviceBuffer<int> pixel, slot_point, pixel_slot, valid, chord_a, chord_b, kept, selected;
  cuda::DeviceBuffer<unsigned long long> winner;
  cuda::DeviceBuffer<float> compact;
  cuda::DeviceBuffer<unsigned> bits, counts;
  cuda::DeviceBuffer<unsigned char> levels, temp;
  cuda::DeviceBuffer<char> flags;
  cuda::DeviceBuffer<Moments> moments;
  cuda::PinnedBuffer<int> host_selected;
  cuda::PinnedBuffer<Moments> host_moments;
};

}  // namespace

RangeGroundFit range_ground_gpu(const PointCloud& cloud, const RangeGroundParams& p,
                                StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<RangeGroundWorkspace>("gpu range-image ground");
  const int n = int(cloud.size()), width = int(p.columns), height = int(p.rows);
  const std::size_t pixels = std::size_t(width) * height;
  const int words = (height + 31) / 32;
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const RangeTables tables = range_tables(p);
  const std::size_t rows_n = tables.row_tan.size(), cols_n = tables.col_pseudo.size();
  ws.tables.reserve(rows_n + cols_n + 1);
  ws.points.reserve(std::size_t(n));
  CU_CHECK(cudaMemcpyAsync(ws.points.get(), cloud.points.data(), std::size_t(n) * sizeof(Point3f),
                           cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemcpyAsync(ws.tables.get(), tables.row_tan.data(), rows_n * sizeof(double),
                           cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemcpyAsync(ws.tables.get() + rows_n, tables.col_pseudo.data(),
                           cols_n * sizeof(double), cudaMemcpyHostToDevice, s));
  clock.mark("upload");
  const range_math::Tables t{ws.tables.get(), ws.tables.get() + rows_n, height, width};
  const range_math::Rules rules = range_rules(p);
  ws.pixel.reserve(std::size_t(n));
  ws.winner.reserve(pixels);
  CU_CHECK(cudaMemsetAsync(ws.winner.get(), 0xff, pixels * sizeof(unsigned long long), s));
  k_project_points<<<cuda::blocks_for(std::size_t(n), 256), 256, 0, s>>>(
      ws.points.get(), n, t, ws.pixel.get(), ws.winner.get());
  CU_CHECK_LAUNCH("k_project_points");
  ws.compact.reserve(pixels);
  ws.slot_point.reserve(pixels);
  ws.pixel_slot.reserve(pixels);
  ws.valid.reserve(std::size_t(width));
  k_compact_columns<<<cuda::blocks_for(std::size_t(width), 128), 128, 0, s>>>(
      ws.winner.get(), width, height, ws.compact.get(), ws.slot_point.get(), ws.pixel_slot.get(),
      ws.valid.get());
  CU_CHECK_LAUNCH("k_compact_columns");
  clock.mark("project");
  ws.bits.reserve(std::size_t(width) * words);
  ws.counts.reserve(std::size_t(width));
  ws.levels.reserve(std::size_t(width));
  SegmentParams sp;
  sp.epsilon = p.epsilon;
  launch_rdp_columns(width, s, MetrePixels{ws.compact.get()}, width, height, sp, ws.bits.get(),
                     ws.counts.get(), ws.levels.get());
  clock.mark("RDP columns");
  ws.chord_a.reserve(pixels);
  ws.chord_b.reserve(pixels);
  k_classify_columns<<<cuda::blocks_for(std::size_t(width), 64), 64, 0, s>>>(
      ws.points.get(), ws.bits.get(), words, ws.slot_point.get(), ws.valid.get(), width, rules,
      ws.chord_a.get(), ws.chord_b.get());
  CU_CHECK_LAUNCH("k_classify_columns");
  clock.mark("classify");
  ws.flags.reserve(std::size_t(n));
  k_label_points<<<cuda::blocks_for(std::size_t(n), 256), 256, 0, s>>>(
      ws.points.get(), n, ws.pixel.get(), ws.pixel_slot.get(), ws.chord_a.get(), ws.chord_b.get(),
      width, rules, ws.flags.get());
  CU_CHECK_LAUNCH("k_label_points");
  ws.kept.reserve(std::size_t(n));
  ws.selected.reserve(1);
  ws.host_selected.reserve(1);
  const thrust::counting_iterator<int> ids(0);
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, ids, ws.flags.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  ws.temp.reserve(std::max<std::size_t>(bytes, 1));
  CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, ids, ws.flags.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_selected.get(), ws.selected.get(), sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  clock.mark("label");
  RangeGroundFit fit;
  fit.ground.resize(std::size_t(*ws.host_selected.get()));
  const int count = int(fit.ground.size());
  if (count > 0) {
    ws.moments.reserve(1);
    ws.host_moments.reserve(1);
    const auto terms = thrust::make_transform_iterator(thrust::counting_iterator<int>(0),
                                                       GroundTerms{ws.points.get(), ws.kept.get()});
    CU_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, terms, ws.moments.get(), count, AddMoments{},
                                       Moments{}, s));
    ws.temp.reserve(std::max<std::size_t>(bytes, 1));
    CU_CHECK(cub::DeviceReduce::Reduce(ws.temp.get(), bytes, terms, ws.moments.get(), count,
                                       AddMoments{}, Moments{}, s));
    CU_CHECK(cudaMemcpyAsync(ws.host_moments.get(), ws.moments.get(), sizeof(Moments),
                             cudaMemcpyDeviceToHost, s));
    clock.mark("moments");
  }
  CU_CHECK(cudaMemcpyAsync(fit.ground.data(), ws.kept.get(), fit.ground.size() * sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  clock.mark("download");
  ws.stream.sync();
  clock.collect(stages);
  if (count > 0) fit.moments = ws.host_moments.get()->inlier_moments();
  return fit;
}

}  // namespace cumulus
