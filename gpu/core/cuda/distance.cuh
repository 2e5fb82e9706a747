#pragma once
// The squared distance that matches PCL (FLANN's L2_Simple) bit for bit: (dx^2 + dy^2) + dz^2
// in float without fused multiply-adds. The explicit rounding intrinsics keep nvcc from
// contracting to FMA, so borderline neighbours decide exactly as on the CPU.
#include <cuda_runtime.h>

namespace cumulus::cuda {

__device__ __forceinline__ float dist2(float3 a, float3 b) {
  const float dx = __fsub_rn(a.x, b.x), dy = __fsub_rn(a.y, b.y), dz = __fsub_rn(a.z, b.z);
  return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

__device__ __forceinline__ bool finite3(float3 p) {
  return isfinite(p.x) && isfinite(p.y) && isfinite(p.z);
}

}  // namespace cumulus::cuda
