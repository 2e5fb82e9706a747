// The clustering methods: the one list every other part of the program reads.
#include "cluster/cluster.h"

namespace cumulus {

namespace {

using namespace method_rows;

constexpr MethodInfo<ClusterMethod> kRows[] = {
    {ClusterMethod::Cpu, "cpu", "PCL", kCpu, kReference, kWithoutGpu,
     "PCL's EuclideanClusterExtraction with a kd-tree"},
    {ClusterMethod::Gpu, "gpu", "union-find over voxel cells", kGpu, kOurs, kWithGpu,
     "union-find over the cells of a hashed voxel grid, no neighbour graph (fastest)"},
    {ClusterMethod::GpuVertexEs, "gpu-vertex-es", "vertex-based, exhaustive", kGpu, kPaper, kNo,
     "the paper's vertex-based method (adjacency list, atomicMin) with exhaustive search"},
    {ClusterMethod::GpuVertexRs, "gpu-vertex-rs", "vertex-based, range search", kGpu, kPaper, kNo,
     "the paper's vertex-based method with its voxel-grid range search"},
    {ClusterMethod::GpuEdgeEs, "gpu-edge-es", "edge-based, exhaustive", kGpu, kPaper, kNo,
     "the paper's edge-based method (edge list, atomicMin) with exhaustive search"},
    {ClusterMethod::GpuEdgeRs, "gpu-edge-rs", "edge-based, range search", kGpu, kPaper, kNo,
     "the paper's edge-based method with its voxel-grid range search"},
    {ClusterMethod::GpuMatrixEs, "gpu-matrix-es", "matrix-based, exhaustive", kGpu, kPaper, kNo,
     "the paper's matrix-based method (adjacency matrix, layers) with exhaustive search"},
    {ClusterMethod::GpuMatrixRs, "gpu-matrix-rs", "matrix-based, range search", kGpu, kPaper, kNo,
     "the paper's matrix-based method with its voxel-grid range search"},
};

}  // namespace

const MethodTable<ClusterMethod>& method_table(ClusterMethod) {
  static constexpr MethodTable<ClusterMethod> table(kRows);
  return table;
}

}  // namespace cumulus
