// GPU clustering: the shared workspace, canonical relabelling and dispatch.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <utility>

#include "cluster/cuda/canonical_kernels.cuh"
#include "cluster/cuda/cluster_gpu.h"
#include "cluster/cuda/cluster_gpu_common.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/device_clock.cuh"
#include "core/cuda/host_spin.cuh"
#include "core/cuda/host_upload.cuh"
#include "core/cuda/workspace.cuh"
#include "core/host_pages.h"
#include "core/parallel.h"
#include "core/timing.h"

namespace cumulus {
namespace cluster_cuda {

// The counters are cleared by each method's first kernel or memset (a memset here came first on
// the stream, ahead of the upload). k_labels' last block reads the stamps beside them whether or
// not the call wrote them (the paper's methods do not): a new buffer is cleared once, so that
// no byte read is undefined.
void prepare_points(Workspace& ws, std::size_t n) {
  ws.points.reserve(n);
  ws.counters.reserve(kSummaryInts);
  if (ws.cleared.insert({ws.counters.get(), ws.counters.bytes()}).second)
    CU_CHECK(cudaMemsetAsync(ws.counters.get(), 0, ws.counters.bytes(), ws.stream.get()));
}

void upload_points(Workspace& ws, const Point3f* points, std::size_t n, cudaMemcpyKind kind) {
  prepare_points(ws, n);
  if (n && kind == cudaMemcpyHostToDevice)
    cuda::upload(ws.points.get(), points, n * sizeof(float3), ws.stream.get());
  else if (n)
    CU_CHECK(cudaMemcpyAsync(ws.points.get(), points, n * sizeof(float3), kind, ws.stream.get()));
}

namespace {

// Sizes the result's labels to n while the device works, writing nothing (UnfilledVector: the
// copy below writes every label). A large fresh result would fault its pages in one at a time
// as the copy's threads first wrote them: they are mapped in on all cores first
// (core/host_pages.h).
void size_labels(UnfilledVector<std::int32_t>& labels, std::size_t n) {
  if (n >= kLargeResult && labels.capacity() < n) {
    labels.clear();  // nothing to keep: reserve() then copies nothing into the new storage
    labels.reserve(n);
    prefault_pages(labels.data(), n * sizeof(int));
  }
  labels.resize(n);
}

// The result's labels in page-locked storage (the process's pool, core/page_locked_pool.h),
// sized to n, for k_labels to write over the bus: their device address, or nullptr where the
// pool has none to give (then they are widened from 16 bits after the wait). A reused result
// that is page-locked already keeps its storage. Before k_labels is queued, so on the host's
// way: a block from the pool takes a lock and a look-up, a new one (each size's first call) the
// driver's page-locking.
int* labels_in_page_locked_memory(UnfilledVector<std::int32_t>& labels, std::size_t n) {
  const void* at = labels.capacity() >= n ? cuda::device_address_of_pinned(labels.data()) : nullptr;
  if (!at) {
    UnfilledVector<std::int32_t> fresh{
        UnwrittenAllocator<std::int32_t, false>(HostMemory::PageLocked)};
    fresh.reserve(n);
    at = cuda::device_address_of_pinned(fresh.data());
    if (!at) return nullptr;
    labels = std::move(fresh);
  }
  labels.resize(n);  // within the capacity: the same storage
  return static_cast<int*>(const_cast<void*>(at));
}

// n labels from host memory into the result's `to` (widened where From is 16 bits), cut into
// `parts` that the calling thread and the spinning ready threads take.
template <class From>
void copy_labels(const From* from, int* to, std::size_t n, std::size_t parts) {
  ready_threads().run(parts, [&](std::size_t p) {
    const std::size_t begin = part_begin(n, parts, p), end = part_begin(n, parts, p + 1);
    std::copy(from + begin, from + end, to + begin);
  });
}

// Until k_labels' last block has written `done` into the host's summary, everything it brings
// written before it, or until the stream has run (cuda::spin_until). The word lands as the
// kernel's last block ends, before the stream's event for the kernel completes. With the clock
// started by the chain's own stamp (cluster_points), KITTI frame 0 from page-locked points on an
// H200: 0.127-0.132 -> 0.116-0.120 ms, the event's wait with that clock 0.121-0.124
// (docs/benchmarks.md).
void wait_for_summary(const Workspace& ws, unsigned done) {
  const volatile unsigned* word =
      reinterpret_cast<const volatile unsigned*>(ws.host_counters.get() + kDoneAt);
  cuda::spin_until([&] { return *word == done; }, [&] { return cudaEventQuery(ws.counted.get()); });
}

}  // namespace

void reserve_canonical(Workspace& ws, std::size_t n) {
  for (auto* b : {&ws.count, &ws.minidx, &ws.rank, &ws.ids, &ws.sorted_ids, &ws.labels, &ws.sizes})
    b->reserve(n);
  ws.host_labels16.reserve(n);
  ws.keys.reserve(n);
  ws.sorted_keys.reserve(n);
  // The device's counters are prepare_points' alone to make: it clears a new buffer once.
  ws.host_counters.reserve(kSummaryInts);
}

LabelsSent canonicalize_on_device(Workspace& ws, std::size_t n, const ClusterParams& params,
                                  CanonicalInput input, const LabelsTo& labels_to,
                                  StageClock& clock, const char* chain_start,
                                  const PointComponents* components,
                                  const std::function<void()>& behind) {
  const bool bring_labels = labels_to.host != nullptr;
  const PointComponents where = components ? *components : PointComponents{ws.component.get()};
  if (n == 0) return LabelsSent::No;
  cudaStream_t s = ws.stream.get();
  reserve_canonical(ws, n);
  const int ni = int(n);
  const int T = 256, B = cuda::blocks_for(n, T);
  if (input == CanonicalInput::Components) {
    CU_CHECK(cudaMemsetAsync(ws.count.get(), 0, n * sizeof(int), s));
    CU_CHECK(cudaMemsetAsync(ws.minidx.get(), 0x7f, n * sizeof(int), s));
    cuda::launch_dependent("launch of k_count_components", &k_count_components, B, T, s,
                           ws.component.get(), ni, ws.count.get(), ws.minidx.get(), ws.ids.get(),
                           ws.counters.get());
  }
  const auto min_size = unsigned(std::min<std::size_t>(params.min_size, 0xffffffffu));
  const auto max_size = unsigned(std::min<std::size_t>(params.max_size, 0xffffffffu));
  // Most clouds have at most kRankSmall components: they are ranked and labelled before the
  // count comes back, and for the host their labels and sizes come back in the same wait,
  // so the GPU does not idle while the host looks at the count. The small path's sizes go right
  // after the counters and come up with them (k_labels). The kernels follow each other as
  // dependent launches, with no copy between them (a copy makes the next kernel wait for its
  // end).
  cuda::launch_dependent("launch of k_rank_components", &k_rank_components, kRankBlocks, kRankBlock,
                         s, ws.ids.get(), ws.count.get(), ws.minidx.get(), ni, min_size, max_size,
                         ws.counters.get(), ws.keys.get(), ws.rank.get(),
                         ws.counters.get() + kSizesAt);
  // A large cloud's result is left to the ready threads (size_labels, download_result): the
  // pool keeps blocks for frames, not for every cloud.
  int* result_labels = nullptr;
  if (bring_labels && n < kLargeResult) {
    const WallTimer sizing;
    result_labels = labels_in_page_locked_memory(*labels_to.host, n);
    if (labels_to.sized_ms) *labels_to.sized_ms = sizing.ms();
  }
  if (++ws.calls == 0) ++ws.calls;  // 0 is "no word": a mark that wrapped round skips it
  const unsigned done = ws.calls;
  cuda::launch_dependent("launch of k_labels", &k_labels, B, T, s, where, ws.rank.get(), ni,
                         ws.counters.get(), true, ws.labels.get(), result_labels,
                         bring_labels ? ws.host_labels16.get() : nullptr, ws.host_counters.get(),
                         bool(behind), done);
  // A stamped chain's stages are split by the stamps that came up with the counters; on a clock
  // not yet started they are all the stamps' (the chain's first kernel stamped its start).
  const unsigned long long* stamps = stamps_in(ws.host_counters.get());
  if (chain_start && !clock.started())
    clock.mark_stamped({chain_start, "labelling", "canonicalize"}, stamps);
  else if (chain_start)
    clock.mark_split({chain_start, "labelling", "canonicalize"}, stamps + kLabellingStart);
  else
    clock.mark("canonicalize");
  ws.counted.record(s);
  if (behind) behind();
  if (bring_labels && !result_labels) {
    // The helpers that widen the labels (download_result) are woken now, to be running when the
    // labels land, and a fresh result's pages are mapped meanwhile. A large cloud's chain outlasts
    // their spinning: download_result wakes them for it.
    if (n >= kWidenedTogether && n < kLargeResult) ready_threads().wake();
    const WallTimer sizing;
    size_labels(*labels_to.host, n);
    if (labels_to.sized_ms) *labels_to.sized_ms = sizing.ms();
  }
  wait_for_summary(ws, done);
  const int K = ws.host_counters.get()[kClusters];
  if (K <= kRankSmall && bring_labels)
    return result_labels ? LabelsSent::IntoResult : LabelsSent::As16Bits;
  if (K <= kRankSmall) return LabelsSent::No;
  const int end_bit = 32 + std::bit_width(unsigned(n));
  std::size_t bytes = 0;
  CU_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, ws.keys.get(), ws.sorted_keys.get(),
                                           ws.ids.get(), ws.sorted_ids.get(), K, 0, end_bit, s));
  ws.sort_temp.reserve(bytes);
  CU_CHECK(cub::DeviceRadixSort::SortPairs(ws.sort_temp.get(), bytes, ws.keys.get(),
                                           ws.sorted_keys.get(), ws.ids.get(), ws.sorted_ids.get(),
                                           K, 0, end_bit, s));
  cuda::launch_dependent("launch of k_rank_sorted", &k_rank_sorted,
                         cuda::blocks_for(std::size_t(K), T), T, s, ws.sorted_keys.get(),
                         ws.sorted_ids.get(), ni, min_size, max_size, ws.counters.get(),
                         ws.rank.get(), ws.sizes.get());
  cuda::launch_dependent("launch of k_labels", &k_labels, B, T, s, where, ws.rank.get(), ni,
                         ws.counters.get(), false, ws.labels.get(), nullptr, nullptr, nullptr,
                         false, 0u);
  clock.mark("canonicalize (sorted)");
  return LabelsSent::No;
}

