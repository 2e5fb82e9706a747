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

#include "cluster/cuda/cluster_gpu_common.cuh"
#include "core/cuda/workspace.cuh"

namespace cumulus::cluster_cuda {

namespace {

constexpr unsigned long long kEmptyKey = ~0ull;
constexpr long long kCoordLimit = 1 << 20;  // |cell coordinate| < 2^20 packs exactly into 21 bits

__device__ __forceinline__ unsigned long long pack(long long x, long long y, long long z) {
  return (unsigned long long)(x & 0x1FFFFF) | ((unsigned long long)(y & 0x1FFFFF) << 21) |
         ((unsigned long long)(z & 0x1FFFFF) << 42);
}

__device__ __forceinline__ long long unpack(unsigned long long key, int shift) {
  const long long v = (long long)((key >> shift) & 0x1FFFFF);
  return v >= kCoordLimit ? v - 2 * kCoordLimit : v;  // sign-extend 21 bits
}

// Exact cell of a point in double; false for far points.
__device__ __forceinline__ bool cell_of(float3 p, double inv_cell, long long& x, long long& y,
                                        long long& z) {
  const double fx = floor(double(p.x) * inv_cell), fy = floor(double(p.y) * inv_cell),
               fz = floor(double(p.z) * inv_cell);
  const double lim = double(kCoordLimit);
  if (!(fabs(fx) < lim && fabs(fy) < lim && fabs(fz) < lim)) return false;
  x = (long long)fx, y = (long long)fy, z = (long long)fz;
  return true;
}

__device__ __forceinline__ unsigned hash_key(unsigned long long k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdull;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ull;
  k ^= k >> 33;
  return unsigned(k);
}

__device__ __forceinline__ int find_slot(const unsigned long long* keys, unsigned mask,
                                         unsigned long long key) {
  unsigned slot = hash_key(key) & mask;
  while (true) {
    const unsigned long long k = keys[slot];
    if (k == key) return int(slot);
    if (k == kEmptyKey) return -1;
    slot = (slot + 1) & mask;
  }
}

// Root lookup with path halving; parent[x] <= x, so roots are the smallest node of their tree.
__device__ __forceinline__ int representative(int i, int* parent) {
  int curr = parent[i];
  if (curr != i) {
    int next, prev = i;
    while (curr > (next = parent[curr])) {
      parent[prev] = next;
      prev = curr;
      curr = next;
    }
  }
  return curr;
}

// Hooks the larger root under the smaller; on a lost race, climbs from what won and retries.
__device__ void unite(int a, int b, int* parent) {
  int ra = representative(a, parent), rb = representative(b, parent);
  while (ra != rb) {
    if (ra < rb) {
      const int ret = atomicCAS(&parent[rb], rb, ra);
      if (ret == rb) return;
      rb = representative(ret, parent);
    } else {
      const int ret = atomicCAS(&parent[ra], ra, rb);
      if (ret == ra) return;
      ra = representative(ret, parent);
    }
  }
}

enum FastCounter { kFar = 0, kCells, kPlaced, kOpenPairs, kFastCounters };

// Floats as ints that order the same way, for atomicMin/atomicMax on coordinates.
__device__ __forceinline__ int ordered(float f) {
  const int i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float unordered(int i) {
  return __int_as_float(i >= 0 ? i : i ^ 0x7fffffff);
}

// Tight bounds of the points of each cell, as ordered ints: min x y z, max x y z.
struct CellBoxes {
  int* v[6];
};

// One launch clears the hash table and every per-point array (instead of many memsets). The
// other per-slot arrays are set by the point that creates the slot's cell (k_insert_points):
// a frame fills a sixth of its slots or less.
__global__ void k_init(unsigned capacity, int n, unsigned long long* keys, int* cell_count,
                       int* parent, int* count, int* minidx, int* counters, int* fast_counters) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= capacity) return;
  keys[i] = kEmptyKey;
  cell_count[i] = 0;  // counted by atomics before the cell's creator could clear it
  if (i < unsigned(n)) {
    parent[i] = int(i);
    count[i] = 0;
    minidx[i] = 0x7fffffff;
  }
  if (i < kCounters) counters[i] = 0;
  if (i < kFastCounters) fast_counters[i] = 0;
}

// Consecutive points of a scan mostly share a cell, so the per-cell counters are bumped once
// per group of a warp's lanes (__match_any_sync), not once per point.
__global__ void k_insert_points(const float3* pts, int n, double inv_cell, unsigned mask,
                                unsigned long long* keys, int* cell_count, int* cell_fill,
                                CellBoxes boxes, int* point_slot, int* far_list, int* cell_list,
                                int* fast_counters, int* counters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = int(threadIdx.x & 31);
  const float3 p = i < n ? pts[i] : make_float3(NAN, NAN, NAN);
  const bool finite = finite3(p);
  warp_count(&counters[kFinite], finite);
  long long x = 0, y = 0, z = 0;
  const bool near = finite && cell_of(p, inv_cell, x, y, z);
  if (i < n && finite && !near) far_list[atomicAdd(&fast_counters[kFar], 1)] = i;
  int slot = -1;
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
    for (int k = 0; k < 3; ++k) {
      boxes.v[k][slot] = 0x7fffffff;
      boxes.v[k + 3][slot] = int(0x80000000u);
    }
  }
  const unsigned peers = __match_any_sync(0xffffffffu, slot);
  if (slot >= 0 && lane == __ffs(peers) - 1) atomicAdd(&cell_count[slot], __popc(peers));
  if (i < n) point_slot[i] = finite ? (near ? slot : -2) : -1;
}

