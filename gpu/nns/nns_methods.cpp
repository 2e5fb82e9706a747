// The neighbour-search methods: the one list every other part of the program reads.
#include "nns/nns.h"

namespace cumulus {

namespace {

using namespace method_rows;

constexpr MethodInfo<NnsMethod> kRows[] = {
    {NnsMethod::Cpu, "cpu", "PCL (FLANN)", kCpu, kReference, kWithoutGpu, "PCL's KdTreeFLANN"},
    {NnsMethod::Gpu, "gpu", "uniform grid", kGpu, kOurs, kWithGpu,
     "a dense uniform grid searched in growing shells, skipping cells beyond the current best"},
    {NnsMethod::GpuKdTree, "gpu-kdtree", "left-balanced kd-tree", kGpu, kPaper, kNo,
     "the paper's left-balanced array kd-tree (built on the host), stack search with pruning"},
    {NnsMethod::GpuBruteForce, "gpu-bruteforce", "brute force", kGpu, kPaper, kNo,
     "every target for every query, as the paper's baseline"},
};

}  // namespace

const MethodTable<NnsMethod>& method_table(NnsMethod) {
  static constexpr MethodTable<NnsMethod> table(kRows);
  return table;
}

}  // namespace cumulus
