// `gpu`, our clustering method: union-find over cells of a hashed voxel grid, no graph.
//
// Cells are a hair smaller than tolerance / sqrt(3), so every two points of a cell are
// neighbours and a cell is one node of the union-find. Two cells are joined as soon as one pair
// of their points is closer than the tolerance, so dense regions cost one test per cell pair
// instead of one per point pair. Neighbour cells lie within two cells on each axis; each cell
// looks only at the 62 that come after it. A cell pair that needs a point search gets a few
// tests at once; the rest wait for a second kernel, by when most of them join cells that other
// pairs have joined, so their search is skipped. Points too far out for the 21-bit cell coordinates
// ("far" points, absurd coordinates or tiny tolerances) are compared with every point instead:
// slow but exact.
#include <bit>
#include <functional>

#include "cluster/cuda/cell_grid.cuh"
#include "cluster/cuda/cell_joins.cuh"
#include "cluster/cuda/cluster_gpu_common.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/device_clock.cuh"
#include "core/cuda/occupancy.cuh"
#include "core/cuda/workspace.cuh"

namespace cumulus::cluster_cuda {

namespace {

// One launch clears the hash table and the counters, here or behind the call before (run_fast;
// counters null: k_labels cleared them). The other per-slot arrays are set by the point that
// creates the slot's cell (k_insert_points): a frame fills a sixth of its slots or less.
__global__ void k_init(unsigned capacity, unsigned long long* keys, int* cell_count, int* counters,
                       int* fast_counters) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= capacity) return;
  keys[i] = kEmptyKey;
  cell_count[i] = 0;  // counted by atomics before the cell's creator could clear it
  if (counters && i < kCounters) counters[i] = 0;
  if (i < kFastCounters) fast_counters[i] = 0;
}

constexpr int kInsertThreads = 256;

// A block's points straight from page-locked host memory, in 16-byte words through shared
// memory: a float3 a lane would be three 4-byte reads 12 bytes apart, in pieces of lines over the
// bus. `from` is 16-byte aligned (run_fast).
__device__ __forceinline__ float3 read_block_points(const float3* from, int n) {
  __shared__ float4 words[kInsertThreads * 3 / 4];
  const int first = int(blockIdx.x) * kInsertThreads;
  const int floats = 3 * min(kInsertThreads, n - first);
  const float* src = reinterpret_cast<const float*>(from + first);
  float* staged = reinterpret_cast<float*>(words);
  for (int w = int(threadIdx.x); w < floats / 4; w += kInsertThreads)
    words[w] = reinterpret_cast<const float4*>(src)[w];
  for (int f = floats / 4 * 4 + int(threadIdx.x); f < floats; f += kInsertThreads)
    staged[f] = src[f];
  __syncthreads();
  const int t = int(threadIdx.x);
  return 3 * t < floats ? make_float3(staged[3 * t], staged[3 * t + 1], staged[3 * t + 2])
                        : make_float3(NAN, NAN, NAN);
}

