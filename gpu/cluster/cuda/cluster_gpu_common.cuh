#pragma once
// Pieces shared by the GPU clustering methods: the distance test that matches PCL bit for bit,
// the per-process workspace, stage timing, and the canonical relabelling on the device.
#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "core/cuda/buffer.cuh"
#include "core/cuda/distance.cuh"
#include "core/cuda/stage_clock.cuh"

namespace cumulus::cluster_cuda {

using cuda::dist2;
using cuda::finite3;
using cuda::StageClock;

// Counts a warp's flags with one atomic instead of one per thread: a counter bumped by every
// point serialises on one address otherwise. All 32 lanes must call it.
__device__ __forceinline__ void warp_count(int* counter, bool flag) {
  const unsigned votes = __ballot_sync(0xffffffffu, flag);
  if ((threadIdx.x & 31) == 0 && votes) atomicAdd(counter, __popc(votes));
}

// Lists the roots that the warp's leaders saw first (fresh: their add found a count of 0) in
// `roots`, counted by counters[kClusters], with one atomic for the warp: the canonical
// relabelling (canonicalize_on_device) ranks these entries instead of scanning a count a node
// for the few that are set. All 32 lanes must call it.
__device__ __forceinline__ void warp_list_roots(bool fresh, int r, int* roots, int* clusters) {
  const unsigned votes = __ballot_sync(0xffffffffu, fresh);
  if (!votes) return;  // the whole warp agrees
  const int lane = int(threadIdx.x & 31);
  int base = 0;
  if (lane == 0) base = atomicAdd(clusters, __popc(votes));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (fresh) roots[base + __popc(votes & ((1u << lane) - 1))] = r;
}

// Adds one point (index i) to component c with one atomic pair per distinct c in the warp:
// the points of a warp are consecutive and mostly share their component. The lowest lane of a
// group holds its smallest index. A component's first add lists it (warp_list_roots). All 32
// lanes must call it; c < 0 adds nothing.
__device__ __forceinline__ void warp_add_to_component(int c, int i, int* count, int* minidx,
                                                      int* roots, int* clusters) {
  const unsigned peers = __match_any_sync(0xffffffffu, c);
  bool fresh = false;
  if (c >= 0 && int(threadIdx.x & 31) == __ffs(peers) - 1) {
    fresh = atomicAdd(&count[c], __popc(peers)) == 0;
    atomicMin(&minidx[c], i);
  }
  warp_list_roots(fresh, c, roots, clusters);
}

// PCL squares the tolerance in double and hands FLANN a float.
inline float squared_threshold(float tolerance) {
  return float(double(tolerance) * double(tolerance));
}

// kLabelBlocks: k_labels' blocks done, for its last block.
enum Counter { kFinite = 0, kClusters, kBig, kKept, kLabelBlocks, kCounters };
// The counters' buffer also holds what the host reads with them (k_labels' last block writes it
// all into host memory, ws.host_counters, in the same layout): the fast method's stage stamps
// (device_now, 8-byte aligned after the counters), the call's mark that k_labels' last block
// writes after everything else (kDoneAt: the host waits for it instead of for the stream), then
// the sizes of up to kRankSmall clusters (ranked without a sort).
enum Stamp { kChainStart = 0, kLabellingStart, kRelabellingStart, kLabelsEnd, kStamps };
constexpr int kStampsAt = (kCounters + 1) / 2 * 2, kDoneAt = kStampsAt + 2 * kStamps,
              kSizesAt = kDoneAt + 2;
constexpr int kRankSmall = 4096;
// Labels from this many on are widened into the result by the ready threads (core/parallel.h).
constexpr std::size_t kWidenedTogether = std::size_t(1) << 15;
// From this many points a result is large: its fresh pages are mapped in on every core before the
// zero-fill, and its labels are copied in on every helper (size_labels, download_result).
constexpr std::size_t kLargeResult = std::size_t(1) << 20;
constexpr int kSummaryInts = kSizesAt + kRankSmall;
static_assert(kStampsAt % 2 == 0, "the stamps are 8-byte words");
__host__ __device__ inline unsigned long long* stamps_in(int* counters) {
  return reinterpret_cast<unsigned long long*>(counters + kStampsAt);
}
__host__ __device__ inline const unsigned long long* stamps_in(const int* counters) {
  return reinterpret_cast<const unsigned long long*>(counters + kStampsAt);
}

// Where k_labels finds each point's component: an array a point (the paper's methods), or
// through the point's slot (point_slot, cell_grid.cuh) in one array a cell and one a far point
// (the fast method: a KITTI frame's 125,000 points lie in 21,000 cells, whose roots are found
// once a cell instead of once a point).
struct PointComponents {
  const int* per_point = nullptr;
  const int* point_slot = nullptr;
  const int* cell_root = nullptr;
  const int* far_root = nullptr;
  __device__ int of(int i) const {
    if (per_point) return per_point[i];
    const int slot = point_slot[i];
    return slot >= 0 ? cell_root[slot] : slot == -1 ? -1 : far_root[-2 - slot];
  }
};

// Device and pinned buffers reused across calls (cuda::acquire_workspace).
struct Workspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<float3> points;
  cuda::DeviceBuffer<int> component;  // the paper's methods: per point, component id or -1
  cuda::DeviceBuffer<int> counters;   // kCounters, then the stamps and sizes (kSummaryInts)
  // canonical relabelling
  cuda::DeviceBuffer<int> count, minidx, rank, ids, sorted_ids, labels, sizes;
  cuda::DeviceBuffer<unsigned long long> keys, sorted_keys;  // one per component
  cuda::DeviceBuffer<unsigned char> sort_temp;
  cuda::PinnedBuffer<int> host_labels, host_counters, host_sizes;
  cuda::PinnedBuffer<short> host_labels16;  // written by k_labels where the labels fit
  cuda::Event counted;                      // k_labels has run (wait_for_summary's fallback)
  unsigned calls = 0;                       // the last mark k_labels wrote at kDoneAt
  // Device buffers (address, bytes) cleared once when made (prepare_points).
  std::set<std::pair<const void*, std::size_t>> cleared;
  // The fast method's table and counters as its first kernel would leave them, cleared behind
  // the last call (run_fast): the first `slots` slots of the table at `keys`. Every call takes it
  // and leaves it unset before its first launch (run_method), and only a fast call that queued
  // the clearing sets it again, at its end: any other method, or a call that stopped early,
  // leaves it unset.
  struct ClearTable {
    bool set = false;
    const void* keys = nullptr;
    const void* cell_count = nullptr;
    unsigned slots = 0;
  } clear_table;
};

