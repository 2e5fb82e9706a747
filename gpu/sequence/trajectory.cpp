#include "sequence/trajectory.h"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"

namespace cumulus {

namespace {

double angle_deg(const Eigen::Matrix3d& r) {
  const double c = std::clamp((r.trace() - 1) / 2, -1.0, 1.0);
  return std::acos(c) * 180 / std::numbers::pi;
}

std::vector<std::string> lines_of(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw IoError(path, std::string("cannot read this ") + what);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// Distances travelled along the truth up to each frame.
std::vector<double> distances(const Trajectory& t) {
  std::vector<double> d(t.size(), 0);
  for (std::size_t i = 1; i < t.size(); ++i)
    d[i] = d[i - 1] + (t[i].block<3, 1>(0, 3) - t[i - 1].block<3, 1>(0, 3)).norm();
  return d;
}

}  // namespace

Trajectory read_kitti_poses(const std::string& path) {
  Trajectory poses;
  int number = 0;
  for (const auto& line : lines_of(path, "poses file")) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream s(line);
    Pose p = Pose::Identity();
    int k = 0;
    for (double v; k < 12 && s >> v; ++k)
      p(k / 4, k % 4) = v;
    std::string rest;
    const bool finite = p.allFinite();
    if (k != 12 || (s >> rest) || !finite)
      throw InvalidArgument(path + ", line " + std::to_string(number) +
                            ": a KITTI pose is 12 finite numbers (a row-major 3 x 4 matrix)");
    const Eigen::Matrix3d r = p.block<3, 3>(0, 0);
    if (!(r.transpose() * r).isIdentity(1e-3) || !(std::abs(r.determinant() - 1) < 1e-3))
      throw InvalidArgument(path + ", line " + std::to_string(number) +
                            ": the 3 x 3 part is not a rotation");
    poses.push_back(p);
  }
  return poses;
}

void save_kitti_poses(const std::string& path, const Trajectory& poses) {
  AtomicOstream out(path);
  out << std::setprecision(9);
  for (const auto& p : poses)
    for (int k = 0; k < 12; ++k)
      out << p(k / 4, k % 4) << (k == 11 ? '\n' : ' ');
  out.commit();
}

void save_tum_poses(const std::string& path, const Trajectory& poses,
                    const std::vector<double>& times) {
  if (!times.empty() && times.size() != poses.size())
    throw InvalidArgument("TUM poses: " + std::to_string(times.size()) + " times for " +
                          std::to_string(poses.size()) + " poses");
  AtomicOstream out(path);
  out << "# timestamp tx ty tz qx qy qz qw\n" << std::setprecision(9);
  for (std::size_t i = 0; i < poses.size(); ++i) {
    const Eigen::Quaterniond q(Eigen::Matrix3d(poses[i].block<3, 3>(0, 0)));
    out << (times.empty() ? double(i) : times[i]) << ' ' << poses[i](0, 3) << ' ' << poses[i](1, 3)
        << ' ' << poses[i](2, 3) << ' ' << q.x() << ' ' << q.y() << ' ' << q.z() << ' ' << q.w()
        << '\n';
  }
  out.commit();
}

std::vector<double> read_times(const std::string& path) {
  std::vector<double> times;
  int number = 0;
  for (const auto& line : lines_of(path, "times file")) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream s(line);
    double t = 0;
    if (!(s >> t) || !std::isfinite(t))
      throw InvalidArgument(path + ", line " + std::to_string(number) + ": not a time");
    times.push_back(t);
  }
  return times;
}

Trajectory relative_to_first(const Trajectory& poses) {
  Trajectory out;
  if (poses.empty()) return out;
  const Pose inv = poses.front().inverse();
  for (const auto& p : poses)
    out.push_back(inv * p);
  return out;
}

TrajectoryErrors trajectory_errors(const Trajectory& est, const Trajectory& truth) {
  if (est.size() != truth.size())
    throw InvalidArgument("trajectory errors: " + std::to_string(est.size()) +
                          " estimated poses against " + std::to_string(truth.size()) +
                          " ground-truth poses");
  if (est.size() < 2) throw InvalidArgument("trajectory errors need at least 2 poses");
  TrajectoryErrors e;
  const std::size_t n = est.size();
  e.frames = n;
  const std::vector<double> dist = distances(truth);
  e.path_length = dist.back();
  // ATE after the rigid alignment.
  Eigen::Matrix3Xd a(3, n), b(3, n);
  for (std::size_t i = 0; i < n; ++i) {
    a.col(Eigen::Index(i)) = est[i].block<3, 1>(0, 3);
    b.col(Eigen::Index(i)) = truth[i].block<3, 1>(0, 3);
  }
  const Eigen::Matrix4d align = Eigen::umeyama(a, b, false);
  double sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Eigen::Vector3d p =
        align.block<3, 3>(0, 0) * a.col(Eigen::Index(i)) + align.block<3, 1>(0, 3);
    const double d = (p - b.col(Eigen::Index(i))).norm();
    sq += d * d;
    e.ate_max = std::max(e.ate_max, d);
  }
  e.ate_rmse = std::sqrt(sq / double(n));
  // RPE over one frame.
  double st = 0, sr = 0;
  for (std::size_t i = 1; i < n; ++i) {
    const Pose err =
        (truth[i - 1].inverse() * truth[i]).inverse() * (est[i - 1].inverse() * est[i]);
    st += err.block<3, 1>(0, 3).squaredNorm();
    const double r = angle_deg(err.block<3, 3>(0, 0));
    sr += r * r;
  }
  e.rpe_translation = std::sqrt(st / double(n - 1));
  e.rpe_rotation_deg = std::sqrt(sr / double(n - 1));
  // KITTI's segment drift.
  if (e.path_length >= 100)
    for (int k = 1; k <= 8; ++k)
      e.segment_lengths.push_back(100.0 * k);
  else if (e.path_length > 0)
    for (int k = 1; k <= 8; ++k)
      e.segment_lengths.push_back(e.path_length * k / 10);
  double t_sum = 0, r_sum = 0;
  std::size_t segments = 0;
  for (std::size_t first = 0; first < n; first += 10)
    for (const double len : e.segment_lengths) {
      std::size_t last = first;
      while (last < n && dist[last] - dist[first] < len)
        ++last;
      if (last >= n) continue;
      const Pose err =
          (truth[first].inverse() * truth[last]).inverse() * (est[first].inverse() * est[last]);
      t_sum += err.block<3, 1>(0, 3).norm() / len;
      r_sum += angle_deg(err.block<3, 3>(0, 0)) / len;
      ++segments;
    }
  if (segments) {
    e.drift_percent = 100 * t_sum / double(segments);
    e.drift_deg_per_m = r_sum / double(segments);
  }
  const Trajectory est0 = relative_to_first(est), truth0 = relative_to_first(truth);
  e.distance_by_frame.assign(dist.begin(), dist.end());
  e.drift_by_frame.resize(n, 0);
  for (std::size_t i = 1; i < n; ++i)
    if (dist[i] > 0)
      e.drift_by_frame[i] =
          100 * (est0[i].block<3, 1>(0, 3) - truth0[i].block<3, 1>(0, 3)).norm() / dist[i];
  return e;
}

}  // namespace cumulus