double download_result(Workspace& ws, std::size_t n, LabelsSent sent, ClusterResult& out,
                       StageClock& clock) {
  cudaStream_t s = ws.stream.get();
  ws.host_counters.reserve(kSummaryInts);
  // canonicalize_on_device brought the counters, and unless `sent` is No the labels and sizes
  // too (k_labels wrote them into host memory): then there is no download, and no page-locked
  // room for one is needed.
  const int* c = ws.host_counters.get();
  const std::size_t kept = n ? std::size_t(c[kKept]) : 0;
  const bool brought = sent != LabelsSent::No;
  // The sorted path's labels go straight into a result whose storage is page-locked (sized to n
  // by canonicalize_on_device, as every result is by now).
  const bool download_into_result =
      !brought && n && out.labels.size() == n && cuda::device_address_of_pinned(out.labels.data());
  if (n >= kLargeResult) ready_threads().wake();  // for the copies below, a few ms each
  const std::size_t all_parts = ready_threads().helpers() + 1;
  if (!brought) {
    ws.host_labels.reserve(std::max<std::size_t>(n, 1));
    ws.host_sizes.reserve(std::max<std::size_t>(n, 1));
    if (n) {
      CU_CHECK(cudaMemcpyAsync(download_into_result ? out.labels.data() : ws.host_labels.get(),
                               ws.labels.get(), n * sizeof(int), cudaMemcpyDeviceToHost, s));
      if (kept)
        CU_CHECK(cudaMemcpyAsync(ws.host_sizes.get(), ws.sizes.get(), kept * sizeof(int),
                                 cudaMemcpyDeviceToHost, s));
    }
    clock.mark("download");
  }
  double copy_ms = 0;  // the host's copying only, not its waits
  if (sent == LabelsSent::As16Bits) {
    const WallTimer copy;
    out.labels.resize(n);  // done already while the device worked
    // A part for every ready thread (eight on an H200's 16-core host): into a reused result
    // KITTI's labels took 8-14 us against 13-18 in four parts, the call 0.126-0.136 ms against
    // 0.132-0.141. Into a fresh one they took 20-21 us while resize() zero-filled it on the
    // calling thread first, 8-10 us since it writes nothing (docs/benchmarks.md). One thread took
    // 20-24 us.
    const std::size_t parts = n >= kWidenedTogether ? all_parts : 1;
    copy_labels(ws.host_labels16.get(), out.labels.data(), n, parts);
    copy_ms += copy.ms();
  }
  // The clock's events are read next. Where the labels came with the counters, the wait for them
  // (canonicalize_on_device) saw every event end, and what follows on the stream (run_fast's
  // clearing for the next call) is not this call's to wait for.
  if (!brought) ws.stream.sync();
  const WallTimer copy;
  if (!brought && !download_into_result) {
    // Sized while the device worked (size_labels); a large cloud's on the ready threads (one
    // thread copied 8M labels in 3.4-4.2 ms on an H200's host).
    out.labels.resize(n);
    copy_labels(ws.host_labels.get(), out.labels.data(), n, n >= kLargeResult ? all_parts : 1);
  }
  const int* sizes = brought ? c + kSizesAt : ws.host_sizes.get();
  out.sizes.assign(sizes, sizes + kept);
  out.non_finite = n ? n - std::size_t(c[kFinite]) : 0;
  out.dropped_clusters = n ? std::size_t(c[kClusters] - c[kKept]) : 0;
  return copy_ms + copy.ms();
}
}  // namespace cluster_cuda

