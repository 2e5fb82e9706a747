// The GPU RANSAC plane. Every hypothesis at once: three point indices per hypothesis from a
// counter-based hash of (seed, hypothesis, draw), so the result depends on the seed alone;
// each block scores a few planes against a slice of the points (one load of a point serves
// them all); the best plane (most inliers, then the lowest hypothesis) is refit on its inliers'
// moments, summed in double, and its inliers selected again, as PCL optimizes its
// coefficients, and refit again while that gains inliers.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <array>
#include <cmath>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "ground/cuda/ground_gpu.h"
#include "ground/cuda/ground_workspace.cuh"
#include "ground/cuda/moments.cuh"

namespace cumulus {

namespace {

constexpr int kPlanesPerBlock = 8;
constexpr int kScoreThreads = 256;
constexpr int kMaxRefits = 8;

struct HypothesisRule {
  unsigned long long seed;
  unsigned n;
  double axis[3];
  double min_cos;  // -1: any orientation
};

__device__ unsigned long long mix64(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__device__ bool finite_point(const Point3f& p) {
  return isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
}

// Plane h through three drawn points, in double; x = NaN marks a degenerate or excluded one.
// first[h] keeps the first point's index, the refit's reference.
__global__ void make_hypotheses(const Point3f* points, int count, HypothesisRule rule,
                                float4* planes, int* first) {
  const int h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h >= count) return;
  unsigned idx[3];
  for (int j = 0; j < 3; ++j)
    idx[j] = unsigned(mix64(rule.seed ^ mix64(3ull * unsigned(h) + unsigned(j))) % rule.n);
  first[h] = int(idx[0]);
  const Point3f a = points[idx[0]], b = points[idx[1]], c = points[idx[2]];
  float4 plane = make_float4(NAN, 0, 0, 0);
  if (idx[0] != idx[1] && idx[0] != idx[2] && idx[1] != idx[2] && finite_point(a) &&
      finite_point(b) && finite_point(c)) {
    const double u[3] = {double(b.x) - a.x, double(b.y) - a.y, double(b.z) - a.z};
    const double v[3] = {double(c.x) - a.x, double(c.y) - a.y, double(c.z) - a.z};
    double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    const double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    const double scale =
        sqrt((u[0] * u[0] + u[1] * u[1] + u[2] * u[2]) * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    if (len > 1e-9 * scale) {  // not collinear
      for (double& x : n)
        x /= len;
      const double along = n[0] * rule.axis[0] + n[1] * rule.axis[1] + n[2] * rule.axis[2];
      if (fabs(along) >= rule.min_cos) {
        const double d = -(n[0] * a.x + n[1] * a.y + n[2] * a.z);
        plane = make_float4(float(n[0]), float(n[1]), float(n[2]), float(d));
      }
    }
  }
  planes[h] = plane;
}

// Block (x, y): planes x * 8 .. x * 8 + 7 against the y-th slice of the points.
__global__ void count_inliers(const Point3f* points, int n, const float4* planes, int count,
                              float threshold, unsigned* inliers) {
  __shared__ float4 plane[kPlanesPerBlock];
  const int base = blockIdx.x * kPlanesPerBlock;
  if (threadIdx.x < kPlanesPerBlock)
    plane[threadIdx.x] =
        base + int(threadIdx.x) < count ? planes[base + threadIdx.x] : make_float4(NAN, 0, 0, 0);
  __syncthreads();
  unsigned hits[kPlanesPerBlock] = {};
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < n; i += gridDim.y * blockDim.x) {
    const Point3f p = points[i];
    for (int k = 0; k < kPlanesPerBlock; ++k) {
      const float4 q = plane[k];
      hits[k] += fabsf(q.x * p.x + q.y * p.y + q.z * p.z + q.w) < threshold ? 1u : 0u;
    }
  }
  for (int k = 0; k < kPlanesPerBlock; ++k) {
    unsigned v = hits[k];
    for (int o = 16; o > 0; o >>= 1)
      v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0 && v && base + k < count) atomicAdd(&inliers[base + k], v);
  }
}

struct InlierTerms {
  const Point3f* points;
  float4 plane;
  float threshold;
  double ref[3];
  __device__ Moments operator()(int i) const {
    const Point3f p = points[i];
    if (!(fabsf(plane.x * p.x + plane.y * p.y + plane.z * p.z + plane.w) < threshold)) return {};
    return Moments::of(p.x - ref[0], p.y - ref[1], p.z - ref[2]);
  }
};

__global__ void flag_inliers(const Point3f* points, int n, float4 plane, float threshold,
                             unsigned char* keep) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Point3f p = points[i];
  keep[i] = fabsf(plane.x * p.x + plane.y * p.y + plane.z * p.z + plane.w) < threshold;
}

float4 to_float4(const LocalPlane& p) {
  return make_float4(float(p.n[0]), float(p.n[1]), float(p.n[2]), float(p.d));
}

}  // namespace

