// The device-resident pipeline: one upload, then each stage reads the previous stage's output
// where it lies. Stage by stage the kernels are the per-stage GPU calls' own (voxel grid,
// RANSAC plane, clustering), so the results are theirs; what moves across the bus is the input
// once and, back, what the result holds: the voxels, the ground's and the rest's indices, the
// labels. The voxels come back on the copy engine while the plane is fitted.
#include <thrust/iterator/counting_iterator.h>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

#include "cluster/cuda/cluster_gpu.h"
#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/host_upload.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "filter/cuda/filter_workspace.cuh"
#include "ground/cuda/ground_workspace.cuh"
#include "objects/cuda/chain_gpu.h"
#include "objects/objects_impl.h"

namespace cumulus {

namespace {

// The points a stage passes on: finite and off the plane (every point when there is no plane).
__global__ void off_plane_flags(const Point3f* points, const unsigned char* inlier, int n,
                                unsigned char* keep) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point3f p = points[i];
  keep[i] = isfinite(p.x) && isfinite(p.y) && isfinite(p.z) && !(inlier && inlier[i]);
}

constexpr int kBoxThreads = 128;

// What a block sums of one object (describe_objects' two passes), for finish_object.
struct ObjectSummary {
  double n, sum[3], s1, s2, s11, s12, s22, lo[3], hi[3], heading[3], ext[6];
};

struct DeviceFrame {
  double up[3], e1[3], e2[3];
  static DeviceFrame of(const ObjectFrame& f) {
    DeviceFrame d;
    for (int k = 0; k < 3; ++k) {
      d.up[k] = f.up[std::size_t(k)];
      d.e1[k] = f.e1[std::size_t(k)];
      d.e2[k] = f.e2[std::size_t(k)];
    }
    return d;
  }
};

struct MinOp {
  __device__ double operator()(double a, double b) const { return fmin(a, b); }
};
struct MaxOp {
  __device__ double operator()(double a, double b) const { return fmax(a, b); }
};

__global__ void object_summaries(const Point3f* points, const int* order, const int* offsets,
                                 DeviceFrame f, ObjectSummary* out) {
  using Reduce = cub::BlockReduce<double, kBoxThreads>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ double shared[13];
  const int begin = offsets[blockIdx.x], end = offsets[blockIdx.x + 1];
  // 0 n, 1-3 sum, 4 s1, 5 s2, 6 s11, 7 s12, 8 s22: sums; 9-11 lo, 12-14 hi.
  double v[15] = {0, 0,        0,        0,        0,         0,         0,        0,
                  0, INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
  for (int j = begin + int(threadIdx.x); j < end; j += kBoxThreads) {
    const Point3f q = points[order[j]];
    const double p[3] = {q.x, q.y, q.z};
    const double u = p[0] * f.e1[0] + p[1] * f.e1[1] + p[2] * f.e1[2];
    const double w = p[0] * f.e2[0] + p[1] * f.e2[1] + p[2] * f.e2[2];
    v[0] += 1;
    v[4] += u, v[5] += w, v[6] += u * u, v[7] += u * w, v[8] += w * w;
    for (int k = 0; k < 3; ++k) {
      v[1 + k] += p[k];
      v[9 + k] = fmin(v[9 + k], p[k]);
      v[12 + k] = fmax(v[12 + k], p[k]);
    }
  }
  ObjectSummary& o = out[blockIdx.x];
  double total[15];
  for (int k = 0; k < 15; ++k) {
    total[k] = k < 9    ? Reduce(temp).Sum(v[k])
               : k < 12 ? Reduce(temp).Reduce(v[k], MinOp{})
                        : Reduce(temp).Reduce(v[k], MaxOp{});
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    o.n = total[0];
    for (int k = 0; k < 3; ++k) {
      o.sum[k] = total[1 + k];
      o.lo[k] = total[9 + k];
      o.hi[k] = total[12 + k];
    }
    o.s1 = total[4], o.s2 = total[5], o.s11 = total[6], o.s12 = total[7], o.s22 = total[8];
    // object_heading's arithmetic (objects.cpp).
    const double n = total[0];
    const double c11 = o.s11 / n - (o.s1 / n) * (o.s1 / n);
    const double c12 = o.s12 / n - (o.s1 / n) * (o.s2 / n);
    const double c22 = o.s22 / n - (o.s2 / n) * (o.s2 / n);
    const double angle = 0.5 * atan2(2 * c12, c11 - c22);
    for (int k = 0; k < 3; ++k)
      shared[k] = o.heading[k] = cos(angle) * f.e1[k] + sin(angle) * f.e2[k];
    const double* h = o.heading;
    shared[3] = f.up[1] * h[2] - f.up[2] * h[1];  // side = up x heading
    shared[4] = f.up[2] * h[0] - f.up[0] * h[2];
    shared[5] = f.up[0] * h[1] - f.up[1] * h[0];
  }
  __syncthreads();
  const double h[3] = {shared[0], shared[1], shared[2]},
               side[3] = {shared[3], shared[4], shared[5]};
  double e[6] = {INFINITY, -INFINITY, INFINITY, -INFINITY, INFINITY, -INFINITY};
  for (int j = begin + int(threadIdx.x); j < end; j += kBoxThreads) {
    const Point3f q = points[order[j]];
    const double p[3] = {q.x, q.y, q.z};
    const double c[3] = {p[0] * h[0] + p[1] * h[1] + p[2] * h[2],
                         p[0] * side[0] + p[1] * side[1] + p[2] * side[2],
                         p[0] * f.up[0] + p[1] * f.up[1] + p[2] * f.up[2]};
    for (int k = 0; k < 3; ++k) {
      e[2 * k] = fmin(e[2 * k], c[k]);
      e[2 * k + 1] = fmax(e[2 * k + 1], c[k]);
    }
  }
  for (int k = 0; k < 6; ++k) {
    const double r =
        k % 2 == 0 ? Reduce(temp).Reduce(e[k], MinOp{}) : Reduce(temp).Reduce(e[k], MaxOp{});
    if (threadIdx.x == 0) o.ext[k] = r;
    __syncthreads();
  }
}

struct ChainWorkspace {
  cuda::DeviceBuffer<Point3f> rest;
  cuda::DeviceBuffer<int> kept, labels, order, sorted_order, offsets;
  cuda::DeviceBuffer<unsigned> keys, sorted_keys;
  cuda::DeviceBuffer<unsigned char> keep, temp;
  cuda::DeviceBuffer<unsigned> selected;
  cuda::DeviceBuffer<ObjectSummary> objects;
  cuda::PinnedBuffer<unsigned> host_selected;
  cuda::PinnedBuffer<int> host_ground, host_kept;
  cuda::Event indices_back;
  cuda::PinnedBuffer<Point3f> host_points;
  cuda::PinnedBuffer<int> host_offsets;
  cuda::PinnedBuffer<ObjectSummary> host_objects;
};

// The sort's keys and values: the label (none: `objects`, which sorts last) and the point.
__global__ void label_keys(const int* labels, int n, int objects, unsigned* keys, int* order) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  keys[i] = labels[i] < 0 ? unsigned(objects) : unsigned(labels[i]);
  order[i] = i;
}

// The objects' boxes (describe_objects' two passes) with a block per object over its points,
// grouped by label (the clustering's labels of the n points, left in ws.labels): the label's
// runs sorted out, then a fixed-order block reduction, so every run gives the same sums. They
// differ from the host's in rounding only (another order). `meanwhile` runs on the host while
// the device sums.
std::vector<DetectedObject> boxes_on_device(ChainWorkspace& ws, cudaStream_t s,
                                            const Point3f* points, std::size_t points_n,
                                            const std::vector<std::size_t>& sizes,
                                            const std::array<double, 3>& origin,
                                            const std::optional<std::array<double, 4>>& ground,
                                            const std::function<void()>& meanwhile) {
  const auto n = int(points_n);
  const auto objects = int(sizes.size());
  std::vector<DetectedObject> out;
  if (objects == 0) {
    meanwhile();
    return out;
  }
  for (auto* b : {&ws.keys, &ws.sorted_keys})
    b->reserve(std::size_t(n));
  for (auto* b : {&ws.order, &ws.sorted_order})
    b->reserve(std::size_t(n));
  ws.offsets.reserve(std::size_t(objects) + 1);
  ws.host_offsets.reserve(std::size_t(objects) + 1);
  ws.objects.reserve(std::size_t(objects));
  ws.host_objects.reserve(std::size_t(objects));
  // Labels are ranks 0 .. objects - 1 (and -1: none), so the runs' starts follow from the sizes.
  ws.host_offsets.get()[0] = 0;
  for (int k = 0; k < objects; ++k)
    ws.host_offsets.get()[k + 1] = ws.host_offsets.get()[k] + int(sizes[std::size_t(k)]);
  CU_CHECK(cudaMemcpyAsync(ws.offsets.get(), ws.host_offsets.get(),
                           (std::size_t(objects) + 1) * sizeof(int), cudaMemcpyHostToDevice, s));
  label_keys<<<cuda::blocks_for(std::size_t(n), 256), 256, 0, s>>>(ws.labels.get(), n, objects,
                                                                   ws.keys.get(), ws.order.get());
  CU_CHECK_LAUNCH("label_keys");
  // Only the bits a key can have (one radix pass for up to 255 objects, not four); a stable sort
  // keeps each run in point order.
  const int bits = std::bit_width(unsigned(objects));
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, ws.keys.get(), ws.sorted_keys.get(),
                                           ws.order.get(), ws.sorted_order.get(), n, 0, bits, s));
  ws.temp.reserve(std::max<std::size_t>(bytes, 1));
  CU_CHECK(cub::DeviceRadixSort::SortPairs(ws.temp.get(), bytes, ws.keys.get(),
                                           ws.sorted_keys.get(), ws.order.get(),
                                           ws.sorted_order.get(), n, 0, bits, s));
  const ObjectFrame f = object_frame(ground);
  object_summaries<<<objects, kBoxThreads, 0, s>>>(points, ws.sorted_order.get(), ws.offsets.get(),
                                                   DeviceFrame::of(f), ws.objects.get());
  CU_CHECK_LAUNCH("object_summaries");
  CU_CHECK(cudaMemcpyAsync(ws.host_objects.get(), ws.objects.get(),
                           std::size_t(objects) * sizeof(ObjectSummary), cudaMemcpyDeviceToHost,
                           s));
  meanwhile();
  CU_CHECK(cudaStreamSynchronize(s));
  out.reserve(std::size_t(objects));
  for (int k = 0; k < objects; ++k) {
    const ObjectSummary& o = ws.host_objects.get()[k];
    ObjectSums a;
    a.n = o.n;
    a.s1 = o.s1, a.s2 = o.s2, a.s11 = o.s11, a.s12 = o.s12, a.s22 = o.s22;
    for (std::size_t d = 0; d < 3; ++d) {
      a.sum[d] = o.sum[d];
      a.lo[d] = o.lo[d];
      a.hi[d] = o.hi[d];
    }
    std::array<double, 6> ext;
    for (std::size_t d = 0; d < 6; ++d)
      ext[d] = o.ext[d];
    out.push_back(
        finish_object(k, a, {o.heading[0], o.heading[1], o.heading[2]}, ext, f, origin, ground));
  }
  return out;
}

