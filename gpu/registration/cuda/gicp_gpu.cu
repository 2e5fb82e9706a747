// GPU GICP: PCL's GeneralizedIterativeClosestPoint with the whole loop on the device. Each
// iteration is two kernels: the search for every source point's nearest target, then one
// cooperative kernel that builds the pairs' Mahalanobis matrices and runs PCL's BFGS to its end.
// Every thread of that grid runs the same BFGS on the same values (it is six numbers, cheaper to
// repeat than to broadcast), and each evaluation of the cost is one pass over the pairs, a
// block reduction and a grid-wide barrier, after which every block adds the partial sums in the
// same order and so holds the same cost and gradient. The host only launches, looking at the
// loop's state between chunks of iterations as the ICP loop does.
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <type_traits>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/host_upload.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"
#include "nns/cuda/visitors.cuh"
#include "registration/cuda/gicp_fitness.cuh"
#include "registration/cuda/gicp_gpu.h"
#include "registration/cuda/icp_gpu.h"
#include "registration/cuda/icp_loop_state.cuh"
#include "registration/cuda/icp_reduce.cuh"
#include "registration/cuda/icp_search.cuh"
#include "registration/cuda/loop_common.cuh"
#include "registration/gicp_math.h"
#include "registration/icp_math.h"

namespace cumulus {
namespace gicp_cuda {

namespace cg = cooperative_groups;
namespace gm = gicp_math;
namespace im = icp_math;
using icp_cuda::HistoryEntry;

namespace {

constexpr int kThreads = icp_cuda::kThreads;  // the reductions' block size
constexpr int kV = gm::CostSums::kValues;

struct Control {
  double t[16];      // the transform found so far, row-major, without the guess
  float tf[16];      // its float cast, which moves the source for the search
  double guess[16];  // the initial guess, already applied to the source
  int state;         // icp_math::State; nonzero ends the loop
  int iterations;
  int evaluations;
  int pad;
};

struct Settings {
  double max_d2;
  int max_iterations;
  int max_inner;
  gm::Tolerances tolerances;
  double rotation_epsilon, translation_epsilon;
  int kernel;
  double kernel_scale;
};

// The source moved by the guess as pcl::transformPointCloud moves it.
__global__ void k_apply_guess(const float3* in, int n, const Control* ctl, float3* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float q[3];
  gm::apply_double(ctl->guess, &in[i].x, q);
  out[i] = make_float3(q[0], q[1], q[2]);
}

// PCL's regularised covariance of each query from its k nearest points (rows of k indices into
// `points`, as nns::search_knn leaves them).
template <int MaxK>
__global__ void k_covariances(const int* neighbours, int n, int k, const float3* points,
                              double epsilon, double* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float nb[3 * MaxK];
  int m = 0;
  for (int j = 0; j < k; ++j) {
    const int at = neighbours[std::size_t(i) * std::size_t(k) + std::size_t(j)];
    if (at < 0) continue;
    const float3 q = points[at];
    nb[3 * m] = q.x;
    nb[3 * m + 1] = q.y;
    nb[3 * m + 2] = q.z;
    ++m;
  }
  gm::regularised_covariance(nb, m, epsilon, out + 9 * std::size_t(i));
}

// Each source point's nearest target under the current transform (cast to float, as PCL moves
// its queries); pair[i] is that target when nearer than the correspondence distance, else -1.
template <int Lanes, class Search>
__global__ void __launch_bounds__(icp_cuda::kSearchThreads)
    k_correspond(Search search, const float3* source, int n, const float3* targets, float limit,
                 double max_d2, const Control* ctl, int* pair, float* pair_d2) {
  if (ctl->state != im::kNotConverged) return;  // the same for every thread of the grid
  const icp_cuda::SearchSlot at =
      icp_cuda::search_slot<Lanes>(n, nullptr, static_cast<const icp_cuda::Control*>(nullptr), 0);
  float q[3] = {0, 0, 0};
  if (at.i < n) gm::apply_float(ctl->tf, &source[at.i].x, q);
  float nd;
  int ni;
  icp_cuda::nearest_at<Lanes>(at, search, targets, make_float3(q[0], q[1], q[2]), n, limit, -1, nd,
                              ni);
  if (at.rank != 0 || at.i >= n) return;
  pair[at.i] = ni >= 0 && double(nd) < max_d2 ? ni : -1;
  pair_d2[at.i] = nd;
}

// The grid's sums of v into `total` (every thread of every block gets the same values): a block
// reduction, the partials of buffer `buf`, the grid barrier, and every block adding all partials
// in the same order. Two partial buffers alternate so that a block may write the next
// reduction's partials while a slower one still reads these.
__device__ void grid_reduce(const double (&v)[kV], double* partials, int& buf, double* total) {
  __shared__ double block[kV];
  __shared__ double sums[kV];
  icp_cuda::block_sum_into<kV>(v, block);
  __syncthreads();
  double* mine = partials + std::size_t(buf) * kV * gridDim.x;
  if (threadIdx.x < kV)
    mine[std::size_t(threadIdx.x) * gridDim.x + blockIdx.x] = block[threadIdx.x];
  cg::this_grid().sync();
  icp_cuda::grid_sum_into<kV>(mine, sums);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kV; ++j)
    total[j] = sums[j];
  __syncthreads();
  buf ^= 1;
}

// One evaluation of the cost and its gradient at state x, by the whole grid.
struct GridCost {
  const float3* source;
  int n;
  const float3* targets;
  const int* pair;
  const double* maha;
  double* partials;
  double m;
  int buf;

