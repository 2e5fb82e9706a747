#include "io/scan_poses.h"

#include <Eigen/Geometry>
#include <Eigen/LU>
#include <fstream>
#include <sstream>

namespace cumulus {

std::optional<Eigen::Matrix4d> read_scan_pose(const std::string& conf, const std::string& scan) {
  std::ifstream in(conf);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::string tag, name;
    double t[3], q[4];
    if (!(ss >> tag >> name >> t[0] >> t[1] >> t[2] >> q[0] >> q[1] >> q[2] >> q[3]) ||
        tag != "bmesh" || name != scan)
      continue;
    Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
    m.topLeftCorner<3, 3>() =
        Eigen::Quaterniond(q[3], q[0], q[1], q[2]).toRotationMatrix().transpose();
    m.topRightCorner<3, 1>() = Eigen::Vector3d(t[0], t[1], t[2]);
    return m;
  }
  return std::nullopt;
}

std::optional<Eigen::Matrix4d> relative_scan_pose(const std::string& conf, const std::string& from,
                                                  const std::string& to) {
  const auto a = read_scan_pose(conf, from), b = read_scan_pose(conf, to);
  if (!a || !b) return std::nullopt;
  return Eigen::Matrix4d(b->inverse() * *a);
}

}  // namespace cumulus
