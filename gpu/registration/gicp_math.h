#pragma once
// The arithmetic of PCL's GeneralizedIterativeClosestPoint, for host and device: the regularised
// covariances, the Mahalanobis matrices, the six-parameter state (translation and Z-Y-X Euler
// angles) and its transform, the cost's gradient through the rotation and PCL's transform
// delta. Every GICP method runs this code, and minimises the cost with gicp_bfgs.h.
#include <cfloat>
#include <cmath>

#include "core/hd.h"
#include "core/jacobi_eigen3.h"
#include "registration/gicp_bfgs.h"
#include "registration/icp_math.h"

namespace cumulus::gicp_math {

// The values one cost evaluation sums over the pairs: the cost, M d, and p d^T M (row-major),
// where d = T p - q and M the pair's Mahalanobis matrix (PCL's OptimizationFunctorWithIndices).
struct CostSums {
  double f = 0;
  double md[3] = {0, 0, 0};
  double dr[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  static constexpr int kValues = 13;
  CUMULUS_HD double* values() { return &f; }
};
static_assert(sizeof(CostSums) == CostSums::kValues * sizeof(double), "read as a flat array");

// Squared distances as FLANN's kd-tree and our searches compute them: in float.
CUMULUS_HD inline float dist2(const float* a, const float* b) {
  const float dx = icp_math::fsub(a[0], b[0]), dy = icp_math::fsub(a[1], b[1]),
              dz = icp_math::fsub(a[2], b[2]);
  return icp_math::fadd(icp_math::fadd(icp_math::fmul(dx, dx), icp_math::fmul(dy, dy)),
                        icp_math::fmul(dz, dz));
}

// A row-major 4x4 (already cast to float) applied to p as PCL's GICP moves its source: Eigen
// multiplies the cast expression `m.cast<float>() * p` coefficient by coefficient, adding the
// four products as a pairwise tree (x + y) + (z + w), no FMA. (In the columns' order, as for a
// plain Matrix4f, 94 % of the coordinates of random points came out different.)
CUMULUS_HD inline void apply_float(const float* m, const float* p, float* out) {
  using icp_math::fadd;
  using icp_math::fmul;
  for (int r = 0; r < 3; ++r)
    out[r] = fadd(fadd(fmul(m[4 * r], p[0]), fmul(m[4 * r + 1], p[1])),
                  fadd(fmul(m[4 * r + 2], p[2]), m[4 * r + 3]));
}

// pcl::transformPointCloud with a double matrix: translation first, then the columns, in
// double, rounded to float.
CUMULUS_HD inline void apply_double(const double* m, const float* p, float* out) {
  for (int r = 0; r < 3; ++r) {
    double acc = m[4 * r + 3];
    acc = double(p[0]) * m[4 * r] + acc;
    acc = double(p[1]) * m[4 * r + 1] + acc;
    acc = double(p[2]) * m[4 * r + 2] + acc;
    out[r] = float(acc);
  }
}

// PCL's computeCovariances for one point from its k neighbours `nb` (3 floats each): the
// covariance summed as PCL sums it (products in float, sums in double), then its singular
// values replaced by 1, 1 and epsilon. Row-major 3x3 out.
CUMULUS_HD inline void regularised_covariance(const float* nb, int k, double epsilon, double* out) {
  double mean[3] = {0, 0, 0}, cov[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  for (int j = 0; j < k; ++j) {
    const float* p = nb + 3 * j;
    mean[0] += p[0];
    mean[1] += p[1];
    mean[2] += p[2];
    cov[0][0] += icp_math::fmul(p[0], p[0]);
    cov[1][0] += icp_math::fmul(p[1], p[0]);
    cov[1][1] += icp_math::fmul(p[1], p[1]);
    cov[2][0] += icp_math::fmul(p[2], p[0]);
    cov[2][1] += icp_math::fmul(p[2], p[1]);
    cov[2][2] += icp_math::fmul(p[2], p[2]);
  }
  for (int i = 0; i < 3; ++i)
    mean[i] /= double(k);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c <= r; ++c) {
      cov[r][c] /= double(k);
      cov[r][c] -= mean[r] * mean[c];
      cov[c][r] = cov[r][c];
    }
  // A symmetric matrix's singular vectors are its eigenvectors, its singular values the
  // eigenvalues' magnitudes; PCL keeps the two largest directions at 1 and the smallest at
  // epsilon (the surface's normal).
  double v[3][3];
  jacobi_eigen3(cov, v);
  int order[3] = {0, 1, 2};
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2 - a; ++b)
      if (fabs(cov[order[b]][order[b]]) < fabs(cov[order[b + 1]][order[b + 1]])) {
        const int t = order[b];
        order[b] = order[b + 1];
        order[b + 1] = t;
      }
  for (int i = 0; i < 9; ++i)
    out[i] = 0;
  for (int j = 0; j < 3; ++j) {
    const int col = order[j];
    const double s = j == 2 ? epsilon : 1.0;
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c)
        out[3 * r + c] += s * v[r][col] * v[c][col];
  }
}

