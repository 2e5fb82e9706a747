#pragma once
// The paper's neighbour searches (kept close to the text): exhaustive through shared-memory
// tiles (es), and Algorithm 7's voxel grid built by sorting with its range search (rs).
// Included by cluster_paper.cu only.
#include <thrust/sort.h>

#include <cfloat>

#include <cuda_runtime.h>

#include "cluster/cuda/cluster_gpu_common.cuh"

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

}  // namespace
}  // namespace cumulus::cluster_cuda
