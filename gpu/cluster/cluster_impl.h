#pragma once
// What cluster.cpp dispatches to; private to the cluster folder.
#include "cluster/cluster.h"

namespace cumulus {

// PCL's EuclideanClusterExtraction over the finite points, mapped back (cluster_pcl.cpp).
ClusterResult cluster_pcl(const PointCloud& cloud, const ClusterParams& params);

}  // namespace cumulus
