#pragma once
// Large results down to pageable host memory (a std::vector) near page-locked speed. A pageable
// cudaMemcpy runs at a fraction of the link (the 18 MB of a PFH result took 2.5 ms, about
// 7 GB/s, where page-locked memory takes 55 GB/s), the driver copying through a small
// page-locked buffer of its own on one thread. Here the result comes down in 1 MB chunks, all
// queued at once into a page-locked buffer kept with the caller's workspace (it grows to the
// largest result seen), and every host thread copies its slice of each chunk out as soon as the
// chunk has landed. A megabyte gains too: KITTI's k = 1 neighbours (1 MB in two arrays) took
// 0.23-0.29 ms through the driver's copy, 0.10-0.12 ms staged (H200).
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
#include <span>
#include <thread>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/error.h"
#include "core/parallel.h"

namespace cumulus::cuda {

class StagedDownload {
 public:
  static constexpr std::size_t kChunkBytes = std::size_t(1) << 20;
  // Up to this many bytes in all the driver's own copy. At 320 KB (the bunny's k = 1 neighbours)
  // both ways took the same time on an H200; 64 KB keeps tiny results off the host threads (not
  // measured: microseconds either way).
  static constexpr std::size_t kDirectBytes = std::size_t(64) << 10;
  // hand_over starts each source's chunks at a multiple of this in the page-locked buffer, and
  // cuts them smaller than copy()'s: the calling thread waits for the first before it starts
  // (about 5 us at the link's 55 GB/s), and copies each while the next lands.
  static constexpr std::size_t kAlign = 16;
  static constexpr std::size_t kHandOverBytes = std::size_t(256) << 10;

  // One array to bring down: `bytes` from device memory `src` to host memory `dst`.
  struct Piece {
    void* dst;
    const void* src;
    std::size_t bytes;
  };

  // Copies every piece after the work already queued on stream s; returns when all of them are
  // on the host. The pieces share one queue of chunks and one wait, so that a second array
  // neither costs a second synchronisation nor waits for the first one's copy-out before its
  // transfer starts.
  void copy(std::span<const Piece> pieces, cudaStream_t s) {
    std::size_t total = 0;
    for (const Piece& p : pieces)
      total += p.bytes;
    if (total <= kDirectBytes) {
      copy_pageable(pieces, s);
      return;
    }
    try {
      staging_.reserve(total);
    } catch (const GpuError&) {
      // Page-locked memory is the host's to refuse: the slower pageable copy then.
      copy_pageable(pieces, s);
      return;
    }
    if (!queued_) queued_ = std::make_unique<Event>();
    queued_->record(s);
    chunks_.clear();
    std::size_t at = 0;
    for (const Piece& p : pieces)
      for (std::size_t begin = 0; begin < p.bytes; begin += kChunkBytes) {
        const std::size_t size = std::min(p.bytes - begin, kChunkBytes);
        CU_CHECK(cudaMemcpyAsync(staging_.get() + at, static_cast<const char*>(p.src) + begin, size,
                                 cudaMemcpyDeviceToHost, s));
        chunks_.push_back({static_cast<char*>(p.dst) + begin, at, size});
        at += size;
        if (landed_events_.size() < chunks_.size())
          landed_events_.push_back(std::make_unique<Event>());
        landed_events_[chunks_.size() - 1]->record(s);
      }
    // The host threads start once the kernels queued before the download have ended, so that
    // they do not spin through them; their wake-up overlaps the first chunks' transfer.
    queued_->wait();
    landed_.store(0);
    failed_.store(false);
    const char* from = staging_.get();
    const std::size_t parts = parts_for(std::min(total, kChunkBytes), std::size_t(64) << 10);
    parallel_parts(parts, parts, [&](std::size_t, std::size_t, std::size_t p) {
      for (std::size_t c = 0; c < chunks_.size(); ++c) {
        if (!wait_landed(c)) return;  // another part met the error and reports it
        const Chunk& k = chunks_[c];
        const std::size_t a = part_begin(k.size, parts, p), e = part_begin(k.size, parts, p + 1);
        std::memcpy(k.dst + a, from + k.staged + a, e - a);
      }
    });
  }

  void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t s) {
    const Piece piece{dst, src, bytes};
    copy(std::span<const Piece>(&piece, 1), s);
  }

