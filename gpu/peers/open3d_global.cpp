// Global registration in Open3D's calls (open3d_peer.h), as Open3D's own tutorial chains them:
// down-sample, FPFH, RANSAC on feature matches, ICP.
#include "core/error.h"
#include "features/features.h"
#include "peers/open3d_peer.h"

namespace cumulus::open3d_peer {

GlobalResult global_registration(const PointCloud& source, const PointCloud& target,
                                 const GlobalParams& params) {
  validate(params);
  if (!available()) throw Error("Open3D is not available: " + version());
  const WallTimer total;
  WallTimer stage;
  GlobalResult r;
  r.method = "open3d";
  r.hypotheses = params.hypotheses;
  r.voxel = global_voxel(params, target);
  if (!(r.voxel > 0)) throw InvalidArgument("the target has no extent to derive a voxel from");
  VoxelGridParams grid;
  grid.leaf = {float(r.voxel), float(r.voxel), float(r.voxel)};
  r.source_keypoints = voxel_grid(source, grid).cloud;
  r.target_keypoints = voxel_grid(target, grid).cloud;
  r.stages.emplace_back("keypoints", stage.ms());
  stage.reset();
  const auto describe = [&](const PointCloud& c) {
    FeatureParams fp;
    fp.neighbourhood = Neighbourhood::within(float(params.feature_radius * r.voxel));
    fp.normals.neighbourhood = Neighbourhood::within(float(params.normal_radius * r.voxel));
    double sum[3] = {0, 0, 0};
    for (const auto& p : c.points) {
      sum[0] += p.x;
      sum[1] += p.y;
      sum[2] += p.z;
    }
    for (std::size_t d = 0; d < 3; ++d)
      fp.normals.viewpoint[d] = c.origin[d] + sum[d] / double(std::max<std::size_t>(c.size(), 1));
    return fpfh(c, fp);
  };
  const FeatureResult fs = describe(r.source_keypoints), ft = describe(r.target_keypoints);
  r.stages.emplace_back("features", stage.ms());
  stage.reset();
  // The source's keypoints in the target's local frame, where the transform is found.
  std::vector<Point3f> s_kp(r.source_keypoints.size());
  const double shift[3] = {source.origin[0] - target.origin[0], source.origin[1] - target.origin[1],
                           source.origin[2] - target.origin[2]};
  for (std::size_t i = 0; i < s_kp.size(); ++i) {
    const Point3f& p = r.source_keypoints.points[i];
    s_kp[i] = {float(p.x + shift[0]), float(p.y + shift[1]), float(p.z + shift[2])};
  }
  const double eps = params.inlier_distance * r.voxel;
  const RansacFit fit = ransac(s_kp, r.target_keypoints.points, fs, ft, eps, params.similarity,
                               params.hypotheses, int(params.seed));
  r.stages.emplace_back("ransac", stage.ms());
  stage.reset();
  Eigen::Matrix4d to_local = Eigen::Matrix4d::Identity(), to_world = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    to_local(a, 3) = -target.origin[std::size_t(a)];
    to_world(a, 3) = target.origin[std::size_t(a)];
  }
  r.coarse = to_world * fit.transform * to_local;
  r.transform = r.coarse;
  r.overlap = fit.fitness;
  r.inlier_rmse = fit.inlier_rmse;
  r.found = fit.fitness >= params.min_overlap && fit.fitness > 0;
  if (!r.found) {
    r.reason = "Open3D's RANSAC fit covers " + std::to_string(100 * fit.fitness) +
               " % of the source keypoints";
  } else if (params.refine) {
    IcpParams ip = params.refinement;
    if (ip.max_correspondence_distance == 0) ip.max_correspondence_distance = eps;
    ip.initial = r.coarse;
    NormalsResult normals;
    if (ip.metric == IcpMetric::PointToPlane) {
      NormalParams np;
      np.neighbourhood = Neighbourhood::nearest(ip.normals_k);
      normals = estimate_normals(target, np, FeatureMethod::Cpu);
    }
    r.refinement =
        icp(source, target, ip.metric == IcpMetric::PointToPlane ? &normals.normals : nullptr, ip);
    r.refined = true;
    r.transform = r.refinement.transform;
    r.stages.emplace_back("refinement", stage.ms());
  }
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus::open3d_peer
