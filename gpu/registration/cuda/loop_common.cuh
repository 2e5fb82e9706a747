#pragma once
// What the GPU registration loops (ICP, GICP) share: the search each method uses, and how the
// host drives the iterations. Every iteration's kernels
// return at once when they find the loop's device-side state finished, so the host launches
// iterations in growing chunks and looks at the state between chunks. That wastes at most as
// many launches as were used; and the host reads a chunk's state only once the next chunk is
// queued, so the GPU never waits for launches. Private to registration/cuda.
#include <cuda_runtime.h>

#include <algorithm>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "nns/nns.h"
#include "registration/icp.h"

namespace cumulus::registration_cuda {

// The neighbour search of a GPU registration method.
inline NnsMethod search_of(IcpMethod m) {
  switch (m) {
    case IcpMethod::GpuKdTree:
      return NnsMethod::GpuKdTree;
    case IcpMethod::GpuBruteForce:
      return NnsMethod::GpuBruteForce;
    default:
      return NnsMethod::Gpu;
  }
}

// launch() queues one iteration on s; the loop runs while *device_state == running.
// host_state: two pinned ints; copied: two events.
template <class Launch>
void launch_in_chunks(Launch&& launch, int max_iterations, const int* device_state, int running,
                      int* host_state, cuda::Event (&copied)[2], cudaStream_t s) {
  int launched = 0;
  for (int chunks = 0; launched < max_iterations; ++chunks) {
    const int chunk = std::min(max_iterations - launched, std::max(4, launched));
    for (int c = 0; c < chunk; ++c)
      launch();
    launched += chunk;
    const int slot = chunks % 2;
    CU_CHECK(
        cudaMemcpyAsync(host_state + slot, device_state, sizeof(int), cudaMemcpyDeviceToHost, s));
    copied[slot].record(s);
    if (chunks == 0) continue;
    CU_CHECK(cudaEventSynchronize(copied[1 - slot].get()));
    if (host_state[1 - slot] != running) break;
  }
}

}  // namespace cumulus::registration_cuda
