#pragma once
// Large results down to pageable host memory (a std::vector) near page-locked speed. A pageable
// cudaMemcpy runs at a fraction of the link (the 18 MB of a PFH result took 2.5 ms, about
// 7 GB/s, where page-locked memory takes 55 GB/s), the driver copying through a small
// page-locked buffer of its own on one thread. Here the result comes down in 1 MB chunks, all
// queued at once into a page-locked buffer kept with the caller's workspace (it grows to the
// largest result seen), and every host thread copies its slice of each chunk out as soon as the
// chunk has landed.
//
// Why so (an H200 host, 16 cores; 4.7 MB, FPFH of the bunny / 18 MB, its PFH): two 4 MB buffers
// taking turns, each chunk copied out by the host threads woken for it, took 475 / 804 us; the
// threads, asleep while a chunk came down, took longer to wake than the chunk took to copy. With
// every chunk queued up front nothing waits for a buffer to be copied out, and the threads,
// started once the kernels before the download have ended, copy while the later chunks arrive.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/error.h"
#include "core/parallel.h"

namespace cumulus::cuda {

class StagedDownload {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t(1) << 20;

  // Copies `bytes` from device memory `src` to host memory `dst` after the work already queued
  // on stream s; returns when dst holds them. A single chunk goes directly.
  void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
    if (bytes <= kChunkBytes) {
      if (bytes) CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
      CU_CHECK(cudaStreamSynchronize(s));
      return;
    }
    try {
      staging_.reserve(bytes);
    } catch (const GpuError&) {
      // Page-locked memory is the host's to refuse: the slower pageable copy then.
      CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
      CU_CHECK(cudaStreamSynchronize(s));
      return;
    }
    const std::size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
    while (landed_events_.size() < chunks)
      landed_events_.push_back(std::make_unique<Event>());
    if (!queued_) queued_ = std::make_unique<Event>();
    queued_->record(s);
    for (std::size_t c = 0; c < chunks; ++c) {
      const std::size_t begin = c * kChunkBytes,
                        size = std::min(bytes, begin + kChunkBytes) - begin;
      CU_CHECK(cudaMemcpyAsync(staging_.get() + begin, static_cast<const char*>(src) + begin, size,
                               cudaMemcpyDeviceToHost, s));
      landed_events_[c]->record(s);
    }
    // The host threads start once the kernels queued before the download have ended, so that
    // they do not spin through them; their wake-up overlaps the first chunks' transfer.
    queued_->wait();
    landed_.store(0);
    failed_.store(false);
    char* to = static_cast<char*>(dst);
    const char* from = staging_.get();
    const std::size_t parts = parts_for(kChunkBytes, std::size_t(64) << 10);
    parallel_parts(parts, parts, [&](std::size_t, std::size_t, std::size_t p) {
      for (std::size_t c = 0; c < chunks; ++c) {
        if (!wait_landed(c)) return;  // another part met the error and reports it
        const std::size_t begin = c * kChunkBytes,
                          size = std::min(bytes, begin + kChunkBytes) - begin;
        const std::size_t a = part_begin(size, parts, p), e = part_begin(size, parts, p + 1);
        std::memcpy(to + begin + a, from + begin + a, e - a);
      }
    });
  }

 private:
  // Waits until chunks [0, c] have landed; false if waiting failed in another part. One part at
  // a time asks CUDA (polling_), the others watch landed_, so that sixteen threads do not all
  // sit in the driver. A part that takes the polling over also publishes every chunk it saw land.
  bool wait_landed(std::size_t c) {
    while (landed_.load(std::memory_order_acquire) <= c) {
      if (failed_.load(std::memory_order_relaxed)) return false;
      if (polling_.exchange(true, std::memory_order_acquire)) {
        std::this_thread::yield();
        continue;
      }
      try {
        for (std::size_t l = landed_.load(std::memory_order_relaxed); l <= c; ++l) {
          landed_events_[l]->wait();
          landed_.store(l + 1, std::memory_order_release);
        }
      } catch (...) {
        failed_.store(true);
        polling_.store(false, std::memory_order_release);
        throw;
      }
      polling_.store(false, std::memory_order_release);
    }
    return true;
  }

  PinnedBuffer<char> staging_;
  std::vector<std::unique_ptr<Event>> landed_events_;
  std::unique_ptr<Event> queued_;
  std::atomic<std::size_t> landed_{0};
  std::atomic<bool> polling_{false}, failed_{false};
};

}  // namespace cumulus::cuda
