#pragma once
// Deterministic synthetic data: the same seed gives the same bytes on every machine, because
// the random numbers come from our own generator, not from <random>'s distributions.
#include <array>
#include <cstdint>

#include "core/depth_image.h"
#include "core/point_cloud.h"

namespace cumulus {

// Level: a flat road. Hilly: the road falls at 4 % behind the sensor, is level around it, climbs
// a 10 % ramp from 6 to 14 m ahead and 3 % after it; pavements and kerbs follow it.
enum class StreetTerrain { Level, Hilly };

struct StreetSceneParams {
  std::uint64_t seed = 1;
  int beams = 64;            // rings, like an HDL-64E
  int azimuth_steps = 1900;  // columns per revolution
  double fov_up_deg = 2.0;
  double fov_down_deg = -24.9;
  double sensor_height = 1.73;  // metres above the ground
  double max_range = 80.0;
  double range_noise = 0.01;  // metres, standard deviation
  StreetTerrain terrain = StreetTerrain::Level;
  bool vegetation = true;  // trees along the pavements and bushes before the buildings
};

// What each point of a generated street hit: the `semantic` field's values. Ground is the road
// and the pavements (their tops 14 cm above it, kerbs included), as ground segmentation is
// scored on SemanticKITTI-style data; vegetation is trunks, crowns and bushes.
enum class StreetClass : int {
  Ground = 1,
  Building = 2,
  Vehicle = 3,
  Pole = 4,
  Pedestrian = 5,
  Vegetation = 6
};

// A spinning-LiDAR scan of a street (ground, walls, cars, poles, pedestrians, trees and bushes),
// in the sensor frame, with intensity and `ring` and `semantic` (StreetClass) extra fields.
// Foliage is porous: a ray through a crown or a bush stops somewhere inside it or, through a
// gap, goes on, as a real sensor's returns scatter in leaves.
PointCloud generate_street_scene(const StreetSceneParams& params);

// A drive down the street: the sensor moves `speed` metres a frame on average along it from
// x = start_x, faster and slower by `speed_variation` (a 40-frame period), weaving `weave`
// metres across its lane (a 60-frame period) and turned along its path, at its height above
// the (level or hilly) road; a `dropout` share of returns is lost at random. The street is the
// same in every frame (about 180 m of it has buildings: 0.6 m a frame covers 200 frames).
struct StreetDriveParams {
  StreetSceneParams scene;
  int frames = 100;
  double speed = 1.0;  // metres a frame (10 m/s at 10 Hz)
  double speed_variation = 0.3;
  double start_x = -45;
  double weave = 1.0;
  double dropout = 0.01;
};

// Frame `frame` (0 .. frames - 1) in its sensor's frame and, in `pose`, that sensor's pose in
// the first frame's (row-major 4 x 4, as KITTI's ground truth).
PointCloud generate_street_frame(const StreetDriveParams& params, int frame,
                                 std::array<double, 16>* pose);

struct ScanPairParams {
  std::uint64_t seed = 1;
  int samples = 60000;    // surface samples before visibility culling
  double yaw_deg = 25.0;  // true rotation between the two scans
  std::array<double, 3> translation{0.05, -0.03, 0.02};
  double noise = 0.0005;
};

struct ScanPair {
  PointCloud source;  // second view, in its own frame
  PointCloud target;  // first view
  // Row-major 4x4 transform taking source points onto the target: p_t = T * p_s.
  std::array<double, 16> source_to_target{};
};

// Two partially overlapping views of one object (a sphere on a box beside a cylinder).
ScanPair generate_scan_pair(const ScanPairParams& params);

// The clustering paper's synthetic clouds (Table 2): `clusters` clusters of size/clusters
// points each; every point has about `degree` neighbours closer than `tolerance`; consecutive
// members of a cluster lie `point_distance` indices apart (1: each cluster contiguous in the
// array; = clusters: fully interleaved).
struct ClusterCloudParams {
  std::size_t size = 262144;
  std::size_t clusters = 128;
  std::size_t degree = 32;
  std::size_t point_distance = 4;
  float tolerance = 1.0f;
  std::uint64_t seed = 1;
};
PointCloud generate_cluster_cloud(const ClusterCloudParams& params);

// A depth image whose columns are piecewise linear with slope changes, steps, Gaussian noise
// (metres) and a fraction of invalid pixels, like a stereo depth map: test and benchmark input
// for column segmentation.
DepthImage generate_depth_columns(std::uint32_t width, std::uint32_t height, std::uint64_t seed,
                                  double noise = 0.03, double invalid = 0.01);

// A tiny, portable random source (splitmix64-seeded xoshiro256**).
class Random {
 public:
  explicit Random(std::uint64_t seed);
  std::uint64_t next_u64();
  double uniform();                      // [0, 1)
  double uniform(double lo, double hi);  // [lo, hi)
  double normal();                       // mean 0, sd 1 (Box-Muller)

 private:
  std::uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace cumulus
