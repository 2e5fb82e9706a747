#pragma once
// Scan poses of the Stanford 3D Scanning Repository's .conf files ("bmesh FILE tx ty tz qx qy
// qz qw"), which place each range scan of a model in the model's frame.
#include <Eigen/Core>

#include <optional>
#include <string>

namespace cumulus {

// The pose of `scan` (a file name as the .conf lists it) as a 4x4 matrix: the scan's points map
// into the common frame as p' = R(q)^T p + t (checked on the bunny: this puts bun045 onto
// bun000 with a median nearest-neighbour distance of 0.33 mm). nullopt when the file or the scan
// is not there.
std::optional<Eigen::Matrix4d> read_scan_pose(const std::string& conf, const std::string& scan);

// The transform taking scan `from`'s points onto scan `to`'s: inverse(pose(to)) * pose(from).
std::optional<Eigen::Matrix4d> relative_scan_pose(const std::string& conf, const std::string& from,
                                                  const std::string& to);

}  // namespace cumulus