// Each cell's first place among the points sorted by cell, handed out in cell-list order with
// one atomic a warp: a cell's range only has to be its own. (A scan over every slot of the table
// read 2^18 counts for a KITTI frame's 21,000 cells, in two kernels.)
__global__ void k_cell_starts(const int* cell_list, int* fast_counters, const int* cell_count,
                              int* cell_start) {
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

__global__ void k_scatter_by_cell(const float3* pts, int n, const int* point_slot,
                                  const int* cell_start, int* cell_fill, float3* sorted_pts,
                                  int* sorted_idx, CellBoxes boxes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = int(threadIdx.x & 31);
  const int slot = i < n ? point_slot[i] : -1;
  const float3 p = slot >= 0 ? pts[i] : make_float3(0, 0, 0);
  // Lanes of one cell take consecutive places with one atomic, and merge their bounds first.
  const unsigned peers = __match_any_sync(0xffffffffu, slot);
  const int leader = __ffs(peers) - 1;
  int base = 0;
  if (slot >= 0 && lane == leader) base = atomicAdd(&cell_fill[slot], __popc(peers));
  base = __shfl_sync(peers, base, leader);
  int v[6] = {ordered(p.x), ordered(p.y), ordered(p.z), ordered(p.x), ordered(p.y), ordered(p.z)};
  for (int src = 0; src < 32; ++src) {  // fold the group's values into each member
    if (!(peers >> src & 1u)) continue;
    for (int k = 0; k < 6; ++k) {
      const int o = __shfl_sync(peers, v[k], src);
      v[k] = k < 3 ? min(v[k], o) : max(v[k], o);
    }
  }
  if (slot < 0) return;
  const int pos = cell_start[slot] + base + __popc(peers & ((1u << lane) - 1));
  sorted_pts[pos] = p;
  sorted_idx[pos] = i;
  if (lane == leader) {
    for (int k = 0; k < 3; ++k) {
      atomicMin(&boxes.v[k][slot], v[k]);
      atomicMax(&boxes.v[k + 3][slot], v[k + 3]);
    }
  }
}

struct Box {
  float lo[3], hi[3];
};

__device__ __forceinline__ Box load_box(const CellBoxes& boxes, int slot) {
  Box b;
  for (int k = 0; k < 3; ++k) {
    b.lo[k] = unordered(boxes.v[k][slot]);
    b.hi[k] = unordered(boxes.v[k + 3][slot]);
  }
  return b;
}

// Squared gap between a point (or box) and a box, in double: a lower bound on every distance.
__device__ __forceinline__ double gap2(const float lo_a[3], const float hi_a[3], const Box& b) {
  double d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double g =
        fmax(fmax(double(b.lo[k]) - double(hi_a[k]), double(lo_a[k]) - double(b.hi[k])), 0.0);
    d2 += g * g;
  }
  return d2;
}

