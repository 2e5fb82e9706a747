#pragma once
// Whether two clusterings of one cloud are the same partition, and where they differ: the
// compare window's and the benchmarks' verdict.
#include <cstddef>
#include <string>
#include <vector>

#include "cluster/cluster.h"

namespace cumulus {

// Verdict on two clusterings of the same cloud.
struct ClusterAgreement {
  bool identical = false;               // the same partition (and so the same labels)
  std::vector<int> reference_clusters;  // clusters of the reference with no exact match
  std::vector<int> other_clusters;      // clusters of the other result with no exact match
  std::vector<bool> point_differs;      // per point: in a cluster without an exact match
  std::size_t differing_points = 0;
  std::string summary;  // one line: "identical partition (N clusters)" or what differs
};

// Clusters match when they hold exactly the same points; points dropped (-1) on one side and
// kept on the other count as differing.
ClusterAgreement compare_clusters(const ClusterResult& reference, const ClusterResult& other);

}  // namespace cumulus
