// The paper's GPU methods (Nguyen et al., "Fast Euclidean Cluster Extraction Using GPUs"):
// vertex-based (adjacency list + atomicMin propagation), edge-based (edge list + atomicMin) and
// matrix-based (INITIAL_EC, BUILD_MATRIX, layer-by-layer sub-matrix merging, UPDATE), each with
// exhaustive search through shared-memory tiles (es) or voxel-grid range search (rs,
// Algorithm 7). Kept close to the paper so users can compare; `gpu` is the fast method.
//
// Departures from the text, each needed for correct results:
// - Algorithm 5 loops b - 1 rows, which never merges the last row of an off-diagonal block;
//   we loop all b rows. Its label update is read as "column class -> row j" (cl := j + b,
//   R[c] := g0 + cl - b).
// - The adjacency matrix holds bytes, not ints: the same information in a quarter of the memory.
// - Every __syncthreads() is reached by all threads of the block (the published code hangs on
//   Volta and newer because some are not).
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/scan.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <bit>
#include <cfloat>
#include <cmath>

#include "cluster_gpu_common.cuh"
#include "cuda/workspace.cuh"
#include "cumulus/device.h"

namespace cumulus::cluster_cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kMatrixBlock = 256;  // b: labels per group / threads per block of the matrix method

// ---- neighbour search: exhaustive, through shared-memory tiles
// -----------------------------------

// kMode 0: count neighbours; 1: write adjacency (vertex); 2: count j > i; 3: write edges (j > i).
template <int kMode>
__global__ void k_es_neighbours(const float3* pts, int n, float thr, int* counts,
                                const int* offsets, int* adj, int2* edges) {
  __shared__ float3 tile[kThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = i < n ? pts[i] : make_float3(NAN, NAN, NAN);
  int found = 0;
  const int out = (kMode == 1 || kMode == 3) && i < n ? offsets[i] : 0;
  for (int base = 0; base < n; base += kThreads) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pts[j] : make_float3(NAN, NAN, NAN);
    __syncthreads();
    const int lim = min(kThreads, n - base);
    for (int k = 0; k < lim; ++k) {
      const int jj = base + k;
      const bool take = (kMode <= 1) ? jj != i : jj > i;
      if (take && dist2(p, tile[k]) < thr) {  // NaN distances compare false
        if (kMode == 1) adj[out + found] = jj;
        if (kMode == 3) edges[out + found] = make_int2(i, jj);
        ++found;
      }
    }
    __syncthreads();
  }
  if (i < n && (kMode == 0 || kMode == 2)) counts[i] = found;
}

// ---- Algorithm 7: voxel grid by sorting, and range search over it -------------------------------

struct Grid {
  float3 lo;
  float cell;
  long long nx, ny, nz;
  int voxels;  // non-empty voxels (k)
  int finite;
};

struct Box {
  float lo[3], hi[3];
};

struct ToBox {
  __host__ __device__ Box operator()(const float3& p) const {
    const bool ok = isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
    if (!ok) return {{FLT_MAX, FLT_MAX, FLT_MAX}, {-FLT_MAX, -FLT_MAX, -FLT_MAX}};
    return {{p.x, p.y, p.z}, {p.x, p.y, p.z}};
  }
};

struct MergeBox {
  __host__ __device__ Box operator()(const Box& a, const Box& b) const {
    Box r;
    for (int k = 0; k < 3; ++k) {
      r.lo[k] = fminf(a.lo[k], b.lo[k]);
      r.hi[k] = fmaxf(a.hi[k], b.hi[k]);
    }
    return r;
  }
};

__device__ __forceinline__ long long axis_cell(float v, float lo, float cell, long long n) {
  const long long c = (long long)floor((double(v) - double(lo)) / double(cell));
  return c < 0 ? 0 : (c >= n ? n - 1 : c);
}

