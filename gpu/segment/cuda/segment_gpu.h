#pragma once
// The CUDA RDP kernel (segment_gpu.cu), or a stub that throws GpuError without CUDA.
#include <cstdint>
#include <vector>

#include "segment/segment.h"

namespace cumulus {

// Segments every column of every image; the images must share one size. A batch runs in
// chunks: uploads on one stream, each chunk's work on two more, and the host fills a chunk's
// results while the device works on the next.
std::vector<SegmentResult> segment_gpu(const std::vector<const DepthImage*>& images,
                                       const SegmentParams& params);
// The same for raw row-major buffers of width x height floats (page-locked ones upload fastest),
// into `out` (resized to one result an image; its vectors' memory is reused).
void segment_gpu_buffers(const std::vector<const float*>& data, std::uint32_t width,
                         std::uint32_t height, const SegmentParams& params,
                         std::vector<SegmentResult>& out);
// The same for raw 16-bit depth units and the metres a unit, scaled on the device.
void segment_gpu_raw_buffers(const std::vector<const std::uint16_t*>& data, std::uint32_t width,
                             std::uint32_t height, double metres_per_unit,
                             const SegmentParams& params, std::vector<SegmentResult>& out);

}  // namespace cumulus
