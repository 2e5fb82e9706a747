#pragma once
// What cluster.cpp dispatches to; private to the cluster folder.
#include "cluster/cluster.h"

namespace cumulus {

// PCL's EuclideanClusterExtraction over the finite points, mapped back (cluster_pcl.cpp).
// `progress(points searched, finite points)` is called as it goes; false stops it (Cancelled).
ClusterResult cluster_pcl(const PointCloud& cloud, const ClusterParams& params,
                          const ClusterProgress& progress = {});

}  // namespace cumulus