__global__ void k_voxel_ids(const float3* pts, int n, Grid g, unsigned long long* vid, int* pid) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float3 p = pts[i];
  pid[i] = i;
  if (!finite3(p)) {
    vid[i] = ~0ull;  // sorts after every real voxel
    return;
  }
  const long long x = axis_cell(p.x, g.lo.x, g.cell, g.nx),
                  y = axis_cell(p.y, g.lo.y, g.cell, g.ny),
                  z = axis_cell(p.z, g.lo.z, g.cell, g.nz);
  vid[i] = (unsigned long long)(x + g.nx * (y + g.ny * z));
}

__global__ void k_mark_voxel_ends(const unsigned long long* vid, int finite, int* mark) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= finite) return;
  mark[i] = (i == finite - 1 || vid[i] < vid[i + 1]) ? 1 : 0;
}

__global__ void k_voxel_table(const unsigned long long* vid, int finite, const int* mark,
                              unsigned long long* V, int* S) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i == 0) S[0] = 0;
  if (i >= finite) return;
  if (i == finite - 1 || vid[i] < vid[i + 1]) {
    V[mark[i]] = vid[i];
    S[mark[i] + 1] = i + 1;
  }
}

__device__ __forceinline__ int find_voxel(const unsigned long long* V, int k,
                                          unsigned long long id) {
  int lo = 0, hi = k;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (V[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return (lo < k && V[lo] == id) ? lo : -1;
}

// Calls fn(j) for every point j in the 27 voxels around p (range search, Algorithm 7's grid).
template <typename Fn>
__device__ __forceinline__ void for_each_candidate(float3 p, const Grid& g,
                                                   const unsigned long long* V, const int* S,
                                                   const int* pid, Fn&& fn) {
  const long long x = axis_cell(p.x, g.lo.x, g.cell, g.nx),
                  y = axis_cell(p.y, g.lo.y, g.cell, g.ny),
                  z = axis_cell(p.z, g.lo.z, g.cell, g.nz);
  for (long long dz = -1; dz <= 1; ++dz)
    for (long long dy = -1; dy <= 1; ++dy)
      for (long long dx = -1; dx <= 1; ++dx) {
        const long long cx = x + dx, cy = y + dy, cz = z + dz;
        if (cx < 0 || cy < 0 || cz < 0 || cx >= g.nx || cy >= g.ny || cz >= g.nz) continue;
        const int v = find_voxel(V, g.voxels, (unsigned long long)(cx + g.nx * (cy + g.ny * cz)));
        if (v < 0) continue;
        for (int t = S[v]; t < S[v + 1]; ++t)
          fn(pid[t]);
      }
}

// Same modes as k_es_neighbours; the candidates are the points of the 27 voxels around p.
template <int kMode>
__global__ void k_rs_neighbours(const float3* pts, int n, float thr, Grid g,
                                const unsigned long long* V, const int* S, const int* pid,
                                int* counts, const int* offsets, int* adj, int2* edges) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float3 p = pts[i];
  if (!finite3(p)) {
    if (kMode == 0 || kMode == 2) counts[i] = 0;
    return;
  }
  int found = 0;
  const int out = (kMode == 1 || kMode == 3) ? offsets[i] : 0;
  for_each_candidate(p, g, V, S, pid, [&](int j) {
    const bool take = (kMode <= 1) ? j != i : j > i;
    if (take && dist2(p, pts[j]) < thr) {
      if (kMode == 1) adj[out + found] = j;
      if (kMode == 3) edges[out + found] = make_int2(i, j);
      ++found;
    }
  });
  if (kMode == 0 || kMode == 2) counts[i] = found;
}

// ---- vertex and edge label propagation (atomicMin) -------------------------------------------

__global__ void k_init_labels(int* C, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) C[i] = i;
}

// m_l per thread, a block-wide vote for m_b, and m_d in global memory (written once a block).
__global__ void k_vertex_propagate(const int* S, const int* N, int* C, int n, int* m_d) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  bool m_l = false;
  if (i < n) {
    int ci = C[i];
    for (int e = S[i]; e < S[i + 1]; ++e) {
      const int j = N[e];
      const int cj = C[j];
      if (cj < ci) {
        atomicMin(&C[i], cj);
        ci = cj;
        m_l = true;
      } else if (ci < cj) {
        atomicMin(&C[j], ci);
        m_l = true;
      }
    }
  }
  // m_b: the block's vote, then one global write per block (m_d).
  if (__syncthreads_or(m_l) && threadIdx.x == 0) *m_d = 1;
}