  CUMULUS_HD void operator()(const double* x, double& f, double* g) {
#ifdef __CUDA_ARCH__
    float mf[16];
    gm::float_transform_of(x, mf);
    gm::CostSums s;
    const int stride = int(gridDim.x * blockDim.x);
    for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
      const int j = pair[i];
      if (j < 0) continue;
      const float3 p = source[i], q = targets[j];
      const float pp[3] = {p.x, p.y, p.z}, qq[3] = {q.x, q.y, q.z};
      gm::add_cost(s, mf, pp, qq, maha + 9 * std::size_t(i));
    }
    double v[kV], total[kV];
    const double* sv = s.values();
#pragma unroll
    for (int j = 0; j < kV; ++j)
      v[j] = sv[j];
    grid_reduce(v, partials, buf, total);
    gm::CostSums sum;
    double* out = sum.values();
#pragma unroll
    for (int j = 0; j < kV; ++j)
      out[j] = total[j];
    gm::finish_cost(sum, m, x, f, g);
#else
    (void)x;
    (void)f;
    (void)g;
#endif
  }
};

// One GICP iteration after the search: the pairs' Mahalanobis matrices under the transform at
// the iteration's start (scaled by their robust weights), PCL's BFGS from that transform, and
// PCL's convergence test. Launched cooperatively; block 0's first thread writes the results.
__global__ void __launch_bounds__(kThreads)
    k_optimise(const float3* source, int n, const float3* targets, const int* pair,
               const float* pair_d2, const double* cov_src, const double* cov_tgt, double* maha,
               double* partials, Control* ctl, HistoryEntry* history, Settings set) {
  if (ctl->state != im::kNotConverged) return;  // the same for every thread of the grid
  double t[16], guess[16], full[16];
  float tf[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    t[i] = ctl->t[i];
    guess[i] = ctl->guess[i];
    tf[i] = ctl->tf[i];
  }
  im::multiply(t, guess, full);
  const double r[9] = {full[0], full[1], full[2], full[4], full[5],
                       full[6], full[8], full[9], full[10]};
  double v[kV];
#pragma unroll
  for (int j = 0; j < kV; ++j)
    v[j] = 0;
  const int stride = int(gridDim.x * blockDim.x);
  for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {
    const int j = pair[i];
    if (j < 0) continue;
    double w = 1;
    if (set.kernel != im::kNoKernel) {
      float q[3];
      gm::apply_float(tf, &source[i].x, q);
      w = im::robust_weight(set.kernel, set.kernel_scale,
                            sqrt(double(gm::dist2(q, &targets[j].x))));
    }
    gm::mahalanobis(r, cov_src + 9 * std::size_t(i), cov_tgt + 9 * std::size_t(j), w,
                    maha + 9 * std::size_t(i));
    v[0] += 1;
    v[1] += double(pair_d2[i]);
  }
  int buf = 0;
  double total[kV];
  grid_reduce(v, partials, buf, total);
  const bool writer = blockIdx.x == 0 && threadIdx.x == 0;
  const double m = total[0];
  if (m < 4) {  // PCL's GICP needs 4 pairs
    if (writer) ctl->state = im::kNoCorrespondences;
    return;
  }
  double x[6];
  gm::state_of(t, x);
  GridCost cost{source, n, targets, pair, maha, partials, m, buf};
  gm::Bfgs<GridCost> bfgs(cost, set.tolerances);
  int inner = 0, evaluations = 0;
  const bool ok = bfgs.minimise(x, set.max_inner, inner, evaluations);
  if (!writer) return;
  ctl->evaluations += evaluations;
  if (!ok) {
    ctl->state = im::kSolverFailure;
    return;
  }
  double next[16];
  gm::transform_of(x, next);
  HistoryEntry& h = history[ctl->iterations];
  h.correspondences = m;
  h.mse = total[1] / m;
  gm::increment(t, next, h.cos_angle, h.translation_sq);
  const double delta = gm::delta(t, next, set.rotation_epsilon, set.translation_epsilon);
  for (int i = 0; i < 16; ++i) {
    ctl->t[i] = next[i];
    ctl->tf[i] = float(next[i]);
  }
  ctl->iterations += 1;
  if (delta < 1)
    ctl->state = im::kTransform;
  else if (ctl->iterations >= set.max_iterations)
    ctl->state = im::kIterations;
}

struct Workspace {
  cuda::Stream stream;
  // The targets for the covariances' and the fitness's unbounded searches, the source for its
  // covariances, and (`gpu`) the targets again in a grid bounded by the correspondence distance,
  // which the iterations' searches use (ICP's grid: a 1 m distance on a LiDAR frame otherwise
  // visits many more cells).
  nns::DeviceIndex target_index, source_index, pair_index;
  cuda::DeviceBuffer<float3> source, moved;
  cuda::DeviceBuffer<double> cov_src, cov_tgt, maha, partials, fitness;
  cuda::DeviceBuffer<int> pair, neighbours;
  cuda::DeviceBuffer<float> neighbour_d2;
  cuda::DeviceBuffer<float> pair_d2;
  cuda::DeviceBuffer<Control> control;
  cuda::DeviceBuffer<HistoryEntry> history;
  cuda::PinnedBuffer<Control> host_control;
  cuda::PinnedBuffer<HistoryEntry> host_history;
  cuda::PinnedBuffer<double> host_fitness;
  cuda::PinnedBuffer<int> host_state;
  cuda::Event state_copied[2];
};

// The k nearest of every query by the library's search (nns::search_knn), then each query's
// covariance from them. (As one kernel, searching and summing, the kd-tree's neighbourhoods came
// out wrong for some points where the same search through search_knn gave PCL's: H100, H200.)
void launch_covariances(const nns::DeviceIndex& index, const float3* queries, std::size_t count,
                        int k, double epsilon, double* cov, cuda::DeviceBuffer<int>& neighbours,
                        cuda::DeviceBuffer<float>& distances, cudaStream_t s) {
  const std::size_t rows = count * std::size_t(k);
  neighbours.reserve(std::max<std::size_t>(rows, 1));
  distances.reserve(std::max<std::size_t>(rows, 1));
  nns::search_knn(index, queries, int(count), k, INFINITY, neighbours.get(), distances.get(), s);
  nns::with_max_k(k, [&](auto K) {
    if constexpr (K.value >= 8 && K.value <= 64) {
      k_covariances<K.value><<<cuda::blocks_for(count, 128), 128, 0, s>>>(
          neighbours.get(), int(count), k, index.targets.get(), epsilon, cov);
      CU_CHECK_LAUNCH("k_covariances");
    }
  });
}

// The cooperative kernel's grid: every block resident at once, at most a block per 256 points.
int optimise_blocks(std::size_t n) {
  static const int resident = [] {
    int per_sm = 0;
    CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_optimise, kThreads, 0));
    return std::max(1, per_sm) * std::max(1, query_device().multiprocessors);
  }();
  return std::max(1, std::min(resident, cuda::blocks_for(n, kThreads)));
}

}  // namespace
}  // namespace gicp_cuda

