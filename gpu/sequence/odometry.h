#pragma once
// LiDAR odometry: each scan, thinned by a voxel grid, registered by ICP (any method) against
// the last scan or a local map of the last few, from a constant-velocity prediction of its
// pose. Poses are sensor to world, the first scan's frame being the world.
#include <deque>
#include <optional>
#include <string_view>
#include <vector>

#include "filter/filter.h"
#include "ground/range_ground.h"
#include "registration/icp.h"
#include "sequence/trajectory.h"

namespace cumulus {

enum class OdometryTarget { Scan, LocalMap };
// "scan-to-map" or "scan-to-scan", as the CLI and the Python module name the targets.
std::optional<OdometryTarget> parse_odometry_target(std::string_view name);

// Whether each scan's ground (the range image's) goes into ICP: `Auto` leaves it out for point to
// point only (OdometryParams::scan_ground says why).
enum class ScanGround { Auto, Keep, Remove };
// "auto", "keep" or "remove".
std::optional<ScanGround> parse_scan_ground(std::string_view name);

struct OdometryParams {
  // Each scan's voxel grid before ICP (metres). Centroids on a lattice fixed to the sensor pull
  // point-to-point ICP towards no motion along walls; on generated drives 0.25 m halved the
  // drift of 0.5 m (docs/benchmarks.md).
  float voxel = 0.25f;
  double max_correspondence_distance = 1.0;  // metres: pairs farther apart are ignored
  int max_iterations = 30;
  // Point to plane on the map's normals (estimated every scan from `normals_k` neighbours): on
  // the generated 200-frame drives it ended within 0.73 % (level) and 0.27 % (hilly) of the
  // path where point to point ended 1.53 % and 1.56 % off (docs/benchmarks.md).
  IcpMetric metric = IcpMetric::PointToPlane;
  int normals_k = 20;
  GicpParams gicp;  // with the GICP metric (PCL's defaults)
  // A robust kernel for the ICP (none by default) and its scale in metres.
  RobustKernel kernel = RobustKernel::None;
  double kernel_scale = 0;
  OdometryTarget target = OdometryTarget::LocalMap;
  int map_scans = 10;        // the local map: the last this many scans, in the world frame
  float map_voxel = 0.5f;    // and thinned by this voxel grid
  bool motion_prior = true;  // start from the last motion repeated (else from the last pose)
  // The ground's rings move with the sensor, so point-to-point pairs on them hold ICP near zero
  // motion: for point to point the ground is left out. A plane's residual lies along its normal,
  // blind to that motion along the ground, and the ground is what holds height, roll and pitch:
  // point to plane and GICP keep it (generated 200-frame drives with trees, PCL's chain: level
  // end drift 2.03 % of the path without the ground, 1.00 % with; point to point with it, 13 %;
  // docs/benchmarks.md).
  ScanGround scan_ground = ScanGround::Auto;
  RangeGroundParams ground;  // how the ground is found where it is left out
};

// Whether these parameters leave each scan's ground out of ICP.
bool leaves_ground_out(const OdometryParams& params);

// InvalidArgument naming the parameter for a voxel, distance or map voxel that is not a
// positive finite number, iterations outside 1..1000 or map scans outside 1..1000.
void validate(const OdometryParams& params);

struct OdometryStep {
  Pose pose = Pose::Identity();
  std::size_t points = 0;  // after the voxel grid
  std::size_t correspondences = 0;
  int iterations = 0;
  double fitness = 0;
  bool converged = true;
  std::size_t ground_points = 0;
  double ground_ms = 0, filter_ms = 0, icp_ms = 0, map_ms = 0, total_ms = 0;
};

class Odometry {
 public:
  // The voxel grids run with `filter`, ICP with `method` (the GPU ones throw GpuError without
  // a GPU, on the first scan).
  Odometry(const OdometryParams& params, IcpMethod method, FilterMethod filter);

  // Registers the next scan; the first is the world's origin. Error naming the scan for one
  // with fewer than 3 finite points after the voxel grid; ICP that finds no correspondences
  // keeps the predicted pose and says so (converged false).
  OdometryStep add(const PointCloud& scan);
  // A frame that could not be read: its pose is the prediction, and the map stays as it was.
  Pose skip();
  const Trajectory& poses() const { return poses_; }

 private:
  Pose predicted() const;
  bool has_motion() const;  // whether the prediction carries a motion

  OdometryParams params_;
  IcpMethod method_;
  FilterMethod filter_;
  Trajectory poses_;
  PointCloud last_scan_;               // the previous thinned scan, in its own frame
  Pose last_pose_ = Pose::Identity();  // and its pose
  std::deque<PointCloud> scans_;       // the local map's scans, in the world frame
  PointCloud map_;
};

}  // namespace cumulus
