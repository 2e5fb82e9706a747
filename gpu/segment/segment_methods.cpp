// The RDP segmentation methods: the one list every other part of the program reads.
#include "segment/segment.h"

namespace cumulus {

namespace {

using namespace method_rows;

constexpr MethodInfo<SegmentMethod> kRows[] = {
    {SegmentMethod::Cpu, "cpu", "recursive", kCpu, kReference, kNo,
     "recursive RDP, the paper's Algorithm 1"},
    {SegmentMethod::CpuMt, "cpu-mt", "recursive, all cores", kCpu, kReference, kWithoutGpu,
     "the same recursion over the columns on all cores"},
    {SegmentMethod::Gpu, "gpu", "one kernel, a block per column", kGpu, kPaper, kWithGpu,
     "the paper's single kernel: a block per column, iterative segmented reductions"},
};

}  // namespace

const MethodTable<SegmentMethod>& method_table(SegmentMethod) {
  static constexpr MethodTable<SegmentMethod> table(kRows);
  return table;
}

}  // namespace cumulus