void upload_points(Workspace& ws, const Point3f* points, std::size_t n,
                   cudaMemcpyKind kind = cudaMemcpyHostToDevice);
// Components: ws.component holds ids < n (or -1) and everything else is done here. Counted: the
// method has also filled ws.count (points per id, zero elsewhere) and ws.minidx (smallest point
// per id) in its own kernels (fewer launches), and `components` says where each point's id is
// (ws.component by default). Brings the counters to the host, and for
// a host LabelsTo the labels and sizes too where there are at most 4,096 components (written
// into host memory by the last kernel): returns how it brought them.
enum class CanonicalInput { Components, Counted };
// Where the labels are after canonicalize_on_device's wait: still on the device (with more
// components than the small path takes, or for no host), in 16 bits in ws.host_labels16 (to be
// widened into the result), or already in the result (its storage page-locked, written over the
// bus by the last kernel).
enum class LabelsSent { No, As16Bits, IntoResult };
// Where the labels go after a method: into a host vector (k_labels writes it where its storage
// can be page-locked, sized before that kernel is queued; otherwise download_result fills it,
// sized while the device works), or nowhere yet (null: the gathered slabs take them from the device
// in chunks of their own).
struct LabelsTo {
  UnfilledVector<std::int32_t>* host = nullptr;
  double* sized_ms = nullptr;  // where to put the host's time sizing the result, if wanted
};
// Marks "canonicalize" on the clock once the relabelling's kernels are queued (and "canonicalize
// (sorted)" after the sort over kRankSmall components). `chain_start`: the chain since the last
// mark is the fast method's, its stages timed by its kernels (run_fast), and the part before its
// labelling is called so; nullptr for the other methods.
void reserve_canonical(Workspace& ws, std::size_t n);
// `behind`: work to queue behind the chain that the call need not wait for (run_fast's clearing
// for the next call), queued before the wait; with it, k_labels' last block zeroes the counters
// where the small path took them (no later kernel of the call reads them).
LabelsSent canonicalize_on_device(Workspace& ws, std::size_t n, const ClusterParams& params,
                                  CanonicalInput input, const LabelsTo& labels_to,
                                  StageClock& clock, const char* chain_start,
                                  const PointComponents* components = nullptr,
                                  const std::function<void()>& behind = {});
// Brings labels and sizes back (unless canonicalize_on_device brought them: `sent`),
// marks "download" on the clock, and fills `out`; returns the host's milliseconds spent copying.
double download_result(Workspace& ws, std::size_t n, LabelsSent sent, ClusterResult& out,
                       StageClock& clock);

// The methods; each returns canonicalize_on_device's answer. run_fast's `cleared`: what the last
// call left cleared (Workspace::clear_table, taken from the workspace by the caller); its
// `host_points`: the points' device address in page-locked host memory, read by its first
// kernel where no copy put them in ws.points.
LabelsSent run_fast(Workspace& ws, std::size_t n, const ClusterParams& params, StageClock& clock,
                    const LabelsTo& labels_to, const Workspace::ClearTable& cleared,
                    const float3* host_points = nullptr);
LabelsSent run_paper(Workspace& ws, std::size_t n, const ClusterParams& params,
                     ClusterMethod method, StageClock& clock, const LabelsTo& labels_to);

}  // namespace cumulus::cluster_cuda