namespace {

// Page-locked chunks for gathered calls, kept beside the workspace: two for points (one is
// filled while the other is on its way to the device) and two for labels (one is taken while
// the other comes down).
struct GatherStaging {
  static constexpr std::size_t kChunkPoints = std::size_t(1) << 21;  // 24 MB of points
  cuda::PinnedBuffer<float3> points[2];
  cuda::PinnedBuffer<int> labels[2];
  std::unique_ptr<cuda::Event> sent[2], arrived[2];
  void reserve() {
    for (int b = 0; b < 2; ++b) {
      points[b].reserve(kChunkPoints);
      labels[b].reserve(kChunkPoints);
      if (!sent[b]) sent[b] = std::make_unique<cuda::Event>();
      if (!arrived[b]) arrived[b] = std::make_unique<cuda::Event>();
    }
  }
};

// Whether and how the labels and sizes are on their way to the host (canonicalize_on_device).
cluster_cuda::LabelsSent run_method(cluster_cuda::Workspace& ws, std::size_t n,
                                    const ClusterParams& params, ClusterMethod method,
                                    cluster_cuda::StageClock& clock,
                                    const cluster_cuda::LabelsTo& labels_to,
                                    const float3* host_points = nullptr) {
  // The table the last call cleared is this call's to use or lose: whatever runs now changes the
  // table or the counters, and only run_fast, at its end, says it left them cleared.
  const auto cleared = std::exchange(ws.clear_table, {});
  if (n == 0) return cluster_cuda::LabelsSent::No;
  if (method == ClusterMethod::Gpu)
    return cluster_cuda::run_fast(ws, n, params, clock, labels_to, cleared, host_points);
  return cluster_cuda::run_paper(ws, n, params, method, clock, labels_to);
}

void cluster_points(const Point3f* points, std::size_t n, cudaMemcpyKind kind,
                    const ClusterParams& params, ClusterMethod method, ClusterResult& out,
                    int* device_labels = nullptr) {
  cuda::require_device(method_name(method));
  using namespace cluster_cuda;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>();
  // Page-locked points (a frame reader's, allocate_pinned_points) are read over the bus by the
  // fast method's insert kernel, with no copy ahead of the chain: their reads go out while the
  // table is cleared, and the kernels wait for no copy (KITTI frame 0 on an H200: the upload and
  // grid 0.063-0.072 ms before, 0.057-0.063 after in 19 of 20 runs). 16-byte aligned only: the
  // kernel reads 16-byte words.
  const float3* host_points = nullptr;
  if (kind == cudaMemcpyHostToDevice && method == ClusterMethod::Gpu && n &&
      reinterpret_cast<std::uintptr_t>(points) % 16 == 0)
    host_points = static_cast<const float3*>(cuda::device_address_of_pinned(points));
  // Page-locked points go straight into the fast method's chain, which stamps its own start: the
  // clock need not start ahead of it.
  StageClock clock(ws.stream.get(), !host_points);
  if (host_points) {
    prepare_points(ws, n);
  } else {
    upload_points(ws, points, n, kind);
    clock.mark(kind == cudaMemcpyDeviceToDevice ? "copy" : "upload");
  }
  double sized_ms = 0;
  const LabelsSent sent =
      run_method(ws, n, params, method, clock, LabelsTo{&out.labels, &sized_ms}, host_points);
  if (device_labels && n)  // for the caller's next kernels: no trip through the host
    CU_CHECK(cudaMemcpyAsync(device_labels, ws.labels.get(), n * sizeof(int),
                             cudaMemcpyDeviceToDevice, ws.stream.get()));
  const double copy_ms = download_result(ws, n, sent, out, clock);
  if (device_labels && n)
    ws.stream.sync();  // the copy above, which download_result may not wait for
  clock.collect(out.stages);
  if (n >= kLargeResult) out.stages.emplace_back("result sized (host)", sized_ms);
  out.stages.emplace_back("labels into the result (host)", copy_ms);
}

}  // namespace

