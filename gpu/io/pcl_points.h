#pragma once
// The finite points of a cloud as a dense PCL cloud, for PCL's algorithms whose NaN branches
// assert or misbehave (RadiusOutlierRemoval, SACSegmentation), and where each came from.
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus::detail {

struct FinitePclPoints {
  std::shared_ptr<pcl::PointCloud<pcl::PointXYZ>> cloud;
  std::vector<std::int32_t> index;  // of each PCL point in the input cloud
};

inline FinitePclPoints finite_pcl_points(const PointCloud& cloud) {
  FinitePclPoints f{std::make_shared<pcl::PointCloud<pcl::PointXYZ>>(), {}};
  f.index.reserve(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i)
    if (is_finite(cloud.points[i])) f.index.push_back(std::int32_t(i));
  f.cloud->resize(f.index.size());
  for (std::size_t j = 0; j < f.index.size(); ++j) {
    const Point3f& p = cloud.points[std::size_t(f.index[j])];
    (*f.cloud)[j] = pcl::PointXYZ(p.x, p.y, p.z);
  }
  f.cloud->is_dense = true;
  return f;
}

}  // namespace cumulus::detail