void record(PipelineResult& r, const char* name, std::size_t in, std::size_t out, double ms,
            StageTimes stages = {}) {
  r.stages.push_back({name, "gpu", in, out, ms, std::move(stages)});
  if (out == 0)
    throw Error(std::string("pipeline: the ") + name + " stage left no point (" +
                std::to_string(in) + " in); the input is untouched");
}

}  // namespace

PipelineResult run_chain_gpu(const PointCloud& input, const PipelineParams& params,
                             const Point3f* page_locked) {
  if (!device_chain_takes(params))
    throw InvalidArgument("internal: the device-resident chain does not take these stages");
  if (params.voxel) validate(*params.voxel);
  if (params.ground) validate(*params.ground);
  validate(*params.cluster);
  // One lock order for every chain (filter, ground, chain; clustering takes its own after).
  auto [filter_lock, fws] = cuda::acquire_workspace<FilterWorkspace>("gpu pipeline");
  auto [ground_lock, gws] = cuda::acquire_workspace<GroundWorkspace>();
  auto [chain_lock, ws] = cuda::acquire_workspace<ChainWorkspace>();
  WallTimer total, t;
  PipelineResult r;
  const auto n = unsigned(input.size());
  if (n == 0) throw Error("pipeline: the cloud has no point");
  cudaStream_t fs = fws.stream.get(), gs = gws.stream.get();

  fws.points.reserve(n);
  cuda::upload(fws.points.get(), page_locked ? page_locked : input.points.data(),
               n * sizeof(Point3f), fs);
  const Point3f* points = fws.points.get();
  unsigned count = n;
  if (params.voxel) {
    cuda::StageClock clock(fs);
    const float* means = nullptr;
    count = voxel_grid_on_device(fws, n, *params.voxel, false, clock, &points, &means);
    StageTimes stages;
    fws.stream.sync();
    clock.collect(stages);
    record(r, "voxel grid", n, count, t.ms(), std::move(stages));
    // The voxels come back to page-locked memory on the filter's stream, under the plane's fit.
    ws.host_points.reserve(count);
    CU_CHECK(cudaMemcpyAsync(ws.host_points.get(), points, count * sizeof(Point3f),
                             cudaMemcpyDeviceToHost, fs));
  } else {
    fws.stream.sync();
    r.filtered = input;
  }

  // The host copies the voxels out of page-locked memory while the device works on: under the
  // plane's fit, or (no ground) the boxes' sums.
  bool voxels_taken = !params.voxel;
  const auto take_voxels = [&] {
    if (voxels_taken) return;
    fws.stream.sync();
    r.filtered.origin = input.origin;
    r.filtered.points.assign(ws.host_points.get(), ws.host_points.get() + count);
    r.filtered.width = count;
    voxels_taken = true;
  };
  const Point3f* rest_points = points;
  unsigned rest = count;
  if (params.ground) {
    t.reset();
    if (count < 3)
      throw Error("ground plane: a plane needs at least 3 finite points; the cloud has " +
                  std::to_string(count));
    // The filter's stream has finished (synchronized above): the ground's may read its points.
    cuda::StageClock clock(gs);
    fit_plane_async(gws, points, int(count), *params.ground, clock);
    // What clustering takes: the finite points off the plane, and their indices; counted on the
    // device with the plane's inliers, so one sync reads both.
    ws.keep.reserve(count);
    ws.rest.reserve(count);
    ws.kept.reserve(count);
    ws.selected.reserve(1);
    ws.host_selected.reserve(1);
    off_plane_flags<<<cuda::blocks_for(count, 256), 256, 0, gs>>>(points, gws.keep.get(),
                                                                  int(count), ws.keep.get());
    CU_CHECK_LAUNCH("off_plane_flags");
    std::size_t a = 0, b = 0;
    const thrust::counting_iterator<int> ids(0);
    CU_CHECK(cub::DeviceSelect::Flagged(nullptr, a, points, ws.keep.get(), ws.rest.get(),
                                        ws.selected.get(), int(count), gs));
    CU_CHECK(cub::DeviceSelect::Flagged(nullptr, b, ids, ws.keep.get(), ws.kept.get(),
                                        ws.selected.get(), int(count), gs));
    std::size_t bytes = std::max<std::size_t>({a, b, 1});
    ws.temp.reserve(bytes);
    CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, ids, ws.keep.get(), ws.kept.get(),
                                        ws.selected.get(), int(count), gs));
    CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, points, ws.keep.get(), ws.rest.get(),
                                        ws.selected.get(), int(count), gs));
    CU_CHECK(cudaMemcpyAsync(ws.host_selected.get(), ws.selected.get(), sizeof(unsigned),
                             cudaMemcpyDeviceToHost, gs));
    clock.mark("off plane");
    take_voxels();
    gws.stream.sync();
    GroundResult g;
    finish_ground(read_plane_fit(gws, *params.ground, false), input.origin, *params.ground, g);
    clock.collect(g.stages);
    r.ground_plane = g.plane;
    r.ground_points = *gws.host_selected.get();
    rest = *ws.host_selected.get();
    rest_points = ws.rest.get();
    // The ground's and the rest's indices come back to page-locked memory under the clustering.
    ws.host_ground.reserve(r.ground_points);
    ws.host_kept.reserve(rest);
    CU_CHECK(cudaMemcpyAsync(ws.host_ground.get(), gws.kept.get(), r.ground_points * sizeof(int),
                             cudaMemcpyDeviceToHost, gs));
    CU_CHECK(cudaMemcpyAsync(ws.host_kept.get(), ws.kept.get(), rest * sizeof(int),
                             cudaMemcpyDeviceToHost, gs));
    ws.indices_back.record(gs);
    record(r, "ground plane", count, rest, t.ms(), std::move(g.stages));
  } else {
    r.kept.resize(count);  // every point goes on, as in the stage-by-stage chain
    for (unsigned i = 0; i < count; ++i)
      r.kept[i] = std::int32_t(i);
  }

  t.reset();
  ClusterResult c;
  ws.labels.reserve(rest);
  gpu_cluster_on_device(rest_points, rest, *params.cluster, c, ws.labels.get());
  r.stages.push_back({"clustering", "gpu", rest, c.sizes.size(), t.ms(), std::move(c.stages)});
  r.labels = std::move(c.labels);
  t.reset();
  r.objects =
      boxes_on_device(ws, gs, rest_points, rest, c.sizes, input.origin, r.ground_plane, [&] {
        take_voxels();
        if (params.ground) {
          ws.indices_back.wait();
          r.ground.assign(ws.host_ground.get(), ws.host_ground.get() + r.ground_points);
          r.kept.assign(ws.host_kept.get(), ws.host_kept.get() + rest);
        }
        r.cloud = gather_points(r.filtered, r.kept);
      });
  r.stages.push_back({"boxes", "gpu", r.stages.back().points_out, r.objects.size(), t.ms(), {}});
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
