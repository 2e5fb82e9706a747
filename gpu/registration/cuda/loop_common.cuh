#pragma once
// What the GPU registration loops (ICP, GICP) share: the search each method uses, and how the
// host drives the iterations. Every iteration's kernels
// return at once when they find the loop's device-side state finished, so the host launches
// iterations in growing chunks and looks at the state between chunks. That wastes at most as
// many launches as were used; and the host reads a chunk's state only once the next chunk is
// queued, so the GPU never waits for launches. Private to registration/cuda.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/host_spin.cuh"
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

// The next chunk's size: four iterations first, then as many as have been launched (so at most
// as many launches are wasted as were needed), never past max_iterations.
inline int next_chunk(int launched, int max_iterations) {
  return std::min(max_iterations - launched, std::max(4, launched));
}

// launch() queues one iteration on s; the loop runs while *device_state == running.
// host_state: two pinned ints; copied: two events.
template <class Launch>
void launch_in_chunks(Launch&& launch, int max_iterations, const int* device_state, int running,
                      int* host_state, cuda::Event (&copied)[2], cudaStream_t s) {
  int launched = 0;
  for (int chunks = 0; launched < max_iterations; ++chunks) {
    const int chunk = next_chunk(launched, max_iterations);
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

// What a loop's last kernel writes into page-locked memory at the end of each iteration it runs:
// the iterations done and the state after them, as one 8-byte word (iterations in the low half),
// so that the host reads a pair from one iteration.
struct alignas(8) LoopProgress {
  int iterations;
  int state;
};

// The progress as the device last wrote it.
inline LoopProgress read_progress(const LoopProgress* p) {
  const unsigned long long word = *reinterpret_cast<const volatile unsigned long long*>(p);
  LoopProgress now;
  std::memcpy(&now, &word, sizeof now);
  return now;
}

// Waits until the loop has done `iterations` or stopped, or until everything queued on s has
// run (a kernel that failed ends the wait with its error).
inline LoopProgress wait_for_progress(const LoopProgress* p, int iterations, int running,
                                      cudaStream_t s) {
  LoopProgress now{};
  const bool seen = cuda::spin_until(
      [&] {
        now = read_progress(p);
        return now.state != running || now.iterations >= iterations;
      },
      [&] { return cudaStreamQuery(s); });
  return seen ? now : read_progress(p);
}

// launch_in_chunks for a loop whose last kernel reports its progress in page-locked memory (p,
// set to {0, running} here): nothing is queued between the chunks, so their kernels stay one
// chain of dependent launches. (A copy of the state and an event between chunks made the next
// chunk's first kernel wait for the copy and be launched after it, four times a call.)
template <class Launch>
void launch_in_chunks_watched(Launch&& launch, int max_iterations, int running, LoopProgress* p,
                              cudaStream_t s) {
  *p = LoopProgress{0, running};
  int launched = 0;
  for (int chunks = 0; launched < max_iterations; ++chunks) {
    const int chunk = next_chunk(launched, max_iterations);
    for (int c = 0; c < chunk; ++c)
      launch();
    const int before = launched;  // the last chunk's end, looked at once this one is queued
    launched += chunk;
    if (chunks == 0) continue;
    if (wait_for_progress(p, before, running, s).state != running) break;
  }
}

}  // namespace cumulus::registration_cuda
