// The GPU outlier filters on the neighbour-search grid (nns/cuda). Statistical: each point's
// score from its k nearest, rounded as PCL rounds it (double square roots summed in ascending
// distance, one float per score); the threshold from sums reduced in any order, with a bound
// on how far PCL's serial sums can lie from them, and PCL's serial sums on the host only when a
// score falls inside that bound. Radius: a count of neighbours that stops at the number needed.
// Both keep their points with one stream compaction, so the indices stay ascending as PCL's, and
// bring them down with its counters in one trip (KeptIdsDown).
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <cub/device/device_reduce.cuh>

#include <algorithm>
#include <cmath>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/distance.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "filter/cuda/filter_gpu.h"
#include "filter/cuda/filter_workspace.cuh"
#include "nns/cuda/device_index.cuh"

namespace cumulus {

namespace {

constexpr int kThreads = 128;

// PCL's score of each point: dist_sum += sqrt(double(d2)) over the neighbours after the first,
// then float(dist_sum / mean_k), with explicit roundings so nvcc contracts nothing. A warp a
// point on the grid (nns::WarpKnnVisitor, the k-NN's list of KnnVisitor's order held across the
// lanes): a thread's own list of 51 lived in local memory and paid a shift of the list for every
// insertion. The lanes take the square roots of their entries; lane 0 adds them in ascending
// order, as PCL does.
template <int MaxK>
__global__ void score_by_mean_distance(nns::GridSearch search, const float3* points, int n,
                                       const int* order, int k, float* score) {
  using Visitor = nns::WarpKnnVisitor<MaxK>;
  __shared__ unsigned long long stage[kThreads / 32][MaxK];  // each warp's merges, then its roots
  const int slot = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  const int lane = int(threadIdx.x & 31);
  if (slot >= n) return;      // the whole warp
  const int q = order[slot];  // the index's cell order (nns::DeviceIndex::cell_order)
  const float3 p = points[q];
  const bool active = cuda::finite3(p);
  Visitor v(k, INFINITY, stage[threadIdx.x / 32]);
  search.group<32>(p, active, v, lane);
  double* roots = reinterpret_cast<double*>(stage[threadIdx.x / 32]);
  __syncwarp();  // the merges' last reads of the stage are done
#pragma unroll
  for (int r = 0; r < Visitor::kPer; ++r) {
    const int e = lane * Visitor::kPer + r;
    if (e < v.size) roots[e] = __dsqrt_rn(double(v.d[r]));
  }
  __syncwarp();
  if (lane != 0) return;
  double sum = 0;
  for (int j = 1; j < v.size; ++j)
    sum = __dadd_rn(sum, roots[j]);
  score[q] = active ? __double2float_rn(__ddiv_rn(sum, double(k - 1))) : 0.0f;
}

struct DeviceSums {
  double sum, sq_sum;
  unsigned long long valid;
};

// PCL's terms: the score and its float square (points that are not finite score 0).
struct ScoreTerms {
  const float3* points;
  const float* score;
  __device__ DeviceSums operator()(int i) const {
    const float s = score[i];
    return {double(s), double(__fmul_rn(s, s)), cuda::finite3(points[i]) ? 1ull : 0ull};
  }
};

struct AddSums {
  __device__ DeviceSums operator()(const DeviceSums& a, const DeviceSums& b) const {
    return {a.sum + b.sum, a.sq_sum + b.sq_sum, a.valid + b.valid};
  }
};

// PCL removes a point when score > threshold (score <= threshold with negative); scores inside
// [lo, hi] could fall on either side of PCL's own threshold and are counted.
__global__ void keep_by_score(const float* score, int n, double threshold, double lo, double hi,
                              bool negative, unsigned char* keep, unsigned* ambiguous) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double s = score[i];
  keep[i] = negative ? !(s <= threshold) : !(s > threshold);
  if (s >= lo && s <= hi) atomicAdd(ambiguous, 1u);
}

// Counts the targets with d2 <= r2 (PCL's radius outlier test) until `need` are found; the limit
// then falls below every distance, so the search stops at the next shell. (Stopping inside the
// cell as well was measured and not kept: a LiDAR frame's count 524 -> 193 us, but KITTI's 69 ->
// 102 and cuPCL's sample's 184 -> 320 on an H200, docs/benchmarks.md.)
struct RadiusAtLeastVisitor {
  float r2;
  unsigned need;
  unsigned count = 0;
  __device__ bool done() const { return count >= need; }
  __device__ float limit() const { return done() ? -1.0f : r2; }
  __device__ void visit(float d2, int) { count += d2 <= r2 ? 1u : 0u; }
};

// The same count for a whole warp (kWholeWarp in nns/cuda/grid.cuh): the warp reads the ball's
// cells 32 candidates at a time and stops at the round that brings the count to `need`.
struct WarpRadiusAtLeastVisitor {
  static constexpr bool kAnyRounds = true;
  float r2;
  unsigned need;
  unsigned count = 0;
  __device__ bool done() const { return count >= need; }
  __device__ float limit() const { return done() ? -1.0f : r2; }
  __device__ void visit_all(float d2, int, bool active) {
    count += unsigned(__popc(__ballot_sync(0xffffffffu, active && d2 <= r2)));
  }
  __device__ void merge() {}
};

// Its rounds may be read range by range (nns::kAnyRounds), where the k-NN's list may not.
static_assert(WarpRadiusAtLeastVisitor::kAnyRounds && nns::kAnyRounds<WarpRadiusAtLeastVisitor> &&
              !nns::kAnyRounds<nns::WarpKnnVisitor<64>>);

__global__ void keep_by_neighbour_count(nns::GridSearch search, const float3* points, int n,
                                        float r2, unsigned need, bool negative,
                                        unsigned char* keep) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = q < n ? points[q] : make_float3(0, 0, 0);
  const bool active = q < n && cuda::finite3(p);
  RadiusAtLeastVisitor v{r2, need};
  search(p, active, v);
  if (q < n) keep[q] = (active && v.done()) != negative;
}