void gpu_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpMethod method, IcpResult& out) {
  using namespace gicp_cuda;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>(method_name(method));
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = source.size(), nt = target.size();
  const int max_it = params.criteria.max_iterations;
  const GicpParams& gp = params.gicp;
  const int opt_blocks = optimise_blocks(n);

  ws.source.reserve(n);
  ws.moved.reserve(n);
  ws.cov_src.reserve(9 * n);
  ws.cov_tgt.reserve(9 * nt);
  ws.maha.reserve(9 * n);
  ws.partials.reserve(2 * std::size_t(kV) * std::size_t(opt_blocks));
  const int point_blocks = cuda::blocks_for(n, kThreads);
  ws.pair.reserve(n);
  ws.pair_d2.reserve(n);
  ws.control.reserve(1);
  ws.history.reserve(std::size_t(max_it));
  ws.host_control.reserve(1);
  ws.host_history.reserve(std::size_t(max_it));
  ws.host_state.reserve(2);

  Control& hc = *ws.host_control.get();
  hc = Control{};
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      hc.t[4 * r + c] = r == c ? 1 : 0;
      hc.tf[4 * r + c] = r == c ? 1.0f : 0.0f;
      hc.guess[4 * r + c] = params.initial(r, c);
    }
  CU_CHECK(cudaMemcpyAsync(ws.control.get(), &hc, sizeof(Control), cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemsetAsync(ws.history.get(), 0, std::size_t(max_it) * sizeof(HistoryEntry), s));
  cuda::upload(ws.source.get(), source.data(), n * sizeof(float3), s);
  clock.mark("upload");
  const NnsMethod search = registration_cuda::search_of(method);
  // Both serve the covariances' k nearest (nns::knn_density).
  ws.target_index.build(search, target.data(), nt, s, 0, nns::knn_density(gp.k));
  // The second index of each cloud copies the points already up (the pairs' index below also
  // takes the target index's bounds).
  ws.source_index.build(search, source.data(), n, s, 0, nns::knn_density(gp.k), ws.source.get());
  const int fit_blocks = fitness_blocks(ws.target_index, n);
  ws.fitness.reserve(2 * std::size_t(fit_blocks));
  ws.host_fitness.reserve(2 * std::size_t(fit_blocks));
  const bool bounded = search == NnsMethod::Gpu;
  if (bounded)
    ws.pair_index.build(search, target.data(), nt, s, float(params.max_correspondence_distance),
                        {params.gpu.grid_points_per_cell, params.gpu.grid_within_reach,
                         params.gpu.fine_points_per_cell},
                        ws.target_index.targets.get(), &ws.target_index.found_bounds);
  // Every index keeps the targets in their given order, which the pairs and covariances use.
  const nns::DeviceIndex& pair_index = bounded ? ws.pair_index : ws.target_index;
  clock.mark("build");

  // Each index keeps its points in their given order, which the searches' answers use.
  launch_covariances(ws.target_index, ws.target_index.targets.get(), nt, gp.k, gp.epsilon,
                     ws.cov_tgt.get(), ws.neighbours, ws.neighbour_d2, s);
  launch_covariances(ws.source_index, ws.source.get(), n, gp.k, gp.epsilon, ws.cov_src.get(),
                     ws.neighbours, ws.neighbour_d2, s);
  k_apply_guess<<<point_blocks, kThreads, 0, s>>>(ws.source.get(), int(n), ws.control.get(),
                                                  ws.moved.get());
  CU_CHECK_LAUNCH("k_apply_guess");
  clock.mark("covariances");

  Settings set{};
  set.max_d2 = params.max_correspondence_distance * params.max_correspondence_distance;
  set.max_iterations = max_it;
  set.max_inner = gp.max_inner_iterations;
  set.tolerances = {gp.translation_gradient_tolerance, gp.rotation_gradient_tolerance};
  set.rotation_epsilon = gp.rotation_epsilon;
  set.translation_epsilon = gp.translation_epsilon;
  set.kernel = int(params.kernel);
  set.kernel_scale = params.kernel_scale;
  // The grid stops searching at the correspondence distance; the paper's tree and brute force
  // search without a bound, as the ICP methods do, and the pairs are filtered afterwards.
  const float limit = bounded ? std::nextafter(float(set.max_d2), INFINITY) : INFINITY;

  const auto launch = [&] {
    pair_index.with_search([&](auto srch) {
      using Search = decltype(srch);
      constexpr int lanes = std::is_same_v<Search, nns::GridSearch> ? 8 : 1;
      k_correspond<lanes, Search>
          <<<cuda::blocks_for(n * lanes, icp_cuda::kSearchThreads), icp_cuda::kSearchThreads, 0,
             s>>>(srch, ws.moved.get(), int(n), pair_index.targets.get(), limit, set.max_d2,
                  ws.control.get(), ws.pair.get(), ws.pair_d2.get());
      CU_CHECK_LAUNCH("k_correspond");
    });
    const float3* src = ws.moved.get();
    int count = int(n);
    const float3* tgts = ws.target_index.targets.get();
    const int* pair = ws.pair.get();
    const float* pd2 = ws.pair_d2.get();
    const double* csrc = ws.cov_src.get();
    const double* ctgt = ws.cov_tgt.get();
    double* maha = ws.maha.get();
    double* partials = ws.partials.get();
    Control* ctl = ws.control.get();
    HistoryEntry* hist = ws.history.get();
    void* args[] = {&src,  &count, &tgts,     &pair, &pd2,  &csrc,
                    &ctgt, &maha,  &partials, &ctl,  &hist, &set};
    CU_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(&k_optimise), dim3(opt_blocks),
                                         dim3(kThreads), args, 0, s));
  };
  registration_cuda::launch_in_chunks(launch, max_it, &ws.control.get()->state, im::kNotConverged,
                                      ws.host_state.get(), ws.state_copied, s);
  clock.mark("iterations");
  ws.target_index.with_search([&](auto srch) {
    using Search = decltype(srch);
    k_fitness<kFitnessLanes<Search>, Search><<<fit_blocks, kThreads, 0, s>>>(
        srch, ws.source.get(), int(n), ws.target_index.targets.get(), ws.control.get()->t,
        ws.control.get()->guess, ws.fitness.get());
    CU_CHECK_LAUNCH("k_fitness");
  });
  clock.mark("fitness");
  CU_CHECK(cudaMemcpyAsync(ws.host_history.get(), ws.history.get(),
                           std::size_t(max_it) * sizeof(HistoryEntry), cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaMemcpyAsync(&hc, ws.control.get(), sizeof(Control), cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaMemcpyAsync(ws.host_fitness.get(), ws.fitness.get(),
                           2 * std::size_t(fit_blocks) * sizeof(double), cudaMemcpyDeviceToHost,
                           s));
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);

  Eigen::Matrix4d t;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      t(r, c) = hc.t[4 * r + c];
  out.transform = t * params.initial;
  out.iterations = hc.iterations;
  out.stop = stop_of_state(hc.state);
  out.converged = out.stop == IcpStop::Transform || out.stop == IcpStop::Iterations;
  out.cost_evaluations = hc.evaluations;
  double sum = 0, count = 0;
  for (int b = 0; b < fit_blocks; ++b) {
    sum += ws.host_fitness.get()[2 * b];
    count += ws.host_fitness.get()[2 * b + 1];
  }
  out.fitness = count > 0 ? sum / count : DBL_MAX;
  out.history.clear();
  for (int i = 0; i < hc.iterations; ++i) {
    const HistoryEntry& h = ws.host_history.get()[i];
    out.history.push_back(
        IcpIteration{std::size_t(h.correspondences), h.mse, h.cos_angle, h.translation_sq});
  }
}

std::vector<double> gpu_gicp_covariances(const std::vector<Point3f>& points, int k, double epsilon,
                                         IcpMethod method) {
  using namespace gicp_cuda;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>(method_name(method));
  cudaStream_t s = ws.stream.get();
  ws.source_index.build(registration_cuda::search_of(method), points.data(), points.size(), s, 0,
                        nns::knn_density(k));
  ws.cov_src.reserve(9 * points.size());
  launch_covariances(ws.source_index, ws.source_index.targets.get(), points.size(), k, epsilon,
                     ws.cov_src.get(), ws.neighbours, ws.neighbour_d2, s);
  std::vector<double> out(9 * points.size());
  CU_CHECK(cudaMemcpyAsync(out.data(), ws.cov_src.get(), out.size() * sizeof(double),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  return out;
}

}  // namespace cumulus
