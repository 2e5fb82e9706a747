// The ICP methods: the one list every other part of the program reads.
#include "registration/icp.h"

namespace cumulus {

namespace {

using namespace method_rows;

constexpr MethodInfo<IcpMethod> kRows[] = {
    {IcpMethod::Cpu, "cpu", "PCL", kCpu, kReference, kWithoutGpu,
     "PCL's IterativeClosestPoint (double-precision transforms)"},
    {IcpMethod::Gpu, "gpu", "grid search, loop on the GPU", kGpu, kOurs, kWithGpu,
     "grid search, and the whole loop (pairs, sums, solve, convergence) on the GPU"},
    {IcpMethod::GpuKdTree, "gpu-kdtree", "kd-tree, SVD on the host", kGpu, kPaper, kNo,
     "the paper: left-balanced kd-tree search on the GPU, the SVD on the host each iteration"},
    {IcpMethod::GpuBruteForce, "gpu-bruteforce", "brute-force pairs", kGpu, kPaper, kNo,
     "exhaustive pairs on the GPU, the paper's baseline search"},
};

}  // namespace

const MethodTable<IcpMethod>& method_table(IcpMethod) {
  static constexpr MethodTable<IcpMethod> table(kRows);
  return table;
}

}  // namespace cumulus
