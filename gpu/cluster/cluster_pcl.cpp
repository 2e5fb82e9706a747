// The reference: PCL's EuclideanClusterExtraction with a kd-tree.
#include "cluster/cluster_impl.h"

#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>
#include <pcl/segmentation/extract_clusters.h>

#include "core/error.h"

namespace cumulus {

namespace {

// PCL's kd-tree, counting the searches EuclideanClusterExtraction makes: one per point, each
// point once, so the count is the progress. Between two searches it may stop the extraction
// (Cancelled), which PCL's code unwinds from cleanly (it holds only standard containers).
class CountingKdTree : public pcl::search::KdTree<pcl::PointXYZ> {
 public:
  CountingKdTree(std::size_t total, const ClusterProgress& progress)
      : total_(total), progress_(progress) {}
  using pcl::search::KdTree<pcl::PointXYZ>::radiusSearch;
  int radiusSearch(const pcl::PointXYZ& point, double radius, pcl::Indices& indices,
                   std::vector<float>& distances, unsigned int max_nn = 0) const override {
    // Every 64 searches: cheap against the searches themselves, often enough for Ctrl-C.
    if ((++done_ & 63) == 0 && !progress_(done_, total_)) throw Cancelled("clustering cancelled");
    return KdTree::radiusSearch(point, radius, indices, distances, max_nn);
  }

 private:
  std::size_t total_;
  const ClusterProgress& progress_;
  mutable std::size_t done_ = 0;
};

}  // namespace

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
    if (progress)
      tree = std::make_shared<CountingKdTree>(pc->size(), progress);
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
