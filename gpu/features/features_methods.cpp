// The normals and features methods: the one list every other part of the program reads.
#include "features/features.h"

namespace cumulus {

namespace {

using namespace method_rows;

constexpr MethodInfo<FeatureMethod> kRows[] = {
    {FeatureMethod::Cpu, "cpu", "PCL", kCpu, kReference, kWithoutGpu,
     "PCL's NormalEstimation, PFHEstimation and FPFHEstimation"},
    {FeatureMethod::GpuPaper, "gpu-paper", "histograms on the GPU", kGpu, kPaper, kNo,
     "the paper's split: neighbours and normals by PCL, a 64-thread block per point builds the "
     "histogram"},
    {FeatureMethod::Gpu, "gpu", "everything on the GPU", kGpu, kOurs, kWithGpu,
     "neighbours, normals and histograms on the GPU, a warp per point"},
};

}  // namespace

const MethodTable<FeatureMethod>& method_table(FeatureMethod) {
  static constexpr MethodTable<FeatureMethod> table(kRows);
  return table;
}

}  // namespace cumulus
