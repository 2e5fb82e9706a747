#pragma once
// The paper's labelling kernels: vertex and edge label propagation (atomicMin), and the matrix
// method's INITIAL_EC, BUILD_MATRIX, layer merging and UPDATE (Algorithms 3-6). Included by
// cluster_paper.cu only.
#include <cuda_runtime.h>

#include "cluster/cuda/cluster_gpu_common.cuh"
#include "cluster/cuda/paper_search.cuh"

namespace cumulus::cluster_cuda {
namespace {

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

}  // namespace
}  // namespace cumulus::cluster_cuda
