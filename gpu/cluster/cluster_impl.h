#pragma once
// What cluster.cpp dispatches to; private to the cluster folder.
#include "cluster/cluster.h"

namespace cumulus {

// PCL's EuclideanClusterExtraction over the finite points, mapped back (cluster_pcl.cpp).
// `progress(points searched, finite points)` is called as it goes; false stops it (Cancelled).
ClusterResult cluster_pcl(const PointCloud& cloud, const ClusterParams& params,
                          const ClusterProgress& progress = {});

// The canonical order of components `ids` (distinct ids into `size` and `first`, each
// component's point count and smallest point index): largest first, ties by the smallest point.
// Sets rank[id] for each kept one (rank must have room for every id; dropped ones are left
// as they are) and fills r.sizes and r.dropped_clusters (cluster_canonical.cpp).
void rank_components(std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& size,
                     const std::vector<std::int32_t>& first, const ClusterParams& params,
                     std::vector<std::int32_t>& rank, ClusterResult& r);

}  // namespace cumulus
