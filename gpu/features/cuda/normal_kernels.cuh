#pragma once
// The normals kernel: PCL's NormalEstimation per point, exact (double sums, Jacobi). Included by
// features_gpu.cu only, which is compiled with -fmad=false.
#include <cuda_runtime.h>

#include "core/jacobi_eigen3.h"
#include "features/cuda/rows.cuh"
#include "features/pair_math.h"
#include "features/pcl_normal.h"
#include "nns/cuda/cell_order.cuh"

namespace cumulus::feat {

namespace fm = features_math;

// ---- normals ------------------------------------------------------------------------------

// PCL's NormalEstimation for one point from its neighbourhood's sums relative to the point
// (count m, sums s of x, y, z and ss of xx, xy, xz, yy, yz, zz): the eigenvector of the smallest
// eigenvalue of the covariance, facing the viewpoint; NaN below 3 neighbours or with no spread.
// PCL computes in float and its library build lands up to a few hundredths of a degree from the
// exact answer on real scans; this is the exact one (the sums in double, then the eigenvectors by
// Jacobi in double).
__device__ inline void normal_from_sums(unsigned count, const double s[3], const double ss[6],
                                        float3 p, float3 vp, float3& normal, float& curvature) {
  const float nan = __int_as_float(0x7fc00000);
  if (count < 3) {
    normal = make_float3(nan, nan, nan);
    curvature = nan;
    return;
  }
  const double m = double(count);
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
    normal = make_float3(nan, nan, nan);
    curvature = 0.0f;
    return;
  }
  double v[3][3];
  jacobi_eigen3(a, v);
  // The smallest eigenvalue's column by selects: an index into a or v puts both in local memory.
  const bool k1 = a[1][1] < a[0][0];
  const double least01 = k1 ? a[1][1] : a[0][0];
  const bool k2 = a[2][2] < least01;
  const double least = k2 ? a[2][2] : least01;
  const auto pick = [&](const double* row) { return k2 ? row[2] : k1 ? row[1] : row[0]; };
  double nx = pick(v[0]), ny = pick(v[1]), nz = pick(v[2]);
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
  normal = make_float3(float(nx), float(ny), float(nz));
  curvature = float(fabs(least / trace));
}

// The normals of 32 points a block: first L lanes a point sum its row, lane l every L-th
// neighbour (consecutive indices: a sector or two a group), and the group's sums meet by
// shuffles in shared memory; then the block's first warp finishes the 32 points, a lane each.
// With a thread a point (L = 1, which short rows keep) a long row is one lane's chain of
// dependent loads: KITTI at r = 0.5 m has 180 neighbours a row on average, 704 at most, and a
// thread a point ran in about one wave with a quarter of the warps the SMs hold (ncu). The sums
// are in double, so their order moves a normal by far less than a float's last place but for
// rare roundings; the normals are held to the exact PCA and to PCL by angle (test_features).
template <int L>
__global__ void __launch_bounds__(32 * L)
    k_normals(const float3* pts, int n, const int* order, Rows rows, float3 vp, float3* normals,
              float* curvature) {
  static_assert(32 % L == 0, "a point's lanes lie in one warp");
  __shared__ double s_sums[32][9];
  __shared__ unsigned s_count[32];
  const int group = int(threadIdx.x) / L, slot = int(threadIdx.x) % L;
  const int first = int(blockIdx.x) * 32;
  if (first + group < n) {  // every lane of a group alike
    const int q = nns::point_in_order(order, first + group);
    const float3 p = pts[q];
    const unsigned b = rows.begin(q), e = rows.end(q);
    double t[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 4
    for (unsigned j = b + unsigned(slot); j < e; j += L) {
      const float3 o = pts[rows.index[j]];
      const double x = double(o.x) - p.x, y = double(o.y) - p.y, z = double(o.z) - p.z;
      t[0] += x;
      t[1] += y;
      t[2] += z;
      t[3] += x * x;
      t[4] += x * y;
      t[5] += x * z;
      t[6] += y * y;
      t[7] += y * z;
      t[8] += z * z;
    }
    const unsigned mask = L == 32 ? 0xffffffffu : ((1u << (L % 32)) - 1u) << (group * L % 32);
#pragma unroll
    for (int d = L / 2; d > 0; d >>= 1)
#pragma unroll
      for (int v = 0; v < 9; ++v)
        t[v] += __shfl_xor_sync(mask, t[v], d, L);
    if (slot == 0) {
#pragma unroll
      for (int v = 0; v < 9; ++v)
        s_sums[group][v] = t[v];
      s_count[group] = e - b;
    }
  }
  __syncthreads();
  if (threadIdx.x >= 32 || first + int(threadIdx.x) >= n) return;
  const int r = nns::point_in_order(order, first + int(threadIdx.x));
  const double* t = s_sums[threadIdx.x];
  const double s[3] = {t[0], t[1], t[2]}, ss[6] = {t[3], t[4], t[5], t[6], t[7], t[8]};
  float3 normal;
  float curv;
  normal_from_sums(s_count[threadIdx.x], s, ss, pts[r], vp, normal, curv);
  normals[r] = normal;
  curvature[r] = curv;
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
