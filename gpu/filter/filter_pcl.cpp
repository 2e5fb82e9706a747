// The references: PCL's CropBox, VoxelGrid, StatisticalOutlierRemoval and
// RadiusOutlierRemoval, on the cloud's local float coordinates.
#include <pcl/filters/crop_box.h>
#include <pcl/filters/radius_outlier_removal.h>
#include <pcl/filters/statistical_outlier_removal.h>
#include <pcl/filters/voxel_grid.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>

#include <algorithm>

#include "core/error.h"
#include "filter/filter_impl.h"
#include "io/pcl_points.h"

namespace cumulus {

namespace {

// The whole cloud, NaN points included and is_dense false, so PCL skips them as it would in a
// scan read from a file.
template <class P>
typename pcl::PointCloud<P>::Ptr to_pcl_points(const PointCloud& cloud) {
  auto pc = std::make_shared<pcl::PointCloud<P>>();
  pc->resize(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    auto& q = (*pc)[i];
    q.x = cloud.points[i].x;
    q.y = cloud.points[i].y;
    q.z = cloud.points[i].z;
    if constexpr (std::is_same_v<P, pcl::PointXYZI>) q.intensity = cloud.intensity[i];
  }
  pc->is_dense = cloud.count_non_finite() == 0;
  return pc;
}

template <class P>
void run_voxel_grid(const PointCloud& cloud, const VoxelGridParams& params, PointCloud& out) {
  // The same lattice check as every method (PCL would only warn and return the input), before
  // the cloud is copied for PCL.
  const Bounds b = cloud.local_bounds();
  if (!b.valid) return;
  voxel_lattice(b.min, b.max, params);
  const auto pc = to_pcl_points<P>(cloud);
  pcl::VoxelGrid<P> grid;
  grid.setInputCloud(pc);
  grid.setLeafSize(params.leaf[0], params.leaf[1], params.leaf[2]);
  grid.setMinimumPointsNumberPerVoxel(unsigned(params.min_points_per_voxel));
  pcl::PointCloud<P> filtered;
  grid.filter(filtered);
  out.points.resize(filtered.size());
  for (std::size_t i = 0; i < filtered.size(); ++i) {
    out.points[i] = {filtered[i].x, filtered[i].y, filtered[i].z};
    if constexpr (std::is_same_v<P, pcl::PointXYZI>) out.intensity.push_back(filtered[i].intensity);
  }
}

}  // namespace

std::vector<std::int32_t> crop_box_pcl(const PointCloud& cloud, const LocalBox& box,
                                       bool negative) {
  const auto pc = to_pcl_points<pcl::PointXYZ>(cloud);
  pcl::CropBox<pcl::PointXYZ> crop;
  crop.setInputCloud(pc);
  crop.setMin(Eigen::Vector4f(box.min.x, box.min.y, box.min.z, 1.0f));
  crop.setMax(Eigen::Vector4f(box.max.x, box.max.y, box.max.z, 1.0f));
  crop.setNegative(negative);
  pcl::Indices kept;
  crop.filter(kept);
  return {kept.begin(), kept.end()};
}

void voxel_grid_pcl(const PointCloud& cloud, const VoxelGridParams& params, PointCloud& out) {
  if (cloud.has_intensity())
    run_voxel_grid<pcl::PointXYZI>(cloud, params, out);
  else
    run_voxel_grid<pcl::PointXYZ>(cloud, params, out);
}

std::vector<std::int32_t> statistical_outliers_pcl(const PointCloud& cloud,
                                                   const StatisticalOutlierParams& params) {
  // Unorganized, so PCL searches with its k-d tree (an organized cloud would get the
  // approximate image-neighbourhood searcher).
  const auto pc = to_pcl_points<pcl::PointXYZ>(cloud);
  pcl::StatisticalOutlierRemoval<pcl::PointXYZ> sor;
  sor.setInputCloud(pc);
  sor.setMeanK(params.mean_k);
  sor.setStddevMulThresh(params.stddev_mul);
  sor.setNegative(params.negative);
  pcl::Indices kept;
  sor.filter(kept);
  return {kept.begin(), kept.end()};
}

std::vector<std::int32_t> radius_outliers_pcl(const PointCloud& cloud,
                                              const RadiusOutlierParams& params) {
  // PCL's finite points only, as a dense cloud: on a cloud with NaNs PCL takes a radius-search
  // branch that asserts on them (Debian builds PCL with assertions), so its k-nearest branch,
  // which counts neighbours at distance <= radius, is the one semantics for every cloud.
  const detail::FinitePclPoints finite = detail::finite_pcl_points(cloud);
  std::vector<std::int32_t> kept;
  if (!finite.index.empty()) {
    pcl::RadiusOutlierRemoval<pcl::PointXYZ> ror;
    ror.setInputCloud(finite.cloud);
    ror.setRadiusSearch(params.radius);
    ror.setMinNeighborsInRadius(params.min_neighbors);
    ror.setNegative(params.negative);
    pcl::Indices local;
    ror.filter(local);
    for (const auto j : local)
      kept.push_back(finite.index[std::size_t(j)]);
  }
  // Points that are not finite have no neighbours: outliers.
  if (params.negative && finite.index.size() < cloud.size()) {
    std::vector<std::int32_t> all = std::move(kept);
    kept.clear();
    std::size_t at = 0;
    for (std::int32_t i = 0; i < std::int32_t(cloud.size()); ++i) {
      if (at < all.size() && all[std::size_t(at)] == i)
        kept.push_back(all[at++]);
      else if (!is_finite(cloud.points[std::size_t(i)]))
        kept.push_back(i);
    }
  }
  return kept;
}

}  // namespace cumulus