__global__ void k_edge_propagate(const int2* E, long long m, int* C, int* m_d) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  bool m_l = false;
  if (e < m) {
    const int2 uv = E[e];
    const int a = C[uv.x], b = C[uv.y];
    if (a < b) {
      atomicMin(&C[uv.y], a);
      m_l = true;
    } else if (b < a) {
      atomicMin(&C[uv.x], b);
      m_l = true;
    }
  }
  if (__syncthreads_or(m_l) && threadIdx.x == 0) *m_d = 1;
}

__global__ void k_components_from_labels(const float3* pts, const int* C, int n, int* component) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) component[i] = finite3(pts[i]) ? C[i] : -1;
}

__global__ void k_count_finite(const float3* pts, int n, int* counters) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  warp_count(&counters[kFinite], i < n && finite3(pts[i]));
}

// ---- matrix method ----------------------------------------------------------------------------

// Algorithm 3: each block clusters its b consecutive points by pairwise distances.
__global__ void k_initial_ec(const float3* pts, int n, float thr, int* C) {
  __shared__ float3 sp[kMatrixBlock];
  __shared__ int labels[kMatrixBlock];
  __shared__ int status[kMatrixBlock];
  const int tid = threadIdx.x, i = blockIdx.x * kMatrixBlock + tid;
  const float3 p = i < n ? pts[i] : make_float3(NAN, NAN, NAN);
  sp[tid] = p;
  labels[tid] = tid;
  __syncthreads();
  for (int j = 0; j < kMatrixBlock - 1; ++j) {
    status[tid] = 0;
    __syncthreads();
    const float3 q = sp[j];
    const int cc = labels[tid], rc = labels[j];
    if (tid > j && rc != cc && dist2(p, q) < thr)
      atomicOr(&status[cc], 1);  // many threads, one flag
    __syncthreads();
    if (status[cc] == 1) labels[tid] = rc;
    __syncthreads();
  }
  if (i < n) C[i] = finite3(p) ? int(blockIdx.x) * kMatrixBlock + labels[tid] : -1;
}

__global__ void k_mark_labels(const int* C, int n, int* L) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && C[i] >= 0) L[C[i]] = 1;
}

__global__ void k_compact_labels(int* C, int n, const int* L) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && C[i] >= 0) C[i] = L[C[i]];
}

// Step 8 of Algorithm 4, exhaustive: M[C[i], C[j]] = 1 for neighbours in different labels.
__global__ void k_matrix_es(const float3* pts, const int* C, int n, float thr, unsigned char* M,
                            long long R) {
  __shared__ float3 tile[kThreads];
  __shared__ int tile_c[kThreads];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float3 p = i < n ? pts[i] : make_float3(NAN, NAN, NAN);
  const int ci = i < n ? C[i] : -1;
  for (int base = 0; base < n; base += kThreads) {
    const int j = base + threadIdx.x;
    tile[threadIdx.x] = j < n ? pts[j] : make_float3(NAN, NAN, NAN);
    tile_c[threadIdx.x] = j < n ? C[j] : -1;
    __syncthreads();
    const int lim = min(kThreads, n - base);
    if (ci >= 0)
      for (int k = 0; k < lim; ++k) {
        const int cj = tile_c[k];
        if (cj >= 0 && cj != ci && dist2(p, tile[k]) < thr) M[ci * R + cj] = 1;
      }
    __syncthreads();
  }
}

__global__ void k_matrix_rs(const float3* pts, const int* C, int n, float thr, Grid g,
                            const unsigned long long* V, const int* S, const int* pid,
                            unsigned char* M, long long R) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || C[i] < 0) return;
  const float3 p = pts[i];
  const int ci = C[i];
  for_each_candidate(p, g, V, S, pid, [&](int j) {
    const int cj = C[j];
    if (cj != ci && dist2(p, pts[j]) < thr) M[ci * R + cj] = 1;
  });
}

