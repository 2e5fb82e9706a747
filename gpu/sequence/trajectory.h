#pragma once
// Trajectories: poses (sensor to world, the first frame's sensor frame as the world) read and
// written in KITTI's format (each line a row-major 3 x 4 matrix) and TUM's (time, position,
// quaternion x y z w), and the errors of an estimate against ground truth as the KITTI and TUM
// benchmarks define them.
#include <Eigen/Core>
#include <Eigen/LU>

#include <string>
#include <vector>

namespace cumulus {

using Pose = Eigen::Matrix4d;
using Trajectory = std::vector<Pose>;

// IoError for an unreadable file; InvalidArgument naming the line for one that is not 12
// finite numbers or whose rotation is not a rotation (within 1e-3).
Trajectory read_kitti_poses(const std::string& path);
void save_kitti_poses(const std::string& path, const Trajectory& poses);
// `times` in seconds, one per pose (empty: the frame numbers).
void save_tum_poses(const std::string& path, const Trajectory& poses,
                    const std::vector<double>& times);
// A KITTI times.txt: one time in seconds a line.
std::vector<double> read_times(const std::string& path);

struct TrajectoryErrors {
  std::size_t frames = 0;
  double path_length = 0;  // of the ground truth, metres
  // Absolute trajectory error: RMSE of the positions after the rigid alignment (Horn/Umeyama,
  // no scale) of the estimate onto the ground truth; and its maximum.
  double ate_rmse = 0, ate_max = 0;
  // Relative pose error over one frame: RMSE of the translation (m) and rotation (degrees)
  // errors of consecutive motions.
  double rpe_translation = 0, rpe_rotation_deg = 0;
  // KITTI's drift: over every segment of the lengths below (from every 10th frame), the
  // relative pose error's translation as % of the length and rotation in degrees per metre,
  // averaged. Lengths 100, 200, ..., 800 m as KITTI's devkit, or for a path under 100 m a
  // tenth, two tenths, ... eight tenths of it. 0 when no segment fits.
  double drift_percent = 0, drift_deg_per_m = 0;
  std::vector<double> segment_lengths;
  // The drift of every frame: its position error (unaligned, the first poses equal) as % of
  // the path travelled to it (0 for the first frame), for a drift plot.
  std::vector<double> drift_by_frame;
  // The ground truth's path length to every frame (metres, 0 for the first): the plot's x.
  std::vector<double> distance_by_frame;
};

// InvalidArgument when the two differ in length or have fewer than 2 poses.
TrajectoryErrors trajectory_errors(const Trajectory& estimate, const Trajectory& truth);

// Relative to the first pose: every pose premultiplied by the inverse of the first.
Trajectory relative_to_first(const Trajectory& poses);

}  // namespace cumulus