// Squared diagonal of the box around two boxes: an upper bound on every distance between them.
__device__ __forceinline__ double span2(const Box& a, const Box& b) {
  double d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double g =
        fmax(double(a.hi[k]), double(b.hi[k])) - fmin(double(a.lo[k]), double(b.lo[k]));
    d2 += g * g;
  }
  return d2;
}

// Whether some point of cell range [begin, end) lies within the tolerance of some point of
// [obegin, oend). The whole warp searches together, so that a dense pair with no neighbours costs
// |A| |B| / 32 steps, not |A| |B|. All 32 lanes call it with the same ranges; the answer is the
// same in every lane.
__device__ __forceinline__ bool cells_touch(const float3* sorted_pts, int begin, int end,
                                            int obegin, int oend, const Box& theirs, float thr,
                                            double skip2) {
  const int lane = int(threadIdx.x & 31);
  for (int abase = begin; abase < end; abase += 32) {
    const int ai = abase + lane;
    const float3 p = ai < end ? sorted_pts[ai] : make_float3(NAN, NAN, NAN);
    const float pa[3] = {p.x, p.y, p.z};
    unsigned reach = __ballot_sync(0xffffffffu, ai < end && gap2(pa, pa, theirs) < skip2);
    while (reach) {
      const int r = __ffs(reach) - 1;
      reach &= reach - 1;
      const float3 q =
          make_float3(__shfl_sync(0xffffffffu, p.x, r), __shfl_sync(0xffffffffu, p.y, r),
                      __shfl_sync(0xffffffffu, p.z, r));
      for (int bbase = obegin; bbase < oend; bbase += 32) {
        const int bi = bbase + lane;
        if (__any_sync(0xffffffffu, bi < oend && dist2(q, sorted_pts[bi]) < thr)) return true;
      }
    }
  }
  return false;
}

// Steps (a point of A looked at, or a pair of points tested) one lane spends on a cell pair in
// k_join_cells before handing it on: on a KITTI frame about half the pairs that need a point
// search are settled within four, and nearly all the others join cells that other pairs have
// joined by then, which only k_settle_open_pairs can see. More steps cost the kernel more than
// they save the next (on an H200: labelling 76 us with 12, 70 with 4).
constexpr int kQuickSteps = 4;

enum class Touch { Yes, No, Undecided };

// One lane's bounded search of a cell pair: the first points of A within reach of B's box,
// each against B's points in order.
__device__ __forceinline__ Touch quick_touch(const float3* sorted_pts, int begin, int end,
                                             int obegin, int oend, const Box& theirs, float thr,
                                             double skip2) {
  int steps = 0;
  for (int a = begin; a < end; ++a) {
    if (++steps > kQuickSteps) return Touch::Undecided;
    const float3 p = sorted_pts[a];
    const float pa[3] = {p.x, p.y, p.z};
    if (gap2(pa, pa, theirs) >= skip2) continue;
    for (int b = obegin; b < oend; ++b) {
      if (++steps > kQuickSteps) return Touch::Undecided;
      if (dist2(p, sorted_pts[b]) < thr) return Touch::Yes;
    }
  }
  return Touch::No;
}

// Slot of the d-th cell of the 5x5x5 block around cell (x, y, z) in (dz, dy, dx) order, or -1
// when it is empty, outside the block (d >= 125) or beyond the cell coordinates' range.
__device__ __forceinline__ int neighbour_slot(const unsigned long long* keys, unsigned mask,
                                              long long x, long long y, long long z, int d) {
  if (d >= 125) return -1;
  const long long nx = x + d % 5 - 2, ny = y + (d / 5) % 5 - 2, nz = z + d / 25 - 2;
  if (nx > -kCoordLimit && nx < kCoordLimit && ny > -kCoordLimit && ny < kCoordLimit &&
      nz > -kCoordLimit && nz < kCoordLimit)
    return find_slot(keys, mask, pack(nx, ny, nz));
  return -1;
}

// A cell pair whose point search k_join_cells left open: both slots and both union-find nodes.
using OpenPair = int4;