// Consecutive points of a scan mostly share a cell, so the per-cell counters are bumped once
// per group of a warp's lanes (__match_any_sync), not once per point. With `host_pts` the points
// come from page-locked host memory instead of a copy ahead of the kernel: their reads go out
// before the wait for k_init (they depend on no kernel), and the kernel leaves the device's copy
// in `pts` for the chain's later kernels.
__global__ void __launch_bounds__(kInsertThreads)
    k_insert_points(const float3* host_pts, float3* pts, int n, double inv_cell, unsigned mask,
                    unsigned long long* keys, int* cell_count, int* cell_fill, int* cell_min,
                    CellBoxes boxes, int* point_slot, int* far_list, int* cell_list,
                    int* fast_counters, int* counters, int* parent, int* count, int* minidx) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // The chain's start for its stages (canonicalize_on_device): the first block's arrival, before
  // its reads and its wait for k_init where that runs.
  if (i == 0) stamps_in(counters)[kChainStart] = cuda::device_now();
  const float3 read = host_pts ? read_block_points(host_pts, n) : float3{};
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int lane = int(threadIdx.x & 31);
  const float3 p = host_pts ? read : i < n ? pts[i] : make_float3(NAN, NAN, NAN);
  if (i < n) {
    if (host_pts) pts[i] = p;
    // The union-find and the component counts, here rather than in k_init, which does not run
    // where the last call cleared the table (run_fast).
    parent[i] = i;
    count[i] = 0;
    minidx[i] = 0x7fffffff;
  }
  const bool finite = finite3(p);
  warp_count(&counters[kFinite], finite);
  long long x = 0, y = 0, z = 0;
  const bool near = finite && cell_of(p, inv_cell, x, y, z);
  int slot = -1;
  if (i < n && finite && !near) {
    const int f = atomicAdd(&fast_counters[kFar], 1);
    far_list[f] = i;
    slot = far_slot(f);
  }
  bool fresh = false;
  if (near) {
    const unsigned long long key = pack(x, y, z);
    unsigned h = hash_key(key) & mask;
    while (true) {
      const unsigned long long prev = atomicCAS(&keys[h], kEmptyKey, key);
      if (prev == kEmptyKey || prev == key) {
        fresh = prev == kEmptyKey;
        break;
      }
      h = (h + 1) & mask;
    }
    slot = int(h);
  }
  __syncwarp();
  // New cells join the cell list with one atomic per warp.
  const unsigned fresh_votes = __ballot_sync(0xffffffffu, fresh);
  int base = 0;
  if (lane == 0 && fresh_votes) base = atomicAdd(&fast_counters[kCells], __popc(fresh_votes));
  base = __shfl_sync(0xffffffffu, base, 0);
  if (fresh) {
    cell_list[base + __popc(fresh_votes & ((1u << lane) - 1))] = slot;
    cell_fill[slot] = 0;
    cell_min[slot] = 0x7fffffff;
    for (int k = 0; k < 3; ++k) {
      boxes.v[k][slot] = 0x7fffffff;
      boxes.v[k + 3][slot] = int(0x80000000u);
    }
  }
  const unsigned peers = __match_any_sync(0xffffffffu, slot);
  if (slot >= 0 && lane == __ffs(peers) - 1) atomicAdd(&cell_count[slot], __popc(peers));
  if (i < n) point_slot[i] = slot;
}

// Each cell's first place among the points sorted by cell, handed out in cell-list order with
// one atomic a warp: a cell's range only has to be its own. (A scan over every slot of the table
// read 2^18 counts for a KITTI frame's 21,000 cells, in two kernels.)
__global__ void k_cell_starts(const int* cell_list, int* fast_counters, const int* cell_count,
                              int* cell_start) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int cells = fast_counters[kCells];
  const int lane = int(threadIdx.x & 31);
  const int stride = int(gridDim.x * blockDim.x);
  for (int base = int((blockIdx.x * blockDim.x + threadIdx.x) & ~31u); base < cells;
       base += stride) {  // the same trips for every lane of a warp
    const int c = base + lane;
    const int slot = c < cells ? cell_list[c] : -1;
    const int count = slot >= 0 ? cell_count[slot] : 0;
    int upto = count;  // this lane's count and those of the lanes before it
    for (int offset = 1; offset < 32; offset <<= 1) {
      const int before = __shfl_up_sync(0xffffffffu, upto, offset);
      if (lane >= offset) upto += before;
    }
    int first = 0;
    if (lane == 31) first = atomicAdd(&fast_counters[kPlaced], upto);
    first = __shfl_sync(0xffffffffu, first, 31);
    if (slot >= 0) cell_start[slot] = first + upto - count;
  }
}

