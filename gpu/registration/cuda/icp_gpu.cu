// GPU ICP: per iteration one kernel finds the correspondences and a second sums them, and its
// last block finishes the reduction and (for `gpu` and `gpu-bruteforce`) solves the transform
// and tests convergence on the device, so the host only launches. The paper's
// method instead reads the sums back and solves on the host each iteration.
// `gpu` also starts each point's search from its previous correspondence: a source point moves
// little between iterations, so that target's distance bounds the search to a small ball at
// once (the search stays exact: every cell the ball touches is still visited). And it searches
// with a group of lanes per source point: one lane a point left a few hundred warps, each
// walking its cells one load after another, and blocks waited on their slowest warp. The points
// whose last correspondence was far (their balls reach past the neighbouring cells) go first,
// a warp each, so that the longest searches do not start last.
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <type_traits>

#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/host_upload.cuh"
#include "core/cuda/occupancy.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/visitors.cuh"
#include "registration/cuda/icp_gpu.h"
#include "registration/cuda/icp_loop_state.cuh"
#include "registration/cuda/icp_reduce.cuh"
#include "registration/cuda/icp_search.cuh"
#include "registration/cuda/icp_step.cuh"
#include "registration/cuda/icp_sums.cuh"
#include "registration/cuda/loop_common.cuh"
#include "registration/icp_math.h"

