#pragma once
// The normals kernel: PCL's NormalEstimation per point, exact (double sums, Jacobi). Included by
// features_gpu.cu only, which is compiled with -fmad=false.
#include <cuda_runtime.h>

#include "core/jacobi_eigen3.h"
#include "features/cuda/rows.cuh"
#include "features/pair_math.h"
#include "features/pcl_normal.h"

namespace cumulus::feat {

namespace fm = features_math;

// ---- normals ------------------------------------------------------------------------------

// PCL's NormalEstimation for one point: the eigenvector of the smallest eigenvalue of the
// neighbourhood covariance, facing the viewpoint; NaN below 3 neighbours or with no spread.
// PCL computes in float and its library build lands up to a few hundredths of a degree from the
// exact answer on real scans; this is the exact one (sums relative to the query point in double,
// then the eigenvectors by Jacobi in double).
__global__ void k_normals(const float3* pts, int n, Rows rows, float3 vp, float3* normals,
                          float* curvature) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const float3 p = pts[q];
  const unsigned b = rows.begin(q), e = rows.end(q);
  const float nan = __int_as_float(0x7fc00000);
  if (e - b < 3) {
    normals[q] = make_float3(nan, nan, nan);
    curvature[q] = nan;
    return;
  }
  double s[3] = {0, 0, 0}, ss[6] = {0, 0, 0, 0, 0, 0};
  for (unsigned j = b; j < e; ++j) {
    const float3 o = pts[rows.index[j]];
    const double x = double(o.x) - p.x, y = double(o.y) - p.y, z = double(o.z) - p.z;
    s[0] += x;
    s[1] += y;
    s[2] += z;
    ss[0] += x * x;
    ss[1] += x * y;
    ss[2] += x * z;
    ss[3] += y * y;
    ss[4] += y * z;
    ss[5] += z * z;
  }
  const double m = double(e - b);
  const double mx = s[0] / m, my = s[1] / m, mz = s[2] / m;
  double a[3][3];
  a[0][0] = ss[0] / m - mx * mx;
  a[0][1] = a[1][0] = ss[1] / m - mx * my;
  a[0][2] = a[2][0] = ss[2] / m - mx * mz;
  a[1][1] = ss[3] / m - my * my;
  a[1][2] = a[2][1] = ss[4] / m - my * mz;
  a[2][2] = ss[5] / m - mz * mz;
  const double trace = a[0][0] + a[1][1] + a[2][2];
  if (!(trace > 0.0)) {  // every neighbour at the same place
    normals[q] = make_float3(nan, nan, nan);
    curvature[q] = 0.0f;
    return;
  }
  double v[3][3];
  jacobi_eigen3(a, v);
  int k = 0;
  if (a[1][1] < a[k][k]) k = 1;
  if (a[2][2] < a[k][k]) k = 2;
  double nx = v[0][k], ny = v[1][k], nz = v[2][k];
  const double len = sqrt(nx * nx + ny * ny + nz * nz);
  nx /= len;
  ny /= len;
  nz /= len;
  const double cos_theta =
      (double(vp.x) - p.x) * nx + (double(vp.y) - p.y) * ny + (double(vp.z) - p.z) * nz;
  if (cos_theta < 0) {
    nx = -nx;
    ny = -ny;
    nz = -nz;
  }
  normals[q] = make_float3(float(nx), float(ny), float(nz));
  curvature[q] = float(fabs(a[k][k] / trace));
}

// PCL's covariance of each point's neighbourhood, summed as PCL sums it (pcl_normal.h); the host
// finishes the normals (the `pcl_compatible` mode).
__global__ void k_covariance_pcl(const float3* pts, int n, Rows rows, pcl_normal::Covariance* out) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const unsigned b = rows.begin(q), e = rows.end(q);
  out[q] = pcl_normal::covariance(int(e - b), [&](int i, float* p) {
    const float3 o = pts[rows.index[b + unsigned(i)]];
    p[0] = o.x;
    p[1] = o.y;
    p[2] = o.z;
  });
}

}  // namespace cumulus::feat
