// Normals and point feature histograms on the GPU. Compiled with -fmad=false: the pair features
// must round exactly as PCL's float code does, or pairs near a bin edge change bins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/cuda/host_upload.cuh"
#include "core/cuda/stage_clock.cuh"
#include "core/cuda/workspace.cuh"
#include "features/cuda/features_gpu.h"
#include "features/cuda/features_workspace.cuh"
#include "features/cuda/fpfh_weight.cuh"
#include "features/cuda/histogram_kernels.cuh"
#include "features/cuda/normal_kernels.cuh"
#include "features/cuda/results_down.cuh"
#include "features/cuda/rows.cuh"
#include "features/pair_math.h"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"

namespace cumulus {
namespace feat {

// ---- host side ----------------------------------------------------------------------------

// What the host needs to decide deferred pairs: the same points and normals as the device, and
// each row's neighbourhood size (PCL's increment depends on it).
struct HostSide {
  const std::vector<Point3f>& points;
  const std::vector<Point3f>& normals;
  int uniform;                           // k for k-nearest rows
  const std::vector<unsigned>* offsets;  // else row sizes from these
  NormalsDown* normals_down = nullptr;   // `normals` once its finish() has returned
  // Called once the descriptors' first kernel is queued, before `normals` is read.
  void normals_ready() const {
    if (normals_down) normals_down->finish();
  }
  std::uint64_t row_size(int r) const {
    return uniform ? std::uint64_t(uniform)
                   : std::uint64_t((*offsets)[std::size_t(r) + 1] - (*offsets)[std::size_t(r)]);
  }
};

std::vector<Patch> decide_on_host(const std::vector<Deferred>& d, Descriptor desc,
                                  const HostSide& h) {
  auto v = [](const Point3f& p) { return fm::V3{p.x, p.y, p.z}; };
  std::vector<Patch> patches;
  patches.reserve(d.size() * (desc == Descriptor::Pfh ? 1 : 3));
  for (const Deferred& e : d) {
    const auto a = std::size_t(e.a), b = std::size_t(e.b), row = std::size_t(e.row);
    if (desc == Descriptor::Pfh) {
      const int bin = fm::pfh_bin(v(h.points[a]), v(h.normals[a]), v(h.points[b]), v(h.normals[b]));
      patches.push_back(
          {unsigned(row * 125 + std::size_t(bin)), fm::pfh_increment(h.row_size(e.row))});
    } else {
      int bins[3];
      fm::spfh_bins(v(h.points[a]), v(h.normals[a]), v(h.points[b]), v(h.normals[b]), bins);
      for (int bin : bins)
        patches.push_back({unsigned(row * kGpuSpfhStride + std::size_t(bin)),
                           fm::spfh_increment(h.row_size(e.row))});
    }
  }
  return patches;
}

// Room for the pairs the kernels defer, and the count reset.
DeferList reset_deferred(Workspace& ws, std::size_t at_least) {
  ws.deferred_count.reserve(1);
  ws.deferred.reserve(std::max<std::size_t>(at_least, 1u << 16));
  CU_CHECK(cudaMemsetAsync(ws.deferred_count.get(), 0, sizeof(unsigned), ws.stream.get()));
  return {ws.deferred.get(), ws.deferred_count.get(), unsigned(ws.deferred.capacity())};
}

// How many pairs the kernels so far deferred (they listed the first `capacity`). Synchronises.
unsigned deferred_count(Workspace& ws) {
  unsigned count = 0;
  CU_CHECK(cudaMemcpyAsync(&count, ws.deferred_count.get(), sizeof(unsigned),
                           cudaMemcpyDeviceToHost, ws.stream.get()));
  ws.stream.sync();
  return count;
}

// The deferred pairs down, decided on the host with PCL's libm.
std::vector<Patch> decided_patches(Workspace& ws, unsigned count, Descriptor desc,
                                   const HostSide& host) {
  std::vector<Deferred> d(count);
  if (count)
    CU_CHECK(cudaMemcpyAsync(d.data(), ws.deferred.get(), count * sizeof(Deferred),
                             cudaMemcpyDeviceToHost, ws.stream.get()));
  ws.stream.sync();
  return decide_on_host(d, desc, host);
}

// PFH's pair kernel over every point.
template <int G, int Groups>
void launch_pfh(Workspace& ws, int n, const Rows& rows, const DeferList& list) {
  const int blocks = (n + Groups - 1) / Groups;
  k_pfh<G, Groups, G == 64><<<blocks, G * Groups, 0, ws.stream.get()>>>(
      ws.index.targets.get(), ws.normals.get(), n, ws.index.cell_order(), rows, list, ws.out.get());
  CU_CHECK_LAUNCH("k_pfh");
}

// PFH into `out` (sized n * 125): the pair kernel, the rows down, and the pairs it deferred
// decided on the host and added to the host's rows (each adds its bin's one increment, so the
// order of the additions does not matter). (The kernel cut into slices whose rows came down while
// the next slice ran was no faster on the bunny and half again as slow on KITTI's radius rows,
// where a slice waits for its heaviest neighbourhoods.)
template <int G, int Groups>
void pfh_down(Workspace& ws, int n, const Rows& rows, const HostSide& host, HostRows& result) {
  DeferList list = reset_deferred(ws, std::size_t(n) * 4);
  launch_pfh<G, Groups>(ws, n, rows, list);
  host.normals_ready();
  unsigned deferred = deferred_count(ws);
  if (deferred > list.capacity) {  // rare: once more, with room for every deferred pair
    list = reset_deferred(ws, deferred);
    launch_pfh<G, Groups>(ws, n, rows, list);
    deferred = deferred_count(ws);
  }
  ZeroedVector<float>& out = result.ready();
  ws.histograms_down.copy(out.data(), ws.out.get(), out.size() * sizeof(float), ws.stream.get());
  if (deferred)
    for (const Patch& p : decided_patches(ws, deferred, Descriptor::Pfh, host))
      out[p.index] += p.incr;
}

// FPFH into `out` (sized n * 33): each point's SPFH, the host's decisions on its deferred pairs
// (patched on the device, where the weighting reads them), the weighting, the rows down.
template <int G, int Groups>
void fpfh_down(Workspace& ws, int n, const Rows& rows, const HostSide& host, HostRows& result) {
  cudaStream_t s = ws.stream.get();
  const int blocks = (n + Groups - 1) / Groups;
  unsigned deferred = 0;
  for (std::size_t room = std::size_t(n) * 4;;) {
    const DeferList list = reset_deferred(ws, room);
    k_spfh<G, Groups><<<blocks, G * Groups, 0, s>>>(ws.index.targets.get(), ws.normals.get(), n,
                                                    ws.index.cell_order(), rows, list,
                                                    ws.spfh.get());
    CU_CHECK_LAUNCH("k_spfh");
    host.normals_ready();
    deferred = deferred_count(ws);
    if (deferred <= list.capacity) break;
    room = deferred;  // rare: once more with room for every deferred pair
  }
  if (deferred) {
    const std::vector<Patch> patches = decided_patches(ws, deferred, Descriptor::Fpfh, host);
    ws.patches.reserve(patches.size());
    CU_CHECK(cudaMemcpyAsync(ws.patches.get(), patches.data(), patches.size() * sizeof(Patch),
                             cudaMemcpyHostToDevice, s));
    k_patch<<<cuda::blocks_for(patches.size(), 256), 256, 0, s>>>(
        ws.patches.get(), unsigned(patches.size()), ws.spfh.get());
    CU_CHECK_LAUNCH("k_patch");
    ws.stream.sync();  // the host vector of patches ends here
  }
  if constexpr (G == 32) {
    // Ours: eight lanes a point (fpfh_weight.cuh says why).
    constexpr int kLanes = 8, kWarps = 4, kPoints = 32 * kWarps / kLanes;
    k_fpfh_weight_narrow<kLanes, kWarps><<<(n + kPoints - 1) / kPoints, 32 * kWarps, 0, s>>>(
        n, ws.index.cell_order(), rows, ws.spfh.get(), ws.out.get());
    CU_CHECK_LAUNCH("k_fpfh_weight_narrow");
  } else {
    k_fpfh_weight<G, Groups><<<blocks, G * Groups, 0, s>>>(n, rows, ws.spfh.get(), ws.out.get());
    CU_CHECK_LAUNCH("k_fpfh_weight");
  }
  ZeroedVector<float>& out = result.ready();
  ws.histograms_down.copy(out.data(), ws.out.get(), out.size() * sizeof(float), s);
}

// The histograms of every point into `out`. G = 64 with one group per block is the paper's
// mapping (its float histogram in shared memory), G = 32 with several warps per block is ours
// (counts).
template <int G, int Groups>
void descriptors_down(Workspace& ws, Descriptor desc, int n, const Rows& rows, const HostSide& host,
                      HostRows& result) {
  if (desc == Descriptor::Pfh)
    pfh_down<G, Groups>(ws, n, rows, host, result);
  else
    fpfh_down<G, Groups>(ws, n, rows, host, result);
}

// The neighbourhoods of every point among the points, on the device.
void search_rows(Workspace& ws, const Neighbourhood& nb, DeviceRows& r) {
  cudaStream_t s = ws.stream.get();
  const int n = int(ws.index.n);
  if (nb.k > 0) {
    const int k = std::min(nb.k, n);
    const std::size_t m = std::size_t(n) * std::size_t(k);
    r.index.reserve(std::max<std::size_t>(m, 1));
    r.d2.reserve(std::max<std::size_t>(m, 1));
    nns::search_knn(ws.index, ws.index.targets.get(), n, k, INFINITY, r.index.get(), r.d2.get(), s,
                    ws.index.cell_order());
    r.view = Rows{nullptr, k, r.index.get(), r.d2.get()};
  } else {
    const float r2 = float(double(nb.radius) * double(nb.radius));
    // The radius rows keep the points' own order: in the cell order KITTI's count and fill at
    // 0.5 m were slower (184 -> 203 and 931 -> 981 us in ncu on the H200, the LiDAR frame's fill
    // 2.53 -> 2.02 ms), where the k-NN and the kernels after the rows mostly gain
    // (docs/benchmarks.md).
    nns::search_radius(ws.index, ws.index.targets.get(), n, r2, r.radius, r.host_offsets, s);
    r.view = Rows{r.radius.offsets.get(), 0, r.radius.index.get(), r.radius.d2.get()};
  }
}

bool same(const Neighbourhood& a, const Neighbourhood& b) {
  return a.k == b.k && a.radius == b.radius;
}

// Where every search of a call is a radius search (the descriptors' and the normals'), the grid
// is planned for the largest radius (nns::radius_density says why); where every one is a
// k-nearest search, for the largest k (nns::knn_density); a mix keeps the usual grid.
struct FeatureGrid {
  float reach = 0;
  nns::GridDensity density;
};
FeatureGrid feature_grid(const Neighbourhood& a, const Neighbourhood* b) {
  if (a.k > 0 && (!b || b->k > 0)) return {0, nns::knn_density(std::max(a.k, b ? b->k : 0))};
  if (a.k > 0 || (b && b->k > 0)) return {};
  return {std::max(a.radius, b ? b->radius : 0.0f), nns::radius_density()};
}

// Lanes a point for k_normals: the largest power of two, up to 8, that leaves each lane 32
// neighbours or more. ncu on an H200, k_normals in us with 1 / 2 / 4 / 8 lanes (a thread a
// point before: KITTI r = 0.5 m 253-264): KITTI r = 0.5 m (180 a row) 249 / 280 / 204 / 197,
// k = 64 87 / 71 / 63 / 89, k = 16 32 / 42 / 42 / 61; the bunny k = 64 39 / 38 / 39 / 43, r = 5
// mm (51 a row) 32 / 36 / 38 / 42, k = 16 18 / 21 / 25 / 33. With short rows the block's one
// solving warp sets the time, with long ones each lane's chain of loads.
int normal_lanes(double mean) {
  int lanes = 1;
  while (lanes < 8 && mean >= 64.0 * lanes)
    lanes *= 2;
  return lanes;
}

// The normals into ws.normals and ws.curvature: exact on the device, or (pcl_compatible) PCL's,
// from covariances summed here and solved on the host (pcl_normal.h says why), then uploaded.
void run_normals(Workspace& ws, const DeviceRows& rows, Point3f vp, bool pcl_compatible,
                 const std::vector<Point3f>& points) {
  const int n = int(ws.index.n);
  const cudaStream_t s = ws.stream.get();
  ws.normals.reserve(std::size_t(n));
  ws.curvature.reserve(std::size_t(n));
  if (!pcl_compatible) {
    const auto go = [&](auto lanes) {
      constexpr int L = decltype(lanes)::value;
      k_normals<L><<<cuda::blocks_for(std::size_t(n), 32), 32 * L, 0, s>>>(
          ws.index.targets.get(), n, ws.index.cell_order(), rows.view,
          make_float3(vp.x, vp.y, vp.z), ws.normals.get(), ws.curvature.get());
    };
    switch (normal_lanes(rows.mean(n))) {
      case 1:
        go(std::integral_constant<int, 1>{});
        break;
      case 2:
        go(std::integral_constant<int, 2>{});
        break;
      case 4:
        go(std::integral_constant<int, 4>{});
        break;
      default:
        go(std::integral_constant<int, 8>{});
    }
    CU_CHECK_LAUNCH("k_normals");
    return;
  }
  ws.covariance.reserve(std::size_t(n));
  k_covariance_pcl<<<cuda::blocks_for(std::size_t(n), 128), 128, 0, s>>>(
      ws.index.targets.get(), n, rows.view, ws.covariance.get());
  CU_CHECK_LAUNCH("k_covariance_pcl");
  std::vector<pcl_normal::Covariance> cov(static_cast<std::size_t>(n));
  CU_CHECK(cudaMemcpyAsync(cov.data(), ws.covariance.get(), cov.size() * sizeof(cov[0]),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float3> normals(std::size_t(n), make_float3(nan, nan, nan));
  std::vector<float> curvature(std::size_t(n), nan);
  for (std::size_t q = 0; q < std::size_t(n); ++q) {
    const float to_vp[3] = {vp.x - points[q].x, vp.y - points[q].y, vp.z - points[q].z};
    float nn[3];
    if (pcl_normal::normal(cov[q], to_vp, nn, curvature[q]))
      normals[q] = make_float3(nn[0], nn[1], nn[2]);
  }
  CU_CHECK(cudaMemcpyAsync(ws.normals.get(), normals.data(), normals.size() * sizeof(float3),
                           cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemcpyAsync(ws.curvature.get(), curvature.data(), curvature.size() * sizeof(float),
                           cudaMemcpyHostToDevice, s));
  ws.stream.sync();  // the host vectors end here
}

template <class T>
void download(std::vector<T>& out, const T* d, std::size_t count, cudaStream_t s) {
  out.resize(count);
  if (count) CU_CHECK(cudaMemcpyAsync(out.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost, s));
}

// Normals straight into Point3f (same layout as float3), curvature beside; asynchronous.
void download_normals(Workspace& ws, std::size_t n, std::vector<Point3f>& normals,
                      std::vector<float>& curvature) {
  static_assert(sizeof(Point3f) == sizeof(float3));
  cudaStream_t s = ws.stream.get();
  normals.resize(n);
  if (n)
    CU_CHECK(cudaMemcpyAsync(normals.data(), ws.normals.get(), n * sizeof(float3),
                             cudaMemcpyDeviceToHost, s));
  download(curvature, ws.curvature.get(), n, s);
}

}  // namespace feat

void gpu_normals(const std::vector<Point3f>& points, const Neighbourhood& nb, Point3f vp,
                 bool pcl_compatible, NormalsResult& out) {
  using namespace feat;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>("normals (gpu)");
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size();
  const FeatureGrid grid = feature_grid(nb, nullptr);
  ws.index.build(NnsMethod::Gpu, points.data(), n, s, grid.reach, grid.density);
  clock.mark("upload");
  if (n) search_rows(ws, nb, ws.normal_rows);
  clock.mark("neighbours");
  if (n) run_normals(ws, ws.normal_rows, vp, pcl_compatible, points);
  clock.mark("normals");
  download_normals(ws, n, out.normals, out.curvature);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);
}

void gpu_features(const std::vector<Point3f>& points, const FeatureParams& params, Point3f vp,
                  const std::vector<Point3f>* given, FeatureResult& out) {
  using namespace feat;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>("features (gpu)");
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size();
  const int bins = descriptor_bins(params.descriptor);
  HostRows result(out.histograms, n * std::size_t(bins));
  const FeatureGrid grid =
      feature_grid(params.neighbourhood, given ? nullptr : &params.normals.neighbourhood);
  ws.index.build(NnsMethod::Gpu, points.data(), n, s, grid.reach, grid.density);
  ws.normals.reserve(std::max<std::size_t>(n, 1));
  if (given && n) cuda::upload(ws.normals.get(), given->data(), n * sizeof(float3), s);
  clock.mark("upload");
  search_rows(ws, params.neighbourhood, ws.feature_rows);
  clock.mark("neighbours");
  if (!given) {
    const bool shared = same(params.normals.neighbourhood, params.neighbourhood);
    if (!shared) search_rows(ws, params.normals.neighbourhood, ws.normal_rows);
    run_normals(ws, shared ? ws.feature_rows : ws.normal_rows, vp, params.normals.pcl_compatible,
                points);
    clock.mark("normals");
  }
  std::optional<NormalsDown> normals_down;
  if (!given) normals_down.emplace(ws, n, out.normals, out.curvature);
  ws.out.reserve(n * std::size_t(bins));
  ws.spfh.reserve(params.descriptor == Descriptor::Fpfh ? n * kGpuSpfhStride : 1);
  const Neighbourhood& nb = params.neighbourhood;
  const HostSide host{points, given ? *given : out.normals, nb.k > 0 ? std::min(nb.k, int(n)) : 0,
                      &ws.feature_rows.host_offsets, normals_down ? &*normals_down : nullptr};
  if (n) descriptors_down<32, 4>(ws, params.descriptor, int(n), ws.feature_rows.view, host, result);
  host.normals_ready();
  result.ready();
  clock.mark("descriptors and download");
  ws.stream.sync();
  clock.collect(out.stages);
  out.stages.emplace_back("waiting for the result's memory (host)", result.wait_ms());
}

void gpu_paper_descriptors(const std::vector<Point3f>& points, const std::vector<Point3f>& normals,
                           const HostNeighbours& nb, Descriptor descriptor, FeatureResult& out) {
  using namespace feat;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>("features (gpu-paper)");
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size(), m = nb.indices.size();
  const int bins = descriptor_bins(descriptor);
  HostRows result(out.histograms, n * std::size_t(bins));
  // Upload only: no structure, and no cell order (the kernels take the points as they come).
  ws.index.build(NnsMethod::GpuBruteForce, points.data(), n, s);
  ws.normals.reserve(std::max<std::size_t>(n, 1));
  ws.offsets.reserve(n + 1);
  DeviceRows& r = ws.feature_rows;
  r.index.reserve(std::max<std::size_t>(m, 1));
  r.d2.reserve(std::max<std::size_t>(m, 1));
  if (n) {
    CU_CHECK(cudaMemcpyAsync(ws.normals.get(), normals.data(), n * sizeof(float3),
                             cudaMemcpyHostToDevice, s));
    CU_CHECK(cudaMemcpyAsync(ws.offsets.get(), nb.offsets.data(), (n + 1) * sizeof(unsigned),
                             cudaMemcpyHostToDevice, s));
  }
  if (m) {
    CU_CHECK(cudaMemcpyAsync(r.index.get(), nb.indices.data(), m * sizeof(int),
                             cudaMemcpyHostToDevice, s));
    CU_CHECK(cudaMemcpyAsync(r.d2.get(), nb.sq_distances.data(), m * sizeof(float),
                             cudaMemcpyHostToDevice, s));
  }
  clock.mark("upload");
  ws.out.reserve(std::max<std::size_t>(n * std::size_t(bins), 1));
  ws.spfh.reserve(descriptor == Descriptor::Fpfh ? std::max<std::size_t>(n * kGpuSpfhStride, 1)
                                                 : 1);
  if (n) {
    const HostSide host{points, normals, 0, &nb.offsets};
    descriptors_down<64, 1>(ws, descriptor, int(n),
                            Rows{ws.offsets.get(), 0, r.index.get(), r.d2.get()}, host, result);
  }
  result.ready();
  clock.mark("descriptors and download");
  ws.stream.sync();
  clock.collect(out.stages);
}

}  // namespace cumulus
