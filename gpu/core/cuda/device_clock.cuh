#pragma once
// The device's nanosecond clock (%globaltimer), for stage boundaries inside a chain of dependent
// launches: an event recorded between two kernels makes the second wait for the first to end
// and be launched after it, which costs what the chain's early launches save.
#include <cuda_runtime.h>

namespace cumulus::cuda {

__device__ __forceinline__ unsigned long long device_now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Thread 0 of block 0 writes the time to *stamp (null: nothing). Called after the kernel's wait
// for the grid before it, it is the moment that grid's work was done.
__device__ __forceinline__ void stamp_start(unsigned long long* stamp) {
  if (stamp && blockIdx.x == 0 && threadIdx.x == 0) *stamp = device_now();
}

}  // namespace cumulus::cuda
