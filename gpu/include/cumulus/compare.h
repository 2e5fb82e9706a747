#pragma once
// Comparing a method's result with the reference's, and the statistics of repeated runs: the
// pieces of the compare mode and the benchmark reports that need no GUI.
#include <cstddef>
#include <string>
#include <vector>

#include "cumulus/cluster.h"
#include "cumulus/segment.h"

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

// Verdict on two segmentations of the same image: the columns whose cut rows or levels differ.
struct SegmentAgreement {
  bool identical = false;
  std::vector<std::uint32_t> columns;  // differing columns, ascending
  std::string summary;
};
SegmentAgreement compare_segments(const SegmentResult& reference, const SegmentResult& other);

struct TimingStats {
  double median = 0, min = 0, max = 0;
  std::size_t runs = 0;
};
TimingStats timing_stats(std::vector<double> samples);

// Per-stage medians over repeated runs (stages matched by position and name).
StageTimes median_stages(const std::vector<StageTimes>& runs);

}  // namespace cumulus
