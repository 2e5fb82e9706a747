#pragma once
// Large results down to pageable host memory (a std::vector) at page-locked speed. A pageable
// cudaMemcpy runs at a fraction of the link (the 18 MB of a PFH result took 2.5 ms, about
// 7 GB/s, where page-locked memory takes 55 GB/s), the driver copying through a small
// page-locked buffer of its own on one thread. Here the result comes down in chunks into two
// page-locked buffers kept with the caller's workspace, each chunk copied out by all host
// threads while the next one is on its way.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>

#include "core/cuda/buffer.cuh"
#include "core/parallel.h"

namespace cumulus::cuda {

class StagedDownload {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t(4) << 20;

  // Copies `bytes` from device memory `src` to host memory `dst` after the work already queued
  // on stream s; returns when dst holds them. Small copies go directly.
  void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
    if (bytes <= kChunkBytes) {
      if (bytes) CU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
      CU_CHECK(cudaStreamSynchronize(s));
      return;
    }
    for (int b = 0; b < 2; ++b) {
      chunk_[b].reserve(kChunkBytes);
      if (!arrived_[b]) arrived_[b] = std::make_unique<Event>();
    }
    const std::size_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
    const auto part = [&](std::size_t c) {
      const std::size_t begin = c * kChunkBytes;
      return std::pair{begin, std::min(bytes, begin + kChunkBytes) - begin};
    };
    const auto down = [&](std::size_t c) {
      const auto [begin, size] = part(c);
      CU_CHECK(cudaMemcpyAsync(chunk_[c & 1].get(), static_cast<const char*>(src) + begin, size,
                               cudaMemcpyDeviceToHost, s));
      arrived_[c & 1]->record(s);
    };
    down(0);
    down(1);
    for (std::size_t c = 0; c < chunks; ++c) {
      arrived_[c & 1]->wait();
      const auto [begin, size] = part(c);
      char* to = static_cast<char*>(dst) + begin;
      const char* from = chunk_[c & 1].get();
      parallel_parts(
          size, parts_for(size, std::size_t(256) << 10),
          [&](std::size_t a, std::size_t e, std::size_t) { std::memcpy(to + a, from + a, e - a); });
      if (c + 2 < chunks) down(c + 2);
    }
  }

 private:
  PinnedBuffer<char> chunk_[2];
  std::unique_ptr<Event> arrived_[2];
};

}  // namespace cumulus::cuda
