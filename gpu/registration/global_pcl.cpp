// The reference: PCL's SampleConsensusPrerejective on PCL's FPFH. Its knobs are set as PCL's
// alignment tutorial sets them, from the same parameters as ours where they mean the same.
// GCC 12 reports Eigen's unaligned 4-float load of a 3-vector inside PCL's SVD estimation
// (inlined into this file, so its system-header status is lost) as out of bounds: a known false
// positive of -Warray-bounds on Eigen's packet code.
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <pcl/common/transforms.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/registration/sample_consensus_prerejective.h>
#include <pcl/search/kdtree.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/timing.h"
#include "registration/global_impl.h"

namespace cumulus {

namespace {

// PCL's tutorial draws each sample among the 5 nearest descriptors (its correspondence
// randomness); ours takes the mutual nearest only.
constexpr int kCorrespondenceRandomness = 5;

using Cloud = pcl::PointCloud<pcl::PointXYZ>;
using Features = pcl::PointCloud<pcl::FPFHSignature33>;

// PCL's SampleConsensusPrerejective has no progress and no stop: its loop runs every iteration in
// one call. Its result is the first hypothesis, in the order drawn, with the lowest error among
// those that keep the inlier fraction, and its draws come from std::rand, whose state carries
// from one call to the next. So calls of a few iterations each, the best of them kept by the same
// rule (strictly lower error wins), draw the same hypotheses and give the same result as one
// call of all; between two calls the run can report and stop. This class only lets the error of
// a call's best be read, by PCL's own measure.
class Prerejective
    : public pcl::SampleConsensusPrerejective<pcl::PointXYZ, pcl::PointXYZ, pcl::FPFHSignature33> {
 public:
  float best_error() {
    pcl::Indices inliers;
    float error = 0;
    getFitness(inliers, error);  // under the call's final transformation, its best
    return error;
  }
};

// The iterations of a call after one of `iterations` took `ms`: about 30 ms' worth, so a stop is
// heard soon while the calls' own start (the feature cache each begins empty) stays small.
int next_piece(int iterations, double ms) {
  const double rate = double(iterations) / std::max(ms, 1e-3);
  return int(std::clamp(rate * 30.0, 16.0, 1e6));
}

}  // namespace

CoarseFit coarse_pcl(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                     const FeatureResult& source_features, const FeatureResult& target_features,
                     const GlobalParams& params, double inlier_distance, FeatureMatches& matches,
                     const GlobalProgress& progress) {
  // PCL's kd-tree over descriptors cannot take NaN rows: those keypoints are left out, and
  // `kept` maps PCL's indices back.
  const auto pack = [](const std::vector<Point3f>& pts, const FeatureResult& f,
                       std::vector<std::int32_t>& kept) {
    const auto ok = finite_rows(f);
    auto cloud = std::make_shared<Cloud>();
    auto feats = std::make_shared<Features>();
    for (std::size_t i = 0; i < pts.size(); ++i) {
      if (!ok[i]) continue;
      kept.push_back(std::int32_t(i));
      cloud->push_back(pcl::PointXYZ(pts[i].x, pts[i].y, pts[i].z));
      pcl::FPFHSignature33 h;
      std::copy(f.row(i), f.row(i) + 33, h.histogram);
      feats->push_back(h);
    }
    return std::make_pair(cloud, feats);
  };
  std::vector<std::int32_t> s_kept, t_kept;
  const auto [src, src_f] = pack(source, source_features, s_kept);
  const auto [tgt, tgt_f] = pack(target, target_features, t_kept);
  CoarseFit fit;
  if (src->size() < 3 || tgt->size() < 3) return fit;
  Prerejective align;
  align.setInputSource(src);
  align.setSourceFeatures(src_f);
  align.setInputTarget(tgt);
  align.setTargetFeatures(tgt_f);
  align.setNumberOfSamples(3);
  align.setCorrespondenceRandomness(kCorrespondenceRandomness);
  align.setSimilarityThreshold(float(params.similarity));
  align.setMaxCorrespondenceDistance(inlier_distance);
  align.setInlierFraction(float(params.min_overlap));
  // PCL draws from the process's std::rand, which nothing else here seeds: started from the
  // caller's seed, the same parameters give the same run in any process and at any point of it
  // (glibc's unseeded start is seed 1, our default). Two such runs at once in one process share
  // the stream and so draw other hypotheses.
  std::srand(static_cast<unsigned>(params.seed ^ (params.seed >> 32)));
  // Without a caller to tell, one call of every iteration (what the benchmarks time).
  const int total = params.pcl_iterations;
  int piece = progress ? 16 : total;
  bool found = false;
  float lowest = 0;
  Eigen::Matrix4f best = Eigen::Matrix4f::Identity();
  pcl::Indices best_inliers;
  StageReport report(progress, GlobalStage::Hypotheses, std::size_t(total));
  for (int done = 0; done < total;) {
    report(std::size_t(done));
    const int n = std::min(piece, total - done);
    align.setMaximumIterations(n);
    const WallTimer clock;
    Cloud out;
    align.align(out);
    piece = next_piece(n, clock.ms());
    done += n;
    if (!align.hasConverged()) continue;
    const float error = align.best_error();
    if (found && !(error < lowest)) continue;
    found = true;
    lowest = error;
    best = align.getFinalTransformation();
    best_inliers = align.getInliers();
  }
  report(std::size_t(total));
  if (!found) return fit;
  fit.best_hypothesis = 0;
  fit.transform = best.cast<double>();
  Cloud aligned;
  pcl::transformPointCloud(*src, aligned, best);
  // Its inliers are source keypoints whose nearest target keypoint under the transform lies
  // within the distance: reported as pairs with that nearest keypoint.
  pcl::search::KdTree<pcl::PointXYZ> tree;
  tree.setInputCloud(tgt);
  pcl::Indices nearest(1);
  std::vector<float> d2(1);
  double sum = 0;
  for (const auto i : best_inliers) {
    if (tree.nearestKSearch(aligned[std::size_t(i)], 1, nearest, d2) < 1) continue;
    matches.source.push_back(s_kept[std::size_t(i)]);
    matches.target.push_back(t_kept[std::size_t(nearest[0])]);
    sum += d2[0];
  }
  fit.inlier.assign(matches.size(), 1);
  fit.inliers = matches.size();
  fit.inlier_rmse = fit.inliers ? std::sqrt(sum / double(fit.inliers)) : 0;
  return fit;
}

}  // namespace cumulus
