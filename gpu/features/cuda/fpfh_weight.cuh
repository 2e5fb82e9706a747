#pragma once
// FPFH's second half with a few lanes a point (k_fpfh_weight_narrow). Included by
// features_gpu.cu only.
#include <cuda_runtime.h>

#include <climits>

#include "features/cuda/histogram_kernels.cuh"
#include "features/cuda/rows.cuh"
#include "nns/cuda/cell_order.cuh"

namespace cumulus::feat {

// The same sums as k_fpfh_weight (its comment gives the rule that makes the lanes' double sums
// PCL's), with L lanes a point and so 32 / L points a warp. With a warp a point, each pair's 33
// bins took 32 lanes for bins 0-31 and then lane 0 alone for bin 32, some forty warp
// instructions a pair; with eight lanes each takes bins lane, lane + 8, ... (five slots, 33 of
// 40 used) and one warp instruction serves four points' pairs. The warp walks its points' rows
// together, as far as the longest, each lane idle past its own row's end, so that the shuffles
// handing out a round's neighbours have every lane of the warp.
template <int L, int Warps>
__global__ void __launch_bounds__(32 * Warps)
    k_fpfh_weight_narrow(int n, const int* order, Rows rows, const float* spfh, float* out) {
  static_assert(32 % L == 0 && L >= 4, "a point's lanes lie in one warp; three features need 3");
  constexpr int kSlots = (33 + L - 1) / L;  // bins a lane
  constexpr int kPoints = 32 * Warps / L;   // points a block
  __shared__ double s_sum[kPoints][33];
  __shared__ int s_ulp[kPoints][33];
  __shared__ double s_factor[kPoints][3];
  const int group = int(threadIdx.x) / L, lane = int(threadIdx.x) % L;
  const int slot = int(blockIdx.x) * kPoints + group;
  const bool live = slot < n;
  const int q = nns::point_in_order(order, slot, live);
  const unsigned b = live ? rows.begin(q) : 0u, e = live ? rows.end(q) : 0u;
  unsigned longest = e - b;  // the warp's, by shuffles (the PTX also targets sm_75)
  for (int d = 16; d > 0; d >>= 1)
    longest = max(longest, __shfl_xor_sync(0xffffffffu, longest, d));
  float acc[kSlots] = {};
  double sum[kSlots] = {};
  // Each slot's smallest nonzero product as its bits less one, by an unsigned minimum: a zero
  // product becomes the largest unsigned and drops out. Products here are never negative (SPFH
  // bins times 1 / d2), so the smallest has the smallest exponent: its last place is the rule's
  // q, found at the end, two instructions a product instead of ulp_exponent's five.
  unsigned least[kSlots];
  for (int r = 0; r < kSlots; ++r)
    least[r] = UINT_MAX;
  for (unsigned c = 0; c < longest; c += L) {
    // A round's L neighbours: lane t loads the t-th, each weight divided once.
    const unsigned mine = b + c + unsigned(lane);
    int index = -1;
    float weight = 0.0f;
    if (mine < e) {
      const float d2 = rows.d2[mine];
      if (d2 != 0.0f) {
        index = rows.index[mine];
        weight = 1.0f / d2;
      }
    }
#pragma unroll
    for (int t = 0; t < L; ++t) {
      const int g = __shfl_sync(0xffffffffu, index, t, L);
      const float w = __shfl_sync(0xffffffffu, weight, t, L);
      if (g < 0) continue;  // past the row's end, or the point itself or a duplicate
      const float* h = spfh + std::size_t(g) * kGpuSpfhStride + lane;
#pragma unroll
      for (int r = 0; r < kSlots; ++r) {
        if (lane + r * L >= 33) break;
        const float v = h[r * L] * w;
        acc[r] += v;
        sum[r] += double(v);
        least[r] = min(least[r], __float_as_uint(v) - 1u);
      }
    }
  }
  for (int r = 0; r < kSlots; ++r) {
    const int h = lane + r * L;
    if (h < 33) {
      s_sum[group][h] = sum[r];
      s_ulp[group][h] =
          least[r] == UINT_MAX ? INT_MAX : ulp_exponent(__uint_as_float(least[r] + 1u));
    }
  }
  __syncwarp();
  if (lane < 3 && live)
    s_factor[group][lane] = feature_scale(lane, s_sum[group], s_ulp[group], rows, spfh, b, e);
  __syncwarp();
  if (!live) return;
  for (int r = 0; r < kSlots; ++r) {
    const int h = lane + r * L;
    if (h < 33) out[std::size_t(q) * 33 + h] = float(double(acc[r]) * s_factor[group][h / 11]);
  }
}

}  // namespace cumulus::feat
