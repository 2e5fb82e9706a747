#pragma once
// Writing clustering results: the cloud with a label field, one file per cluster, and a CSV
// summary (id, size, centroid, bounding box) in world coordinates.
#include <string>

#include "cluster/cluster.h"
#include "io/io.h"

namespace cumulus {

struct ClusterSummary {
  int id = 0;
  std::size_t size = 0;
  double centroid[3] = {0, 0, 0};
  double min[3] = {0, 0, 0}, max[3] = {0, 0, 0};
};

std::vector<ClusterSummary> summarize_clusters(const PointCloud& cloud,
                                               const ClusterResult& result);
// A copy of `cloud` whose labels are the result's.
PointCloud with_labels(const PointCloud& cloud, const ClusterResult& result);
void save_cluster_csv(const std::string& path, const PointCloud& cloud,
                      const ClusterResult& result);
// Writes DIR/cluster_0000.EXT ... one per kept cluster; EXT is pcd, ply, bin or xyz.
void save_cluster_files(const std::string& dir, const PointCloud& cloud,
                        const ClusterResult& result, const std::string& extension = "pcd",
                        const SaveOptions& options = {});

}  // namespace cumulus