PlaneFit fit_plane_on_device(GroundWorkspace& ws, int n, const GroundPlaneParams& params,
                             cuda::StageClock& clock) {
  const int count = params.max_iterations;
  cudaStream_t s = ws.stream.get();
  const AxisRule axis = axis_rule(params);
  const HypothesisRule rule{
      params.seed, unsigned(n), {axis.axis[0], axis.axis[1], axis.axis[2]}, axis.min_cos};
  const auto hypotheses = std::size_t(count);
  ws.planes.reserve(hypotheses);
  ws.first.reserve(hypotheses);
  ws.inliers.reserve(hypotheses);
  make_hypotheses<<<cuda::blocks_for(hypotheses, 128), 128, 0, s>>>(
      ws.points.get(), count, rule, ws.planes.get(), ws.first.get());
  CU_CHECK_LAUNCH("make_hypotheses");
  CU_CHECK(cudaMemsetAsync(ws.inliers.get(), 0, hypotheses * sizeof(unsigned), s));
  // Enough slices of the points to give every SM a few blocks whatever the hypothesis count.
  const int plane_blocks = (count + kPlanesPerBlock - 1) / kPlanesPerBlock;
  const int slices = std::clamp(1024 / plane_blocks, 1, std::max(1, n / kScoreThreads));
  const float threshold = float(params.threshold);
  count_inliers<<<dim3(unsigned(plane_blocks), unsigned(slices)), kScoreThreads, 0, s>>>(
      ws.points.get(), n, ws.planes.get(), count, threshold, ws.inliers.get());
  CU_CHECK_LAUNCH("count_inliers");
  ws.host_inliers.reserve(hypotheses);
  ws.host_planes.reserve(hypotheses);
  ws.host_first.reserve(hypotheses);
  CU_CHECK(cudaMemcpyAsync(ws.host_inliers.get(), ws.inliers.get(), hypotheses * sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_planes.get(), ws.planes.get(), hypotheses * sizeof(float4),
                           cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_first.get(), ws.first.get(), hypotheses * sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  clock.mark("hypotheses");

  PlaneFit fit;
  fit.hypotheses = count;
  // The most inliers, ties to the lowest hypothesis. (Refitting the best few and keeping the
  // best after refitting was measured: more inliers on one KITTI frame but a plane 15 mm from
  // PCL's, and three times the time.)
  int best = -1;
  for (int h = 0; h < count; ++h)
    if (!std::isnan(ws.host_planes.get()[h].x) &&
        (best < 0 || ws.host_inliers.get()[h] > ws.host_inliers.get()[best]))
      best = h;
  if (best < 0 || ws.host_inliers.get()[best] < 3) return fit;
  const float4 chosen = ws.host_planes.get()[best];
  // The hypothesis's first point, the refit's reference: read from the device, where the points
  // are (one 12-byte copy on the sync the first refit makes anyway).
  ws.host_point.reserve(1);
  CU_CHECK(cudaMemcpyAsync(ws.host_point.get(), ws.points.get() + ws.host_first.get()[best],
                           sizeof(Point3f), cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  const Point3f first = *ws.host_point.get();
  const std::array<double, 3> ref{first.x, first.y, first.z};

  // PCL's refinement, repeated while it gains inliers: the inliers' moments (about a point on
  // the plane, so double sums keep their precision far from the origin), the refit on the
  // host, the inliers of the refit plane again. PCL refits once.
  ws.moments.reserve(1);
  ws.host_moments.reserve(1);
  std::size_t bytes = 0;
  const auto moments_of = [&](float4 plane) {
    const InlierTerms terms{ws.points.get(), plane, threshold, {ref[0], ref[1], ref[2]}};
    const auto each = thrust::make_transform_iterator(thrust::counting_iterator<int>(0), terms);
    CU_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, each, ws.moments.get(), n, AddMoments{},
                                       Moments{}, s));
    ws.temp_at_least(bytes);
    CU_CHECK(cub::DeviceReduce::Reduce(ws.temp.get(), bytes, each, ws.moments.get(), n,
                                       AddMoments{}, Moments{}, s));
    CU_CHECK(cudaMemcpyAsync(ws.host_moments.get(), ws.moments.get(), sizeof(Moments),
                             cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
    return ws.host_moments.get()->inlier_moments();
  };
  InlierMoments moments = moments_of(chosen);
  fit.plane = refit_plane(moments, ref, LocalPlane{{chosen.x, chosen.y, chosen.z}, chosen.w});
  moments = moments_of(to_float4(fit.plane));
  for (int round = 1; round < kMaxRefits; ++round) {
    const LocalPlane next = refit_plane(moments, ref, fit.plane);
    const InlierMoments gained = moments_of(to_float4(next));
    if (!(gained.count > moments.count)) break;
    fit.plane = next;
    moments = gained;
  }
  clock.mark("refit");

  ws.keep.reserve(std::size_t(n));
  ws.kept.reserve(std::size_t(n));
  ws.selected.reserve(1);
  ws.host_selected.reserve(1);
  flag_inliers<<<cuda::blocks_for(std::size_t(n), 256), 256, 0, s>>>(
      ws.points.get(), n, to_float4(fit.plane), threshold, ws.keep.get());
  CU_CHECK_LAUNCH("flag_inliers");
  const thrust::counting_iterator<int> ids(0);
  CU_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, ids, ws.keep.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, ids, ws.keep.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_selected.get(), ws.selected.get(), sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  clock.mark("inliers");
  fit.inliers.resize(*ws.host_selected.get());
  CU_CHECK(cudaMemcpyAsync(fit.inliers.data(), ws.kept.get(), fit.inliers.size() * sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  clock.mark("download");
  ws.stream.sync();
  fit.found = true;
  return fit;
}

PlaneFit ground_plane_gpu(const PointCloud& cloud, const GroundPlaneParams& params,
                          StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<GroundWorkspace>("gpu ground plane");
  const auto n = int(cloud.size());
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  ws.points.reserve(std::size_t(n));
  CU_CHECK(cudaMemcpyAsync(ws.points.get(), cloud.points.data(), std::size_t(n) * sizeof(Point3f),
                           cudaMemcpyHostToDevice, s));
  clock.mark("upload");

  PlaneFit fit = fit_plane_on_device(ws, n, params, clock);
  ws.stream.sync();  // the last mark
  clock.collect(stages);
  return fit;
}

}  // namespace cumulus