std::size_t gpu_cluster_gathered(std::size_t n, const GatheredIo& io, const ClusterParams& params,
                                 ClusterMethod method, StageTimes& stages) {
  cuda::require_device(method_name(method));
  using namespace cluster_cuda;
  auto [lock, ws] = cuda::acquire_workspace<Workspace>();
  auto& staging = cuda::buffers_beside<GatherStaging, Workspace>();
  staging.reserve();
  cudaStream_t s = ws.stream.get();
  StageClock clock(s);
  prepare_points(ws, n);
  const std::size_t chunk = GatherStaging::kChunkPoints, chunks = (n + chunk - 1) / chunk;
  WallTimer host;
  double gather_ms = 0, take_ms = 0;
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * chunk, end = std::min(n, begin + chunk), b = c & 1;
    if (c >= 2) staging.sent[b]->wait();  // the buffer's last chunk has left it
    host.reset();
    io.gather(begin, end, reinterpret_cast<Point3f*>(staging.points[b].get()));
    gather_ms += host.ms();
    CU_CHECK(cudaMemcpyAsync(ws.points.get() + begin, staging.points[b].get(),
                             (end - begin) * sizeof(float3), cudaMemcpyHostToDevice, s));
    staging.sent[b]->record(s);
  }
  clock.mark("gather and upload");
  run_method(ws, n, params, method, clock, LabelsTo{});
  const std::size_t clusters = n ? std::size_t(ws.host_counters.get()[kKept]) : 0;
  auto download = [&](std::size_t c) {
    const std::size_t begin = c * chunk, end = std::min(n, begin + chunk), b = c & 1;
    CU_CHECK(cudaMemcpyAsync(staging.labels[b].get(), ws.labels.get() + begin,
                             (end - begin) * sizeof(int), cudaMemcpyDeviceToHost, s));
    staging.arrived[b]->record(s);
  };
  for (std::size_t c = 0; c < std::min<std::size_t>(chunks, 2); ++c)
    download(c);
  for (std::size_t c = 0; c < chunks; ++c) {
    const std::size_t begin = c * chunk, end = std::min(n, begin + chunk), b = c & 1;
    staging.arrived[b]->wait();
    host.reset();
    io.take_labels(begin, end, staging.labels[b].get(), clusters);
    take_ms += host.ms();
    if (c + 2 < chunks) download(c + 2);
  }
  clock.mark("download and take labels");
  ws.stream.sync();
  stages.emplace_back("gather (host)", gather_ms);
  clock.collect(stages);
  stages.emplace_back("take labels (host)", take_ms);
  return clusters;
}

void gpu_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                 ClusterMethod method, ClusterResult& out) {
  cluster_points(points, n, cudaMemcpyHostToDevice, params, method, out);
}

void gpu_cluster_on_device(const Point3f* device_points, std::size_t n, const ClusterParams& params,
                           ClusterResult& out, int* device_labels) {
  cluster_points(device_points, n, cudaMemcpyDeviceToDevice, params, ClusterMethod::Gpu, out,
                 device_labels);
}

}  // namespace cumulus
