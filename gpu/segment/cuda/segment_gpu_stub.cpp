// Built instead of segment_gpu.cu when nvcc is missing.
#include "core/error.h"
#include "segment/cuda/segment_gpu.h"

namespace cumulus {

std::vector<SegmentResult> segment_gpu(const std::vector<const DepthImage*>&,
                                       const SegmentParams&) {
  throw_no_cuda("gpu segmentation");
}

void segment_gpu_buffers(const std::vector<const float*>&, std::uint32_t, std::uint32_t,
                         const SegmentParams&, std::vector<SegmentResult>&) {
  throw_no_cuda("gpu segmentation");
}

void segment_gpu_raw_buffers(const std::vector<const std::uint16_t*>&, std::uint32_t, std::uint32_t,
                             double, const SegmentParams&, std::vector<SegmentResult>&) {
  throw_no_cuda("gpu segmentation");
}

}  // namespace cumulus
