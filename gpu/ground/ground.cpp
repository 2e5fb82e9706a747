// Ground plane: argument checks, PCL's refinement step, orientation and world coordinates, and
// dispatch to PCL (ground_pcl.cpp) or the GPU (cuda/).
#include "ground/ground.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"
#include "ground/cuda/ground_gpu.h"
#include "ground/ground_impl.h"
#include "ground/plane_refit.h"

namespace cumulus {

void validate(const GroundPlaneParams& p) {
  if (!(p.threshold > 0) || !std::isfinite(p.threshold))
    throw InvalidArgument(
        "ground plane: the distance threshold must be a positive number of "
        "metres, got " +
        std::to_string(p.threshold));
  if (p.max_iterations < 1 || p.max_iterations > 1000000)
    throw InvalidArgument("ground plane: iterations must be 1 to 1,000,000, got " +
                          std::to_string(p.max_iterations));
  if (p.axis) {
    const auto& a = *p.axis;
    const double norm = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    if (!(norm > 0) || !std::isfinite(norm))
      throw InvalidArgument("ground plane: the axis must be a finite, non-zero direction");
    if (!(p.max_angle_deg > 0) || !(p.max_angle_deg <= 90))
      throw InvalidArgument(
          "ground plane: the angle from the axis must be above 0 and at most "
          "90 degrees, got " +
          std::to_string(p.max_angle_deg));
  }
}

std::array<double, 4> world_plane(const LocalPlane& p, const std::array<double, 3>& origin) {
  return {p.n[0], p.n[1], p.n[2],
          p.d - (p.n[0] * origin[0] + p.n[1] * origin[1] + p.n[2] * origin[2])};
}

AxisRule axis_rule(const GroundPlaneParams& p) {
  AxisRule r;
  if (!p.axis) return r;
  const auto& a = *p.axis;
  const double norm = std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
  r.axis = {a[0] / norm, a[1] / norm, a[2] / norm};
  r.min_cos = std::cos(p.max_angle_deg * std::numbers::pi / 180.0);
  return r;
}

LocalPlane refit_plane(const InlierMoments& m, const std::array<double, 3>& ref,
                       const LocalPlane& hint) {
  const double sums[10] = {m.count, m.sum[0], m.sum[1], m.sum[2], m.sq[0],
                           m.sq[1], m.sq[2],  m.sq[3],  m.sq[4],  m.sq[5]};
  LocalPlane p;
  plane_refit::refit(sums, ref.data(), hint.n.data(), p.n.data(), &p.d);
  return p;
}

std::vector<std::int32_t> off_ground(const PointCloud& cloud,
                                     const std::vector<std::int32_t>& ground) {
  std::vector<std::int32_t> rest;
  rest.reserve(cloud.size() - std::min(cloud.size(), ground.size()));
  std::size_t at = 0;
  for (std::int32_t i = 0; i < std::int32_t(cloud.size()); ++i) {
    if (at < ground.size() && ground[at] == i)
      ++at;
    else if (is_finite(cloud.points[std::size_t(i)]))
      rest.push_back(i);
  }
  return rest;
}

GroundScore score_ground(const PointCloud& cloud, const std::vector<std::int32_t>& ground) {
  const ExtraField* truth = cloud.find_extra("semantic");
  if (!truth || truth->count != 1)
    throw InvalidArgument(
        "scoring ground needs a cloud with a `semantic` field (cumulus-cli "
        "generate street writes one)");
  std::vector<char> predicted(cloud.size(), 0);
  for (const auto i : ground)
    predicted[std::size_t(i)] = 1;
  GroundScore g;
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (!is_finite(cloud.points[i])) continue;
    const bool is_ground = truth->values[i] == 1.0f;
    if (predicted[i] && is_ground) ++g.true_positive;
    if (predicted[i] && !is_ground) ++g.false_positive;
    if (!predicted[i] && is_ground) ++g.false_negative;
  }
  const auto ratio = [](std::size_t a, std::size_t b) { return b ? double(a) / double(b) : 0.0; };
  g.precision = ratio(g.true_positive, g.true_positive + g.false_positive);
  g.recall = ratio(g.true_positive, g.true_positive + g.false_negative);
  g.f1 = g.precision + g.recall > 0 ? 2 * g.precision * g.recall / (g.precision + g.recall) : 0;
  return g;
}

double plane_angle_deg(const std::array<double, 4>& a, const std::array<double, 4>& b) {
  const double c = std::abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) /
                   std::sqrt((a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) *
                             (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]));
  return std::acos(std::min(1.0, c)) * 180.0 / std::numbers::pi;
}

double plane_distance(const std::array<double, 4>& q, const std::array<double, 3>& p) {
  return std::abs(q[0] * p[0] + q[1] * p[1] + q[2] * p[2] + q[3]) /
         std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
}

std::array<double, 3> world_centroid(const PointCloud& c, const std::vector<std::int32_t>& which) {
  std::array<double, 3> s{0, 0, 0};
  for (const auto i : which)
    for (std::size_t k = 0; k < 3; ++k)
      s[k] += double((&c.points[std::size_t(i)].x)[k]);
  for (std::size_t k = 0; k < 3; ++k)
    s[k] = s[k] / double(std::max<std::size_t>(which.size(), 1)) + c.origin[k];
  return s;
}

void finish_ground(PlaneFit fit, const std::array<double, 3>& origin,
                   const GroundPlaneParams& params, GroundResult& r) {
  if (!fit.found)
    throw Error(params.axis ? "ground plane: no plane found within " +
                                  std::to_string(params.max_angle_deg) +
                                  " degrees of the axis (every hypothesis was degenerate or "
                                  "tilted beyond it)"
                            : std::string("ground plane: no plane found (every hypothesis was "
                                          "degenerate: the points may all be on one line)"));
  // Up, or along the axis, whichever sign the method found.
  const AxisRule rule = axis_rule(params);
  LocalPlane p = fit.plane;
  if (p.n[0] * rule.axis[0] + p.n[1] * rule.axis[1] + p.n[2] * rule.axis[2] < 0) {
    for (double& v : p.n)
      v = -v;
    p.d = -p.d;
  }
  r.plane = world_plane(p, origin);
  r.ground = std::move(fit.inliers);
  r.hypotheses = fit.hypotheses;
}

GroundResult segment_ground_plane(const PointCloud& cloud, const GroundPlaneParams& params,
                                  GroundMethod method) {
  validate(params);
  WallTimer total;
  GroundResult r;
  r.non_finite = cloud.count_non_finite();
  if (cloud.size() - r.non_finite < 3)
    throw Error("ground plane: a plane needs at least 3 finite points; the cloud has " +
                std::to_string(cloud.size() - r.non_finite));
  PlaneFit fit;
  if (method == GroundMethod::Cpu) {
    WallTimer t;
    fit = ground_plane_pcl(cloud, params);
    r.stages.emplace_back("PCL SACSegmentation", t.ms());
  } else {
    fit = ground_plane_gpu(cloud, params, r.stages);
  }
  finish_ground(std::move(fit), cloud.origin, params, r);
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