// One cell's joins, by a whole warp: each lane takes up to two of the 62 neighbour cells that
// come after this one in (dz, dy, dx) order within the 5x5x5 block, and settles what it can alone:
// no such cell, tight boxes a tolerance apart, or boxes so close that every pair is a neighbour
// pair (joined at once). A pair that needs a point search gets kQuickSteps of one lane; what that
// leaves open is listed for k_settle_open_pairs, which runs once every join of this kernel is in
// the union-find and so skips the pairs that others have joined meanwhile. Past the list's capacity
// the warp searches the pair itself. skip2 and accept2 bracket the squared tolerance with slack,
// so the float test decides every pair that rounding could tip either way.
__device__ __forceinline__ void join_cell(int cell, const unsigned long long* keys,
                                          const int* cell_list, int* fast_counters,
                                          const int* cell_start, const int* cell_count,
                                          unsigned mask, const CellBoxes& boxes,
                                          const float3* sorted_pts, const int* sorted_idx,
                                          float thr, double skip2, double accept2, int* parent,
                                          OpenPair* open, int open_capacity) {
  const int lane = int(threadIdx.x & 31);
  const int slot = cell_list[cell];
  const unsigned long long key = keys[slot];
  const long long x = unpack(key, 0), y = unpack(key, 21), z = unpack(key, 42);
  const int begin = cell_start[slot], end = begin + cell_count[slot];
  const int node = sorted_idx[begin];
  const Box mine = load_box(boxes, slot);
  const int first = neighbour_slot(keys, mask, x, y, z, 63 + lane);
  const int second = neighbour_slot(keys, mask, x, y, z, 95 + lane);
#pragma unroll
  for (int round = 0; round < 2; ++round) {
    const int other = round == 0 ? first : second;
    bool hand_on = false;
    int onode = -1;
    if (other >= 0) {
      const Box theirs = load_box(boxes, other);
      const int obegin = cell_start[other], oend = obegin + cell_count[other];
      onode = sorted_idx[obegin];
      if (gap2(mine.lo, mine.hi, theirs) < skip2) {
        const Touch t = span2(mine, theirs) < accept2
                            ? Touch::Yes
                            : quick_touch(sorted_pts, begin, end, obegin, oend, theirs, thr, skip2);
        if (t == Touch::Yes) unite(node, onode, parent);
        hand_on = t == Touch::Undecided;
      }
    }
    const unsigned votes = __ballot_sync(0xffffffffu, hand_on);
    if (!votes) continue;
    unsigned base = 0;
    if (lane == 0)
      base = atomicAdd(reinterpret_cast<unsigned*>(&fast_counters[kOpenPairs]),
                       unsigned(__popc(votes)));
    base = __shfl_sync(0xffffffffu, base, 0);
    const unsigned at = base + unsigned(__popc(votes & ((1u << lane) - 1)));
    const bool listed = at < unsigned(open_capacity);
    if (hand_on && listed) open[at] = OpenPair{slot, other, node, onode};
    unsigned left = __ballot_sync(0xffffffffu, hand_on && !listed);
    while (left) {
      const int src = __ffs(left) - 1;
      left &= left - 1;
      const int o = __shfl_sync(0xffffffffu, other, src);
      const int on = __shfl_sync(0xffffffffu, onode, src);
      const int obegin = cell_start[o];
      if (cells_touch(sorted_pts, begin, end, obegin, obegin + cell_count[o], load_box(boxes, o),
                      thr, skip2) &&
          lane == 0)
        unite(node, on, parent);
    }
  }
}

// The warps that fill the device once take the cells in strides: with a warp for every point
// (cells <= points) five in six would only read the cell count and leave.
__global__ void k_join_cells(const unsigned long long* keys, const int* cell_list,
                             int* fast_counters, const int* cell_start, const int* cell_count,
                             unsigned mask, CellBoxes boxes, const float3* sorted_pts,
                             const int* sorted_idx, float thr, double skip2, double accept2,
                             int* parent, OpenPair* open, int open_capacity) {
  const int cells = fast_counters[kCells];
  const int warps = int(gridDim.x * blockDim.x >> 5);
  for (int cell = int((blockIdx.x * blockDim.x + threadIdx.x) >> 5); cell < cells; cell += warps)
    join_cell(cell, keys, cell_list, fast_counters, cell_start, cell_count, mask, boxes, sorted_pts,
              sorted_idx, thr, skip2, accept2, parent, open, open_capacity);
}

