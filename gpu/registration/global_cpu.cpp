// Ours on the CPU, one thread: the `gpu` method's matching and hypotheses in the same order and
// arithmetic (global_math.h), so the two agree given the same descriptors.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "registration/global_impl.h"
#include "registration/global_math.h"

namespace cumulus {

namespace {

// Nearest row of `b` to each row of `a` (squared L2 summed in bin order in float, as the GPU
// sums; ties to the lower index); -1 for rows left out.
std::vector<std::int32_t> nearest_rows(const FeatureResult& a,
                                       const std::vector<std::uint8_t>& a_ok,
                                       const FeatureResult& b,
                                       const std::vector<std::uint8_t>& b_ok,
                                       const std::function<void(std::size_t)>& step) {
  const int bins = a.bins;
  std::vector<std::int32_t> out(a.size(), -1);
  for (std::size_t i = 0; i < a.size(); ++i) {
    step(i);
    if (!a_ok[i]) continue;
    const float* x = a.row(i);
    float best = std::numeric_limits<float>::infinity();
    std::int32_t arg = -1;
    for (std::size_t j = 0; j < b.size(); ++j) {
      if (!b_ok[j]) continue;
      const float* y = b.row(j);
      float d = 0;
      for (int k = 0; k < bins; ++k) {
        const float e = x[k] - y[k];
        d += e * e;
      }
      if (d < best) {
        best = d;
        arg = std::int32_t(j);
      }
    }
    out[i] = arg;
  }
  return out;
}

}  // namespace

FeatureMatches match_features_cpu(const FeatureResult& source, const FeatureResult& target,
                                  const GlobalProgress& progress) {
  const auto s_ok = finite_rows(source), t_ok = finite_rows(target);
  // A row compares with every row of the other side: with thousands of keypoints, seconds.
  StageReport report(progress, GlobalStage::Matching, source.size() + target.size());
  const auto forward = nearest_rows(source, s_ok, target, t_ok, [&](std::size_t i) { report(i); });
  const auto backward =
      nearest_rows(target, t_ok, source, s_ok, [&](std::size_t i) { report(source.size() + i); });
  report(source.size() + target.size());
  FeatureMatches m;
  for (std::size_t i = 0; i < forward.size(); ++i)
    if (forward[i] >= 0 && backward[std::size_t(forward[i])] == std::int32_t(i)) {
      m.source.push_back(std::int32_t(i));
      m.target.push_back(forward[i]);
    }
  return m;
}

Candidates candidates_cpu(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, const MoreRounds& more,
                          const GlobalProgress& progress) {
  const auto s = flat_points(source), t = flat_points(target);
  const auto n = std::uint32_t(matches.size());
  const float limit2 = float(inlier_distance * inlier_distance);
  Candidates c;
  const auto total = std::uint32_t(params.hypotheses);
  // A hypothesis scores every pair: with thousands of pairs a round of 100,000 takes seconds.
  StageReport report(progress, GlobalStage::Hypotheses, total);
  for (std::uint32_t first = 0; first < total; first += kRoundHypotheses) {
    const std::uint32_t end = first + std::min(kRoundHypotheses, total - first);
    for (std::uint32_t h = first; h < end; ++h) {
      if ((h & 63) == 0) report(h);
      float m[12];
      if (!global_math::make_hypothesis(s.data(), t.data(), matches.source.data(),
                                        matches.target.data(), n, params.seed, h, params.similarity,
                                        m))
        continue;
      ++c.valid;
      std::uint32_t count = 0;
      for (std::uint32_t k = 0; k < n; ++k)
        count += global_math::residual2(m, &s[3 * std::size_t(matches.source[k])],
                                        &t[3 * std::size_t(matches.target[k])]) <= limit2;
      c.keep(hypothesis_key(h, count));
    }
    c.drawn = end;
    if (!more(c.drawn, c.keys.empty() ? 0 : key_inliers(c.keys.front()))) break;
  }
  return c;
}

}  // namespace cumulus