// Inverse of a 3x3 (row-major) by cofactors, as Eigen inverts one.
CUMULUS_HD inline void inverse3(const double* a, double* out) {
  const double c0 = a[4] * a[8] - a[5] * a[7];
  const double c1 = a[5] * a[6] - a[3] * a[8];
  const double c2 = a[3] * a[7] - a[4] * a[6];
  const double inv_det = 1.0 / (a[0] * c0 + a[1] * c1 + a[2] * c2);
  out[0] = c0 * inv_det;
  out[1] = (a[2] * a[7] - a[1] * a[8]) * inv_det;
  out[2] = (a[1] * a[5] - a[2] * a[4]) * inv_det;
  out[3] = c1 * inv_det;
  out[4] = (a[0] * a[8] - a[2] * a[6]) * inv_det;
  out[5] = (a[2] * a[3] - a[0] * a[5]) * inv_det;
  out[6] = c2 * inv_det;
  out[7] = (a[1] * a[6] - a[0] * a[7]) * inv_det;
  out[8] = (a[0] * a[4] - a[1] * a[3]) * inv_det;
}

// A pair's Mahalanobis matrix (R C_source R^T + C_target)^-1, R the rotation of the transform
// at the iteration's start, scaled by the pair's robust weight w.
CUMULUS_HD inline void mahalanobis(const double* r, const double* c_src, const double* c_tgt,
                                   double w, double* out) {
  double rc[9], sum[9];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      rc[3 * i + j] =
          r[3 * i] * c_src[j] + r[3 * i + 1] * c_src[3 + j] + r[3 * i + 2] * c_src[6 + j];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      sum[3 * i + j] = rc[3 * i] * r[3 * j] + rc[3 * i + 1] * r[3 * j + 1] +
                       rc[3 * i + 2] * r[3 * j + 2] + c_tgt[3 * i + j];
  inverse3(sum, out);
  if (w != 1)
    for (int i = 0; i < 9; ++i)
      out[i] *= w;
}

// One pair's share of a cost evaluation: the source point p (already moved by the guess) under
// the float cast of the trial transform m, against target q.
CUMULUS_HD inline void add_cost(CostSums& s, const float* m, const float* p, const float* q,
                                const double* maha) {
  float tp[3];
  apply_float(m, p, tp);
  const double d[3] = {double(icp_math::fsub(tp[0], q[0])), double(icp_math::fsub(tp[1], q[1])),
                       double(icp_math::fsub(tp[2], q[2]))};
  double md[3];
  for (int r = 0; r < 3; ++r)
    md[r] = maha[3 * r] * d[0] + maha[3 * r + 1] * d[1] + maha[3 * r + 2] * d[2];
  s.f += d[0] * md[0] + d[1] * md[1] + d[2] * md[2];
  for (int r = 0; r < 3; ++r) {
    s.md[r] += md[r];
    for (int c = 0; c < 3; ++c)
      s.dr[3 * r + c] += double(p[r]) * md[c];
  }
}

// The state (tx, ty, tz, roll, pitch, yaw) of a rigid transform, as PCL reads it.
CUMULUS_HD inline void state_of(const double* m, double* x) {
  x[0] = m[3];
  x[1] = m[7];
  x[2] = m[11];
  x[3] = atan2(m[9], m[10]);
  x[4] = asin(-m[8]);
  x[5] = atan2(m[4], m[0]);
}

// PCL's applyState on the identity: R = AngleAxis(yaw, z) AngleAxis(pitch, y) AngleAxis(roll,
// x), multiplied as quaternions the way Eigen does.
CUMULUS_HD inline void transform_of(const double* x, double* m) {
  const double hz = 0.5 * x[5], hy = 0.5 * x[4], hx = 0.5 * x[3];
  const double az[4] = {cos(hz), 0, 0, sin(hz)};  // w, x, y, z
  const double ay[4] = {cos(hy), 0, sin(hy), 0};
  const double ax[4] = {cos(hx), sin(hx), 0, 0};
  const auto mul = [](const double* a, const double* b, double* o) {
    o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    o[2] = a[0] * b[2] + a[2] * b[0] + a[3] * b[1] - a[1] * b[3];
    o[3] = a[0] * b[3] + a[3] * b[0] + a[1] * b[2] - a[2] * b[1];
  };
  double zy[4], q[4];
  mul(az, ay, zy);
  mul(zy, ax, q);
  const double tx = 2 * q[1], ty = 2 * q[2], tz = 2 * q[3];
  const double twx = tx * q[0], twy = ty * q[0], twz = tz * q[0];
  const double txx = tx * q[1], txy = ty * q[1], txz = tz * q[1];
  const double tyy = ty * q[2], tyz = tz * q[2], tzz = tz * q[3];
  m[0] = 1 - (tyy + tzz);
  m[1] = txy - twz;
  m[2] = txz + twy;
  m[4] = txy + twz;
  m[5] = 1 - (txx + tzz);
  m[6] = tyz - twx;
  m[8] = txz - twy;
  m[9] = tyz + twx;
  m[10] = 1 - (txx + tyy);
  m[3] = x[0];
  m[7] = x[1];
  m[11] = x[2];
  m[12] = m[13] = m[14] = 0;
  m[15] = 1;
}

