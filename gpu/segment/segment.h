#pragma once
// Ramer-Douglas-Peucker segmentation of depth-image columns. Each column is a 1-D signal
// (row, depth); runs of invalid pixels (0 or NaN) split it into independent pieces. A piece is
// cut at its point farthest from the chord when that distance is strictly greater than
// epsilon (ties go to the lowest row), recursively. Every method returns the same cut rows.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/depth_image.h"
#include "core/timing.h"

#define CUMULUS_METHOD_ENUM SegmentMethod
#define CUMULUS_METHOD_ROWS "segment/segment_methods.def"
#include "core/method_enum.h"

namespace cumulus {

enum class SegmentDistance { Vertical, Perpendicular };

struct SegmentParams {
  float epsilon = 0.1f;  // metres
  SegmentDistance distance = SegmentDistance::Vertical;
  float row_pitch = 0.01f;  // metres per row, for the perpendicular distance
  int median = 0;           // 0, 3 or 5: median filter over each column first
};

struct SegmentResult {
  std::uint32_t width = 0, height = 0;
  // Cut rows of column c (segment end points, ascending): rows[offsets[c] .. offsets[c+1]).
  std::vector<std::uint32_t> offsets;
  std::vector<std::uint32_t> rows;
  std::vector<std::uint8_t> levels;  // recursion levels per column (0: no valid pixel)
  std::string method;
  StageTimes stages;
  double total_ms = 0;

  std::size_t cuts(std::uint32_t column) const { return offsets[column + 1] - offsets[column]; }
  // Segments of a column: consecutive cut rows within one piece of valid pixels.
  std::size_t segment_count() const;
};

void validate(const SegmentParams& params);

// The filtered signal the methods segment (a copy of the image when median == 0).
DepthImage median_filter_columns(const DepthImage& image, int size);

SegmentResult segment_columns(const DepthImage& image, const SegmentParams& params,
                              SegmentMethod method);
// Raw row-major depth buffers (metres) of one size, on the GPU; buffers from
// allocate_pinned_floats upload by direct DMA, as frames a camera driver writes there would.
std::vector<SegmentResult> segment_buffers_gpu(const std::vector<const float*>& images,
                                               std::uint32_t width, std::uint32_t height,
                                               const SegmentParams& params);
// The same from the raw 16-bit units depth PNGs hold (0: no return) and the metres a unit: half
// the bytes of floats to upload, scaled on the device exactly as load_depth_image scales them,
// so the cut rows equal those of the loaded image. Buffers from allocate_pinned_u16 upload by DMA.
// InvalidArgument for a scale that is not a positive finite number.
std::vector<SegmentResult> segment_raw_buffers_gpu(const std::vector<const std::uint16_t*>& images,
                                                   std::uint32_t width, std::uint32_t height,
                                                   double metres_per_unit,
                                                   const SegmentParams& params);

// The same two into `results` (one an image, resized to fit): its vectors' memory is reused, so
// a sequence segmented batch after batch into one vector allocates nothing once its cuts fit.
// After an exception its contents are unspecified.
void segment_buffers_gpu(const std::vector<const float*>& images, std::uint32_t width,
                         std::uint32_t height, const SegmentParams& params,
                         std::vector<SegmentResult>& results);
void segment_raw_buffers_gpu(const std::vector<const std::uint16_t*>& images, std::uint32_t width,
                             std::uint32_t height, double metres_per_unit,
                             const SegmentParams& params, std::vector<SegmentResult>& results);

// A sequence of same-size images in one GPU launch (throws GpuError without a GPU).
std::vector<SegmentResult> segment_columns_batch(const std::vector<const DepthImage*>& images,
                                                 const SegmentParams& params);

// The segments of a result: consecutive cut rows of a column with only valid pixels between.
struct Segment {
  std::uint32_t column, start_row, end_row;
  float start_depth, end_depth;
};
std::vector<Segment> list_segments(const DepthImage& image, const SegmentResult& result);
enum class SegmentFormat { Csv, Json };
// Writes column, start row, end row, start depth and end depth of every segment.
void save_segments(const std::string& path, const DepthImage& image, const SegmentResult& result,
                   SegmentFormat format);

// Point-to-chord distance, as every method computes it (float, no fused multiply-add).
float segment_distance(float d_first, float d_last, float d_i, int first, int last, int i,
                       const SegmentParams& params);

}  // namespace cumulus