// Consecutive points of a scan mostly share a cell: a run of lanes with one slot takes
// consecutive places with one atomic and merges its bounds by a segmented scan (five shuffles a
// value) before one atomic each. (Folding each group of __match_any_sync's peers lane by lane took
// 32 rounds of shuffles a warp whatever the groups: KITTI frame 0 on an H200, 13.4 -> 8.1 us in
// ncu.) A cell's lanes in several runs of a warp just make several atomics.
//
// Far points are joined with every finite point here too (each thread's point against each far
// point), where every node is known (node_of) and the points are at hand: a kernel of its own
// cost a launch in every call, and a frame rarely has a far point.
__global__ void k_scatter_by_cell(const float3* pts, int n, const int* point_slot,
                                  const int* cell_start, int* cell_fill, int* cell_min,
                                  float3* sorted_pts, CellBoxes boxes, const int* far_list,
                                  const int* fast_counters, float thr, int* parent) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = int(threadIdx.x & 31);
  const int slot = i < n ? point_slot[i] : -1;
  const float3 p = slot != -1 ? pts[i] : make_float3(0, 0, 0);
  const int before = __shfl_up_sync(0xffffffffu, slot, 1);
  const unsigned heads = __ballot_sync(0xffffffffu, lane == 0 || before != slot);
  const int start = 31 - __clz(int(heads & (0xffffffffu >> (31 - lane))));  // this run's first lane
  const unsigned after = heads & ~(0xffffffffu >> (31 - lane));  // heads of the runs after it
  const int last = after ? __ffs(int(after)) - 2 : 31;           // this run's last lane
  int base = 0;
  if (slot >= 0 && lane == last) base = atomicAdd(&cell_fill[slot], last - start + 1);
  base = __shfl_sync(0xffffffffu, base, last);
  int v[6] = {ordered(p.x), ordered(p.y), ordered(p.z), ordered(p.x), ordered(p.y), ordered(p.z)};
  for (int offset = 1; offset < 32; offset <<= 1) {  // the run's bounds gather in its last lane
    for (int k = 0; k < 6; ++k) {
      const int o = __shfl_up_sync(0xffffffffu, v[k], unsigned(offset));
      if (lane - offset >= start) v[k] = k < 3 ? min(v[k], o) : max(v[k], o);
    }
  }
  if (slot != -1) {
    const int far = fast_counters[kFar];
    for (int f = 0; f < far; ++f) {
      const int j = far_list[f];
      if (j != i && dist2(pts[j], p) < thr)
        unite(node_of(far_slot(f), cell_start, n), node_of(slot, cell_start, n), parent);
    }
  }
  if (slot < 0) return;
  sorted_pts[cell_start[slot] + base + lane - start] = p;
  if (lane == last) {
    atomicMin(&cell_min[slot], i - (last - start));  // the run's first point
    for (int k = 0; k < 3; ++k) {
      atomicMin(&boxes.v[k][slot], v[k]);
      atomicMax(&boxes.v[k + 3][slot], v[k + 3]);
    }
  }
}

// The final component of every cell and far point, counted for the canonical relabelling on the
// way, a warp's entries that share one with one atomic pair; k_labels finds a point's through its
// slot (PointComponents). Done once a point, it took as long in ncu (7.4 against 7.6 us on KITTI
// frame 0: the root chases' latency, not their number), but wrote 0.5 MB of components more.
__global__ void k_cell_components(const int* parent, const int* cell_list, const int* far_list,
                                  const int* fast_counters, const int* cell_start,
                                  const int* cell_count, const int* cell_min, int n, int* cell_root,
                                  int* far_root, int* count, int* minidx, int* roots,
                                  int* counters) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  const int cells = fast_counters[kCells], all = cells + fast_counters[kFar];
  const int e = int(blockIdx.x * blockDim.x + threadIdx.x);
  if ((e & ~31) >= all) return;  // whole warps
  int slot = -1, r = -1, points = 0, first = 0x7fffffff;
  if (e < cells) {
    slot = cell_list[e];
    r = cell_start[slot];
    points = cell_count[slot];
    first = cell_min[slot];
  } else if (e < all) {
    r = node_of(far_slot(e - cells), cell_start, n);
    points = 1;
    first = far_list[e - cells];
  }
  if (r >= 0)
    while (parent[r] != r)
      r = parent[r];
  if (e < cells)
    cell_root[slot] = r;
  else if (e < all)
    far_root[e - cells] = r;
  const unsigned peers = __match_any_sync(0xffffffffu, r);
#if __CUDA_ARCH__ >= 800
  const int total = int(__reduce_add_sync(peers, unsigned(points)));
  const int least = __reduce_min_sync(peers, first);
#else  // the PTX for older devices: a shuffle a peer
  int total = 0, least = 0x7fffffff;
  for (unsigned rest = peers; rest; rest &= rest - 1) {
    const int from = __ffs(int(rest)) - 1;
    total += __shfl_sync(peers, points, from);
    least = min(least, __shfl_sync(peers, first, from));
  }
#endif
  bool fresh = false;
  if (r >= 0 && int(threadIdx.x & 31) == __ffs(int(peers)) - 1) {
    fresh = atomicAdd(&count[r], total) == 0;  // every entry adds at least one point
    atomicMin(&minidx[r], least);
  }
  warp_list_roots(fresh, r, roots, &counters[kClusters]);
}