// Layer 0: diagonal sub-matrices, merged like INITIAL_EC but reading adjacency from M.
__global__ void k_merge_diagonal(const unsigned char* M, long long R, int* Rl, int* m_d) {
  __shared__ int labels[kMatrixBlock];
  __shared__ int status[kMatrixBlock];
  const int tid = threadIdx.x;
  const long long base = (long long)blockIdx.x * kMatrixBlock, col = base + tid;
  labels[tid] = tid;
  __syncthreads();
  for (int j = 0; j < kMatrixBlock - 1; ++j) {
    status[tid] = 0;
    __syncthreads();
    const long long row = base + j;
    const int cc = labels[tid], rc = labels[j];
    if (tid > j && rc != cc && col < R && row < R && M[row * R + col]) atomicOr(&status[cc], 1);
    __syncthreads();
    if (status[cc] == 1) labels[tid] = rc;
    __syncthreads();
  }
  const bool merged = col < R && labels[tid] != tid;
  if (merged) Rl[col] = int(base) + labels[tid];
  if (__syncthreads_or(merged) && tid == 0) *m_d = 1;
}

// Layer k >= 1: block g merges the column labels of group g ^ k into the row labels of group g
// (Algorithm 5). Groups of one layer are disjoint, so blocks never touch the same label.
__global__ void k_merge_layer(const unsigned char* M, long long R, int groups, int layer, int* Rl,
                              int* m_d) {
  __shared__ int status[2 * kMatrixBlock];
  const int g0 = blockIdx.x, g1 = g0 ^ layer;
  if (!(g0 < g1 && g1 < groups)) return;  // the whole block leaves together
  const int tid = threadIdx.x;
  const long long c = (long long)g1 * kMatrixBlock + tid;
  int cl = tid;
  bool m_t = false;
  for (int j = 0; j < kMatrixBlock; ++j) {
    const long long r = (long long)g0 * kMatrixBlock + j;
    status[tid] = 0;
    status[tid + kMatrixBlock] = 0;
    __syncthreads();
    if (c < R && r < R && M[r * R + c]) {
      atomicOr(&status[cl], 1);
      m_t = true;
    }
    __syncthreads();
    if (status[cl] == 1) cl = j + kMatrixBlock;
    __syncthreads();
  }
  if (m_t) Rl[c] = g0 * kMatrixBlock + (cl - kMatrixBlock);
  if (__syncthreads_or(m_t) && tid == 0) *m_d = 1;
}

__global__ void k_apply_merges(int* C, int n, const int* Rl) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && C[i] >= 0) C[i] = Rl[C[i]];
}

__global__ void k_mark_surviving(const int* Rl, long long R, int* L) {
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (k < R) L[Rl[k]] = 1;
}

// Algorithm 6 steps 9-13: carry every adjacency to the new labels.
__global__ void k_rebuild_matrix(const unsigned char* M, long long R, const int* Rl, const int* L,
                                 unsigned char* M2, long long R2) {
  const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= R) return;
  const long long nc = L[Rl[c]];
  for (long long r = 0; r < c; ++r) {
    if (!M[r * R + c]) continue;
    const long long nr = L[Rl[r]];
    if (nr == nc) continue;
    M2[nr * R2 + nc] = 1;
    M2[nc * R2 + nr] = 1;
  }
}

__global__ void k_iota(int* a, long long n) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = int(i);
}

int blocks(long long n) {
  return int((n + kThreads - 1) / kThreads);
}

struct PaperBuffers {
  cuda::DeviceBuffer<int> counts, offsets, adj, C, pid, mark, S, L, Rl, flag;
  cuda::DeviceBuffer<int2> edges;
  cuda::DeviceBuffer<unsigned long long> vid, V;
  cuda::DeviceBuffer<unsigned char> M, M2;
  cuda::PinnedBuffer<int> host;
};