// The same with a whole warp a point, for grids whose cells hold hundreds of targets (see
// count_with_warps).
__global__ void keep_by_neighbour_count_warp(nns::GridSearch search, const float3* points, int n,
                                             float r2, unsigned need, bool negative,
                                             unsigned char* keep) {
  const int q = int((std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32);
  if (q >= n) return;  // the whole warp
  const float3 p = points[q];
  const bool active = cuda::finite3(p);
  WarpRadiusAtLeastVisitor v{r2, need};
  search.group<32>(p, active, v, int(threadIdx.x & 31));
  if ((threadIdx.x & 31) == 0) keep[q] = (active && v.done()) != negative;
}

// Whether the radius count goes a warp a point. A thread reads the whole of its point's cell before
// it may stop; a warp reads 32 targets a round and stops at the round that has enough, but spends
// some 300-400 instructions a point setting up its search. nns::occupied_per_target estimates a
// target's cell population. Thread / warp kernel on an H200 (ncu, us), with that estimate: two
// LiDAR frames at 0.5 m (368, 394) 512-537 / 79, one at 0.3 m, 50 neighbours 573-589 / 96, cuPCL's
// sample (205) 182 / 97-98; KITTI frame 0 (95) 69 / 84 at 0.5 m and 118 / 121 at 1 m, PCL's table
// scene (about 50) at 5 mm to 2 cm 60-84 / 137-222. And a ball whose radius exceeds two cells can
// have a box of more than 32 rows (6 x 6 cells), which the warp walks shell by shell: the table
// scene at 0.5 m (about 220, cells of 2.4 cm) 110 / 150. The estimate is asked only where the
// radius leaves the warp a chance.
constexpr double kWarpOccupancy = 160;
bool count_with_warps(const nns::GridPlan& plan, const PointCloud& cloud, double radius) {
  return radius <= 2.0 * double(plan.cell) &&
         nns::occupied_per_target(cloud.points.data(), cloud.size(), plan) > kWarpOccupancy;
}

struct OutlierWorkspace {
  cuda::Stream stream;
  nns::DeviceIndex index;
  cuda::DeviceBuffer<float> score;
  cuda::DeviceBuffer<unsigned char> keep, temp;
  cuda::DeviceBuffer<DeviceSums> sums;
  cuda::DeviceBuffer<unsigned> counters;  // kept, ambiguous
  cuda::PinnedBuffer<DeviceSums> host_sums;
  KeptIdsDown kept_down;  // the counters and the kept ids

  void temp_at_least(std::size_t bytes) { temp.reserve(std::max<std::size_t>(bytes, 1)); }
};

// The indices whose keep flag is set, ascending, into ws.kept_down's device ids; then both counters
// and the ids to the host (one wait).
void compact_kept(OutlierWorkspace& ws, unsigned n) {
  cudaStream_t s = ws.stream.get();
  ws.kept_down.select_kept(ws.keep.get(), n, ws.counters.get(), ws.temp, s);
  ws.kept_down.queue(ws.counters.get(), 2, n, s);
  ws.stream.sync();
}

std::vector<std::int32_t> take_kept(OutlierWorkspace& ws, cuda::StageClock& clock,
                                    StageTimes& stages) {
  ws.stream.sync();  // the clock's last event, recorded after compact_kept's wait
  clock.collect(stages);
  return ws.kept_down.take(ws.stream.get(), stages);
}

void classify(OutlierWorkspace& ws, unsigned n, double threshold, double lo, double hi,
              bool negative) {
  CU_CHECK(cudaMemsetAsync(ws.counters.get(), 0, 2 * sizeof(unsigned), ws.stream.get()));
  keep_by_score<<<cuda::blocks_for(n, 256), 256, 0, ws.stream.get()>>>(
      ws.score.get(), int(n), threshold, lo, hi, negative, ws.keep.get(), ws.counters.get() + 1);
  CU_CHECK_LAUNCH("keep_by_score");
  compact_kept(ws, n);
}

void prepare(OutlierWorkspace& ws, const PointCloud& cloud, float reach,
             const nns::GridDensity& density, cuda::StageClock& clock) {
  const std::size_t n = cloud.size();
  ws.index.build(NnsMethod::Gpu, cloud.points.data(), n, ws.stream.get(), reach, density);
  clock.mark("upload, grid");
  ws.keep.reserve(n);
  ws.counters.reserve(2);
}

}  // namespace

