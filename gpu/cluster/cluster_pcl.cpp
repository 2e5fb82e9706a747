// The reference: PCL's EuclideanClusterExtraction with a kd-tree.
#include "cluster/cluster_impl.h"

#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>
#include <pcl/segmentation/extract_clusters.h>

#include "core/error.h"
#include "nns/reporting_kdtree.h"

namespace cumulus {

ClusterResult cluster_pcl(const PointCloud& cloud, const ClusterParams& params,
                          const ClusterProgress& progress) {
  ClusterResult r;
  WallTimer total;
  WallTimer t;
  // PCL's kd-tree cannot take non-finite points; cluster the finite ones and map back.
  auto pc = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  std::vector<std::int32_t> original;
  pc->reserve(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const auto& p = cloud.points[i];
    if (!is_finite(p)) continue;
    pc->push_back(pcl::PointXYZ(p.x, p.y, p.z));
    original.push_back(std::int32_t(i));
  }
  r.non_finite = cloud.size() - original.size();
  r.stages.emplace_back("convert", t.ms());
  std::vector<std::int32_t> component(cloud.size(), -1);
  if (!pc->empty()) {
    t.reset();
    std::shared_ptr<pcl::search::KdTree<pcl::PointXYZ>> tree;
    // EuclideanClusterExtraction searches once per point: the count of searches is the progress.
    if (progress)
      tree = std::make_shared<ReportingKdTree>(progress, pc->size(), "clustering cancelled");
    else
      tree = std::make_shared<pcl::search::KdTree<pcl::PointXYZ>>();
    tree->setInputCloud(pc);
    r.stages.emplace_back("kd-tree", t.ms());
    t.reset();
    pcl::EuclideanClusterExtraction<pcl::PointXYZ> ec;
    ec.setClusterTolerance(params.tolerance);
    // Extract every component; the size filter is applied in canonicalize() so dropped
    // clusters can be counted. PCL's own filter keeps min <= size <= max, the same rule.
    ec.setMinClusterSize(1);
    ec.setMaxClusterSize(std::numeric_limits<int>::max());
    ec.setSearchMethod(tree);
    ec.setInputCloud(pc);
    std::vector<pcl::PointIndices> clusters;
    ec.extract(clusters);
    r.stages.emplace_back("extract", t.ms());
    for (std::size_t c = 0; c < clusters.size(); ++c)
      for (auto idx : clusters[c].indices)
        component[std::size_t(original[std::size_t(idx)])] = std::int32_t(c);
    // Component ids must be < n for canonicalize(); cluster count <= finite points holds.
  }
  t.reset();
  canonicalize(component, params, r);
  r.stages.emplace_back("canonicalize", t.ms());
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
