#pragma once
// The CUDA RDP kernel (segment_gpu.cu), or a stub that throws GpuError without CUDA.
#include <vector>

#include "cumulus/segment.h"

namespace cumulus {

// Segments every column of every image in one launch; the images must share one size.
std::vector<SegmentResult> segment_gpu(const std::vector<const DepthImage*>& images,
                                       const SegmentParams& params);

}  // namespace cumulus