std::vector<std::int32_t> statistical_outliers_gpu(const PointCloud& cloud,
                                                   const StatisticalOutlierParams& params,
                                                   StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<OutlierWorkspace>("gpu statistical outliers");
  const auto n = unsigned(cloud.size());
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const int k = params.mean_k + 1;  // the point itself comes first
  prepare(ws, cloud, 0.0f, nns::knn_density(k), clock);
  ws.score.reserve(n);
  const nns::GridSearch search = ws.index.grid_search();  // prepare() built the grid
  nns::with_max_k(k, [&](auto max_k) {
    score_by_mean_distance<std::max(32, decltype(max_k)::value)>
        <<<cuda::blocks_for(std::size_t(n) * 32, kThreads), kThreads, 0, s>>>(
            search, ws.index.targets.get(), int(n), ws.index.cell_order(), k, ws.score.get());
    CU_CHECK_LAUNCH("score_by_mean_distance");
  });
  clock.mark("scores");

  ws.sums.reserve(1);
  ws.host_sums.reserve(1);
  const auto terms = thrust::make_transform_iterator(
      thrust::counting_iterator<int>(0), ScoreTerms{ws.index.targets.get(), ws.score.get()});
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceReduce::Reduce(nullptr, bytes, terms, ws.sums.get(), int(n), AddSums{},
                                     DeviceSums{0, 0, 0}, s));
  ws.temp_at_least(bytes);
  CU_CHECK(cub::DeviceReduce::Reduce(ws.temp.get(), bytes, terms, ws.sums.get(), int(n), AddSums{},
                                     DeviceSums{0, 0, 0}, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_sums.get(), ws.sums.get(), sizeof(DeviceSums),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  const DeviceSums d = *ws.host_sums.get();
  const ScoreSums sums{d.sum, d.sq_sum, d.valid};
  const ThresholdRange range = sor_threshold_range(sums, params.stddev_mul);
  clock.mark("threshold");

  bool settled = false;
  if (range.usable) {
    classify(ws, n, sor_threshold(sums, params.stddev_mul), range.lo, range.hi, params.negative);
    settled = ws.kept_down.counter(1) == 0;
  }
  if (!settled) {
    // A score within rounding of the threshold (or a variance within rounding of zero): PCL's
    // own serial sums decide.
    std::vector<float> scores(n);
    CU_CHECK(cudaMemcpyAsync(scores.data(), ws.score.get(), n * sizeof(float),
                             cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
    const double t = sor_threshold_serial(scores.data(), n, d.valid, params.stddev_mul);
    classify(ws, n, t, INFINITY, -INFINITY, params.negative);
    clock.mark("serial threshold");
  }
  clock.mark("keep");
  return take_kept(ws, clock, stages);
}

std::vector<std::int32_t> radius_outliers_gpu(const PointCloud& cloud,
                                              const RadiusOutlierParams& params, float r2,
                                              StageTimes& stages) {
  auto [lock, ws] = cuda::acquire_workspace<OutlierWorkspace>("gpu radius outliers");
  const auto n = unsigned(cloud.size());
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  // Planned as radius_search's grid: cells sized towards the radius, and no finer second grid.
  prepare(ws, cloud, float(params.radius), nns::radius_density(), clock);
  const unsigned need = unsigned(params.min_neighbors) + 1;  // the point itself counts
  const nns::GridSearch search = ws.index.grid_search();
  const float3* points = ws.index.targets.get();
  if (count_with_warps(ws.index.plan, cloud, params.radius)) {
    keep_by_neighbour_count_warp<<<cuda::blocks_for(std::size_t(n) * 32, kThreads), kThreads, 0,
                                   s>>>(search, points, int(n), r2, need, params.negative,
                                        ws.keep.get());
    CU_CHECK_LAUNCH("keep_by_neighbour_count_warp");
    clock.mark("counts, a warp a point");
  } else {
    keep_by_neighbour_count<<<cuda::blocks_for(n, kThreads), kThreads, 0, s>>>(
        search, points, int(n), r2, need, params.negative, ws.keep.get());
    CU_CHECK_LAUNCH("keep_by_neighbour_count");
    clock.mark("counts, a thread a point");
  }
  CU_CHECK(cudaMemsetAsync(ws.counters.get(), 0, 2 * sizeof(unsigned), s));
  compact_kept(ws, n);
  clock.mark("keep");
  return take_kept(ws, clock, stages);
}

}  // namespace cumulus
