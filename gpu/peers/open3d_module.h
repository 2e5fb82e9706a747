#pragma once
// What the Open3D module (open3d_module.cpp, built as libcumulus_open3d.so where libopen3d-dev
// is found) exports: Open3D's calls on plain arrays, so that the module needs nothing of ours and
// nothing of ours needs Open3D. open3d_peer.cpp loads it at run time, which keeps Open3D out of
// the programs' link and out of the Debian package. Points are x, y, z triples in double.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

namespace cumulus::open3d_peer {

struct ModuleIcp {
  std::array<double, 16> transform{};  // column-major, as Eigen stores it
  double fitness = 0, inlier_rmse = 0;
};

struct Module {
  int abi;  // kModuleAbi of the build that made it: a stale module is refused
  const char* version;
  std::vector<int> (*dbscan)(const std::vector<double>& xyz, double eps, std::size_t min_points);
  std::vector<double> (*voxel_down_sample)(const std::vector<double>& xyz, double leaf);
  std::vector<std::size_t> (*statistical_outliers)(const std::vector<double>& xyz, std::size_t k,
                                                   double std_ratio);
  std::vector<std::size_t> (*radius_outliers)(const std::vector<double>& xyz, std::size_t nb,
                                              double radius);
  std::vector<std::size_t> (*crop)(const std::vector<double>& xyz,
                                   const std::array<double, 6>& box);
  // The plane's a, b, c, d, and its inliers (empty when none is found).
  std::array<double, 4> (*segment_plane)(const std::vector<double>& xyz, double threshold,
                                         int iterations, int seed,
                                         std::vector<std::size_t>& inliers);
  ModuleIcp (*icp)(const std::vector<double>& source, const std::vector<double>& target,
                   const std::vector<double>& target_normals,  // empty: point to point
                   double max_distance, const std::array<double, 16>& initial,
                   double relative_fitness, double relative_rmse, int max_iterations);
  // Normals given (3 per point), or estimated (normals_k or normals_radius) and turned towards
  // the viewpoint, written back into `normals`; 33 values per point.
  std::vector<double> (*fpfh)(const std::vector<double>& xyz, std::vector<double>& normals, int k,
                              double radius, int normals_k, double normals_radius,
                              const std::array<double, 3>& viewpoint);
  void (*knn)(const std::vector<double>& targets, const std::vector<double>& queries, int k,
              std::vector<int>& indices, std::vector<double>& sq_distances);
  // An axis-aligned box per group of point indices; the boxes' count.
  std::size_t (*boxes)(const std::vector<double>& xyz,
                       const std::vector<std::vector<std::size_t>>& groups);
  // RegistrationRANSACBasedOnFeatureMatching on keypoints and their FPFH (33 per point):
  // mutual filter, three-point samples, edge-length and distance checkers, seeded. fitness is
  // Open3D's (the share of source points with a target within the distance).
  ModuleIcp (*ransac)(const std::vector<double>& source, const std::vector<double>& target,
                      const std::vector<double>& source_fpfh,
                      const std::vector<double>& target_fpfh, double max_distance,
                      double similarity, int iterations, int seed);
};

constexpr int kModuleAbi = 2;

}  // namespace cumulus::open3d_peer

extern "C" const cumulus::open3d_peer::Module* cumulus_open3d_module();