// The cell pairs k_join_cells left open, a thread each: a pair whose cells are joined by now
// needs nothing; the warp searches the others together, one at a time.
__global__ void k_settle_open_pairs(const OpenPair* open, int open_capacity,
                                    const int* fast_counters, const int* cell_start,
                                    const int* cell_count, CellBoxes boxes,
                                    const float3* sorted_pts, float thr, double skip2,
                                    int* parent) {
  const int total = int(min(unsigned(fast_counters[kOpenPairs]), unsigned(open_capacity)));
  const int lane = int(threadIdx.x & 31);
  const int warps = int(gridDim.x * blockDim.x >> 5);
  for (int base = int((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * 32; base < total;
       base += warps * 32) {  // the same trips for every lane of a warp
    const int e = base + lane;
    OpenPair p{-1, -1, -1, -1};
    bool search = false;
    if (e < total) {
      p = open[e];
      search = representative(p.z, parent) != representative(p.w, parent);
    }
    unsigned left = __ballot_sync(0xffffffffu, search);
    while (left) {
      const int src = __ffs(left) - 1;
      left &= left - 1;
      const int a = __shfl_sync(0xffffffffu, p.x, src), b = __shfl_sync(0xffffffffu, p.y, src);
      const int na = __shfl_sync(0xffffffffu, p.z, src), nb = __shfl_sync(0xffffffffu, p.w, src);
      const int abegin = cell_start[a], bbegin = cell_start[b];
      if (cells_touch(sorted_pts, abegin, abegin + cell_count[a], bbegin, bbegin + cell_count[b],
                      load_box(boxes, b), thr, skip2) &&
          lane == 0)
        unite(na, nb, parent);
    }
  }
}

// Far points against every finite point; their own node is the point itself. Launched every
// time (the far count lives on the device, and reading it back would cost a round trip); with
// no far point it returns at once.
__global__ void k_unite_far(const float3* pts, int n, const int* far_list, const int* fast_counters,
                            const int* point_slot, const int* cell_start, const int* sorted_idx,
                            float thr, int* parent) {
  const int far = fast_counters[kFar];
  for (int f = 0; f < far; ++f) {
    const int i = far_list[f];
    const float3 p = pts[i];
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
      if (j == i) continue;
      const int slot = point_slot[j];
      if (slot == -1) continue;
      if (dist2(p, pts[j]) < thr) unite(i, slot >= 0 ? sorted_idx[cell_start[slot]] : j, parent);
    }
  }
}

// Final component of every point, counted for the canonical relabelling on the way.
__global__ void k_point_components(int* parent, const int* point_slot, const int* cell_start,
                                   const int* sorted_idx, int n, int* component, int* count,
                                   int* minidx) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int slot = i < n ? point_slot[i] : -1;
  int r = -1;
  if (slot != -1) {
    r = slot >= 0 ? sorted_idx[cell_start[slot]] : i;
    while (parent[r] != r)
      r = parent[r];
  }
  if (i < n) component[i] = r;
  warp_add_to_component(r, i, count, minidx);
}

struct FastBuffers {
  cuda::DeviceBuffer<unsigned long long> keys;
  cuda::DeviceBuffer<int> cell_count, cell_start, cell_fill, point_slot, parent, sorted_idx,
      far_list, fast_counters;
  cuda::DeviceBuffer<int> cell_list;
  cuda::DeviceBuffer<OpenPair> open_pairs;
  cuda::DeviceBuffer<int> box[6];
  cuda::DeviceBuffer<float3> sorted_pts;
};

// Blocks of `threads` that fill the device once, for kernels that take strides over a length
// counted on the device.
template <class Kernel>
int resident_blocks(Kernel kernel, int threads) {
  int device = 0, sms = 0, per_sm = 0;
  CU_CHECK(cudaGetDevice(&device));
  CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  return std::max(1, sms * per_sm);
}

FastBuffers& fast_buffers() {
  return cuda::buffers_beside<FastBuffers, Workspace>();
}

}  // namespace