namespace cumulus {
namespace icp_cuda {

namespace im = icp_math;

namespace {

// An iteration is two kernels: the search, which needs few registers and no barrier, so that
// warps finish independently and the SMs stay full; then the sums, the reduction and the solve
// (k_icp_solve, icp_sums.cuh).
// (As one kernel the 17 double sums held every searching thread's registers, and each block
// waited at the reduction's barrier for its slowest search.) The searches wait on memory, so
// they are held to 40 registers (instead of 43): more warps to hide the waits. Their blocks are
// small (128 threads: 1-2 % faster than 256 on the H200, 64 no better), which evens out the
// last wave.
// Every kernel of the loop is a dependent launch, set up while the one before it drains.

// Moves each source point by the last step and finds its correspondence: pair[i] is the target
// within the correspondence distance (or -1), match[i] that target's point (the nearest's, found
// or not) and its squared distance. The sums read the point there, beside the pair, instead of
// looking it up by the pair's index: one round trip to memory instead of two in a kernel that
// sits on the iteration's critical path, where the search has warps to hide its own. Points are
// taken in `order` (null: as they come): its first ctl->far_count were far from their last
// correspondence, and the first `wide_blocks` blocks search for up to that many of them with a
// whole warp each; the rest of the grid takes the remaining points, the middling ones
// (ctl->mid_count) first, with Lanes consecutive threads each (a power of two up to 32). (Traced on
// the H200, 40k bunny: a near point's search took 6 us in a crowded kernel, the 5 % far ones 13-21
// us, and those that started in the second wave of blocks set the kernel's end at 28 us where 90 %
// of the points were done at 13.)
template <int Lanes, class Search, bool Plane>
__global__ void __launch_bounds__(kSearchThreads, 12)
    k_icp_correspond(Search search, float3* source, int n, const float3* targets,
                     float search_limit, double max_d2, const Control* ctl, int* seeds, int* pair,
                     float4* match, const int* order, int wide_blocks) {
  cuda::wait_for_previous_grid();
  if (ctl->state != im::kNotConverged) return;  // the same for every thread of the grid
  const SearchSlot at = search_slot<Lanes>(n, order, ctl, wide_blocks);
  const int i = at.i, rank = at.rank;
  float3 p = i < n ? source[i] : make_float3(0, 0, 0);
  const int seed = seeds && i < n ? seeds[i] : -1;
  __syncwarp();  // every lane has read before the group's first writes
  if (ctl->apply_step && i < n) {
    if constexpr (Plane)
      p = apply_double(ctl->step_d, p);
    else
      p = apply_float(ctl->step, p);
    if (rank == 0) source[i] = p;
  }
  float nd;
  int ni;
  nearest_at<Lanes>(at, search, targets, p, n, search_limit, seed, nd, ni);
  if (rank != 0 || i >= n) return;
  if (seeds) seeds[i] = ni;
  pair[i] = ni >= 0 && double(nd) <= max_d2 ? ni : -1;
  const float3 t = ni >= 0 ? targets[ni] : make_float3(0, 0, 0);
  match[i] = make_float4(t.x, t.y, t.z, nd);
}

// The nearest target of every source point under the final transform (PCL's fitness score
// takes every point, however far): pair[i] and its squared distance pair_d2[i], without the
// distance cap; the points in `order` as in k_icp_correspond.
template <int Lanes, class Search>
__global__ void __launch_bounds__(kSearchThreads, 12)
    k_fitness_search(Search search, const float3* source, int n, const float3* targets,
                     const Control* ctl, const int* seeds, int* pair, float* pair_d2,
                     const int* order, int wide_blocks) {
  cuda::wait_for_previous_grid();
  const SearchSlot at = search_slot<Lanes>(n, order, ctl, wide_blocks);
  const int i = at.i, rank = at.rank;
  const float3 p = i < n ? apply_double(ctl->final_transform, source[i]) : make_float3(0, 0, 0);
  const int seed = seeds && i < n ? seeds[i] : -1;
  float nd;
  int ni;
  nearest_at<Lanes>(at, search, targets, p, n, INFINITY, seed, nd, ni);
  if (rank != 0 || i >= n) return;
  pair[i] = ni;
  pair_d2[i] = nd;
}

__global__ void k_fitness_sum(const int* pair, const float* pair_d2, int n, Control* ctl,
                              double* partials) {
  cuda::wait_for_previous_grid();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double v[kValues];
  for (int j = 0; j < kValues; ++j)
    v[j] = 0;
  if (i < n && pair[i] >= 0) {
    v[0] = double(pair_d2[i]);
    v[1] = 1;
  }
  __shared__ double block_sums[kValues];
  block_sum_into<kValues>(v, block_sums);
  if (!finish_block<kValues>(block_sums, partials, &ctl->blocks_done)) return;
  __shared__ double total[kValues];
  grid_sum_into<kValues>(partials, total);
  __syncthreads();
  if (threadIdx.x != 0) return;
  ctl->fitness_sum = total[0];
  ctl->fitness_count = total[1];
  ctl->blocks_done = 0;
}

struct Workspace {
  cuda::Stream stream;
  nns::DeviceIndex index;
  cuda::DeviceBuffer<float3> source, source_original;
  cuda::DeviceBuffer<float3> normals;  // the targets' normals (point to plane)
  cuda::DeviceBuffer<int> seeds;       // each source point's last correspondence (`gpu` only)
  cuda::DeviceBuffer<int> order;       // the order of the next search (`gpu` only)
  cuda::DeviceBuffer<int> pair;        // this iteration's correspondences
  cuda::DeviceBuffer<float4> match;    // their points and squared distances
  cuda::DeviceBuffer<float> pair_d2;   // the fitness search's distances
  cuda::DeviceBuffer<double> partials;
  cuda::DeviceBuffer<Control> control;
  cuda::DeviceBuffer<HistoryEntry> history;
  cuda::PinnedBuffer<Control> host_control;
  cuda::PinnedBuffer<HistoryEntry> host_history;
  // The loop's progress, written by k_icp_solve's last block over the bus
  cuda::PinnedBuffer<registration_cuda::LoopProgress> progress;
};

// Calls f with std::integral_constant<int, lanes>; only the grid searches in groups.
template <class Search, class F>
void with_lanes(int lanes, F&& f) {
  if constexpr (std::is_same_v<Search, nns::GridSearch>) {
    switch (lanes) {
      case 2:
        return f(std::integral_constant<int, 2>{});
      case 4:
        return f(std::integral_constant<int, 4>{});
      case 8:
        return f(std::integral_constant<int, 8>{});
      case 16:
        return f(std::integral_constant<int, 16>{});
      case 32:
        return f(std::integral_constant<int, 32>{});
      default:
        break;
    }
  }
  f(std::integral_constant<int, 1>{});
}

}  // namespace
}  // namespace icp_cuda

void gpu_icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
             const std::vector<Point3f>* target_normals, const IcpParams& params, IcpMethod method,
             IcpResult& out) {
  using namespace icp_cuda;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>(method_name(method));
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = source.size();
  const int lanes = method == IcpMethod::Gpu ? params.gpu.lanes : 1;
  const int search_blocks = cuda::blocks_for(n * std::size_t(lanes), kSearchThreads);
  const int blocks = cuda::blocks_for(n, kThreads);
  const bool plane = params.metric == IcpMetric::PointToPlane;
  // One wave, and no more partials than the last block's threads read in one round.
  const int solve_blocks = std::min({blocks, kThreads,
                                     plane ? cuda::resident_blocks(&k_icp_solve<true>, kThreads)
                                           : cuda::resident_blocks(&k_icp_solve<false>, kThreads)});
  im::Criteria criteria = device_criteria(params.criteria);
  criteria.kernel = int(params.kernel);
  criteria.kernel_scale = params.kernel_scale;
  const int max_it = params.criteria.max_iterations;

  ws.source.reserve(n);
  ws.source_original.reserve(n);
  const bool seeded = method == IcpMethod::Gpu;
  if (seeded) {
    ws.seeds.reserve(n);
    ws.order.reserve(2 * n);  // the middling points' list in the second half
  }
  ws.pair.reserve(n);
  ws.match.reserve(n);
  ws.pair_d2.reserve(n);
  ws.partials.reserve(std::size_t(blocks) * kMaxValues);
  if (plane) ws.normals.reserve(target.size());
  ws.control.reserve(1);
  ws.history.reserve(std::size_t(max_it));
  ws.host_control.reserve(1);
  ws.host_history.reserve(std::size_t(max_it));
  ws.progress.reserve(1);
  auto* progress = static_cast<registration_cuda::LoopProgress*>(
      const_cast<void*>(cuda::device_address_of_pinned(ws.progress.get())));

  Control& hc = *ws.host_control.get();
  hc = Control{};
  const Eigen::Matrix4d& guess = params.initial;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      hc.final_transform[4 * r + c] = guess(r, c);
      hc.step[4 * r + c] = float(guess(r, c));
      hc.step_d[4 * r + c] = guess(r, c);
    }
  hc.apply_step = guess != Eigen::Matrix4d::Identity() ? 1 : 0;
  for (int i = 0; i < 9; ++i)
    hc.jacobi_v[i] = hc.rotation[i] = i % 4 == 0 ? 1 : 0;
  // Sums are taken relative to the target's first point, so far-off clouds do not cancel.
  hc.centre[0] = target[0].x;
  hc.centre[1] = target[0].y;
  hc.centre[2] = target[0].z;
  CU_CHECK(cudaMemcpyAsync(ws.control.get(), &hc, sizeof(Control), cudaMemcpyHostToDevice, s));
  // The whole history comes back in one copy before the host knows how many iterations ran:
  // entries past the last are zeros, not stale memory.
  CU_CHECK(cudaMemsetAsync(ws.history.get(), 0, std::size_t(max_it) * sizeof(HistoryEntry), s));
  cuda::upload(ws.source.get(), source.data(), n * sizeof(float3), s);
  CU_CHECK(cudaMemcpyAsync(ws.source_original.get(), ws.source.get(), n * sizeof(float3),
                           cudaMemcpyDeviceToDevice, s));
  if (seeded) CU_CHECK(cudaMemsetAsync(ws.seeds.get(), 0xff, n * sizeof(int), s));
  if (plane)
    cuda::upload(ws.normals.get(), target_normals->data(), target.size() * sizeof(float3), s);
  clock.mark("upload");
  ws.index.build(registration_cuda::search_of(method), target.data(), target.size(), s,
                 method == IcpMethod::Gpu ? float(params.max_correspondence_distance) : 0.0f,
                 {params.gpu.grid_points_per_cell, params.gpu.grid_within_reach,
                  params.gpu.fine_points_per_cell});
  clock.mark("build");

  const double max_d2 = params.max_correspondence_distance * params.max_correspondence_distance;
  // The grid may stop searching at the correspondence distance; the paper's tree and brute
  // force search without a bound, as published, and the pairs are filtered afterwards.
  const float search_limit =
      method == IcpMethod::Gpu ? std::nextafter(float(max_d2), INFINITY) : INFINITY;
  const bool host_solve = method == IcpMethod::GpuKdTree;
  // `gpu` searches first, with a warp each, for up to 1/16 of the points that were farther than
  // half a grid cell from their correspondence (or had none): their balls reach beyond the cells
  // next to theirs.
  const bool ordered = seeded && lanes > 1;
  const int wide_blocks =
      ordered ? cuda::blocks_for((n / 16 + 64) * std::size_t(32), kSearchThreads) : 0;
  const float half_cell = 0.5f * ws.index.grid.view.cell;
  const float far_d2 = ordered ? half_cell * half_cell : INFINITY;
  // Middling: beyond a quarter of a cell (k_icp_solve).
  const float mid_d2 = ordered ? 0.25f * far_d2 : INFINITY;
  bool first = true;
  const auto launch_metric = [&](auto plane_c) {
    constexpr bool P = decltype(plane_c)::value;
    ws.index.with_search([&](auto search) {
      with_lanes<decltype(search)>(lanes, [&](auto L) {
        cuda::launch_dependent(
            "launch of k_icp_correspond", &k_icp_correspond<L.value, decltype(search), P>,
            wide_blocks + search_blocks, kSearchThreads, s, search, ws.source.get(), int(n),
            ws.index.targets.get(), search_limit, max_d2, ws.control.get(),
            seeded ? ws.seeds.get() : nullptr, ws.pair.get(), ws.match.get(),
            ordered && !first ? ws.order.get() : nullptr, wide_blocks);
      });
    });
    cuda::launch_dependent("launch of k_icp_solve", &k_icp_solve<P>, solve_blocks, kThreads, s,
                           ws.source.get(), int(n), P ? ws.normals.get() : nullptr, ws.pair.get(),
                           ws.match.get(), ws.control.get(), criteria, ws.partials.get(),
                           ws.history.get(), host_solve ? 0 : 1, ordered ? ws.order.get() : nullptr,
                           far_d2, mid_d2, host_solve ? nullptr : progress);
    first = false;
  };
  auto launch = [&] {
    if (plane)
      launch_metric(std::true_type{});
    else
      launch_metric(std::false_type{});
  };
  if (host_solve) {
    // The paper: sums to the host, SVD there, the transform back, every iteration.
    for (int it = 0; it < max_it; ++it) {
      launch();
      CU_CHECK(cudaMemcpyAsync(&hc, ws.control.get(), sizeof(Control), cudaMemcpyDeviceToHost, s));
      ws.stream.sync();
      if (hc.state != im::kNotConverged) break;
      if (plane)
        solve_step_plane(hc, hc.plane_sums, criteria, ws.host_history.get());
      else
        solve_step(hc, hc.sums, criteria, ws.host_history.get());
      CU_CHECK(cudaMemcpyAsync(ws.control.get(), &hc, sizeof(Control), cudaMemcpyHostToDevice, s));
      if (hc.state != im::kNotConverged) break;
    }
  } else {
    registration_cuda::launch_in_chunks_watched(launch, max_it, im::kNotConverged,
                                                ws.progress.get(), s);
  }
  clock.mark("iterations");
  ws.index.with_search([&](auto search) {
    with_lanes<decltype(search)>(lanes, [&](auto L) {
      cuda::launch_dependent(
          "launch of k_fitness_search", &k_fitness_search<L.value, decltype(search)>,
          wide_blocks + search_blocks, kSearchThreads, s, search, ws.source_original.get(), int(n),
          ws.index.targets.get(), ws.control.get(), seeded ? ws.seeds.get() : nullptr,
          ws.pair.get(), ws.pair_d2.get(), ordered && !first ? ws.order.get() : nullptr,
          wide_blocks);
    });
  });
  cuda::launch_dependent("launch of k_fitness_sum", &k_fitness_sum, blocks, kThreads, s,
                         ws.pair.get(), ws.pair_d2.get(), int(n), ws.control.get(),
                         ws.partials.get());
  clock.mark("fitness");
  if (!host_solve)
    CU_CHECK(cudaMemcpyAsync(ws.host_history.get(), ws.history.get(),
                             std::size_t(max_it) * sizeof(HistoryEntry), cudaMemcpyDeviceToHost,
                             s));
  CU_CHECK(cudaMemcpyAsync(&hc, ws.control.get(), sizeof(Control), cudaMemcpyDeviceToHost, s));
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);

  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      out.transform(r, c) = hc.final_transform[4 * r + c];
  out.iterations = hc.iterations;
  out.stop = stop_of_state(hc.state);
  out.converged = out.stop != IcpStop::NoCorrespondences &&
                  out.stop != IcpStop::FailureAfterMaxIterations &&
                  out.stop != IcpStop::NotConverged;
  out.fitness = hc.fitness_count > 0 ? hc.fitness_sum / hc.fitness_count : DBL_MAX;
  out.history.clear();
  for (int i = 0; i < hc.iterations; ++i) {
    const HistoryEntry& h = ws.host_history.get()[i];
    out.history.push_back(
        IcpIteration{std::size_t(h.correspondences), h.mse, h.cos_angle, h.translation_sq});
  }
}

}  // namespace cumulus
