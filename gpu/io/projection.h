#pragma once
// Conversions between depth/range images and point clouds.
#include "core/depth_image.h"
#include "core/point_cloud.h"

namespace cumulus {

// Pinhole camera: a pixel (u, v) with depth d maps to ((u - cx) d / fx, (v - cy) d / fy, d).
struct PinholeIntrinsics {
  double fx = 525.0, fy = 525.0, cx = 319.5, cy = 239.5;
};

// A spinning LiDAR's range image: row 0 looks up at fov_up_deg, the last row down at
// fov_down_deg; column 0 looks backwards (azimuth +180 deg) and azimuth decreases to the right,
// so the forward direction (+x) is the middle column.
struct RangeImageModel {
  double fov_up_deg = 2.0;
  double fov_down_deg = -24.9;
  std::uint32_t width = 1800;
  std::uint32_t height = 64;
};

// Organized cloud of width x height; invalid pixels become NaN points.
PointCloud depth_to_cloud(const DepthImage& image, const PinholeIntrinsics& k);
PointCloud range_image_to_cloud(const DepthImage& image, const RangeImageModel& model);
// Each point lands in the pixel of its direction; the nearest range wins a pixel. Points
// outside the vertical field of view are left out.
DepthImage cloud_to_range_image(const PointCloud& cloud, const RangeImageModel& model);

}  // namespace cumulus