void run_fast(Workspace& ws, std::size_t n, const ClusterParams& params, StageClock& clock) {
  cudaStream_t s = ws.stream.get();
  FastBuffers& b = fast_buffers();
  const unsigned capacity = std::bit_ceil(unsigned(std::max<std::size_t>(2 * n, 64)));
  b.keys.reserve(capacity);
  for (auto* buf : {&b.cell_count, &b.cell_start, &b.cell_fill})
    buf->reserve(capacity);
  for (auto& buf : b.box)
    buf.reserve(capacity);
  b.cell_list.reserve(n);
  const CellBoxes boxes{{b.box[0].get(), b.box[1].get(), b.box[2].get(), b.box[3].get(),
                         b.box[4].get(), b.box[5].get()}};
  for (auto* buf : {&b.point_slot, &b.parent, &b.sorted_idx, &b.far_list})
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
  const int T = 256, B = cuda::blocks_for(n, T);

  reserve_canonical(ws, n);
  k_init<<<cuda::blocks_for(capacity, T), T, 0, s>>>(
      capacity, int(n), b.keys.get(), b.cell_count.get(), b.parent.get(), ws.count.get(),
      ws.minidx.get(), ws.counters.get(), b.fast_counters.get());
  CU_CHECK_LAUNCH("k_init");
  k_insert_points<<<B, T, 0, s>>>(ws.points.get(), int(n), 1.0 / cell, capacity - 1, b.keys.get(),
                                  b.cell_count.get(), b.cell_fill.get(), boxes, b.point_slot.get(),
                                  b.far_list.get(), b.cell_list.get(), b.fast_counters.get(),
                                  ws.counters.get());
  CU_CHECK_LAUNCH("k_insert_points");
  // The lengths of the cell and open lists are on the device: their kernels take strides over
  // them with the blocks that fill the device once.
  static const int starts_blocks = resident_blocks(k_cell_starts, T);
  k_cell_starts<<<starts_blocks, T, 0, s>>>(b.cell_list.get(), b.fast_counters.get(),
                                            b.cell_count.get(), b.cell_start.get());
  CU_CHECK_LAUNCH("k_cell_starts");
  k_scatter_by_cell<<<B, T, 0, s>>>(ws.points.get(), int(n), b.point_slot.get(), b.cell_start.get(),
                                    b.cell_fill.get(), b.sorted_pts.get(), b.sorted_idx.get(),
                                    boxes);
  CU_CHECK_LAUNCH("k_scatter_by_cell");
  clock.mark("grid");
  static const int join_blocks = resident_blocks(k_join_cells, T);
  static const int settle_blocks = resident_blocks(k_settle_open_pairs, T);
  k_join_cells<<<join_blocks, T, 0, s>>>(
      b.keys.get(), b.cell_list.get(), b.fast_counters.get(), b.cell_start.get(),
      b.cell_count.get(), capacity - 1, boxes, b.sorted_pts.get(), b.sorted_idx.get(), thr, skip2,
      accept2, b.parent.get(), b.open_pairs.get(), int(open_capacity));
  CU_CHECK_LAUNCH("k_join_cells");
  k_settle_open_pairs<<<settle_blocks, T, 0, s>>>(
      b.open_pairs.get(), int(open_capacity), b.fast_counters.get(), b.cell_start.get(),
      b.cell_count.get(), boxes, b.sorted_pts.get(), thr, skip2, b.parent.get());
  CU_CHECK_LAUNCH("k_settle_open_pairs");
  k_unite_far<<<std::min(B, 264), T, 0, s>>>(
      ws.points.get(), int(n), b.far_list.get(), b.fast_counters.get(), b.point_slot.get(),
      b.cell_start.get(), b.sorted_idx.get(), thr, b.parent.get());
  CU_CHECK_LAUNCH("k_unite_far");
  k_point_components<<<B, T, 0, s>>>(b.parent.get(), b.point_slot.get(), b.cell_start.get(),
                                     b.sorted_idx.get(), int(n), ws.component.get(), ws.count.get(),
                                     ws.minidx.get());
  CU_CHECK_LAUNCH("k_point_components");
  clock.mark("labelling");
  canonicalize_on_device(ws, n, params, CanonicalInput::Counted);
  clock.mark("canonicalize");
}

}  // namespace cumulus::cluster_cuda
