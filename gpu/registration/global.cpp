// Global registration: parameter checks, the pipeline (keypoints, descriptors, pairs, coarse
// fit, the check of its overlap, ICP) and the dispatch to the methods.
#include "registration/global.h"

#include <Eigen/LU>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>

#include "core/error.h"
#include "filter/filter.h"
#include "io/atomic_file.h"
#include "nns/nns.h"
#include "registration/cuda/global_gpu.h"
#include "registration/global_impl.h"
#include "registration/global_math.h"

namespace cumulus {

namespace {

bool positive_finite(double v) {
  return v > 0 && std::isfinite(v);
}

// The pairs' inliers under m (float, as the hypotheses were scored).
std::size_t mark_inliers(const std::vector<float>& s, const std::vector<float>& t,
                         const FeatureMatches& matches, const float* m, float limit2,
                         std::vector<std::uint8_t>& inlier) {
  inlier.assign(matches.size(), 0);
  std::size_t count = 0;
  for (std::size_t k = 0; k < matches.size(); ++k) {
    const bool in = global_math::residual2(m, &s[3 * std::size_t(matches.source[k])],
                                           &t[3 * std::size_t(matches.target[k])]) <= limit2;
    inlier[k] = in;
    count += in;
  }
  return count;
}

// Hypothesis h refit on its inliers (Umeyama, double) while that gains inliers, as the RANSAC
// plane refits: three pairs carry their noise into the rotation, all inliers average it.
CoarseFit refit_hypothesis(const std::vector<float>& s, const std::vector<float>& t,
                           const FeatureMatches& matches, const GlobalParams& params,
                           std::uint32_t h, double inlier_distance) {
  CoarseFit fit;
  fit.best_hypothesis = h;
  std::array<float, 12> m;
  global_math::make_hypothesis(s.data(), t.data(), matches.source.data(), matches.target.data(),
                               std::uint32_t(matches.size()), params.seed, h, params.similarity,
                               m.data());
  const float limit2 = float(inlier_distance * inlier_distance);
  fit.inliers = mark_inliers(s, t, matches, m.data(), limit2, fit.inlier);
  for (int round = 0; round < 10 && fit.inliers >= 3; ++round) {
    std::vector<global_math::Pair3> pairs;
    for (std::size_t k = 0; k < matches.size(); ++k)
      if (fit.inlier[k]) {
        global_math::Pair3 p;
        for (int d = 0; d < 3; ++d) {
          p.s[d] = s[3 * std::size_t(matches.source[k]) + std::size_t(d)];
          p.t[d] = t[3 * std::size_t(matches.target[k]) + std::size_t(d)];
        }
        pairs.push_back(p);
      }
    double full[16];
    global_math::triplet_transform(pairs.data(), int(pairs.size()), full);
    std::array<float, 12> next;
    for (int i = 0; i < 12; ++i)
      next[std::size_t(i)] = float(full[i]);
    std::vector<std::uint8_t> next_inlier;
    const std::size_t count = mark_inliers(s, t, matches, next.data(), limit2, next_inlier);
    if (count <= fit.inliers) break;
    m = next;
    fit.inliers = count;
    fit.inlier = std::move(next_inlier);
    ++fit.refits;
  }
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      fit.transform(r, c) = m[std::size_t(4 * r + c)];
  double sum = 0;
  for (std::size_t k = 0; k < matches.size(); ++k)
    if (fit.inlier[k])
      sum += global_math::residual2(m.data(), &s[3 * std::size_t(matches.source[k])],
                                    &t[3 * std::size_t(matches.target[k])]);
  fit.inlier_rmse = fit.inliers ? std::sqrt(sum / double(fit.inliers)) : 0;
  return fit;
}

// Two fits that differ by less than this are one (a hypothesis drawn again from other pairs).
bool same_fit(const Eigen::Matrix4d& a, const Eigen::Matrix4d& b, double distance) {
  const Eigen::Matrix4d d = a.inverse() * b;
  return rotation_angle_deg(d) < 1.0 && translation_norm(d) < distance;
}

// RANSAC's bound: the hypotheses that draw three inlier pairs at least once with `confidence`
// when a share w of the pairs are inliers.
double hypotheses_needed(double w, double confidence) {
  const double w3 = w * w * w;
  if (w3 >= 1) return 1;
  if (w3 <= 0) return std::numeric_limits<double>::infinity();
  return std::log(1 - confidence) / std::log1p(-w3);
}

// Whether `inliers` pairs (three of them drawn) exceed what chance gives (Poisson with mean
// `chance`) beyond doubt: the upper tail, times the hypotheses scored (each had its chance to
// be the best), below 1e-3.
bool significant(std::size_t inliers, double chance, std::size_t hypotheses) {
  const double x = double(inliers) - 3;
  if (!(x > chance)) return false;
  const double lambda = std::max(chance, 1e-12);
  // log P(X >= x) = log P(X = x) + log(sum of the following terms relative to it).
  const double log_first = -lambda + x * std::log(lambda) - std::lgamma(x + 1);
  double sum = 1, term = 1;
  for (double i = x + 1; term > 1e-12 * sum && i < x + 10000; ++i) {
    term *= lambda / i;
    sum += term;
  }
  const double log_tail = log_first + std::log(sum);
  return log_tail + std::log(double(std::max<std::size_t>(hypotheses, 1))) < std::log(1e-3);
}

void require_ours(GlobalMethod method) {
  if (method == GlobalMethod::Cpu)
    throw InvalidArgument("this stage is the cpu-mutual and gpu methods' own; cpu is PCL's whole");
}

// Points moved from one local frame to another (both clouds' origins, world = origin + p).
std::vector<Point3f> shifted(const PointCloud& c, const std::array<double, 3>& to_origin) {
  std::vector<Point3f> out(c.points.size());
  const double d[3] = {c.origin[0] - to_origin[0], c.origin[1] - to_origin[1],
                       c.origin[2] - to_origin[2]};
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = {float(double(c.points[i].x) + d[0]), float(double(c.points[i].y) + d[1]),
              float(double(c.points[i].z) + d[2])};
  return out;
}

// The keypoints' descriptors, normals facing the keypoints' own centroid: where each cloud's
// frame is must not matter to a global alignment, and the centroid moves with the cloud.
// PCL's (`cpu`) reports its searches and may be stopped between two; the GPU's runs whole.
FeatureResult describe(const PointCloud& keypoints, double voxel, const GlobalParams& params,
                       FeatureMethod method, const FeatureProgress& progress) {
  double c[3] = {0, 0, 0};
  for (const auto& p : keypoints.points) {
    c[0] += p.x;
    c[1] += p.y;
    c[2] += p.z;
  }
  FeatureParams fp;
  fp.descriptor = Descriptor::Fpfh;
  fp.neighbourhood = Neighbourhood::within(float(params.feature_radius * voxel));
  fp.normals.neighbourhood = Neighbourhood::within(float(params.normal_radius * voxel));
  const double n = double(std::max<std::size_t>(keypoints.size(), 1));
  for (int d = 0; d < 3; ++d)
    fp.normals.viewpoint[std::size_t(d)] = keypoints.origin[std::size_t(d)] + c[d] / n;
  if (method == FeatureMethod::Cpu)  // never tiled: one call, which can report
    return compute_features_call(keypoints, fp, method, nullptr, progress);
  return compute_features(keypoints, fp, method);
}

}  // namespace

void Candidates::keep(HypothesisKey k) {
  if (keys.size() == kCandidates && k <= keys.back()) return;
  keys.insert(std::upper_bound(keys.begin(), keys.end(), k, std::greater<>()), k);
  if (keys.size() > kCandidates) keys.pop_back();
}

std::vector<float> flat_points(const std::vector<Point3f>& points) {
  std::vector<float> out(3 * points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    out[3 * i] = points[i].x;
    out[3 * i + 1] = points[i].y;
    out[3 * i + 2] = points[i].z;
  }
  return out;
}

std::vector<std::uint8_t> finite_rows(const FeatureResult& features) {
  std::vector<std::uint8_t> ok(features.size(), 1);
  for (std::size_t i = 0; i < features.size(); ++i)
    for (int b = 0; b < features.bins; ++b)
      if (!std::isfinite(features.row(i)[b])) {
        ok[i] = 0;
        break;
      }
  return ok;
}

void validate(const GlobalParams& p) {
  if (!(p.voxel >= 0) || !std::isfinite(p.voxel))
    throw InvalidArgument("the global voxel must be 0 (derived) or a positive finite size");
  for (double f : {p.normal_radius, p.feature_radius, p.inlier_distance})
    if (!positive_finite(f))
      throw InvalidArgument(
          "the normal, feature and inlier radii must be positive multiples of "
          "the voxel");
  if (p.feature_radius <= p.normal_radius)
    throw InvalidArgument(
        "the feature radius must be larger than the normals' radius (FPFH "
        "needs its neighbours' normals)");
  if (p.hypotheses < 1 || p.hypotheses > 100000000 || p.pcl_iterations < 1 ||
      p.pcl_iterations > 100000000)
    throw InvalidArgument("the number of hypotheses must be between 1 and 100000000");
  if (!(p.confidence > 0) || !(p.confidence < 1))
    throw InvalidArgument("the confidence is a probability in (0, 1)");
  if (!(p.similarity >= 0) || !(p.similarity < 1))
    throw InvalidArgument("the edge similarity is a ratio in [0, 1)");
  if (!(p.min_overlap >= 0) || !(p.min_overlap <= 1))
    throw InvalidArgument("the minimum overlap is a share in [0, 1]");
  IcpParams r = p.refinement;
  if (r.max_correspondence_distance == 0) r.max_correspondence_distance = 1;  // derived later
  validate(r);
}

double global_voxel(const GlobalParams& params, const PointCloud& target) {
  if (params.voxel > 0) return params.voxel;
  const Bounds b = target.local_bounds();
  if (!b.valid) return 0;
  const double dx = double(b.max.x) - b.min.x, dy = double(b.max.y) - b.min.y,
               dz = double(b.max.z) - b.min.z;
  return std::sqrt(dx * dx + dy * dy + dz * dz) / 100.0;
}

FeatureMatches match_features(const FeatureResult& source, const FeatureResult& target,
                              GlobalMethod method, const GlobalProgress& progress) {
  require_ours(method);
  if (source.bins != target.bins)
    throw InvalidArgument("the two clouds' descriptors have different lengths");
  if (method == GlobalMethod::Gpu) return gpu_match_features(source, target);
  return match_features_cpu(source, target, progress);
}

CoarseFit estimate_coarse(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, GlobalMethod method,
                          const GlobalProgress& progress) {
  require_ours(method);
  validate(params);
  if (matches.size() < 3) return CoarseFit{};
  for (std::size_t k = 0; k < matches.size(); ++k)
    if (matches.source[k] < 0 || std::size_t(matches.source[k]) >= source.size() ||
        matches.target[k] < 0 || std::size_t(matches.target[k]) >= target.size())
      throw InvalidArgument("a feature pair names a keypoint the clouds do not have");
  const double pairs = double(matches.size());
  const bool gpu = method == GlobalMethod::Gpu;
  // The GPU's rounds report between two (a round is milliseconds there).
  StageReport report(progress, GlobalStage::Hypotheses, std::size_t(params.hypotheses));
  const MoreRounds more = [&](std::size_t drawn, std::size_t best) {
    if (gpu) report(drawn);
    return double(drawn) < hypotheses_needed(double(best) / pairs, params.confidence);
  };
  const Candidates found =
      gpu ? gpu_candidates(source, target, matches, params, inlier_distance, more)
          : candidates_cpu(source, target, matches, params, inlier_distance, more, progress);
  // The candidates refit, near-duplicates dropped, the rest compared by overlap in one search.
  const auto s = flat_points(source), t = flat_points(target);
  std::vector<CoarseFit> fits;
  for (const HypothesisKey k : found.keys) {
    CoarseFit f = refit_hypothesis(s, t, matches, params, key_index(k), inlier_distance);
    bool seen = false;
    for (const CoarseFit& g : fits)
      seen = seen || same_fit(f.transform, g.transform, inlier_distance);
    if (!seen) fits.push_back(std::move(f));
  }
  CoarseFit none;
  none.drawn_hypotheses = found.drawn;
  none.valid_hypotheses = found.valid;
  if (fits.empty()) return none;
  std::vector<Point3f> moved;
  moved.reserve(fits.size() * source.size());
  for (const CoarseFit& f : fits) {
    const auto m = transform_points(source, f.transform);
    moved.insert(moved.end(), m.begin(), m.end());
  }
  const KnnResult near =
      knn_search(target, moved, 1, gpu ? NnsMethod::Gpu : NnsMethod::Cpu, float(inlier_distance));
  std::size_t best = 0;
  for (std::size_t i = 0; i < fits.size(); ++i) {
    std::size_t close = 0;
    for (std::size_t q = 0; q < source.size(); ++q)
      close += near.indices[i * source.size() + q] >= 0;
    fits[i].overlap = double(close) / double(source.size());
    // Ranked by overlap, then inlier pairs (fits come in order of their hypotheses' keys).
    if (fits[i].overlap > fits[best].overlap ||
        (fits[i].overlap == fits[best].overlap && fits[i].inliers > fits[best].inliers))
      best = i;
  }
  CoarseFit out = std::move(fits[best]);
  out.drawn_hypotheses = found.drawn;
  out.valid_hypotheses = found.valid;
  out.candidates = fits.size();
  return out;
}

GlobalResult register_global(const PointCloud& source, const PointCloud& target,
                             const GlobalParams& params, GlobalMethod method,
                             const GlobalProgress& progress) {
  validate(params);
  const WallTimer total;
  WallTimer stage;
  GlobalResult r;
  r.method = method_name(method);
  const std::size_t s_finite = source.size() - source.count_non_finite();
  const std::size_t t_finite = target.size() - target.count_non_finite();
  if (s_finite < 3 || t_finite < 3)
    throw InvalidArgument(
        "global registration needs at least 3 finite points in each cloud "
        "(source has " +
        std::to_string(s_finite) + ", target " + std::to_string(t_finite) + ")");
  r.voxel = global_voxel(params, target);
  if (!(r.voxel > 0)) {
    r.reason = "the target's finite points are all one point: no scale to work at";
    return r;
  }
  const bool gpu = method == GlobalMethod::Gpu;
  VoxelGridParams grid;
  grid.leaf = {float(r.voxel), float(r.voxel), float(r.voxel)};
  validate(grid, source);
  validate(grid, target);
  const FilterMethod filter = gpu ? FilterMethod::Gpu : FilterMethod::Cpu;
  r.source_keypoints = voxel_grid(source, grid, filter).cloud;
  r.target_keypoints = voxel_grid(target, grid, filter).cloud;
  r.stages.emplace_back("keypoints", stage.ms());
  stage.reset();
  const double eps = params.inlier_distance * r.voxel;
  const auto not_found = [&](std::string why) {
    r.reason = std::move(why);
    r.total_ms = total.ms();
    return r;
  };
  const auto fixed = [](double v) {
    std::ostringstream s;
    s << std::setprecision(4) << v;
    return s.str();
  };
  if (r.source_keypoints.size() < 3 || r.target_keypoints.size() < 3)
    return not_found("too few keypoints at voxel " + fixed(r.voxel) + " (source " +
                     std::to_string(r.source_keypoints.size()) + ", target " +
                     std::to_string(r.target_keypoints.size()) + "): give a smaller --voxel");
  const FeatureMethod describe_with = gpu ? FeatureMethod::Gpu : FeatureMethod::Cpu;
  // Both clouds' descriptors as one stage in thousandths, each cloud's share by its keypoints.
  const double s_share = double(r.source_keypoints.size()) /
                         double(r.source_keypoints.size() + r.target_keypoints.size());
  StageReport features(progress, GlobalStage::Features, 1000);
  const auto part = [&](double before, double share) -> FeatureProgress {
    if (!progress) return {};
    return [&features, before, share](std::size_t done, std::size_t total) {
      features(std::size_t(
          1000 * (before + share * double(done) / double(std::max<std::size_t>(total, 1)))));
      return true;
    };
  };
  features(0);
  const FeatureResult fs =
      describe(r.source_keypoints, r.voxel, params, describe_with, part(0, s_share));
  const FeatureResult ft =
      describe(r.target_keypoints, r.voxel, params, describe_with, part(s_share, 1 - s_share));
  features(1000);
  r.stages.emplace_back("features", stage.ms());
  stage.reset();
  // Keypoints in the target's local frame, where the transform is found.
  const std::vector<Point3f> s_kp = shifted(r.source_keypoints, r.target_keypoints.origin);
  const std::vector<Point3f>& t_kp = r.target_keypoints.points;
  CoarseFit fit;
  if (method == GlobalMethod::Cpu) {
    fit = coarse_pcl(s_kp, t_kp, fs, ft, params, eps, r.matches, progress);
    r.stages.emplace_back("prerejective", stage.ms());
  } else {
    r.matches = match_features(fs, ft, method, progress);
    r.stages.emplace_back("matching", stage.ms());
    stage.reset();
    if (r.matches.size() < 3)
      return not_found("only " + std::to_string(r.matches.size()) +
                       " keypoint pairs with mutually nearest descriptors: the clouds are too "
                       "small or too flat for features at voxel " +
                       fixed(r.voxel));
    fit = estimate_coarse(s_kp, t_kp, r.matches, params, eps, method, progress);
    r.stages.emplace_back("hypotheses", stage.ms());
  }
  stage.reset();
  r.hypotheses =
      method == GlobalMethod::Cpu ? std::size_t(params.pcl_iterations) : fit.drawn_hypotheses;
  r.valid_hypotheses = fit.valid_hypotheses;
  r.candidates = fit.candidates;
  r.inlier = fit.inlier;
  r.inliers = fit.inliers;
  r.inlier_rmse = fit.inlier_rmse;
  // The target's local frame -> world: world_t = ot + T_local (world_s - ot).
  Eigen::Matrix4d to_local = Eigen::Matrix4d::Identity(), to_world = Eigen::Matrix4d::Identity();
  const Eigen::Vector3d kp_origin(r.target_keypoints.origin[0], r.target_keypoints.origin[1],
                                  r.target_keypoints.origin[2]);
  to_local.topRightCorner<3, 1>() = -kp_origin;
  to_world.topRightCorner<3, 1>() = kp_origin;
  r.coarse = to_world * fit.transform * to_local;
  r.transform = r.coarse;
  if (fit.best_hypothesis < 0) {
    if (method == GlobalMethod::Cpu)
      return not_found("PCL's SampleConsensusPrerejective accepted none of " +
                       std::to_string(params.pcl_iterations) +
                       " hypotheses (each must pass the edge-length test and bring " +
                       fixed(100 * params.min_overlap) +
                       " % of the source keypoints near the target)");
    return not_found("no hypothesis passed the edge-length test among " +
                     std::to_string(fit.drawn_hypotheses) + " drawn from " +
                     std::to_string(r.matches.size()) + " keypoint pairs");
  }
  // The overlap the coarse fit gives: the share of source keypoints within the inlier distance
  // of a target keypoint (PCL's inlier fraction), the check that a fit is an alignment. Ours
  // measured it choosing the fit; the neighbour counts serve the chance test below.
  const std::vector<Point3f> moved = transform_points(s_kp, fit.transform);
  const RadiusResult near =
      radius_search(t_kp, moved, float(eps), gpu ? NnsMethod::Gpu : NnsMethod::Cpu);
  std::size_t close = 0;
  for (std::size_t q = 0; q < moved.size(); ++q)
    close += near.offsets[q + 1] > near.offsets[q];
  r.overlap = method == GlobalMethod::Cpu ? double(close) / double(moved.size()) : fit.overlap;
  r.stages.emplace_back("overlap", stage.ms());
  stage.reset();
  if (method != GlobalMethod::Cpu) {
    // Could random pairing have given the best fit its inliers? A pair is an inlier by chance
    // when its target keypoint happens to lie near the moved source keypoint: the expected count
    // is the sum over pairs of (target keypoints near it) / (target keypoints). Flat, symmetric
    // or repetitive clouds fit many motions equally, and their best fit stays near that level.
    double chance = 0;
    for (const std::int32_t i : r.matches.source)
      chance += double(near.offsets[std::size_t(i) + 1] - near.offsets[std::size_t(i)]);
    chance /= double(t_kp.size());
    if (!significant(r.inliers, chance, r.valid_hypotheses))
      return not_found("the best fit's " + std::to_string(r.inliers) + " inlier pairs (of " +
                       std::to_string(r.matches.size()) + ") are what random pairing gives (" +
                       fixed(chance) +
                       " expected besides its three): the clouds are too flat, symmetric or "
                       "repetitive at voxel " +
                       fixed(r.voxel) + " for one alignment; no alignment found");
  }
  if (r.overlap < params.min_overlap)
    return not_found("the best fit (" + std::to_string(r.inliers) + " inlier pairs) puts only " +
                     fixed(100 * r.overlap) +
                     " % of the source keypoints near the target (at "
                     "least " +
                     fixed(100 * params.min_overlap) +
                     " % needed): no alignment found; the clouds may not overlap, or need a "
                     "different --voxel");
  r.found = true;
  if (params.refine) {
    IcpParams ip = params.refinement;
    if (ip.max_correspondence_distance == 0) ip.max_correspondence_distance = eps;
    ip.initial = r.coarse;
    IcpProgress iterations;
    if (progress)
      iterations = [&progress](int done, int most) {
        return progress(GlobalStage::Refinement, std::size_t(done), std::size_t(most));
      };
    r.refinement = icp(source, target, ip, gpu ? IcpMethod::Gpu : IcpMethod::Cpu, iterations);
    r.refined = true;
    r.transform = r.refinement.transform;
    r.stages.emplace_back("refinement", stage.ms());
  }
  r.total_ms = total.ms();
  return r;
}

void write_matches_csv(const std::string& path, const GlobalResult& r) {
  AtomicOstream out(path);
  out << "source_index,target_index,sx,sy,sz,tx,ty,tz,inlier\n" << std::setprecision(10);
  const auto& s = r.source_keypoints;
  const auto& t = r.target_keypoints;
  for (std::size_t k = 0; k < r.matches.size(); ++k) {
    const Point3f& a = s.points[std::size_t(r.matches.source[k])];
    const Point3f& b = t.points[std::size_t(r.matches.target[k])];
    out << r.matches.source[k] << ',' << r.matches.target[k] << ',' << s.origin[0] + a.x << ','
        << s.origin[1] + a.y << ',' << s.origin[2] + a.z << ',' << t.origin[0] + b.x << ','
        << t.origin[1] + b.y << ',' << t.origin[2] + b.z << ','
        << int(k < r.inlier.size() && r.inlier[k]) << '\n';
  }
  out.commit();
}

}  // namespace cumulus
