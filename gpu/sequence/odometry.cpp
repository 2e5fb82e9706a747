#include "sequence/odometry.h"

#include <cmath>

#include "core/error.h"

namespace cumulus {

std::optional<OdometryTarget> parse_odometry_target(std::string_view name) {
  if (name == "scan-to-map") return OdometryTarget::LocalMap;
  if (name == "scan-to-scan") return OdometryTarget::Scan;
  return std::nullopt;
}

std::optional<ScanGround> parse_scan_ground(std::string_view name) {
  if (name == "auto") return ScanGround::Auto;
  if (name == "keep") return ScanGround::Keep;
  if (name == "remove") return ScanGround::Remove;
  return std::nullopt;
}

bool leaves_ground_out(const OdometryParams& p) {
  return p.scan_ground == ScanGround::Remove ||
         (p.scan_ground == ScanGround::Auto && p.metric == IcpMetric::PointToPoint);
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw InvalidArgument("odometry: " + what);
}

PointCloud points_only(const PointCloud& c) {
  PointCloud out;
  out.points = c.points;
  out.origin = c.origin;
  out.width = std::uint32_t(c.size());
  return out;
}

}  // namespace

void validate(const OdometryParams& p) {
  require(p.voxel > 0 && std::isfinite(p.voxel), "the voxel must be a positive number of metres");
  require(p.map_voxel > 0 && std::isfinite(p.map_voxel),
          "the map's voxel must be a positive number of metres");
  require(p.max_correspondence_distance > 0 && std::isfinite(p.max_correspondence_distance),
          "the correspondence distance must be a positive number of metres");
  require(p.max_iterations >= 1 && p.max_iterations <= 1000, "iterations must be 1 to 1000");
  require(p.map_scans >= 1 && p.map_scans <= 1000, "the map takes 1 to 1000 scans");
  require(p.normals_k >= 3 && p.normals_k <= 1000, "the map's normals take 3 to 1000 neighbours");
}

Odometry::Odometry(const OdometryParams& params, IcpMethod method, FilterMethod filter)
    : params_(params), method_(method), filter_(filter) {
  validate(params_);
}

Pose Odometry::predicted() const {
  const std::size_t n = poses_.size();
  if (n == 0) return Pose::Identity();
  // Constant velocity: the last motion once more.
  if (params_.motion_prior && n >= 2)
    return poses_.back() * (poses_[n - 2].inverse() * poses_.back());
  return poses_.back();
}

bool Odometry::has_motion() const {
  return params_.motion_prior && poses_.size() >= 2;
}

Pose Odometry::skip() {
  poses_.push_back(predicted());
  return poses_.back();
}

OdometryStep Odometry::add(const PointCloud& scan) {
  WallTimer total;
  OdometryStep step;
  const std::size_t frame = poses_.size();
  WallTimer t;
  // Only positions matter to ICP; the voxel grid then averages nothing else.
  PointCloud points = points_only(scan);
  if (leaves_ground_out(params_)) {
    const GroundResult g = segment_ground_range(
        points, params_.ground,
        filter_ == FilterMethod::Gpu ? RangeGroundMethod::Gpu : RangeGroundMethod::Cpu);
    step.ground_points = g.ground.size();
    points = gather_points(points, off_ground(points, g.ground));
    step.ground_ms = t.ms();
    t.reset();
  }
  const float leaf = params_.voxel;
  PointCloud thin = voxel_grid(points, VoxelGridParams{{leaf, leaf, leaf}, 0}, filter_).cloud;
  thin.origin = {0, 0, 0};  // the sensor's frame: odometry works in it
  step.filter_ms = t.ms();
  step.points = thin.size() - thin.count_non_finite();
  if (step.points < 3)
    throw Error("odometry: scan " + std::to_string(frame) + " has " + std::to_string(step.points) +
                " finite points after the voxel grid");
  if (frame == 0) {
    step.pose = Pose::Identity();
  } else {
    const Pose guess = predicted();
    IcpParams icp_params;
    icp_params.max_correspondence_distance = params_.max_correspondence_distance;
    icp_params.criteria.max_iterations = params_.max_iterations;
    icp_params.criteria.transformation_epsilon = 1e-8;
    icp_params.criteria.fitness_epsilon = 1e-6;
    icp_params.metric = params_.metric;
    icp_params.normals_k = params_.normals_k;
    icp_params.gicp = params_.gicp;
    icp_params.kernel = params_.kernel;
    icp_params.kernel_scale = params_.kernel_scale;
    t.reset();
    // In the target's frame: the last scan's, or the world (the map).
    const bool to_scan = params_.target == OdometryTarget::Scan;
    const PointCloud& target = to_scan ? last_scan_ : map_;
    const Pose base = to_scan ? last_pose_ : Pose::Identity();
    icp_params.initial = base.inverse() * guess;
    IcpResult r;
    if (!has_motion()) {
      // No motion known yet (the second scan, or after a standstill guess): a first pass
      // with three times the distance finds a motion the prediction cannot give.
      IcpParams coarse = icp_params;
      coarse.max_correspondence_distance *= 3;
      icp_params.initial = icp(thin, target, coarse, method_).transform;
    }
    r = icp(thin, target, icp_params, method_);
    step.pose = base * r.transform;
    step.icp_ms = t.ms();
    step.iterations = r.iterations;
    step.fitness = r.fitness;
    step.correspondences = r.history.empty() ? 0 : r.history.back().correspondences;
    step.converged = r.stop != IcpStop::NoCorrespondences;
    if (!step.converged) step.pose = guess;
  }
  poses_.push_back(step.pose);
  t.reset();
  if (params_.target == OdometryTarget::Scan) {
    last_scan_ = std::move(thin);
    last_pose_ = step.pose;
  } else {
    scans_.push_back(transformed(thin, step.pose));
    while (scans_.size() > std::size_t(params_.map_scans))
      scans_.pop_front();
    PointCloud all;
    for (const auto& s : scans_)
      all.points.insert(all.points.end(), s.points.begin(), s.points.end());
    all.width = std::uint32_t(all.size());
    const float m = params_.map_voxel;
    map_ = voxel_grid(all, VoxelGridParams{{m, m, m}, 0}, filter_).cloud;
  }
  step.map_ms = t.ms();
  step.total_ms = total.ms();
  return step;
}

}  // namespace cumulus
