// GPU clustering: the shared workspace, canonical relabelling and dispatch.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <bit>
#include <cstring>

#include "cluster_gpu.h"
#include "cluster_gpu_common.cuh"
#include "cumulus/device.h"

namespace cumulus {
namespace cluster_cuda {

std::mutex& workspace_mutex() {
  static std::mutex m;
  return m;
}

Workspace& workspace() {
  static std::unique_ptr<Workspace> ws;
  if (!ws) ws = std::make_unique<Workspace>();
  return *ws;
}

void upload_points(Workspace& ws, const Point3f* points, std::size_t n) {
  ws.points.reserve(n);
  ws.component.reserve(n);
  ws.counters.reserve(kCounters);
  CU_CHECK(cudaMemsetAsync(ws.counters.get(), 0, kCounters * sizeof(int), ws.stream.get()));
  if (n)
    CU_CHECK(cudaMemcpyAsync(ws.points.get(), points, n * sizeof(float3), cudaMemcpyHostToDevice,
                             ws.stream.get()));
}

namespace {

__global__ void k_count_components(const int* component, int n, int* count, int* minidx) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  warp_add_to_component(i < n ? component[i] : -1, i, count, minidx);
}

// One entry per component, placed at the position of its smallest point so that a stable sort
// by size keeps equal sizes in ascending order of their first point.
__global__ void k_make_keys(const int* count, const int* minidx, int n, bool ids_are_min,
                            unsigned min_size, unsigned max_size, unsigned* keys, int* vals,
                            int* counters) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int s = count[j];
  if (s == 0) return;
  const int pos = ids_are_min ? j : minidx[j];
  keys[pos] = unsigned(n - s);
  vals[pos] = j;
  atomicAdd(&counters[kClusters], 1);
  if (unsigned(s) > max_size)
    atomicAdd(&counters[kBig], 1);
  else if (unsigned(s) >= min_size)
    atomicAdd(&counters[kKept], 1);
}

__global__ void k_ranks(const unsigned* sorted_keys, const int* sorted_vals, int n,
                        unsigned min_size, unsigned max_size, const int* counters, int* rank,
                        int* sizes) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= counters[kClusters]) return;
  const unsigned s = unsigned(n) - sorted_keys[p];
  const int id = sorted_vals[p];
  if (s > max_size || s < min_size) {
    rank[id] = -1;
    return;
  }
  const int r = p - counters[kBig];
  rank[id] = r;
  sizes[r] = int(s);
}

__global__ void k_labels(const int* component, const int* rank, int n, int* labels) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int c = component[i];
  labels[i] = c < 0 ? -1 : rank[c];
}

}  // namespace

void reserve_canonical(Workspace& ws, std::size_t n) {
  for (auto* b :
       {&ws.count, &ws.minidx, &ws.rank, &ws.vals, &ws.sorted_vals, &ws.labels, &ws.sizes})
    b->reserve(n);
  ws.keys.reserve(n);
  ws.sorted_keys.reserve(n);
  if (ws.sort_temp_n < n) {
    std::size_t bytes = 0;
    CU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, ws.keys.get(), ws.sorted_keys.get(),
                                             ws.vals.get(), ws.sorted_vals.get(), int(n), 0,
                                             std::bit_width(unsigned(n)), ws.stream.get()));
    ws.sort_temp.reserve(bytes);
    ws.sort_temp_n = n;
  }
}