struct FastBuffers {
  cuda::DeviceBuffer<unsigned long long> keys;
  cuda::DeviceBuffer<int> cell_count, cell_start, cell_fill, cell_min, cell_root, point_slot,
      parent, far_list, far_root, fast_counters;
  cuda::DeviceBuffer<int> cell_list;
  cuda::DeviceBuffer<OpenPair> open_pairs;
  cuda::DeviceBuffer<int> box[6];
  cuda::DeviceBuffer<float3> sorted_pts;
};

FastBuffers& fast_buffers() {
  return cuda::buffers_beside<FastBuffers, Workspace>();
}

}  // namespace

LabelsSent run_fast(Workspace& ws, std::size_t n, const ClusterParams& params, StageClock& clock,
                    const LabelsTo& labels_to, const Workspace::ClearTable& cleared,
                    const float3* host_points) {
  cudaStream_t s = ws.stream.get();
  FastBuffers& b = fast_buffers();
  const unsigned capacity = std::bit_ceil(unsigned(std::max<std::size_t>(2 * n, 64)));
  b.keys.reserve(capacity);
  for (auto* buf : {&b.cell_count, &b.cell_start, &b.cell_fill, &b.cell_min, &b.cell_root})
    buf->reserve(capacity);
  for (auto& buf : b.box)
    buf.reserve(capacity);
  b.cell_list.reserve(n);
  const CellBoxes boxes{{b.box[0].get(), b.box[1].get(), b.box[2].get(), b.box[3].get(),
                         b.box[4].get(), b.box[5].get()}};
  for (auto* buf : {&b.point_slot, &b.parent, &b.far_list, &b.far_root})
    buf->reserve(n);
  b.sorted_pts.reserve(n);
  // Room for open pairs: a KITTI frame leaves about 0.3 a point; a dense volume (test_cluster's
  // dense-cube) goes past it, and k_join_cells searches the rest itself.
  const std::size_t open_capacity = std::max<std::size_t>(n / 2, 64);
  b.open_pairs.reserve(open_capacity);
  b.fast_counters.reserve(kFastCounters);
  // A cell's diagonal must stay below the tolerance after rounding: 1e-4 relative margin.
  const double cell = double(params.tolerance) / std::sqrt(3.0) * (1.0 - 1e-4);
  // Launch sizes in int: n * 32 threads must fit.
  if (n > (std::size_t(1) << 26))
    throw InvalidArgument("gpu clustering takes at most 2^26 points per call");
  const float thr = squared_threshold(params.tolerance);
  // Slack on both sides of the exact float test: pairs that rounding could decide either way are
  // always tested point by point.
  const double skip2 = double(params.tolerance) * double(params.tolerance) * (1.0 + 1e-5);
  const double accept2 = double(params.tolerance) * double(params.tolerance) * (1.0 - 1e-5);
  constexpr int T = kInsertThreads;
  const int B = cuda::blocks_for(n, T);

  reserve_canonical(ws, n);
  // A chain of short kernels, each a dependent launch that lets the next one onto the SMs as
  // soon as its own blocks have all started (allow_next_grid): the next one's blocks then wait
  // there for it to end instead of being launched after it (with node_of's cell nodes, KITTI
  // frame 0 on an H200: 0.21-0.23 -> 0.20-0.21 ms).
  // The table and counters are cleared behind each call, after the labels' kernel and outside
  // what the call waits for, so that the next call's first launch is the points' reads
  // (k_insert_points), not k_init's (KITTI frame 0 on an H200: upload and grid 0.053-0.058 ->
  // 0.051-0.054 ms; k_init in fewer blocks, leaving the SMs to k_insert_points, gained nothing).
  // k_init runs here only where nothing was cleared for this call: the first, one after another
  // method or after the sorted path (which reads the counters after k_labels), or with a larger
  // table.
  const int init_blocks = cuda::blocks_for(capacity, T);
  if (!(cleared.set && cleared.keys == b.keys.get() && cleared.cell_count == b.cell_count.get() &&
        capacity <= cleared.slots))
    cuda::launch_dependent("launch of k_init", &k_init, init_blocks, T, s, capacity, b.keys.get(),
                           b.cell_count.get(), ws.counters.get(), b.fast_counters.get());
  cuda::launch_dependent(
      "launch of k_insert_points", &k_insert_points, B, T, s, host_points, ws.points.get(), int(n),
      1.0 / cell, capacity - 1, b.keys.get(), b.cell_count.get(), b.cell_fill.get(),
      b.cell_min.get(), boxes, b.point_slot.get(), b.far_list.get(), b.cell_list.get(),
      b.fast_counters.get(), ws.counters.get(), b.parent.get(), ws.count.get(), ws.minidx.get());
  // The lengths of the cell and open lists are on the device: their kernels take strides over
  // them with the blocks that fill the device once.
  static const int starts_blocks = cuda::resident_blocks(k_cell_starts, T);
  cuda::launch_dependent("launch of k_cell_starts", &k_cell_starts, starts_blocks, T, s,
                         b.cell_list.get(), b.fast_counters.get(), b.cell_count.get(),
                         b.cell_start.get());
  cuda::launch_dependent("launch of k_scatter_by_cell", &k_scatter_by_cell, B, T, s,
                         ws.points.get(), int(n), b.point_slot.get(), b.cell_start.get(),
                         b.cell_fill.get(), b.cell_min.get(), b.sorted_pts.get(), boxes,
                         b.far_list.get(), b.fast_counters.get(), thr, b.parent.get());
  static_assert(T == kJoinThreads, "k_join_cells keeps a list a warp for blocks of this size");
  // The boxes' bounds in float where the tolerance keeps them in float's normal range: a cell
  // coordinate stays below 2^20 cells, so two box coordinates differ by less than 2^21 cells
  // (1.2e6 tolerances) and a squared bound stays below 5e12 tolerance^2 (below float's largest
  // for tolerances up to 8e12), and one far below tolerance^2 (1e-24 and up) changes nothing.
  // KITTI frame 0 on an H200: k_join_cells 47.6 -> 41.2 us in ncu (39 registers and no spill,
  // against 40 registers and 28 bytes spilled in double).
  const bool float_boxes = params.tolerance >= 1e-12f && params.tolerance <= 1e12f;
  auto join = [&](auto real) {
    using Real = decltype(real);
    static const int join_blocks = cuda::resident_blocks(k_join_cells<Real>, T);
    static const int settle_blocks = cuda::resident_blocks(k_settle_open_pairs<Real>, T);
    cuda::launch_dependent(
        "launch of k_join_cells", &k_join_cells<Real>, join_blocks, T, s, b.keys.get(),
        b.cell_list.get(), b.fast_counters.get(), b.cell_start.get(), b.cell_count.get(),
        capacity - 1, boxes, b.sorted_pts.get(), thr, Real(skip2), Real(accept2), b.parent.get(),
        b.open_pairs.get(), int(open_capacity), stamps_in(ws.counters.get()) + kLabellingStart);
    cuda::launch_dependent("launch of k_settle_open_pairs", &k_settle_open_pairs<Real>,
                           settle_blocks, T, s, b.open_pairs.get(), int(open_capacity),
                           b.fast_counters.get(), b.cell_start.get(), b.cell_count.get(), boxes,
                           b.sorted_pts.get(), thr, Real(skip2), b.parent.get());
  };
  if (float_boxes)
    join(0.0f);
  else
    join(0.0);
  cuda::launch_dependent("launch of k_cell_components", &k_cell_components, B, T, s, b.parent.get(),
                         b.cell_list.get(), b.far_list.get(), b.fast_counters.get(),
                         b.cell_start.get(), b.cell_count.get(), b.cell_min.get(), int(n),
                         b.cell_root.get(), b.far_root.get(), ws.count.get(), ws.minidx.get(),
                         ws.ids.get(), ws.counters.get());
  const PointComponents components{nullptr, b.point_slot.get(), b.cell_root.get(),
                                   b.far_root.get()};
  // The chain's stages are timed by its kernels (canonicalize_on_device's mark_split): the
  // labelling from k_join_cells' start, the relabelling from k_rank_components'.
  const std::function<void()> clear_behind = [&] {
    cuda::launch_dependent("launch of k_init", &k_init, init_blocks, T, s, capacity, b.keys.get(),
                           b.cell_count.get(), nullptr, b.fast_counters.get());
  };
  const LabelsSent sent =
      canonicalize_on_device(ws, n, params, CanonicalInput::Counted, labels_to, clock,
                             host_points ? "upload and grid" : "grid", &components, clear_behind);
  // k_labels cleared the counters only on the small path (the sorted one reads them after it).
  if (ws.host_counters.get()[kClusters] <= kRankSmall)
    ws.clear_table = {true, b.keys.get(), b.cell_count.get(), capacity};
  return sent;
}

}  // namespace cumulus::cluster_cuda
