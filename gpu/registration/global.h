#pragma once
// Global registration: the alignment of two clouds from any start. Both are thinned on a voxel
// grid, described by FPFH, paired in feature space, and a rigid transform is found by RANSAC
// over three-pair hypotheses, then refined by ICP on the full clouds.
//
// The methods:
// - `cpu`: PCL's SampleConsensusPrerejective on PCL's FPFH (the reference), PCL's ICP after it.
// - `cpu-mutual` and `gpu`: ours. Mutual nearest neighbours in feature space (exact), every
//   hypothesis drawn from a seeded counter-based stream, rejected by PCL's edge-length test and
//   scored by its inlier pairs, all at once; the best (most inliers, then the lowest hypothesis)
//   refit on its inliers while that gains some. Given the same descriptors both give the same
//   pairs, the same best hypothesis and the same transform (within rounding); `gpu` computes
//   the descriptors, pairs and scores on the GPU and refines with the GPU ICP.
// A result is only reported as found when the coarse alignment puts at least
// `min_overlap` of the source keypoints within the inlier distance of a target keypoint; else
// it says why no alignment was found, never a transform that only looks converged.
#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"
#include "features/features.h"
#include "registration/icp.h"

#define CUMULUS_METHOD_ENUM GlobalMethod
#define CUMULUS_METHOD_ROWS "registration/global_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct GlobalParams {
  // Voxel size of the keypoints (world units). 0 derives it from the target: its bounding box's
  // diagonal / 100, so the clouds' scale, not their units, decides.
  double voxel = 0;
  // Radii as multiples of the voxel (Open3D's and PCL's tutorials use about these): normals,
  // FPFH, and the distance within which a pair counts as an inlier.
  double normal_radius = 2.0;
  double feature_radius = 5.0;
  double inlier_distance = 1.5;
  // Ours: at most this many hypotheses, drawn in rounds of 100,000 until RANSAC's bound is met:
  // enough that, at the best fit's share of inlier pairs w, a sample of three inliers was drawn
  // with this confidence (log(1 - confidence) / log(1 - w^3) hypotheses).
  int hypotheses = 1000000;
  double confidence = 0.999;
  // PCL's SampleConsensusPrerejective: its iterations (its tutorial's 50,000).
  int pcl_iterations = 50000;
  double similarity = 0.9;  // edge-length ratio a triangle must keep (PCL's similarity threshold)
  // The share of source keypoints that must lie within the inlier distance of a target keypoint
  // after the coarse alignment (PCL's inlier fraction).
  double min_overlap = 0.25;
  // The hypotheses' random stream: ours draw from a counter-based stream started here; PCL's
  // from std::rand, which the `cpu` method seeds with it before drawing.
  std::uint64_t seed = 1;
  // ICP on the full clouds after the coarse alignment; its max correspondence distance 0 means
  // the inlier distance. Its method follows the global one (cpu: PCL's, else ours on the GPU).
  bool refine = true;
  IcpParams refinement = [] {
    IcpParams p;
    p.max_correspondence_distance = 0;
    return p;
  }();
};

// The pairs of keypoints whose descriptors are mutual nearest neighbours (ascending source).
struct FeatureMatches {
  std::vector<std::int32_t> source, target;
  std::size_t size() const { return source.size(); }
};

// The coarse stage's answer on given keypoints and pairs. The hypotheses with the most inlier
// pairs (up to 64) are each refit on their inliers while that gains some; of the distinct fits
// the one that brings the most source keypoints near a target keypoint wins (then the most
// inlier pairs, then the lowest hypothesis): counting pairs is cheap enough for every
// hypothesis, but a wrong fit of a symmetric or repetitive part can collect more pairs than the
// right one, never more overlap.
struct CoarseFit {
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();  // keypoints' frame
  std::int64_t best_hypothesis = -1;                        // -1: none passed the triangle test
  std::size_t drawn_hypotheses = 0;
  std::size_t valid_hypotheses = 0;  // passed the triangle test
  std::size_t candidates = 0;        // distinct refit fits compared by overlap
  std::vector<std::uint8_t> inlier;  // per pair, after the refits
  std::size_t inliers = 0;
  double inlier_rmse = 0;  // of the inlier pairs
  double overlap = 0;      // share of source keypoints within the inlier distance of a target one
  int refits = 0;
};

