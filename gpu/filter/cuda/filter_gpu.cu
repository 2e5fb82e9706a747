// The GPU filters. Voxel grid: the bounds of the finite points (one reduction), a voxel key per
// point with PCL's float arithmetic (no fused multiply-add, so every point lands in PCL's
// voxel), a stable radix sort of (key, index), run-length encoding of the keys, and one thread
// per voxel summing its points in double. Crop box: a flag per point and a stream compaction of
// the indices, so they stay ascending as PCL's.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <cmath>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "filter/cuda/filter_gpu.h"
#include "filter/cuda/filter_workspace.cuh"

namespace cumulus {

namespace {

constexpr int kThreads = 256;

struct BoundsOfPoint {
  __device__ FiniteBounds operator()(const Point3f& p) const {
    const bool ok = isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
    if (!ok) return {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0u};
    return {{p.x, p.y, p.z}, {p.x, p.y, p.z}, 1u};
  }
};

struct MergeBounds {
  __device__ FiniteBounds operator()(const FiniteBounds& a, const FiniteBounds& b) const {
    FiniteBounds m;
    for (int k = 0; k < 3; ++k) {
      m.lo[k] = fminf(a.lo[k], b.lo[k]);
      m.hi[k] = fmaxf(a.hi[k], b.hi[k]);
    }
    m.finite = a.finite + b.finite;
    return m;
  }
};

struct VoxelKeyRule {
  float inverse[3];
  float min_b[3];
  unsigned mul[3];
  unsigned outside;  // the key of points that are not finite: one past the last voxel
};

// PCL: int(floor(x * inverse) - float(min_b)), each operation rounded on its own.
__device__ unsigned voxel_key(const Point3f& p, const VoxelKeyRule& r) {
  const float v[3] = {p.x, p.y, p.z};
  unsigned key = 0;
  for (int k = 0; k < 3; ++k) {
    const int ijk = int(__fsub_rn(floorf(__fmul_rn(v[k], r.inverse[k])), r.min_b[k]));
    key += unsigned(ijk) * r.mul[k];
  }
  return key;
}

__global__ void voxel_keys(const Point3f* points, unsigned n, VoxelKeyRule rule, unsigned* keys,
                           unsigned* ids) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point3f p = points[i];
  const bool ok = isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
  keys[i] = ok ? voxel_key(p, rule) : rule.outside;
  ids[i] = i;
}

// One thread per voxel: its points in index order (the sort is stable), summed in double.
__global__ void voxel_centroids(const unsigned* counts, const unsigned* starts, const unsigned* ids,
                                const Point3f* points, const float* intensity, unsigned voxels,
                                unsigned min_points, Point3f* centroid, float* mean_intensity,
                                unsigned char* keep) {
  const unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= voxels) return;
  const unsigned count = counts[v], start = starts[v];
  keep[v] = count >= min_points;
  double sum[3] = {0, 0, 0}, sum_i = 0;
  for (unsigned j = 0; j < count; ++j) {
    const unsigned id = ids[start + j];
    const Point3f p = points[id];
    sum[0] += p.x;
    sum[1] += p.y;
    sum[2] += p.z;
    if (intensity) sum_i += intensity[id];
  }
  centroid[v] = {float(sum[0] / count), float(sum[1] / count), float(sum[2] / count)};
  if (intensity) mean_intensity[v] = float(sum_i / count);
}

struct CropRule {
  float lo[3], hi[3];
  bool negative;
};

// PCL CropBox: a finite point is inside when no coordinate is below min or above max.
__global__ void crop_flags(const Point3f* points, unsigned n, CropRule r, unsigned char* keep) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point3f p = points[i];
  const bool ok = isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
  const bool outside = p.x < r.lo[0] || p.y < r.lo[1] || p.z < r.lo[2] || p.x > r.hi[0] ||
                       p.y > r.hi[1] || p.z > r.hi[2];
  keep[i] = ok && (outside == r.negative);
}

void upload_points(FilterWorkspace& ws, const PointCloud& cloud, bool with_intensity) {
  const std::size_t n = cloud.size();
  ws.points.reserve(n);
  CU_CHECK(cudaMemcpyAsync(ws.points.get(), cloud.points.data(), n * sizeof(Point3f),
                           cudaMemcpyHostToDevice, ws.stream.get()));
  if (!with_intensity) return;
  ws.intensity.reserve(n);
  CU_CHECK(cudaMemcpyAsync(ws.intensity.get(), cloud.intensity.data(), n * sizeof(float),
                           cudaMemcpyHostToDevice, ws.stream.get()));
}

