#pragma once
// PCL's plane refinement (the plane through the inliers' centroid, normal to their covariance's
// smallest eigenvector) as one function for the host and the device: the GPU RANSAC refines its
// best plane on the device, with no read back between refits, and the range image's ground
// refits on the host with the same arithmetic.
#include <cmath>

#include "core/hd.h"

namespace cumulus::plane_refit {

// m: count, the sums of x y z and of xx xy xz yy yz zz, of the points less `ref`. The result
// keeps the side of `hint` (a normal); normal and d describe n . p + d = 0 with |n| = 1.
CUMULUS_HD inline void refit(const double* m, const double* ref, const double* hint, double* normal,
                             double* d) {
  const double n = m[0];
  const double mean[3] = {m[1] / n, m[2] / n, m[3] / n};
  const int sq[3][3] = {{4, 5, 6}, {5, 7, 8}, {6, 8, 9}};
  double a[3][3], v[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      a[r][c] = m[sq[r][c]] / n - mean[r] * mean[c];
      v[r][c] = r == c;
    }
  // Cyclic Jacobi: quadratic convergence, a handful of sweeps for a 3x3, and eigenvectors
  // orthonormal to rounding even where two eigenvalues nearly meet (a closed form loses them).
  for (int sweep = 0; sweep < 50; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    const double diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
    if (!(off > 1e-32 * diag)) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        const double apq = a[p][q];
        if (apq == 0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
        const double c = 1 / sqrt(t * t + 1), s = t * c, tau = s / (1 + c);
        const int r = 3 - p - q;
        const double arp = a[r][p], arq = a[r][q];
        a[p][p] -= t * apq;
        a[q][q] += t * apq;
        a[p][q] = a[q][p] = 0;
        a[r][p] = a[p][r] = arp - s * (arq + tau * arp);
        a[r][q] = a[q][r] = arq + s * (arp - tau * arq);
        for (int k = 0; k < 3; ++k) {
          const double vkp = v[k][p], vkq = v[k][q];
          v[k][p] = vkp - s * (vkq + tau * vkp);
          v[k][q] = vkq + s * (vkp - tau * vkq);
        }
      }
  }
  int smallest = 0;
  for (int k = 1; k < 3; ++k)
    if (a[k][k] < a[smallest][smallest]) smallest = k;
  double len = 0, along = 0;
  for (int k = 0; k < 3; ++k) {
    len += v[k][smallest] * v[k][smallest];
    along += v[k][smallest] * hint[k];
  }
  const double scale = (along < 0 ? -1 : 1) / sqrt(len);
  *d = 0;
  for (int k = 0; k < 3; ++k) {
    normal[k] = v[k][smallest] * scale;
    *d -= normal[k] * (mean[k] + ref[k]);
  }
}

}  // namespace cumulus::plane_refit
