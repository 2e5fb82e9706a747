#pragma once
// Ground from the range image (ours, after the RDP paper's application): the scan is projected
// to a spinning LiDAR's range image, each column's valid pixels (near to far: bottom row up)
// are segmented by RDP on their range, and the segments are classified near to far: a segment
// is ground when its chord in (horizontal distance, height) rises or falls by at most
// max_slope_deg and it starts within max_step (plus the slope's allowance over the gap) of the
// column's last ground, or of the ground under the sensor for the first. A point is ground when
// its pixel's segment is and the point lies within `threshold` (vertically) of that chord.
// Unlike one RANSAC plane it follows slopes, ramps and crests; it assumes the cloud is in the
// sensor's frame (z up, the sensor at the local origin). Every method gives the same labels:
// pixels come from exact comparisons against tables made once on the host, and every product
// and sum is rounded on its own (no fused multiply-add).
#include <cstdint>

#include "ground/ground.h"

#define CUMULUS_METHOD_ENUM RangeGroundMethod
#define CUMULUS_METHOD_ROWS "ground/range_ground_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct RangeGroundParams {
  // The range image: rows from fov_up_deg down to fov_down_deg (an HDL-64E's by default, as
  // in KITTI), columns over the full turn.
  std::uint32_t rows = 64, columns = 2048;
  double fov_up_deg = 2.0, fov_down_deg = -24.9;
  float epsilon = 0.1f;         // RDP on each column's range, metres
  double max_slope_deg = 10;    // steepest ground
  double max_step = 0.25;       // metres: a kerb passes, a car's side does not
  double sensor_height = 1.73;  // metres above the ground under it
  double threshold = 0.2;       // metres from the segment's chord, vertically
};

// InvalidArgument naming the parameter for sizes of 0 or above 4096 rows / 65536 columns, a
// field of view that is empty or beyond +-90 degrees, and non-positive or non-finite epsilon,
// slope (below 90), step, threshold, or a negative sensor height.
void validate(const RangeGroundParams& params);

// Ground points and, as the model, the least-squares plane through them (RANSAC's refit);
// hypotheses is 0. Error naming the stage when the cloud has no finite point or no ground.
GroundResult segment_ground_range(const PointCloud& cloud, const RangeGroundParams& params,
                                  RangeGroundMethod method);

}  // namespace cumulus
