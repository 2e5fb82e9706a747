#pragma once
// What global.cpp shares with its methods; private to the registration folder.
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/error.h"
#include "registration/global.h"

namespace cumulus {

// A scored hypothesis as one number: (inlier pairs + 1) << 32 | (~index), so the larger key is
// the one with more inliers, then the lower index; 0 for a rejected triangle.
using HypothesisKey = std::uint64_t;
inline HypothesisKey hypothesis_key(std::uint32_t index, std::uint32_t inliers) {
  return (HypothesisKey(inliers) + 1) << 32 | (0xffffffffu - index);
}
inline std::uint32_t key_index(HypothesisKey k) {
  return 0xffffffffu - std::uint32_t(k & 0xffffffffu);
}
inline std::uint32_t key_inliers(HypothesisKey k) {
  return std::uint32_t(k >> 32) - 1;
}

// The best hypotheses of a search by their inlier pairs, best first (at most kCandidates), and
// how many were drawn and passed the triangle test.
constexpr std::size_t kCandidates = 64;
struct Candidates {
  std::vector<HypothesisKey> keys;
  std::size_t drawn = 0, valid = 0;
  void keep(HypothesisKey k);  // inserts k where it ranks, dropping the last beyond kCandidates
};

// Hypotheses are drawn in rounds of this many; after each, `more(drawn, best_inliers)` says
// whether RANSAC's bound asks for another.
constexpr std::uint32_t kRoundHypotheses = 100000;
using MoreRounds = std::function<bool(std::size_t drawn, std::size_t best_inliers)>;

// One stage's progress, told to the caller at most every 20 ms and at the stage's end, so that a
// loop may call it at every step; throws Cancelled when the caller says stop. Without a caller
// it does nothing.
class StageReport {
 public:
  StageReport(const GlobalProgress& progress, GlobalStage stage, std::size_t total)
      : progress_(progress), stage_(stage), total_(total) {}
  void operator()(std::size_t done) {
    if (!progress_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - told_ < std::chrono::milliseconds(20)) return;
    told_ = now;
    if (!progress_(stage_, done, total_)) throw Cancelled("global registration cancelled");
  }

 private:
  const GlobalProgress& progress_;
  GlobalStage stage_;
  std::size_t total_;
  std::chrono::steady_clock::time_point told_{};
};

// Keypoints and pairs as flat floats (x, y, z per point), as the hypotheses read them.
std::vector<float> flat_points(const std::vector<Point3f>& points);

// The rows of `features` whose every bin is a number.
std::vector<std::uint8_t> finite_rows(const FeatureResult& features);

// Ours on the CPU: every hypothesis scored, the best kept (global_cpu.cpp).
Candidates candidates_cpu(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, const MoreRounds& more,
                          const GlobalProgress& progress);
FeatureMatches match_features_cpu(const FeatureResult& source, const FeatureResult& target,
                                  const GlobalProgress& progress);

// PCL's SampleConsensusPrerejective on PCL-style FPFH rows (global_pcl.cpp). Keypoints in one
// frame; returns the coarse fit with its inliers as pairs (source keypoint, nearest target
// keypoint under the transform) in `matches`.
CoarseFit coarse_pcl(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                     const FeatureResult& source_features, const FeatureResult& target_features,
                     const GlobalParams& params, double inlier_distance, FeatureMatches& matches,
                     const GlobalProgress& progress);

}  // namespace cumulus