// Used and released under the clustering workspace's lock.
PaperBuffers& paper_buffers() {
  static PaperBuffers b;
  static const bool registered = (cuda::register_release([] {
                                    auto held = cuda::acquire_workspace<Workspace>();
                                    b = PaperBuffers{};
                                  }),
                                  true);
  (void)registered;
  return b;
}

int read_int(const int* device, PaperBuffers& b, cudaStream_t s) {
  b.host.reserve(1);
  CU_CHECK(cudaMemcpyAsync(b.host.get(), device, sizeof(int), cudaMemcpyDeviceToHost, s));
  CU_CHECK(cudaStreamSynchronize(s));
  return *b.host.get();
}

// Algorithm 7. Sorting puts non-finite points (id ~0) last; `finite` counts the others.
Grid build_voxel_grid(Workspace& ws, PaperBuffers& b, int n, float tolerance) {
  cudaStream_t s = ws.stream.get();
  auto policy = thrust::cuda::par.on(s);
  const thrust::device_ptr<float3> pts(ws.points.get());
  const Box box = thrust::transform_reduce(
      policy, pts, pts + n, ToBox{},
      Box{{FLT_MAX, FLT_MAX, FLT_MAX}, {-FLT_MAX, -FLT_MAX, -FLT_MAX}}, MergeBox{});
  Grid g{};
  g.lo = make_float3(box.lo[0], box.lo[1], box.lo[2]);
  g.cell = tolerance;
  if (box.lo[0] > box.hi[0]) {  // no finite point
    g.nx = g.ny = g.nz = 1;
  } else {
    // Cells no smaller than the tolerance keep every neighbour within one cell; grow them only
    // when the grid would not fit a 63-bit voxel id.
    for (;;) {
      g.nx = (long long)std::floor((double(box.hi[0]) - box.lo[0]) / g.cell) + 1;
      g.ny = (long long)std::floor((double(box.hi[1]) - box.lo[1]) / g.cell) + 1;
      g.nz = (long long)std::floor((double(box.hi[2]) - box.lo[2]) / g.cell) + 1;
      if (double(g.nx) * double(g.ny) * double(g.nz) < 4.0e18) break;
      g.cell *= 2;
    }
  }
  b.vid.reserve(n);
  b.pid.reserve(n);
  k_voxel_ids<<<blocks(n), kThreads, 0, s>>>(ws.points.get(), n, g, b.vid.get(), b.pid.get());
  CU_CHECK_LAUNCH("k_voxel_ids");
  thrust::sort_by_key(policy, thrust::device_ptr<unsigned long long>(b.vid.get()),
                      thrust::device_ptr<unsigned long long>(b.vid.get()) + n,
                      thrust::device_ptr<int>(b.pid.get()));
  k_count_finite<<<blocks(n), kThreads, 0, s>>>(ws.points.get(), n, ws.counters.get());
  CU_CHECK_LAUNCH("k_count_finite");
  g.finite = read_int(ws.counters.get() + kFinite, b, s);
  b.mark.reserve(std::size_t(g.finite) + 1);
  b.V.reserve(1);
  b.S.reserve(2);
  if (g.finite == 0) {
    CU_CHECK(cudaMemsetAsync(b.S.get(), 0, sizeof(int), s));
    g.voxels = 0;
    return g;
  }
  CU_CHECK(cudaMemsetAsync(b.mark.get() + g.finite, 0, sizeof(int), s));  // the scan reads it
  k_mark_voxel_ends<<<blocks(g.finite), kThreads, 0, s>>>(b.vid.get(), g.finite, b.mark.get());
  CU_CHECK_LAUNCH("k_mark_voxel_ends");
  thrust::exclusive_scan(policy, thrust::device_ptr<int>(b.mark.get()),
                         thrust::device_ptr<int>(b.mark.get()) + g.finite + 1,
                         thrust::device_ptr<int>(b.mark.get()));
  g.voxels = read_int(b.mark.get() + g.finite, b, s);
  b.V.reserve(std::size_t(g.voxels) + 1);
  b.S.reserve(std::size_t(g.voxels) + 2);
  k_voxel_table<<<blocks(g.finite), kThreads, 0, s>>>(b.vid.get(), g.finite, b.mark.get(),
                                                      b.V.get(), b.S.get());
  CU_CHECK_LAUNCH("k_voxel_table");
  return g;
}

