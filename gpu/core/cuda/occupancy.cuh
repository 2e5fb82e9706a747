#pragma once
// How many blocks of a kernel the device holds at once, for kernels that take strides over
// their work with one wave of blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "core/cuda/check.cuh"

namespace cumulus::cuda {

// Blocks of `threads` (and `shared_bytes` of dynamic shared memory each) that fill the current
// device once (at least one).
template <class Kernel>
int resident_blocks(Kernel kernel, int threads, std::size_t shared_bytes = 0) {
  int device = 0, sms = 0, per_sm = 0;
  CU_CHECK(cudaGetDevice(&device));
  CU_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
  return std::max(1, sms * per_sm);
}

}  // namespace cumulus::cuda
