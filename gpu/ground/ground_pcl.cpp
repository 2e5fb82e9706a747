// The reference: PCL's SACSegmentation (RANSAC, plane or perpendicular-plane model,
// coefficients optimized) on the cloud's finite points.
#include <pcl/ModelCoefficients.h>
#include <pcl/PointIndices.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/sample_consensus/method_types.h>
#include <pcl/sample_consensus/model_types.h>
#include <pcl/segmentation/sac_segmentation.h>

#include <cmath>
#include <numbers>

#include "ground/ground_impl.h"
#include "io/pcl_cloud2.h"
#include "io/pcl_points.h"

namespace cumulus {

PlaneFit ground_plane_pcl(const PointCloud& cloud, const GroundPlaneParams& params) {
  detail::quiet_pcl();  // "no solution found" becomes our error, which names the stage
  // Finite points only: PCL's sample check lets NaN triples through to its models.
  const detail::FinitePclPoints finite = detail::finite_pcl_points(cloud);
  pcl::SACSegmentation<pcl::PointXYZ> seg;
  seg.setOptimizeCoefficients(true);
  seg.setMethodType(pcl::SAC_RANSAC);
  seg.setDistanceThreshold(params.threshold);
  seg.setMaxIterations(params.max_iterations);
  const AxisRule rule = axis_rule(params);
  if (params.axis) {
    seg.setModelType(pcl::SACMODEL_PERPENDICULAR_PLANE);
    seg.setAxis(Eigen::Vector3f(float(rule.axis[0]), float(rule.axis[1]), float(rule.axis[2])));
    seg.setEpsAngle(params.max_angle_deg * std::numbers::pi / 180.0);
  } else {
    seg.setModelType(pcl::SACMODEL_PLANE);
  }
  seg.setInputCloud(finite.cloud);
  pcl::PointIndices inliers;
  pcl::ModelCoefficients coefficients;
  seg.segment(inliers, coefficients);
  PlaneFit fit;
  if (inliers.indices.empty() || coefficients.values.size() != 4) return fit;
  const auto& c = coefficients.values;
  const double norm = std::sqrt(double(c[0]) * c[0] + double(c[1]) * c[1] + double(c[2]) * c[2]);
  fit.plane.n = {c[0] / norm, c[1] / norm, c[2] / norm};
  fit.plane.d = c[3] / norm;
  fit.inliers.reserve(inliers.indices.size());
  for (const auto j : inliers.indices)
    fit.inliers.push_back(finite.index[std::size_t(j)]);
  fit.found = true;
  return fit;
}

}  // namespace cumulus