// Count, scan, fill: Algorithm 1 (vertex: all neighbours) or its edge variant (j > i only).
long long build_graph(Workspace& ws, PaperBuffers& b, int n, float thr, bool rs, bool edges,
                      const Grid& g) {
  cudaStream_t s = ws.stream.get();
  b.counts.reserve(std::size_t(n) + 1);
  b.offsets.reserve(std::size_t(n) + 1);
  CU_CHECK(cudaMemsetAsync(b.counts.get() + n, 0, sizeof(int), s));
  const int B = blocks(n);
  if (rs) {
    if (edges)
      k_rs_neighbours<2><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, g, b.V.get(), b.S.get(),
                                                b.pid.get(), b.counts.get(), nullptr, nullptr,
                                                nullptr);
    else
      k_rs_neighbours<0><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, g, b.V.get(), b.S.get(),
                                                b.pid.get(), b.counts.get(), nullptr, nullptr,
                                                nullptr);
  } else {
    if (edges)
      k_es_neighbours<2><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, b.counts.get(), nullptr,
                                                nullptr, nullptr);
    else
      k_es_neighbours<0><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, b.counts.get(), nullptr,
                                                nullptr, nullptr);
  }
  CU_CHECK_LAUNCH("neighbour count");
  thrust::exclusive_scan(thrust::cuda::par.on(s), thrust::device_ptr<int>(b.counts.get()),
                         thrust::device_ptr<int>(b.counts.get()) + n + 1,
                         thrust::device_ptr<int>(b.offsets.get()));
  const long long m = read_int(b.offsets.get() + n, b, s);
  if (m < 0) throw GpuError("the neighbour graph has more than 2^31 entries; use the gpu method");
  if (edges)
    b.edges.reserve(std::size_t(std::max<long long>(m, 1)));
  else
    b.adj.reserve(std::size_t(std::max<long long>(m, 1)));
  if (rs) {
    if (edges)
      k_rs_neighbours<3><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, g, b.V.get(), b.S.get(),
                                                b.pid.get(), nullptr, b.offsets.get(), nullptr,
                                                b.edges.get());
    else
      k_rs_neighbours<1><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, g, b.V.get(), b.S.get(),
                                                b.pid.get(), nullptr, b.offsets.get(), b.adj.get(),
                                                nullptr);
  } else {
    if (edges)
      k_es_neighbours<3><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, nullptr, b.offsets.get(),
                                                nullptr, b.edges.get());
    else
      k_es_neighbours<1><<<B, kThreads, 0, s>>>(ws.points.get(), n, thr, nullptr, b.offsets.get(),
                                                b.adj.get(), nullptr);
  }
  CU_CHECK_LAUNCH("neighbour fill");
  return m;
}

void propagate(Workspace& ws, PaperBuffers& b, int n, long long m, bool edges) {
  cudaStream_t s = ws.stream.get();
  b.C.reserve(n);
  b.flag.reserve(1);
  k_init_labels<<<blocks(n), kThreads, 0, s>>>(b.C.get(), n);
  CU_CHECK_LAUNCH("k_init_labels");
  for (int iteration = 0;; ++iteration) {
    if (iteration > n + 1) throw GpuError("label propagation did not converge (internal error)");
    CU_CHECK(cudaMemsetAsync(b.flag.get(), 0, sizeof(int), s));
    if (edges) {
      if (m > 0)
        k_edge_propagate<<<blocks(m), kThreads, 0, s>>>(b.edges.get(), m, b.C.get(), b.flag.get());
    } else {
      k_vertex_propagate<<<blocks(n), kThreads, 0, s>>>(b.offsets.get(), b.adj.get(), b.C.get(), n,
                                                        b.flag.get());
    }
    CU_CHECK_LAUNCH("label propagation");
    if (!read_int(b.flag.get(), b, s)) break;
  }
  k_components_from_labels<<<blocks(n), kThreads, 0, s>>>(ws.points.get(), b.C.get(), n,
                                                          ws.component.get());
  CU_CHECK_LAUNCH("k_components_from_labels");
}

