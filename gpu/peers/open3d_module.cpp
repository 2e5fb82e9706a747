// Open3D's calls on plain arrays (open3d_module.h): the module the peer loads at run time.
#include "peers/open3d_module.h"

#include <open3d/Open3DConfig.h>
#include <open3d/geometry/BoundingVolume.h>
#include <open3d/geometry/KDTreeFlann.h>
#include <open3d/geometry/KDTreeSearchParam.h>
#include <open3d/geometry/PointCloud.h>
#include <open3d/pipelines/registration/CorrespondenceChecker.h>
#include <open3d/pipelines/registration/Feature.h>
#include <open3d/pipelines/registration/Registration.h>
#include <open3d/pipelines/registration/TransformationEstimation.h>
#include <open3d/utility/Logging.h>
#include <open3d/utility/Random.h>

#include <memory>

namespace cumulus::open3d_peer {

namespace {

namespace o3g = open3d::geometry;
namespace o3r = open3d::pipelines::registration;

std::vector<Eigen::Vector3d> vectors(const std::vector<double>& xyz) {
  std::vector<Eigen::Vector3d> v(xyz.size() / 3);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = {xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2]};
  return v;
}

o3g::PointCloud cloud(const std::vector<double>& xyz) {
  // Open3D prints warnings (an empty cloud, a failed plane) on stdout; the peer reports them.
  open3d::utility::SetVerbosityLevel(open3d::utility::VerbosityLevel::Error);
  o3g::PointCloud c;
  c.points_ = vectors(xyz);
  return c;
}

std::unique_ptr<o3g::KDTreeSearchParam> search(int k, double radius) {
  if (k > 0) return std::make_unique<o3g::KDTreeSearchParamKNN>(k);
  return std::make_unique<o3g::KDTreeSearchParamRadius>(radius);
}

std::vector<int> dbscan(const std::vector<double>& xyz, double eps, std::size_t min_points) {
  return cloud(xyz).ClusterDBSCAN(eps, min_points, false);
}

std::vector<double> voxel_down_sample(const std::vector<double>& xyz, double leaf) {
  const auto down = cloud(xyz).VoxelDownSample(leaf);
  std::vector<double> out;
  out.reserve(down->points_.size() * 3);
  for (const auto& p : down->points_)
    out.insert(out.end(), {p.x(), p.y(), p.z()});
  return out;
}

std::vector<std::size_t> statistical_outliers(const std::vector<double>& xyz, std::size_t k,
                                              double std_ratio) {
  return std::get<1>(cloud(xyz).RemoveStatisticalOutliers(k, std_ratio, false));
}

std::vector<std::size_t> radius_outliers(const std::vector<double>& xyz, std::size_t nb,
                                         double radius) {
  return std::get<1>(cloud(xyz).RemoveRadiusOutliers(nb, radius, false));
}

std::vector<std::size_t> crop(const std::vector<double>& xyz, const std::array<double, 6>& b) {
  const o3g::AxisAlignedBoundingBox box({b[0], b[1], b[2]}, {b[3], b[4], b[5]});
  return box.GetPointIndicesWithinBoundingBox(vectors(xyz));
}

std::array<double, 4> segment_plane(const std::vector<double>& xyz, double threshold,
                                    int iterations, int seed, std::vector<std::size_t>& inliers) {
  const o3g::PointCloud c = cloud(xyz);
  open3d::utility::random::Seed(seed);
  const auto [model, in] = c.SegmentPlane(threshold, 3, iterations);
  inliers = in;
  return {model[0], model[1], model[2], model[3]};
}

ModuleIcp icp(const std::vector<double>& source, const std::vector<double>& target,
              const std::vector<double>& target_normals, double max_distance,
              const std::array<double, 16>& initial, double relative_fitness, double relative_rmse,
              int max_iterations) {
  const o3g::PointCloud s = cloud(source);
  o3g::PointCloud t = cloud(target);
  t.normals_ = vectors(target_normals);
  const Eigen::Matrix4d init = Eigen::Map<const Eigen::Matrix4d>(initial.data());
  const o3r::ICPConvergenceCriteria criteria(relative_fitness, relative_rmse, max_iterations);
  const o3r::RegistrationResult r =
      target_normals.empty()
          ? o3r::RegistrationICP(s, t, max_distance, init,
                                 o3r::TransformationEstimationPointToPoint(false), criteria)
          : o3r::RegistrationICP(s, t, max_distance, init,
                                 o3r::TransformationEstimationPointToPlane(), criteria);
  ModuleIcp out;
  Eigen::Map<Eigen::Matrix4d>(out.transform.data()) = r.transformation_;
  out.fitness = r.fitness_;
  out.inlier_rmse = r.inlier_rmse_;
  return out;
}

std::vector<double> fpfh(const std::vector<double>& xyz, std::vector<double>& normals, int k,
                         double radius, int normals_k, double normals_radius,
                         const std::array<double, 3>& viewpoint) {
  o3g::PointCloud c = cloud(xyz);
  if (normals.empty()) {
    c.EstimateNormals(*search(normals_k, normals_radius), false);
    c.OrientNormalsTowardsCameraLocation({viewpoint[0], viewpoint[1], viewpoint[2]});
    normals.clear();
    for (const auto& n : c.normals_)
      normals.insert(normals.end(), {n.x(), n.y(), n.z()});
  } else {
    c.normals_ = vectors(normals);
  }
  const auto f = o3r::ComputeFPFHFeature(c, *search(k, radius));
  return {f->data_.data(), f->data_.data() + f->data_.size()};  // column per point
}

void knn(const std::vector<double>& targets, const std::vector<double>& queries, int k,
         std::vector<int>& indices, std::vector<double>& sq_distances) {
  const o3g::PointCloud t = cloud(targets);  // the tree may keep pointing into it
  const o3g::KDTreeFlann tree(t);
  const auto q = vectors(queries);
  indices.assign(q.size() * std::size_t(k), -1);
  sq_distances.assign(q.size() * std::size_t(k), -1);
  std::vector<int> idx;
  std::vector<double> d2;
  for (std::size_t i = 0; i < q.size(); ++i) {
    const int found = tree.SearchKNN(q[i], k, idx, d2);
    for (int j = 0; j < found && j < k; ++j) {
      indices[i * std::size_t(k) + std::size_t(j)] = idx[std::size_t(j)];
      sq_distances[i * std::size_t(k) + std::size_t(j)] = d2[std::size_t(j)];
    }
  }
}

std::size_t boxes(const std::vector<double>& xyz,
                  const std::vector<std::vector<std::size_t>>& groups) {
  const o3g::PointCloud c = cloud(xyz);
  std::size_t n = 0;
  for (const auto& g : groups)
    n += c.SelectByIndex(g)->GetAxisAlignedBoundingBox().Volume() >= 0;
  return n;
}

ModuleIcp ransac(const std::vector<double>& source, const std::vector<double>& target,
                 const std::vector<double>& source_fpfh, const std::vector<double>& target_fpfh,
                 double max_distance, double similarity, int iterations, int seed) {
  const o3g::PointCloud s = cloud(source), t = cloud(target);
  const auto feature = [](const std::vector<double>& rows) {
    o3r::Feature f;
    f.Resize(33, int(rows.size() / 33));
    f.data_ = Eigen::Map<const Eigen::MatrixXd>(rows.data(), 33, Eigen::Index(rows.size() / 33));
    return f;
  };
  const o3r::Feature fs = feature(source_fpfh), ft = feature(target_fpfh);
  open3d::utility::random::Seed(seed);
  const o3r::CorrespondenceCheckerBasedOnEdgeLength edges(similarity);
  const o3r::CorrespondenceCheckerBasedOnDistance distance(max_distance);
  const o3r::RegistrationResult r = o3r::RegistrationRANSACBasedOnFeatureMatching(
      s, t, fs, ft, true, max_distance, o3r::TransformationEstimationPointToPoint(false), 3,
      {edges, distance}, o3r::RANSACConvergenceCriteria(iterations, 0.999));
  ModuleIcp out;
  Eigen::Map<Eigen::Matrix4d>(out.transform.data()) = r.transformation_;
  out.fitness = r.fitness_;
  out.inlier_rmse = r.inlier_rmse_;
  return out;
}

const Module kModule{kModuleAbi,
                     "Open3D " OPEN3D_VERSION,
                     dbscan,
                     voxel_down_sample,
                     statistical_outliers,
                     radius_outliers,
                     crop,
                     segment_plane,
                     icp,
                     fpfh,
                     knn,
                     boxes,
                     ransac};

}  // namespace

}  // namespace cumulus::open3d_peer

extern "C" const cumulus::open3d_peer::Module* cumulus_open3d_module() {
  return &cumulus::open3d_peer::kModule;
}
