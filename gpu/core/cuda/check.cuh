#pragma once
// Every CUDA call is checked; failures become GpuError with the call, the CUDA message and
// the place, and the sticky error state is cleared so the process can go on.
#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace cumulus::cuda {

// True when fail_gpu_allocation_after() says this allocation is to fail (device.cpp).
bool injected_allocation_failure();

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  std::string msg = std::string(what) + " failed: " + cudaGetErrorString(e);
  if (e == cudaErrorMemoryAllocation) msg += " (out of GPU memory)";
  throw GpuError(msg + " [" + file + ":" + std::to_string(line) + "]");
}

}  // namespace cumulus::cuda

#define CU_CHECK(expr) ::cumulus::cuda::check((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: catches bad launch configurations at once (execution errors surface
// at the next synchronising call, which is checked too).
#define CU_CHECK_LAUNCH(name) \
  ::cumulus::cuda::check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)
