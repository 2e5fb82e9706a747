#pragma once
// PCL's kd-tree, counting the searches made through it. PCL's algorithms that search about once
// per point (EuclideanClusterExtraction, NormalEstimation, PFHEstimation, FPFHEstimation) have
// no progress or stop of their own; given this tree they report their progress and may be
// stopped between two searches, which is what lets the GUI cancel a CPU run and start the next.
//
// `progress(searches done, total)` is asked every 64 searches, and sooner once 50 ms have passed
// since it was last asked: one search may be followed by seconds of work (a PFH over a
// neighbourhood of a whole cloud), and the caller should hear about it at that pace. When it
// returns false the search throws Cancelled, which PCL's code unwinds from cleanly (it holds
// only standard containers and shared pointers).
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"

namespace cumulus {

class ReportingKdTree : public pcl::search::KdTree<pcl::PointXYZ> {
 public:
  using Progress = std::function<bool(std::size_t done, std::size_t total)>;

  // `cancelled`: the message of the Cancelled thrown when `progress` says stop.
  ReportingKdTree(Progress progress, std::size_t total, std::string cancelled)
      : progress_(std::move(progress)), total_(total), cancelled_(std::move(cancelled)) {}

  // Runs that search in stages (normals, then histograms) tell the tree the searches of all.
  void set_total(std::size_t total) { total_ = total; }
  std::size_t searches() const { return done_; }

  using pcl::search::KdTree<pcl::PointXYZ>::nearestKSearch;
  using pcl::search::KdTree<pcl::PointXYZ>::radiusSearch;
  int nearestKSearch(const pcl::PointXYZ& point, int k, pcl::Indices& indices,
                     std::vector<float>& distances) const override {
    count();
    return KdTree::nearestKSearch(point, k, indices, distances);
  }
  int radiusSearch(const pcl::PointXYZ& point, double radius, pcl::Indices& indices,
                   std::vector<float>& distances, unsigned int max_nn = 0) const override {
    count();
    return KdTree::radiusSearch(point, radius, indices, distances, max_nn);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void count() const {
    ++done_;
    const Clock::time_point now = Clock::now();
    if ((done_ & 63) != 0 && now - asked_ < std::chrono::milliseconds(50)) return;
    asked_ = now;
    if (progress_ && !progress_(done_, total_)) throw Cancelled(cancelled_);
  }

  Progress progress_;
  std::size_t total_;
  std::string cancelled_;
  mutable std::size_t done_ = 0;
  mutable Clock::time_point asked_ = Clock::now();
};

}  // namespace cumulus