unsigned read_count(FilterWorkspace& ws) {
  ws.host_count.reserve(1);
  CU_CHECK(cudaMemcpyAsync(ws.host_count.get(), ws.selected.get(), sizeof(unsigned),
                           cudaMemcpyDeviceToHost, ws.stream.get()));
  ws.stream.sync();
  return *ws.host_count.get();
}

// Keeps the elements of `in` whose flag is set, in order, into `out`; returns how many.
template <class In, class T>
unsigned compact(FilterWorkspace& ws, In in, unsigned n, T* out) {
  ws.selected.reserve(1);
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, in, ws.keep.get(), out, ws.selected.get(),
                                      int(n), ws.stream.get()));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, in, ws.keep.get(), out,
                                      ws.selected.get(), int(n), ws.stream.get()));
  return read_count(ws);
}

}  // namespace

std::vector<std::int32_t> crop_box_gpu(const PointCloud& cloud, const LocalBox& box, bool negative,
                                       StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<FilterWorkspace>("gpu crop box");
  const auto n = unsigned(cloud.size());
  if (n == 0) return {};
  cuda::StageClock clock(ws.stream.get());
  upload_points(ws, cloud, false);
  clock.mark("upload");
  ws.keep.reserve(n);
  ws.kept_ids.reserve(n);
  const CropRule rule{
      {box.min.x, box.min.y, box.min.z}, {box.max.x, box.max.y, box.max.z}, negative};
  crop_flags<<<cuda::blocks_for(n, kThreads), kThreads, 0, ws.stream.get()>>>(ws.points.get(), n,
                                                                              rule, ws.keep.get());
  CU_CHECK_LAUNCH("crop_flags");
  const unsigned kept = compact(ws, thrust::counting_iterator<int>(0), n, ws.kept_ids.get());
  clock.mark("crop");
  std::vector<std::int32_t> out(kept);
  CU_CHECK(cudaMemcpyAsync(out.data(), ws.kept_ids.get(), kept * sizeof(int),
                           cudaMemcpyDeviceToHost, ws.stream.get()));
  clock.mark("download");
  ws.stream.sync();
  clock.collect(stages);
  return out;
}