struct GlobalResult {
  bool found = false;
  std::string reason;                                       // why not, when not found
  Eigen::Matrix4d coarse = Eigen::Matrix4d::Identity();     // source -> target, world
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();  // refined (= coarse if not refined)
  double voxel = 0;
  // Keypoints (voxel centroids, each cloud with its own origin) and their pairs, for export and
  // drawing.
  PointCloud source_keypoints, target_keypoints;
  FeatureMatches matches;
  std::vector<std::uint8_t> inlier;  // per pair
  std::size_t inliers = 0;
  double inlier_rmse = 0;
  double overlap = 0;  // share of source keypoints near a target keypoint after the coarse fit
  std::size_t hypotheses = 0;  // drawn (ours) or PCL's iterations
  std::size_t valid_hypotheses = 0;
  std::size_t candidates = 0;
  bool refined = false;
  IcpResult refinement;  // when refined
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

// The stages of a global registration that report progress, in the order they run.
enum class GlobalStage {
  Features,    // normals and FPFH of both clouds' keypoints (done, total: thousandths)
  Matching,    // ours: keypoints whose descriptors' nearest were found (done, total: keypoints)
  Hypotheses,  // hypotheses drawn (done, total: ours' maximum, or PCL's iterations)
  Refinement,  // ICP on the full clouds (done, total: iterations, their maximum)
};

// Told how far a run is; returning false stops it with Cancelled before its next step (a search,
// a hypothesis of ours, a few milliseconds of PCL's iterations, an ICP iteration). Only the CPU's
// work reports: the GPU's stages run to their end (milliseconds), which the next report follows.
using GlobalProgress = std::function<bool(GlobalStage stage, std::size_t done, std::size_t total)>;

// InvalidArgument for a negative or non-finite voxel, radii factors that are not positive and
// finite (or a feature radius not above the normal radius), hypotheses or PCL's iterations
// outside 1 .. 10^8, a confidence outside (0, 1), a similarity outside [0, 1), a min_overlap
// outside [0, 1], or invalid refinement parameters.
void validate(const GlobalParams& params);

// The derived voxel of params on this target (params.voxel when set).
double global_voxel(const GlobalParams& params, const PointCloud& target);

// Aligns source onto target from any start. InvalidArgument for clouds without 3 finite points
// or a voxel so small the grid overflows; GpuError when `gpu` cannot run. "Not found" is a
// result (found = false, reason), not an exception.
// With `progress`, PCL's SampleConsensusPrerejective runs its iterations a few milliseconds
// worth at a time and keeps the best of the pieces as its own loop would (the first hypothesis
// with the lowest error): the same draws of std::rand, the same result. PCL's draws start from
// `seed` on every call, so a run gives the same result whenever it is repeated.
GlobalResult register_global(const PointCloud& source, const PointCloud& target,
                             const GlobalParams& params, GlobalMethod method,
                             const GlobalProgress& progress = {});

// The stages of `cpu-mutual` and `gpu` on their own (keypoints in one frame, descriptors with
// NaN rows allowed): what the tests compare between the two methods. `method` must be one of
// those two.
FeatureMatches match_features(const FeatureResult& source, const FeatureResult& target,
                              GlobalMethod method, const GlobalProgress& progress = {});
CoarseFit estimate_coarse(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, GlobalMethod method,
                          const GlobalProgress& progress = {});

// Correspondences as CSV: source_index,target_index,sx,sy,sz,tx,ty,tz,inlier (world coordinates).
void write_matches_csv(const std::string& path, const GlobalResult& r);

}  // namespace cumulus