void check_matrix_fits(long long R, const char* method) {
  std::size_t free_bytes = 0, total = 0;
  CU_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (const std::size_t cap = gpu_memory_limit(); cap > 0) free_bytes = std::min(free_bytes, cap);
  const double need = 2.0 * double(R) * double(R);  // M and its rebuilt copy
  if (need > 0.9 * double(free_bytes))
    throw GpuError(std::string(method) + ": the adjacency matrix of " + std::to_string(R) +
                   " labels needs " + std::to_string(need / (1 << 30)) + " GiB but the GPU has " +
                   std::to_string(double(free_bytes) / (1 << 30)) +
                   " GiB free; use gpu or gpu-edge-rs for this cloud and tolerance");
}

void run_matrix(Workspace& ws, PaperBuffers& b, int n, float thr, bool rs, const Grid& g,
                const char* name, StageClock& clock) {
  cudaStream_t s = ws.stream.get();
  auto policy = thrust::cuda::par.on(s);
  b.C.reserve(n);
  b.L.reserve(std::size_t(n) + 1);
  b.flag.reserve(1);
  // INITIAL_EC: kMatrixBlock threads per block, always a whole block (sync-safe).
  k_initial_ec<<<int((n + kMatrixBlock - 1) / kMatrixBlock), kMatrixBlock, 0, s>>>(
      ws.points.get(), n, thr, b.C.get());
  CU_CHECK_LAUNCH("k_initial_ec");
  clock.mark("initial-ec");
  // BUILD_MATRIX.
  CU_CHECK(cudaMemsetAsync(b.L.get(), 0, (std::size_t(n) + 1) * sizeof(int), s));
  k_mark_labels<<<blocks(n), kThreads, 0, s>>>(b.C.get(), n, b.L.get());
  thrust::exclusive_scan(policy, thrust::device_ptr<int>(b.L.get()),
                         thrust::device_ptr<int>(b.L.get()) + n + 1,
                         thrust::device_ptr<int>(b.L.get()));
  long long R = read_int(b.L.get() + n, b, s);
  k_compact_labels<<<blocks(n), kThreads, 0, s>>>(b.C.get(), n, b.L.get());
  CU_CHECK_LAUNCH("k_compact_labels");
  check_matrix_fits(R, name);
  b.M.reserve(std::size_t(std::max<long long>(R * R, 1)));
  CU_CHECK(cudaMemsetAsync(b.M.get(), 0, std::size_t(R * R), s));
  if (R == 0) {
    // No finite point: nothing to merge.
  } else if (rs)
    k_matrix_rs<<<blocks(n), kThreads, 0, s>>>(ws.points.get(), b.C.get(), n, thr, g, b.V.get(),
                                               b.S.get(), b.pid.get(), b.M.get(), R);
  else
    k_matrix_es<<<blocks(n), kThreads, 0, s>>>(ws.points.get(), b.C.get(), n, thr, b.M.get(), R);
  CU_CHECK_LAUNCH("matrix build");
  b.Rl.reserve(std::size_t(std::max<long long>(R, 1)));
  if (R > 0) k_iota<<<blocks(R), kThreads, 0, s>>>(b.Rl.get(), R);
  clock.mark("build-matrix");
  // Merge layer by layer; after any layer that merged, UPDATE and start again from layer 0.
  for (int round = 0;; ++round) {
    if (round > n + 1) throw GpuError("matrix merging did not converge (internal error)");
    const int groups = int((R + kMatrixBlock - 1) / kMatrixBlock);
    if (groups == 0) break;
    const int layers = int(std::bit_ceil(unsigned(std::max(groups, 1))));
    bool merged = false;
    for (int layer = 0; layer < layers && !merged; ++layer) {
      CU_CHECK(cudaMemsetAsync(b.flag.get(), 0, sizeof(int), s));
      if (layer == 0)
        k_merge_diagonal<<<groups, kMatrixBlock, 0, s>>>(b.M.get(), R, b.Rl.get(), b.flag.get());
      else
        k_merge_layer<<<groups, kMatrixBlock, 0, s>>>(b.M.get(), R, groups, layer, b.Rl.get(),
                                                      b.flag.get());
      CU_CHECK_LAUNCH("matrix layer");
      merged = read_int(b.flag.get(), b, s) != 0;
    }
    if (!merged) break;
    // UPDATE (Algorithm 6).
    k_apply_merges<<<blocks(n), kThreads, 0, s>>>(b.C.get(), n, b.Rl.get());
    CU_CHECK(cudaMemsetAsync(b.L.get(), 0, (std::size_t(R) + 1) * sizeof(int), s));
    k_mark_surviving<<<blocks(R), kThreads, 0, s>>>(b.Rl.get(), R, b.L.get());
    thrust::exclusive_scan(policy, thrust::device_ptr<int>(b.L.get()),
                           thrust::device_ptr<int>(b.L.get()) + R + 1,
                           thrust::device_ptr<int>(b.L.get()));
    const long long R2 = read_int(b.L.get() + R, b, s);
    k_compact_labels<<<blocks(n), kThreads, 0, s>>>(b.C.get(), n, b.L.get());
    b.M2.reserve(std::size_t(std::max<long long>(R2 * R2, 1)));
    CU_CHECK(cudaMemsetAsync(b.M2.get(), 0, std::size_t(R2 * R2), s));
    k_rebuild_matrix<<<blocks(R), kThreads, 0, s>>>(b.M.get(), R, b.Rl.get(), b.L.get(), b.M2.get(),
                                                    R2);
    CU_CHECK_LAUNCH("k_rebuild_matrix");
    std::swap(b.M, b.M2);
    R = R2;
    if (R > 0) k_iota<<<blocks(R), kThreads, 0, s>>>(b.Rl.get(), R);
  }
  CU_CHECK(cudaMemcpyAsync(ws.component.get(), b.C.get(), std::size_t(n) * sizeof(int),
                           cudaMemcpyDeviceToDevice, s));
  clock.mark("merge");
}

}  // namespace

