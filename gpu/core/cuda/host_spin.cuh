#pragma once
// The host waiting for a word the device writes into page-locked memory, instead of for a
// stream or an event: the word lands as the kernel that writes it ends, before the stream's work
// is seen to complete.
#include <cuda_runtime.h>

#include <atomic>

#include "core/cuda/check.cuh"

namespace cumulus::cuda {

// Spins, as an event's wait does, until ready() holds (true), or until query() (a cudaStreamQuery
// or cudaEventQuery of the work that writes the word) says that work has run (false), asked every
// 1,024 turns so that a kernel that failed ends the wait with its error. Either way, reads after
// it see what the device wrote before the word.
template <class Ready, class Query>
bool spin_until(Ready&& ready, Query&& query) {
  for (unsigned spins = 1;; ++spins) {
    if (ready()) {
      std::atomic_thread_fence(std::memory_order_acquire);
      return true;
    }
    if (spins % 1024 == 0) {
      const cudaError_t e = query();
      if (e == cudaSuccess) {
        std::atomic_thread_fence(std::memory_order_acquire);
        return false;
      }
      if (e != cudaErrorNotReady) CU_CHECK(e);
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace cumulus::cuda
