#pragma once
// The arithmetic of global registration's hypotheses, shared by the host and the device so the
// `cpu-mutual` and `gpu` methods draw, reject and score the same hypotheses: three feature
// correspondences per hypothesis from a counter-based hash of (seed, hypothesis, draw), PCL's
// edge-length prerejection, the rigid transform of the three pairs (icp_math's Umeyama) and the
// inlier test of a correspondence under it.
#include <cstdint>

#include "core/hd.h"
#include "registration/icp_math.h"

namespace cumulus::global_math {

struct Pair3 {
  float s[3];  // source keypoint
  float t[3];  // target keypoint
};

CUMULUS_HD inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Three distinct correspondence indices of hypothesis h among n (n >= 3): a draw that repeats
// an earlier one moves on to the next index, so every hypothesis has three.
CUMULUS_HD inline void draw_triplet(std::uint64_t seed, std::uint32_t h, std::uint32_t n,
                                    std::uint32_t* idx) {
  for (int j = 0; j < 3; ++j) {
    std::uint32_t v = std::uint32_t(mix64(seed ^ mix64(3ull * h + std::uint64_t(j))) % n);
    for (int tries = 0; tries < 2; ++tries)
      for (int i = 0; i < j; ++i)
        if (idx[i] == v) v = (v + 1) % n;
    idx[j] = v;
  }
}

CUMULUS_HD inline double dist2(const float* a, const float* b) {
  const double dx = double(a[0]) - b[0], dy = double(a[1]) - b[1], dz = double(a[2]) - b[2];
  return dx * dx + dy * dy + dz * dz;
}

// PCL's SampleConsensusPrerejective polygon test: every edge of the source triangle and the
// matching edge of the target triangle agree in length to the ratio `similarity` (0..1), and
// the triangle is not degenerate (its area against its longest edge's square: three nearly
// collinear pairs fix no rotation about their line).
CUMULUS_HD inline bool triangle_passes(const Pair3* p, double similarity) {
  double longest = 0;
  for (int i = 0; i < 3; ++i) {
    const int j = (i + 1) % 3;
    const double ls = dist2(p[i].s, p[j].s), lt = dist2(p[i].t, p[j].t);
    if (!(ls > 0) || !(lt > 0)) return false;
    // Compared squared: sqrt(a)/sqrt(b) >= r  <=>  a >= r^2 b.
    const double r2 = similarity * similarity;
    if (ls < r2 * lt || lt < r2 * ls) return false;
    longest = ls > longest ? ls : longest;
  }
  const double u[3] = {double(p[1].s[0]) - p[0].s[0], double(p[1].s[1]) - p[0].s[1],
                       double(p[1].s[2]) - p[0].s[2]};
  const double v[3] = {double(p[2].s[0]) - p[0].s[0], double(p[2].s[1]) - p[0].s[1],
                       double(p[2].s[2]) - p[0].s[2]};
  double n[3];
  icp_math::cross(u, v, n);
  // |u x v|^2 >= (0.05 longest^2)^2: the smallest angle is not within about 3 degrees of 0.
  return n[0] * n[0] + n[1] * n[1] + n[2] * n[2] >= 0.0025 * longest * longest;
}

// Row-major 4x4 rigid transform of the pairs (Umeyama without scale), about the first source
// point so the sums stay small for clouds far from the origin.
CUMULUS_HD inline void triplet_transform(const Pair3* p, int count, double* m) {
  icp_math::Sums sums;
  const double c[3] = {p[0].s[0], p[0].s[1], p[0].s[2]};
  for (int i = 0; i < count; ++i) {
    const double s[3] = {p[i].s[0] - c[0], p[i].s[1] - c[1], p[i].s[2] - c[2]};
    const double t[3] = {p[i].t[0] - c[0], p[i].t[1] - c[1], p[i].t[2] - c[2]};
    icp_math::add(sums, s, t, 0);
  }
  icp_math::estimate_rigid(sums, c, m);
}

// Squared distance of the moved source keypoint from its target keypoint, in the float
// transform every method scores with (m: 12 floats, the top three rows).
CUMULUS_HD inline float residual2(const float* m, const float* s, const float* t) {
  const float x = m[0] * s[0] + m[1] * s[1] + m[2] * s[2] + m[3] - t[0];
  const float y = m[4] * s[0] + m[5] * s[1] + m[6] * s[2] + m[7] - t[1];
  const float z = m[8] * s[0] + m[9] * s[1] + m[10] * s[2] + m[11] - t[2];
  return x * x + y * y + z * z;
}

// A hypothesis's transform, or false where its triangle is rejected.
CUMULUS_HD inline bool make_hypothesis(const float* s_points, const float* t_points,
                                       const std::int32_t* pair_s, const std::int32_t* pair_t,
                                       std::uint32_t n, std::uint64_t seed, std::uint32_t h,
                                       double similarity, float* m12) {
  std::uint32_t idx[3];
  draw_triplet(seed, h, n, idx);
  Pair3 p[3];
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < 3; ++d) {
      p[i].s[d] = s_points[3 * pair_s[idx[i]] + d];
      p[i].t[d] = t_points[3 * pair_t[idx[i]] + d];
    }
  if (!triangle_passes(p, similarity)) return false;
  double m[16];
  triplet_transform(p, 3, m);
  for (int i = 0; i < 12; ++i)
    m12[i] = float(m[i]);
  return true;
}

}  // namespace cumulus::global_math
