// The GPU RANSAC plane. Every hypothesis at once: three point indices per hypothesis from a
// counter-based hash of (seed, hypothesis, draw), so the result depends on the seed alone;
// each block scores a few planes against a slice of the points (one load of a point serves
// them all); the best plane (most inliers, then the lowest hypothesis) is refit on its inliers'
// moments, summed in double, and its inliers selected again, as PCL optimizes its
// coefficients, and refit again while that gains inliers, all in one cooperative kernel
// (refine_plane.cuh). One read back: the plane and the inlier count.
#include <thrust/iterator/counting_iterator.h>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/host_upload.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "ground/cuda/ground_gpu.h"
#include "ground/cuda/ground_workspace.cuh"
#include "ground/cuda/moments.cuh"
#include "ground/cuda/refine_plane.cuh"

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

}  // namespace

void fit_plane_async(GroundWorkspace& ws, const Point3f* points, int n,
                     const GroundPlaneParams& params, cuda::StageClock& clock) {
  int count = params.max_iterations;
  cudaStream_t s = ws.stream.get();
  const AxisRule axis = axis_rule(params);
  const HypothesisRule rule{
      params.seed, unsigned(n), {axis.axis[0], axis.axis[1], axis.axis[2]}, axis.min_cos};
  const auto hypotheses = std::size_t(count);
  ws.planes.reserve(hypotheses);
  ws.first.reserve(hypotheses);
  ws.inliers.reserve(hypotheses);
  make_hypotheses<<<cuda::blocks_for(hypotheses, 128), 128, 0, s>>>(
      points, count, rule, ws.planes.get(), ws.first.get());
  CU_CHECK_LAUNCH("make_hypotheses");
  CU_CHECK(cudaMemsetAsync(ws.inliers.get(), 0, hypotheses * sizeof(unsigned), s));
  // Enough slices of the points to give every SM a few blocks whatever the hypothesis count.
  const int plane_blocks = (count + kPlanesPerBlock - 1) / kPlanesPerBlock;
  const int slices = std::clamp(1024 / plane_blocks, 1, std::max(1, n / kScoreThreads));
  float threshold = float(params.threshold);
  count_inliers<<<dim3(unsigned(plane_blocks), unsigned(slices)), kScoreThreads, 0, s>>>(
      points, n, ws.planes.get(), count, threshold, ws.inliers.get());
  CU_CHECK_LAUNCH("count_inliers");
  clock.mark("hypotheses");

  // The best hypothesis, refit as PCL optimizes its coefficients (and again while that gains
  // inliers; PCL refits once), and its inliers flagged: one cooperative kernel, all blocks
  // resident. (Refitting the best few hypotheses and keeping the best after refitting was
  // measured: more inliers on one KITTI frame but a plane 15 mm from PCL's, and three times the
  // time.)
  if (ws.refine_blocks == 0) {
    int device = 0, sms = 0, per_sm = 0, cooperative = 0;
    CU_CHECK(cudaGetDevice(&device));
    CU_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    if (!cooperative)
      throw Error("gpu ground plane: this device cannot launch cooperative kernels");
    CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, refine_best_plane,
                                                           kRefineThreads, 0));
    ws.refine_blocks = std::clamp(sms * per_sm, 1, kRefineSlices);
  }
  ws.partials.reserve(kRefineSlices);
  ws.state.reserve(1);
  ws.keep.reserve(std::size_t(n));
  ws.kept.reserve(std::size_t(n));
  ws.selected.reserve(1);
  ws.host_selected.reserve(1);
  ws.host_state.reserve(1);
  const float4* planes = ws.planes.get();
  const unsigned* inliers = ws.inliers.get();
  const int* first = ws.first.get();
  int max_refits = kMaxRefits;
  Moments* partials = ws.partials.get();
  RefineState* state = ws.state.get();
  unsigned char* keep = ws.keep.get();
  void* args[] = {&points,    &n,          &planes,   &inliers, &first, &count,
                  &threshold, &max_refits, &partials, &state,   &keep};
  CU_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(refine_best_plane),
                                       dim3(unsigned(ws.refine_blocks)), dim3(kRefineThreads), args,
                                       0, s));
  // Up to its last field: the padding after it is never written.
  CU_CHECK(cudaMemcpyAsync(ws.host_state.get(), state, offsetof(RefineState, done) + sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  clock.mark("refit");

  const thrust::counting_iterator<int> ids(0);
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceSelect::Flagged(nullptr, bytes, ids, ws.keep.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceSelect::Flagged(ws.temp.get(), bytes, ids, ws.keep.get(), ws.kept.get(),
                                      ws.selected.get(), n, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_selected.get(), ws.selected.get(), sizeof(unsigned),
                           cudaMemcpyDeviceToHost, s));
  clock.mark("inliers");
}

PlaneFit read_plane_fit(GroundWorkspace& ws, const GroundPlaneParams& params, bool with_inliers) {
  PlaneFit fit;
  fit.hypotheses = params.max_iterations;
  const RefineState& state = *ws.host_state.get();
  if (!state.found) return fit;
  fit.found = true;
  fit.plane = LocalPlane{{state.plane[0], state.plane[1], state.plane[2]}, state.plane[3]};
  if (!with_inliers) return fit;
  fit.inliers.resize(*ws.host_selected.get());
  CU_CHECK(cudaMemcpyAsync(fit.inliers.data(), ws.kept.get(), fit.inliers.size() * sizeof(int),
                           cudaMemcpyDeviceToHost, ws.stream.get()));
  ws.stream.sync();
  return fit;
}

PlaneFit ground_plane_gpu(const PointCloud& cloud, const GroundPlaneParams& params,
                          StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<GroundWorkspace>("gpu ground plane");
  const auto n = int(cloud.size());
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  ws.points.reserve(std::size_t(n));
  cuda::upload(ws.points.get(), cloud.points.data(), std::size_t(n) * sizeof(Point3f), s);
  clock.mark("upload");

  fit_plane_async(ws, ws.points.get(), n, params, clock);
  ws.stream.sync();
  PlaneFit fit = read_plane_fit(ws, params);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(stages);
  return fit;
}

}  // namespace cumulus
