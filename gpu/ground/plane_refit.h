#pragma once
// PCL's plane refinement (the plane through the inliers' centroid, normal to their covariance's
// smallest eigenvector, by core/jacobi_eigen3.h) as one function for the host and the device:
// the GPU RANSAC refines its best plane on the device, with no read back between refits, and
// the range image's ground refits on the host with the same arithmetic.
#include <cmath>

#include "core/hd.h"
#include "core/jacobi_eigen3.h"

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
    for (int c = 0; c < 3; ++c)
      a[r][c] = m[sq[r][c]] / n - mean[r] * mean[c];
  jacobi_eigen3(a, v);
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
