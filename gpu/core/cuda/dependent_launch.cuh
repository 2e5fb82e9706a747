#pragma once
// Programmatic dependent launch (compute capability 9.0 and later): a kernel launched this way
// may be set up and started while the kernel before it in the stream drains, which hides most
// of the gap between two short kernels. Such a kernel must call wait_for_previous_grid()
// before it touches memory that earlier work writes; on older GPUs both are plain launches.
// A kernel that calls allow_next_grid() lets the next one start before its own blocks end.
#include <cuda_runtime.h>

#include <utility>

#include "core/cuda/check.cuh"
#include "core/device.h"

namespace cumulus::cuda {

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream (launched with launch_dependent) be scheduled as soon as
// every block of this grid has called it, onto the SMs this grid's last blocks leave free; its
// blocks then wait in wait_for_previous_grid() for this grid to end. Without it the next grid
// is launched only as this one's blocks exit, and its launch lies between the two. Called after
// this grid's own wait, so that no more than two grids of a chain are resident at once.
__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

inline bool dependent_launch_supported() {
  static const bool supported = query_device().compute_major >= 9;
  return supported;
}

template <class... Params, class... Args>
void launch_dependent(const char* name, void (*kernel)(Params...), int blocks, int threads,
                      cudaStream_t s, Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(blocks));
  config.blockDim = dim3(unsigned(threads));
  config.stream = s;
  config.attrs = &attr;
  config.numAttrs = dependent_launch_supported() ? 1 : 0;
  check(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), name, __FILE__, __LINE__);
}

}  // namespace cumulus::cuda