  // One array to hand over: `bytes` of device memory at `src`, elements of `element` bytes.
  struct Source {
    const void* src;
    std::size_t bytes;
    std::size_t element;
  };

  // Brings every source down after the work queued on stream s and hands it over in chunks, in
  // order, each as it lands: take(source, data, bytes) on the calling thread, every chunk a whole
  // number of elements, its data valid until take returns; prepare() runs once the transfers are
  // queued, before the first chunk is handed over (where the caller sizes its storage while they
  // run). For results that go into vectors the caller appends them to (reserved, then
  // std::vector::insert at the end): each element is written once, where a resize() first
  // zero-fills the fresh vector on one thread and copy() then writes it again (a KITTI frame's
  // voxels, 1.5 MB: see filter_gpu.cu). Up to kDirectBytes in all, and where page-locked memory
  // is refused, each source comes through the driver's pageable copy instead.
  template <class Prepare, class Take>
  void hand_over(std::span<const Source> sources, cudaStream_t s, Prepare&& prepare, Take&& take) {
    std::size_t total = 0;
    for (const Source& source : sources)
      total += source.bytes;
    bool staged = total > kDirectBytes;
    if (staged) {
      try {
        staging_.reserve(total + kAlign * sources.size());  // each source's start aligned
      } catch (const GpuError&) {
        staged = false;  // page-locked memory is the host's to refuse
      }
    }
    if (!staged) {
      // One pageable buffer for all, one wait.
      std::vector<char> bounce(total + kAlign * sources.size());
      std::vector<Piece> pieces;
      std::size_t at = 0;
      for (const Source& source : sources) {
        at = (at + kAlign - 1) / kAlign * kAlign;
        pieces.push_back({bounce.data() + at, source.src, source.bytes});
        at += source.bytes;
      }
      copy_pageable(pieces, s);
      prepare();
      for (std::size_t i = 0; i < sources.size(); ++i)
        if (pieces[i].bytes) take(i, static_cast<const char*>(pieces[i].dst), pieces[i].bytes);
      return;
    }
    handed_.clear();
    std::size_t at = 0;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      const Source& source = sources[i];
      at = (at + kAlign - 1) / kAlign * kAlign;
      const std::size_t step =
          std::max(source.element, kHandOverBytes / source.element * source.element);
      for (std::size_t begin = 0; begin < source.bytes; begin += step) {
        const std::size_t size = std::min(source.bytes - begin, step);
        CU_CHECK(cudaMemcpyAsync(staging_.get() + at, static_cast<const char*>(source.src) + begin,
                                 size, cudaMemcpyDeviceToHost, s));
        handed_.push_back({i, at, size});
        at += size;
        if (landed_events_.size() < handed_.size())
          landed_events_.push_back(std::make_unique<Event>());
        landed_events_[handed_.size() - 1]->record(s);
      }
    }
    prepare();
    for (std::size_t c = 0; c < handed_.size(); ++c) {
      landed_events_[c]->wait();
      take(handed_[c].source, staging_.get() + handed_[c].staged, handed_[c].size);
    }
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

  // Where a chunk goes on the host and where it sits in the page-locked buffer.
  struct Chunk {
    char* dst;
    std::size_t staged;
    std::size_t size;
  };

  // Every piece by the driver's own pageable copy, one wait for all.
  static void copy_pageable(std::span<const Piece> pieces, cudaStream_t s) {
    for (const Piece& p : pieces)
      if (p.bytes) CU_CHECK(cudaMemcpyAsync(p.dst, p.src, p.bytes, cudaMemcpyDeviceToHost, s));
    CU_CHECK(cudaStreamSynchronize(s));
  }

  // A chunk of hand_over: its source and where it sits in the page-locked buffer.
  struct Handed {
    std::size_t source;
    std::size_t staged;
    std::size_t size;
  };

  PinnedBuffer<char> staging_;
  std::vector<Chunk> chunks_;
  std::vector<Handed> handed_;
  std::vector<std::unique_ptr<Event>> landed_events_;
  std::unique_ptr<Event> queued_;
  std::atomic<std::size_t> landed_{0};
  std::atomic<bool> polling_{false}, failed_{false};
};

}  // namespace cumulus::cuda
