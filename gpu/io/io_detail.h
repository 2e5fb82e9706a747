#pragma once
// Helpers shared by the loaders and writers; not part of the public interface.
#include <cstdint>
#include <string>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus::detail {

// Throws IoError unless `path` is a readable, non-empty regular file; returns its size.
std::uintmax_t require_readable_file(const std::string& path);
// Fills width/height for unorganized clouds and checks attribute lengths.
void finish_cloud(const std::string& path, PointCloud& cloud);
// Chooses the local origin from double-precision world coordinates (x y z per point).
void set_positions_from_world(PointCloud& cloud, const std::vector<double>& xyz);
std::vector<double> world_positions(const PointCloud& cloud);
bool has_origin(const PointCloud& cloud);
// How far writing `cloud` as LAS moves its farthest-moved point (its coordinates are rounded to
// the grid of `scale`, the x scale, set here).
double las_rounding(const std::string& path, const PointCloud& cloud, double& scale);

}  // namespace cumulus::detail