unsigned voxel_grid_on_device(FilterWorkspace& ws, unsigned n, const VoxelGridParams& params,
                              bool with_intensity, cuda::StageClock& clock,
                              const Point3f** out_centroids, const float** out_means) {
  cudaStream_t s = ws.stream.get();
  // Bounds of the finite points, read back: the lattice (and its overflow check) is PCL's
  // host arithmetic.
  ws.bounds.reserve(1);
  ws.host_bounds.reserve(1);
  const auto each = thrust::make_transform_iterator(ws.points.get(), BoundsOfPoint{});
  const FiniteBounds none{{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}, 0u};
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, each, ws.bounds.get(), int(n), MergeBounds{},
                                     none, s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceReduce::Reduce(ws.temp.get(), bytes, each, ws.bounds.get(), int(n),
                                     MergeBounds{}, none, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_bounds.get(), ws.bounds.get(), sizeof(FiniteBounds),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  clock.mark("bounds");
  const FiniteBounds b = *ws.host_bounds.get();
  if (b.finite == 0) return 0;
  const VoxelLattice lattice =
      voxel_lattice({b.lo[0], b.lo[1], b.lo[2]}, {b.hi[0], b.hi[1], b.hi[2]}, params);
  VoxelKeyRule rule{};
  for (int k = 0; k < 3; ++k) {
    rule.inverse[k] = lattice.inverse[std::size_t(k)];
    rule.min_b[k] = float(lattice.min_b[std::size_t(k)]);
    rule.mul[k] = lattice.mul[std::size_t(k)];
  }
  rule.outside = unsigned(lattice.voxels);  // fits: voxels < 2^32 was checked
  int bits = 1;
  while (bits < 32 && (std::uint64_t(1) << bits) <= lattice.voxels)
    ++bits;

  for (auto* buffer :
       {&ws.keys, &ws.sorted_keys, &ws.ids, &ws.sorted_ids, &ws.voxel_keys, &ws.counts, &ws.starts})
    buffer->reserve(n);
  voxel_keys<<<cuda::blocks_for(n, kThreads), kThreads, 0, s>>>(ws.points.get(), n, rule,
                                                                ws.keys.get(), ws.ids.get());
  CU_CHECK_LAUNCH("voxel_keys");
  clock.mark("keys");
  CU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, ws.keys.get(), ws.sorted_keys.get(),
                                           ws.ids.get(), ws.sorted_ids.get(), int(n), 0, bits, s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceRadixSort::SortPairs(ws.temp.get(), bytes, ws.keys.get(),
                                           ws.sorted_keys.get(), ws.ids.get(), ws.sorted_ids.get(),
                                           int(n), 0, bits, s));
  clock.mark("sort");
  ws.selected.reserve(1);
  CU_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, ws.sorted_keys.get(),
                                              ws.voxel_keys.get(), ws.counts.get(),
                                              ws.selected.get(), int(n), s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceRunLengthEncode::Encode(ws.temp.get(), bytes, ws.sorted_keys.get(),
                                              ws.voxel_keys.get(), ws.counts.get(),
                                              ws.selected.get(), int(n), s));
  // The run of points that are not finite sorts last; it is not a voxel.
  const unsigned voxels = read_count(ws) - (b.finite < n ? 1u : 0u);
  CU_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, ws.counts.get(), ws.starts.get(),
                                         int(voxels), s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceScan::ExclusiveSum(ws.temp.get(), bytes, ws.counts.get(), ws.starts.get(),
                                         int(voxels), s));
  clock.mark("voxels");
  ws.centroids.reserve(voxels);
  ws.keep.reserve(voxels);
  if (with_intensity) ws.means.reserve(voxels);
  voxel_centroids<<<cuda::blocks_for(voxels, kThreads), kThreads, 0, s>>>(
      ws.counts.get(), ws.starts.get(), ws.sorted_ids.get(), ws.points.get(),
      with_intensity ? ws.intensity.get() : nullptr, voxels,
      unsigned(std::min<std::size_t>(params.min_points_per_voxel, 0xFFFFFFFFu)), ws.centroids.get(),
      ws.means.get(), ws.keep.get());
  CU_CHECK_LAUNCH("voxel_centroids");
  clock.mark("centroids");
  const Point3f* centroids = ws.centroids.get();
  const float* means = ws.means.get();
  unsigned kept = voxels;
  if (params.min_points_per_voxel > 1) {
    ws.kept_centroids.reserve(voxels);
    kept = compact(ws, ws.centroids.get(), voxels, ws.kept_centroids.get());
    centroids = ws.kept_centroids.get();
    if (with_intensity) {
      ws.kept_means.reserve(voxels);
      compact(ws, ws.means.get(), voxels, ws.kept_means.get());
      means = ws.kept_means.get();
    }
    clock.mark("min points");
  }
  *out_centroids = centroids;
  *out_means = means;
  return kept;
}

void voxel_grid_gpu(const PointCloud& cloud, const VoxelGridParams& params, PointCloud& out,
                    StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<FilterWorkspace>("gpu voxel grid");
  const auto n = unsigned(cloud.size());
  if (n == 0) return;
  const bool with_intensity = cloud.has_intensity();
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  upload_points(ws, cloud, with_intensity);
  clock.mark("upload");

  const Point3f* centroids = nullptr;
  const float* means = nullptr;
  const unsigned kept =
      voxel_grid_on_device(ws, n, params, with_intensity, clock, &centroids, &means);
  if (kept == 0) return;
  out.points.resize(kept);
  CU_CHECK(cudaMemcpyAsync(out.points.data(), centroids, kept * sizeof(Point3f),
                           cudaMemcpyDeviceToHost, s));
  if (with_intensity) {
    out.intensity.resize(kept);
    CU_CHECK(cudaMemcpyAsync(out.intensity.data(), means, kept * sizeof(float),
                             cudaMemcpyDeviceToHost, s));
  }
  clock.mark("download");
  ws.stream.sync();
  clock.collect(stages);
}

}  // namespace cumulus