void canonicalize_on_device(Workspace& ws, std::size_t n, const ClusterParams& params,
                            CanonicalInput input) {
  if (n == 0) return;
  cudaStream_t s = ws.stream.get();
  reserve_canonical(ws, n);
  const int ni = int(n);
  const int T = 256, B = cuda::blocks_for(n, T);
  if (input == CanonicalInput::Components) {
    CU_CHECK(cudaMemsetAsync(ws.count.get(), 0, n * sizeof(int), s));
    CU_CHECK(cudaMemsetAsync(ws.minidx.get(), 0x7f, n * sizeof(int), s));
    CU_CHECK(cudaMemsetAsync(ws.keys.get(), 0xff, n * sizeof(unsigned), s));
    CU_CHECK(
        cudaMemsetAsync(ws.vals.get(), 0xff, n * sizeof(int), s));  // the sort reads every slot
    k_count_components<<<B, T, 0, s>>>(ws.component.get(), ni, ws.count.get(), ws.minidx.get());
    CU_CHECK_LAUNCH("k_count_components");
  }
  const auto min_size = unsigned(std::min<std::size_t>(params.min_size, 0xffffffffu));
  const auto max_size = unsigned(std::min<std::size_t>(params.max_size, 0xffffffffu));
  k_make_keys<<<B, T, 0, s>>>(ws.count.get(), ws.minidx.get(), ni, false, min_size, max_size,
                              ws.keys.get(), ws.vals.get(), ws.counters.get());
  CU_CHECK_LAUNCH("k_make_keys");
  // Keys n - size < n; empty slots 0xFFFFFFFF. Sorting bits [0, end_bit) with 2^end_bit > n keeps
  // empty slots after every real key, and the stable sort keeps equal sizes in position order.
  std::size_t bytes = ws.sort_temp.bytes();
  CU_CHECK(cub::DeviceRadixSort::SortPairs(
      ws.sort_temp.get(), bytes, ws.keys.get(), ws.sorted_keys.get(), ws.vals.get(),
      ws.sorted_vals.get(), ni, 0, std::bit_width(unsigned(n)), s));
  k_ranks<<<B, T, 0, s>>>(ws.sorted_keys.get(), ws.sorted_vals.get(), ni, min_size, max_size,
                          ws.counters.get(), ws.rank.get(), ws.sizes.get());
  CU_CHECK_LAUNCH("k_ranks");
  k_labels<<<B, T, 0, s>>>(ws.component.get(), ws.rank.get(), ni, ws.labels.get());
  CU_CHECK_LAUNCH("k_labels");
}

void download_result(Workspace& ws, std::size_t n, ClusterResult& out) {
  cudaStream_t s = ws.stream.get();
  ws.host_counters.reserve(kCounters);
  ws.host_labels.reserve(std::max<std::size_t>(n, 1));
  // The first sizes come with the labels; a second copy only when there are more clusters.
  constexpr std::size_t kSizesFirst = 8192;
  const std::size_t first = std::min(n, kSizesFirst);
  ws.host_sizes.reserve(std::max<std::size_t>(n, 1));
  if (n) {
    CU_CHECK(cudaMemcpyAsync(ws.host_labels.get(), ws.labels.get(), n * sizeof(int),
                             cudaMemcpyDeviceToHost, s));
    CU_CHECK(cudaMemcpyAsync(ws.host_sizes.get(), ws.sizes.get(), first * sizeof(int),
                             cudaMemcpyDeviceToHost, s));
  }
  CU_CHECK(cudaMemcpyAsync(ws.host_counters.get(), ws.counters.get(), kCounters * sizeof(int),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  const int* c = ws.host_counters.get();
  const std::size_t kept = std::size_t(c[kKept]);
  if (kept > first) {
    CU_CHECK(cudaMemcpyAsync(ws.host_sizes.get() + first, ws.sizes.get() + first,
                             (kept - first) * sizeof(int), cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
  }
  out.labels.assign(ws.host_labels.get(), ws.host_labels.get() + n);
  out.sizes.assign(ws.host_sizes.get(), ws.host_sizes.get() + kept);
  out.non_finite = n - std::size_t(c[kFinite]);
  out.dropped_clusters = std::size_t(c[kClusters] - c[kKept]);
}

}  // namespace cluster_cuda

void gpu_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                 ClusterMethod method, ClusterResult& out) {
  // The device cannot appear or vanish while we run; ask once (the query costs a context).
  static const DeviceInfo dev = query_device();
  if (!dev.available)
    throw GpuError(std::string(method_name(method)) + " needs a GPU: " + dev.reason);
  using namespace cluster_cuda;
  std::lock_guard<std::mutex> lock(workspace_mutex());
  Workspace& ws = workspace();
  StageClock clock(ws.stream.get());
  upload_points(ws, points, n);
  clock.mark("upload");
  if (n > 0) {
    if (method == ClusterMethod::Gpu)
      run_fast(ws, n, params, clock);
    else
      run_paper(ws, n, params, method, clock);
  }
  download_result(ws, n, out);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);
}

}  // namespace cumulus