// The transform of state x cast to float, as PCL's functor applies it to the source.
CUMULUS_HD inline void float_transform_of(const double* x, float* mf) {
  double t[16];
  transform_of(x, t);
  for (int i = 0; i < 16; ++i)
    mf[i] = float(t[i]);
}

// The cost and its gradient from the summed values of m pairs (PCL's fdf after its loop).
CUMULUS_HD inline void finish_cost(const CostSums& s, double m, const double* x, double& f,
                                   double* g) {
  f = s.f / m;
  const double k = 2.0 / m;
  for (int i = 0; i < 3; ++i)
    g[i] = s.md[i] * k;
  double dr[9];
  for (int i = 0; i < 9; ++i)
    dr[i] = s.dr[i] * k;
  const double cphi = cos(x[3]), sphi = sin(x[3]);
  const double ctheta = cos(x[4]), stheta = sin(x[4]);
  const double cpsi = cos(x[5]), spsi = sin(x[5]);
  // Row-major derivatives of R by roll (phi), pitch (theta) and yaw (psi).
  const double d_phi[9] = {0,
                           sphi * spsi + cphi * cpsi * stheta,
                           cphi * spsi - cpsi * sphi * stheta,
                           0,
                           -cpsi * sphi + cphi * spsi * stheta,
                           -cphi * cpsi - sphi * spsi * stheta,
                           0,
                           cphi * ctheta,
                           -ctheta * sphi};
  const double d_theta[9] = {-cpsi * stheta, cpsi * ctheta * sphi, cphi * cpsi * ctheta,
                             -spsi * stheta, ctheta * sphi * spsi, cphi * ctheta * spsi,
                             -ctheta,        -sphi * stheta,       -cphi * stheta};
  const double d_psi[9] = {-ctheta * spsi,
                           -cphi * cpsi - sphi * spsi * stheta,
                           cpsi * sphi - cphi * spsi * stheta,
                           cpsi * ctheta,
                           -cphi * spsi + cpsi * sphi * stheta,
                           sphi * spsi + cphi * cpsi * stheta,
                           0,
                           0,
                           0};
  // trace(dR * dCost_dR^T), PCL's matricesInnerProd.
  const auto inner = [&](const double* a) {
    double t = 0;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j)
        t += a[3 * i + j] * dr[3 * j + i];
    return t;
  };
  g[3] = inner(d_phi);
  g[4] = inner(d_theta);
  g[5] = inner(d_psi);
}

// PCL's transform delta: the largest change of a rotation entry over the rotation epsilon or of
// any other entry over the translation epsilon. GICP has converged when it is below 1.
CUMULUS_HD inline double delta(const double* prev, const double* cur, double rotation_epsilon,
                               double translation_epsilon) {
  double d = 0;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) {
      const double ratio = r < 3 && c < 3 ? 1.0 / rotation_epsilon : 1.0 / translation_epsilon;
      const double cd = ratio * fabs(prev[4 * r + c] - cur[4 * r + c]);
      if (cd > d) d = cd;
    }
  return d;
}

// The incremental transform cur * prev^-1's rotation cosine and squared translation.
CUMULUS_HD inline void increment(const double* prev, const double* cur, double& cosine,
                                 double& translation_sq) {
  double r[9], t[3];
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      r[3 * i + j] = cur[4 * i] * prev[4 * j] + cur[4 * i + 1] * prev[4 * j + 1] +
                     cur[4 * i + 2] * prev[4 * j + 2];
  for (int i = 0; i < 3; ++i)
    t[i] = cur[4 * i + 3] - (r[3 * i] * prev[3] + r[3 * i + 1] * prev[7] + r[3 * i + 2] * prev[11]);
  cosine = 0.5 * (r[0] + r[4] + r[8] - 1);
  translation_sq = t[0] * t[0] + t[1] * t[1] + t[2] * t[2];
}

}  // namespace cumulus::gicp_math