void run_paper(Workspace& ws, std::size_t n_points, const ClusterParams& params,
               ClusterMethod method, StageClock& clock) {
  PaperBuffers& b = paper_buffers();
  const int n = int(n_points);
  const float thr = squared_threshold(params.tolerance);
  const bool rs = method == ClusterMethod::GpuVertexRs || method == ClusterMethod::GpuEdgeRs ||
                  method == ClusterMethod::GpuMatrixRs;
  Grid g{};
  if (rs) {
    g = build_voxel_grid(ws, b, n, params.tolerance);
    clock.mark("grid");
  } else {
    k_count_finite<<<blocks(n), kThreads, 0, ws.stream.get()>>>(ws.points.get(), n,
                                                                ws.counters.get());
    CU_CHECK_LAUNCH("k_count_finite");
  }
  switch (method) {
    case ClusterMethod::GpuVertexEs:
    case ClusterMethod::GpuVertexRs:
    case ClusterMethod::GpuEdgeEs:
    case ClusterMethod::GpuEdgeRs: {
      const bool edges = method == ClusterMethod::GpuEdgeEs || method == ClusterMethod::GpuEdgeRs;
      const long long m = build_graph(ws, b, n, thr, rs, edges, g);
      clock.mark("graph");
      propagate(ws, b, n, m, edges);
      clock.mark("labelling");
      break;
    }
    case ClusterMethod::GpuMatrixEs:
    case ClusterMethod::GpuMatrixRs:
      run_matrix(ws, b, n, thr, rs, g, method_name(method), clock);
      break;
    default:
      throw InvalidArgument("not a paper method");
  }
  canonicalize_on_device(ws, n_points, params, CanonicalInput::Components);
  clock.mark("canonicalize");
}

}  // namespace cumulus::cluster_cuda
