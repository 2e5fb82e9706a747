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
#include "registration/cuda/loop_common.cuh"
#include "registration/icp_math.h"

namespace cumulus {
namespace icp_cuda {

namespace im = icp_math;

namespace {

// An iteration is two kernels: the search, which needs few registers and no barrier, so that
// warps finish independently and the SMs stay full; then the sums, the reduction and the solve.
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
// whole warp each; the rest of the grid takes the remaining points with Lanes consecutive
// threads each (a power of two up to 32). (Traced on the H200, 40k bunny: a near point's search
// took 6 us in a crowded kernel, the 5 % far ones 13-21 us, and those that started in the
// second wave of blocks set the kernel's end at 28 us where 90 % of the points were done at 13.)
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

// One pair's terms added into `acc`: p the moved source point, m its match (target point and
// squared distance), ni the target's index (for its normal).
template <bool Plane>
__device__ __forceinline__ void add_pair(std::conditional_t<Plane, im::PlaneSums, im::Sums>& acc,
                                         float3 p, float4 m, int ni, const float3* normals,
                                         const double* c, const im::Criteria& criteria) {
  const double d2 = double(m.w);
  if constexpr (Plane) {
    // A pair whose target normal is not finite counts for the MSE and the pair count but not in
    // the equations (PCL skips it there).
    const float3 nn = normals[ni];
    if (isfinite(nn.x) && isfinite(nn.y) && isfinite(nn.z)) {
      const float s3[3] = {p.x, p.y, p.z}, t3[3] = {m.x, m.y, m.z}, n3[3] = {nn.x, nn.y, nn.z};
      im::add_plane(acc, s3, t3, n3, d2, criteria.kernel, criteria.kernel_scale);
    } else {
      acc.n += 1;
      acc.d2 += d2;
    }
  } else {
    const double s3[3] = {double(p.x) - c[0], double(p.y) - c[1], double(p.z) - c[2]};
    const double t3[3] = {double(m.x) - c[0], double(m.y) - c[1], double(m.z) - c[2]};
    im::add(acc, s3, t3, d2, im::robust_weight(criteria.kernel, criteria.kernel_scale, sqrt(d2)));
  }
}

// Sums the correspondences, and the grid's last block solves the step (or, for the host solve,
// leaves the sums in ctl).
// The grid is one wave of at most kThreads blocks (solve_blocks), each thread taking a run of
// consecutive points and adding their terms first. The kernel's registers leave room for two
// blocks an SM: KITTI's 124,605 points a point a thread took two waves, the second starting 3.6
// us after the first (H200), and the last block's sum of 487 partials (two rounds of loads for
// some threads) took 4.6 us against 1.3 for at most 256. Runs keep the order below in the
// points' own order within a block, as a point a thread did: with points taken by strides over
// the grid, a late search took 36.6-37.4 us against 34.1-34.8 (KITTI, H200), its groups' points
// no longer neighbours.
// With `order` (`gpu`), also orders the points for the next search: far are those whose
// correspondence lay beyond sqrt(far_d2) or was not found. They go to the front of the order
// and the others to the back, counted per block (one atomic per block and list: a warp each
// made thousands of atomics on the same two counters).
// The last block works on a copy of ctl in shared memory: the solve reads and writes its fields
// one after another, and each was a round trip to L2.
// Point to plane (Plane) sums PCL's normal equations instead, from the targets' normals.
template <bool Plane>
__global__ void k_icp_solve(const float3* source, int n, const float3* normals, const int* pair,
                            const float4* match, Control* ctl, im::Criteria criteria,
                            double* partials, HistoryEntry* history, int solve_here, int* order,
                            float far_d2) {
  constexpr int V = Plane ? kPlaneValues : kValues;
  cuda::wait_for_previous_grid();
  // Everything the first two points need is requested before the first test: the kernel sits on
  // the iteration's critical path, and each round trip to memory adds to it.
  const int stride = int(gridDim.x * blockDim.x);
  const int per = n / stride + (n % stride != 0);  // points a thread
  const int begin = min(n, int(blockIdx.x * blockDim.x + threadIdx.x) * per);
  const int end = min(n, begin + per);
  const int state = ctl->state;
  const bool has0 = begin < end, has1 = begin + 1 < end;
  const int ni0 = has0 ? pair[begin] : -1, ni1 = has1 ? pair[begin + 1] : -1;
  const float4 m0 = has0 ? match[begin] : make_float4(0, 0, 0, INFINITY);
  const float4 m1 = has1 ? match[begin + 1] : make_float4(0, 0, 0, INFINITY);
  const float3 p0 = has0 ? source[begin] : make_float3(0, 0, 0);
  const float3 p1 = has1 ? source[begin + 1] : make_float3(0, 0, 0);
  const double c[3] = {ctl->centre[0], ctl->centre[1], ctl->centre[2]};
  if (state != im::kNotConverged) return;  // the same for every thread of the grid
  std::conditional_t<Plane, im::PlaneSums, im::Sums> acc;
  unsigned my_far = 0, my_near = 0;
  for (int i = begin; i < end; ++i) {
    const int ni = i == begin ? ni0 : i == begin + 1 ? ni1 : pair[i];
    const float4 m = i == begin ? m0 : i == begin + 1 ? m1 : match[i];
    if (ni >= 0)
      add_pair<Plane>(acc,
                      i == begin       ? p0
                      : i == begin + 1 ? p1
                                       : source[i],
                      m, ni, normals, c, criteria);
    if (m.w <= far_d2)
      ++my_near;
    else
      ++my_far;
  }
  double v[V];
#pragma unroll
  for (int j = 0; j < V; ++j)
    v[j] = acc.values()[j];
  // The order's places: this thread's far and near points after those of the warp's lanes
  // before it, of the block's warps before its own, and of the blocks counted before it.
  __shared__ unsigned warp_count[2][kThreads / 32];  // far, near
  __shared__ unsigned block_base[2];
  const unsigned lane = threadIdx.x & 31u;
  const int warp = int(threadIdx.x >> 5);
  unsigned far_upto = my_far, near_upto = my_near;  // inclusive over the warp's lanes
  for (int o = 1; o < 32; o <<= 1) {
    const unsigned f = __shfl_up_sync(0xffffffffu, far_upto, o);
    const unsigned m = __shfl_up_sync(0xffffffffu, near_upto, o);
    if (lane >= unsigned(o)) {
      far_upto += f;
      near_upto += m;
    }
  }
  if (lane == 31) {
    warp_count[0][warp] = far_upto;
    warp_count[1][warp] = near_upto;
  }
  __shared__ double block_sums[V];
  block_sum_into<V>(v, block_sums);
  if (order && threadIdx.x == 32) {  // a thread the sums leave idle
    unsigned f = 0, m = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      f += warp_count[0][w];
      m += warp_count[1][w];
    }
    block_base[0] = f ? atomicAdd(&ctl->fill_far, f) : 0u;
    block_base[1] = m ? atomicAdd(&ctl->fill_near, m) : 0u;
  }
  const bool last = finish_block<V>(block_sums, partials, &ctl->blocks_done);
  if (order && begin < end) {
    unsigned at_far = block_base[0] + far_upto - my_far;
    unsigned at_near = block_base[1] + near_upto - my_near;
    for (int w = 0; w < warp; ++w) {
      at_far += warp_count[0][w];
      at_near += warp_count[1][w];
    }
    for (int i = begin; i < end; ++i) {
      if ((i == begin ? m0.w : i == begin + 1 ? m1.w : match[i].w) <= far_d2)
        order[n - 1 - int(at_near++)] = i;
      else
        order[int(at_far++)] = i;
    }
  }
  if (!last) return;
  constexpr int kWords = int(sizeof(Control) / sizeof(unsigned long long));
  __shared__ unsigned long long control_words[kWords];
  auto* words = reinterpret_cast<unsigned long long*>(ctl);
  for (int w = threadIdx.x; w < kWords; w += kThreads)
    control_words[w] = __ldcg(words + w);
  // Finishing the copy before reading the partials measured 1-2 % faster end to end (H200).
  __syncthreads();
  __shared__ double total[V];
  grid_sum_into<V>(partials, total);
  __syncthreads();
  if (threadIdx.x == 0) {
    Control& k = *reinterpret_cast<Control*>(control_words);
    k.blocks_done = 0;
    k.apply_step = 0;
    k.far_count = k.fill_far;
    k.fill_far = k.fill_near = 0;
    double* sums = Plane ? k.plane_sums.values() : k.sums.values();
    for (int j = 0; j < V; ++j)
      sums[j] = total[j];
    if (solve_here) {
      if constexpr (Plane)
        solve_step_plane(k, k.plane_sums, criteria, history);
      else
        solve_step(k, k.sums, criteria, history);
    } else if (sums[0] < 3) {
      k.state = im::kNoCorrespondences;
    }
  }
  __syncthreads();
  for (int w = threadIdx.x; w < kWords; w += kThreads)
    words[w] = control_words[w];
}

// The nearest target of every source point under the final transform (PCL's fitness score
// takes every point, however far): pair[i] and pair_d2[i] as above, without the distance cap;
// the points in `order` as in k_icp_correspond.
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
  cuda::PinnedBuffer<int> host_state;  // the loop's state after each of two chunks in flight
  cuda::Event state_copied[2];
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
    ws.order.reserve(n);
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
  ws.host_state.reserve(2);

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
    hc.jacobi_v[i] = i % 4 == 0 ? 1 : 0;
  // Sums are taken relative to the target's first point, so far-off clouds do not cancel.
  hc.centre[0] = target[0].x;
  hc.centre[1] = target[0].y;
  hc.centre[2] = target[0].z;
  CU_CHECK(cudaMemcpyAsync(ws.control.get(), &hc, sizeof(Control), cudaMemcpyHostToDevice, s));
  // The whole history comes back in one copy before the host knows how many iterations ran:
  // entries past the last are zeros, not stale memory.
  CU_CHECK(cudaMemsetAsync(ws.history.get(), 0, std::size_t(max_it) * sizeof(HistoryEntry), s));
  CU_CHECK(cudaMemcpyAsync(ws.source.get(), source.data(), n * sizeof(float3),
                           cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemcpyAsync(ws.source_original.get(), ws.source.get(), n * sizeof(float3),
                           cudaMemcpyDeviceToDevice, s));
  if (seeded) CU_CHECK(cudaMemsetAsync(ws.seeds.get(), 0xff, n * sizeof(int), s));
  if (plane)
    CU_CHECK(cudaMemcpyAsync(ws.normals.get(), target_normals->data(),
                             target.size() * sizeof(float3), cudaMemcpyHostToDevice, s));
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
                           far_d2);
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
    registration_cuda::launch_in_chunks(launch, max_it, &ws.control.get()->state, im::kNotConverged,
                                        ws.host_state.get(), ws.state_copied, s);
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
