#pragma once
// Page-locked host blocks kept for results that the device writes straight into. A clustering's
// labels come to the host in page-locked memory; a result in pageable memory then needs the
// host to copy them across after the wait (KITTI frame 0 on an H200's host: 8-12 us on eight
// threads, most of what stood between the call and issue 27's target). A result whose storage is
// page-locked is written by the last kernel over the bus instead. Page-locking memory takes the
// driver hundreds of microseconds and freeing it waits for the device, so blocks are kept once
// made and handed out again: a result's vector gives its block back when it is freed.
#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace cumulus {

class PageLockedPool {
 public:
  // Where blocks come from: `allocate` returns nullptr where it cannot (no GPU, the driver's
  // refusal); `release` frees what it gave.
  struct Source {
    void* (*allocate)(std::size_t bytes) = nullptr;
    void (*release)(void* p) = nullptr;
  };
  // Blocks are sized in powers of two from kSmallestBlock, so that frames of a sequence, whose
  // sizes differ by a few percent, share them.
  static constexpr std::size_t kSmallestBlock = std::size_t(1) << 16;

  PageLockedPool(Source source, std::size_t cap_bytes) : source_(source), cap_(cap_bytes) {}
  PageLockedPool(const PageLockedPool&) = delete;
  PageLockedPool& operator=(const PageLockedPool&) = delete;
  // Gives every block back to the source, in use or not: only for pools whose blocks are gone.
  ~PageLockedPool();

  // A block of at least `bytes`: a free one of its size, else a new one while all the pool's
  // blocks stay within the cap (free blocks of other sizes are released to make room). nullptr
  // where none can be had: the caller uses pageable memory.
  void* take(std::size_t bytes);
  // Takes back a block from take(); false for any other pointer (nothing happens to it).
  bool give_back(void* p) noexcept;

  // Bytes in all the pool's blocks, in use or free. A lower cap releases free blocks at once and
  // refuses new ones until the blocks in use come back below it.
  std::size_t held_bytes() const;
  void set_cap(std::size_t cap_bytes);
  std::size_t cap() const;

 private:
  struct Block {
    void* p;
    std::size_t bytes;
    bool in_use;
  };
  void release_free_blocks_until(std::size_t room);  // with mutex_ held

  Source source_;
  mutable std::mutex mutex_;
  std::vector<Block> blocks_;
  std::size_t held_ = 0, cap_;
  std::atomic<bool> made_any_{false};  // lets give_back skip the lock while no block exists
};

// The process's pool: page-locked by the CUDA driver where a GPU can be used, none otherwise;
// 64 MiB at most (a hundred KITTI frames' labels).
PageLockedPool& page_locked_pool();

}  // namespace cumulus
