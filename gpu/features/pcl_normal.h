#pragma once
// PCL's NormalEstimation arithmetic, step for step in float, for the `pcl_compatible` normals:
// computeMeanAndCovarianceMatrix (sums about the first neighbour, in the neighbours' order),
// eigen33 (the matrix scaled into [-1, 1], the characteristic polynomial's roots in closed form,
// the eigenvector as the longest cross product of two rows of M - lambda I, Eigen's norm
// summing x^2 + (y^2 + z^2)) and flipNormalTowardsViewpoint. The covariance is summed on the
// GPU (-fmad=false keeps each product rounded as the host's); the solve runs on the host because
// it calls the C library's float atan2, cos and sin, which a GPU does not reproduce: with the
// same functions taken in double and rounded, 5 % of the bunny's normals moved in their last
// bits (measured), and every bit counts where a histogram bin's edge lies.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/hd.h"

namespace cumulus::pcl_normal {

// The six distinct covariance entries (xx xy xz yy yz zz) of `count` neighbours, and the sum of
// nothing else: what k_covariance_pcl writes a point.
struct Covariance {
  float c[6];
  int count;
};

// Neighbour coordinates, first neighbour first (the shift PCL takes), as PCL sums them.
template <class Get>
CUMULUS_HD inline Covariance covariance(int count, Get&& point) {
  if (count < 1) return {{0, 0, 0, 0, 0, 0}, count};
  float accu[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  float k[3];
  point(0, k);
  for (int i = 0; i < count; ++i) {
    float p[3];
    point(i, p);
    const float x = p[0] - k[0], y = p[1] - k[1], z = p[2] - k[2];
    accu[0] += x * x;
    accu[1] += x * y;
    accu[2] += x * z;
    accu[3] += y * y;
    accu[4] += y * z;
    accu[5] += z * z;
    accu[6] += x;
    accu[7] += y;
    accu[8] += z;
  }
  const float n = float(count);
  for (float& a : accu)
    a /= n;
  return {{accu[0] - accu[6] * accu[6], accu[1] - accu[6] * accu[7], accu[2] - accu[6] * accu[8],
           accu[3] - accu[7] * accu[7], accu[4] - accu[7] * accu[8], accu[5] - accu[8] * accu[8]},
          count};
}

inline void roots2(float b, float c, float* roots) {
  roots[0] = 0.0f;
  float d = float(double(b * b) - 4.0 * double(c));  // PCL writes b * b - 4.0 * c
  if (d < 0.0f) d = 0.0f;
  const float sd = std::sqrt(d);
  roots[2] = 0.5f * (b + sd);
  roots[1] = 0.5f * (b - sd);
}

inline void roots3(const float m[3][3], float* roots) {
  const float c0 = m[0][0] * m[1][1] * m[2][2] + 2.0f * m[0][1] * m[0][2] * m[1][2] -
                   m[0][0] * m[1][2] * m[1][2] - m[1][1] * m[0][2] * m[0][2] -
                   m[2][2] * m[0][1] * m[0][1];
  const float c1 = m[0][0] * m[1][1] - m[0][1] * m[0][1] + m[0][0] * m[2][2] - m[0][2] * m[0][2] +
                   m[1][1] * m[2][2] - m[1][2] * m[1][2];
  const float c2 = m[0][0] + m[1][1] + m[2][2];
  if (std::abs(c0) < std::numeric_limits<float>::epsilon()) {
    roots2(c2, c1, roots);
    return;
  }
  const float inv3 = float(1.0 / 3.0), sqrt3 = std::sqrt(3.0f);
  const float c2_over_3 = c2 * inv3;
  float a_over_3 = (c1 - c2 * c2_over_3) * inv3;
  if (a_over_3 > 0.0f) a_over_3 = 0.0f;
  const float half_b = 0.5f * (c0 + c2_over_3 * (2.0f * c2_over_3 * c2_over_3 - c1));
  float q = half_b * half_b + a_over_3 * a_over_3 * a_over_3;
  if (q > 0.0f) q = 0.0f;
  const float rho = std::sqrt(-a_over_3);
  const float theta = std::atan2(std::sqrt(-q), half_b) * inv3;
  const float cos_theta = std::cos(theta), sin_theta = std::sin(theta);
  roots[0] = c2_over_3 + 2.0f * rho * cos_theta;
  roots[1] = c2_over_3 - rho * (cos_theta + sqrt3 * sin_theta);
  roots[2] = c2_over_3 - rho * (cos_theta - sqrt3 * sin_theta);
  if (roots[0] >= roots[1]) std::swap(roots[0], roots[1]);
  if (roots[1] >= roots[2]) {
    std::swap(roots[1], roots[2]);
    if (roots[0] >= roots[1]) std::swap(roots[0], roots[1]);
  }
  if (roots[0] <= 0) roots2(c2, c1, roots);
}

// The normal (facing `to_viewpoint`, the viewpoint minus the point) and curvature from a
// covariance; false below 3 neighbours, as PCL leaves NaN there.
inline bool normal(const Covariance& cov, const float to_viewpoint[3], float n[3],
                   float& curvature) {
  if (cov.count < 3) return false;
  const float* c = cov.c;
  const float a[3][3] = {{c[0], c[1], c[2]}, {c[1], c[3], c[4]}, {c[2], c[4], c[5]}};
  float scale = 0;
  for (const auto& row : a)
    for (float v : row)
      scale = std::max(scale, std::abs(v));
  if (scale <= std::numeric_limits<float>::min()) scale = 1.0f;
  float m[3][3];
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k)
      m[r][k] = a[r][k] / scale;
  float roots[3];
  roots3(m, roots);
  const float eigenvalue = roots[0] * scale;
  for (int d = 0; d < 3; ++d)
    m[d][d] -= roots[0];
  const auto cross = [](const float* u, const float* v, float* o) {
    o[0] = u[1] * v[2] - u[2] * v[1];
    o[1] = u[2] * v[0] - u[0] * v[2];
    o[2] = u[0] * v[1] - u[1] * v[0];
  };
  float cp[3][3], len[3];
  cross(m[0], m[1], cp[0]);
  cross(m[0], m[2], cp[1]);
  cross(m[1], m[2], cp[2]);
  for (int r = 0; r < 3; ++r)
    len[r] = std::sqrt(cp[r][0] * cp[r][0] + (cp[r][1] * cp[r][1] + cp[r][2] * cp[r][2]));
  int best = 0;
  for (int r = 1; r < 3; ++r)
    if (len[r] > len[best]) best = r;
  for (int d = 0; d < 3; ++d)
    n[d] = cp[best][d] / len[best];
  const float sum = a[0][0] + a[1][1] + a[2][2];
  curvature = sum != 0 ? std::abs(eigenvalue / sum) : 0;
  // flipNormalTowardsViewpoint's float overload sums left to right.
  const float cos_theta = to_viewpoint[0] * n[0] + to_viewpoint[1] * n[1] + to_viewpoint[2] * n[2];
  if (cos_theta < 0)
    for (int d = 0; d < 3; ++d)
      n[d] *= -1;
  return true;
}

}  // namespace cumulus::pcl_normal
