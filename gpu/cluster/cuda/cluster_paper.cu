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

#include "cluster/cuda/cluster_gpu_common.cuh"
#include "cluster/cuda/paper_kernels.cuh"
#include "cluster/cuda/paper_search.cuh"
#include "core/cuda/workspace.cuh"
#include "core/device.h"

namespace cumulus::cluster_cuda {

namespace {

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

PaperBuffers& paper_buffers() {
  return cuda::buffers_beside<PaperBuffers, Workspace>();
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

LabelsSent run_paper(Workspace& ws, std::size_t n_points, const ClusterParams& params,
                     ClusterMethod method, StageClock& clock, const LabelsTo& labels_to) {
  PaperBuffers& b = paper_buffers();
  const int n = int(n_points);
  const float thr = squared_threshold(params.tolerance);
  const bool rs = method == ClusterMethod::GpuVertexRs || method == ClusterMethod::GpuEdgeRs ||
                  method == ClusterMethod::GpuMatrixRs;
  ws.component.reserve(n_points);  // the fast method finds its points' components through cells
  Grid g{};
  // The fast method's first kernel clears them; these kernels only add.
  CU_CHECK(cudaMemsetAsync(ws.counters.get(), 0, kCounters * sizeof(int), ws.stream.get()));
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
  return canonicalize_on_device(ws, n_points, params, CanonicalInput::Components, labels_to, clock,
                                nullptr);
}

}  // namespace cumulus::cluster_cuda
