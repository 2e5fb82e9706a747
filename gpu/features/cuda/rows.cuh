#pragma once
// Neighbourhood rows as the feature kernels read them. Private to features/cuda.
#include <cuda_runtime.h>

#include "features/pair_math.h"

namespace cumulus::feat {

namespace fm = features_math;

// Neighbourhood rows on the device: k-nearest rows are all `uniform` long (k is clamped to the
// point count, so every row is full); radius rows come from offsets.
struct Rows {
  const unsigned* offsets = nullptr;
  int uniform = 0;
  const int* index = nullptr;
  const float* d2 = nullptr;
  __device__ unsigned begin(int q) const {
    return uniform ? unsigned(q) * unsigned(uniform) : offsets[q];
  }
  __device__ unsigned end(int q) const {
    return uniform ? unsigned(q + 1) * unsigned(uniform) : offsets[q + 1];
  }
};

__device__ inline fm::V3 v3(float3 p) {
  return {p.x, p.y, p.z};
}

}  // namespace cumulus::feat
