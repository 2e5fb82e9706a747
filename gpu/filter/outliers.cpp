// Outlier removal: argument checks, statistical outlier removal's threshold as PCL computes it
// (and how far it can move with the order of summation), and dispatch to PCL or the GPU.
#include <cmath>
#include <limits>

#include "core/error.h"
#include "filter/cuda/filter_gpu.h"
#include "filter/filter.h"
#include "filter/filter_impl.h"

namespace cumulus {

namespace {

constexpr double kUnit = std::numeric_limits<double>::epsilon() / 2;  // unit roundoff

// x moved outward by `ulps` units of its own rounding.
double widen_down(double x, double ulps) {
  return x - std::abs(x) * ulps * kUnit;
}
double widen_up(double x, double ulps) {
  return x + std::abs(x) * ulps * kUnit;
}

double threshold_of(double sum, double sq_sum, double valid, double stddev_mul) {
  const double mean = sum / valid;
  const double variance = (sq_sum - sum * sum / valid) / (valid - 1);
  return mean + stddev_mul * std::sqrt(variance);
}

}  // namespace

void validate(const StatisticalOutlierParams& p) {
  if (p.mean_k < 1 || p.mean_k > kMaxOutlierMeanK)
    throw InvalidArgument("statistical outlier removal: mean_k must be 1 to " +
                          std::to_string(kMaxOutlierMeanK) + " neighbours, got " +
                          std::to_string(p.mean_k));
  if (!std::isfinite(p.stddev_mul))
    throw InvalidArgument(
        "statistical outlier removal: the standard deviation multiplier must "
        "be a finite number");
}

void validate(const RadiusOutlierParams& p) {
  if (!(p.radius > 0) || !std::isfinite(p.radius))
    throw InvalidArgument(
        "radius outlier removal: the radius must be a positive number of "
        "metres, got " +
        std::to_string(p.radius));
  if (p.min_neighbors < 0 || p.min_neighbors > 1000000)
    throw InvalidArgument(
        "radius outlier removal: the minimum number of neighbours must be 0 to "
        "1,000,000, got " +
        std::to_string(p.min_neighbors));
}

double sor_threshold(const ScoreSums& s, double stddev_mul) {
  return threshold_of(s.sum, s.sq_sum, double(s.valid), stddev_mul);
}

ThresholdRange sor_threshold_range(const ScoreSums& s, double stddev_mul) {
  // Scores are non-negative, so any order of summation is within (n - 1) u (1 + small) of the
  // exact sum, relative; PCL's serial sum and ours are then within twice that of each other.
  const double v = double(s.valid);
  const double spread = 2.0 * (v + 2.0) * kUnit * 1.01;
  const double s_lo = s.sum * (1 - spread), s_hi = s.sum * (1 + spread);
  const double q_lo = s.sq_sum * (1 - spread), q_hi = s.sq_sum * (1 + spread);
  // Each operation of PCL's formula rounds once more; four units per step covers it.
  const double mean_lo = widen_down(s_lo / v, 4), mean_hi = widen_up(s_hi / v, 4);
  const double square_lo = widen_down(s_lo * s_lo / v, 8), square_hi = widen_up(s_hi * s_hi / v, 8);
  const double magnitude = q_hi + square_hi;
  const double numerator_lo = q_lo - square_hi - magnitude * 4 * kUnit;
  const double numerator_hi = q_hi - square_lo + magnitude * 4 * kUnit;
  ThresholdRange r;
  if (!(numerator_lo > 0) || v < 2) return r;  // a variance that may be zero or negative
  const double sd_lo = widen_down(std::sqrt(numerator_lo / (v - 1)), 8);
  const double sd_hi = widen_up(std::sqrt(numerator_hi / (v - 1)), 8);
  const double a = stddev_mul * sd_lo, b = stddev_mul * sd_hi;
  r.lo = widen_down(mean_lo + std::min(a, b), 8) - std::abs(std::min(a, b)) * 4 * kUnit;
  r.hi = widen_up(mean_hi + std::max(a, b), 8) + std::abs(std::max(a, b)) * 4 * kUnit;
  r.usable = std::isfinite(r.lo) && std::isfinite(r.hi);
  return r;
}

double sor_threshold_serial(const float* scores, std::size_t n, std::uint64_t valid,
                            double stddev_mul) {
  double sum = 0, sq_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = scores[i];
    sum += d;
    sq_sum += double(d * d);  // PCL squares in float
  }
  return threshold_of(sum, sq_sum, double(valid), stddev_mul);
}

FilterResult remove_statistical_outliers(const PointCloud& cloud,
                                         const StatisticalOutlierParams& params,
                                         FilterMethod method) {
  validate(params);
  const std::size_t non_finite = cloud.count_non_finite();
  const std::size_t finite = cloud.size() - non_finite;
  if (finite < std::size_t(params.mean_k) + 1)
    throw InvalidArgument("statistical outlier removal needs at least mean_k + 1 = " +
                          std::to_string(params.mean_k + 1) + " finite points; the cloud has " +
                          std::to_string(finite));
  WallTimer total;
  FilterResult r;
  if (method == FilterMethod::Cpu) {
    WallTimer t;
    r.kept = statistical_outliers_pcl(cloud, params);
    r.stages.emplace_back("PCL StatisticalOutlierRemoval", t.ms());
  } else {
    r.kept = statistical_outliers_gpu(cloud, params, r.stages);
  }
  r.non_finite = non_finite;
  finish_kept(cloud, method, total, r);
  return r;
}

FilterResult remove_radius_outliers(const PointCloud& cloud, const RadiusOutlierParams& params,
                                    FilterMethod method) {
  validate(params);
  WallTimer total;
  FilterResult r;
  r.non_finite = cloud.count_non_finite();
  if (method == FilterMethod::Cpu) {
    WallTimer t;
    r.kept = radius_outliers_pcl(cloud, params);
    r.stages.emplace_back("PCL RadiusOutlierRemoval", t.ms());
  } else if (!cloud.empty()) {
    // PCL keeps d2 <= radius^2 compared in double: the largest float at or below it.
    const double r2 = params.radius * params.radius;
    float limit = float(r2);
    if (double(limit) > r2) limit = std::nextafter(limit, 0.0f);
    r.kept = radius_outliers_gpu(cloud, params, limit, r.stages);
  }
  finish_kept(cloud, method, total, r);
  return r;
}

}  // namespace cumulus
