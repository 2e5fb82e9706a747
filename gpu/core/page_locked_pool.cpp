#include "core/page_locked_pool.h"

#include <algorithm>
#include <bit>
#include <limits>

#ifdef CUMULUS_HAS_CUDA
#include <cuda_runtime_api.h>

#include "core/device.h"
#endif

namespace cumulus {

PageLockedPool::~PageLockedPool() {
  if (source_.release)
    for (const Block& b : blocks_)
      source_.release(b.p);
}

void* PageLockedPool::take(std::size_t bytes) {
  if (!source_.allocate || bytes == 0 || bytes > std::numeric_limits<std::size_t>::max() / 2)
    return nullptr;
  const std::size_t size = std::bit_ceil(std::max(bytes, kSmallestBlock));
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block& b : blocks_)
    if (!b.in_use && b.bytes == size) {
      b.in_use = true;
      return b.p;
    }
  if (size > cap_) return nullptr;
  if (held_ + size > cap_) release_free_blocks_until(size);
  if (held_ + size > cap_) return nullptr;
  // Under the lock: a new block is rare (the first call of each size), and two threads asking at
  // once would otherwise both go past the cap.
  void* p = source_.allocate(size);
  if (!p) return nullptr;
  blocks_.push_back({p, size, true});
  held_ += size;
  made_any_.store(true, std::memory_order_release);
  return p;
}

bool PageLockedPool::give_back(void* p) noexcept {
  if (!p || !made_any_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Block& b : blocks_)
    if (b.p == p) {
      b.in_use = false;
      if (held_ > cap_) release_free_blocks_until(0);
      return true;
    }
  return false;
}

void PageLockedPool::release_free_blocks_until(std::size_t room) {
  // Largest first: the fewest releases (each waits for the device) make the room.
  std::sort(blocks_.begin(), blocks_.end(),
            [](const Block& a, const Block& b) { return a.bytes > b.bytes; });
  for (auto it = blocks_.begin(); it != blocks_.end() && held_ + room > cap_;) {
    if (it->in_use) {
      ++it;
      continue;
    }
    source_.release(it->p);
    held_ -= it->bytes;
    it = blocks_.erase(it);
  }
}

std::size_t PageLockedPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

void PageLockedPool::set_cap(std::size_t cap_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  cap_ = cap_bytes;
  if (held_ > cap_) release_free_blocks_until(0);
}

std::size_t PageLockedPool::cap() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cap_;
}

#ifdef CUMULUS_HAS_CUDA
namespace {

void* allocate_page_locked(std::size_t bytes) {
  static const bool gpu = query_device().available;
  void* p = nullptr;
  if (gpu && cudaMallocHost(&p, bytes) == cudaSuccess) return p;
  (void)cudaGetLastError();  // a refusal leaves the result in pageable memory, not an error
  return nullptr;
}

void release_page_locked(void* p) {
  (void)cudaFreeHost(p);
  (void)cudaGetLastError();
}

}  // namespace
#endif

PageLockedPool& page_locked_pool() {
  // Never destroyed: results freed by other static destructors give their blocks back to it, and
  // the driver may already be gone by then. The process's end frees the blocks.
#ifdef CUMULUS_HAS_CUDA
  static auto* pool =
      new PageLockedPool({&allocate_page_locked, &release_page_locked}, std::size_t(64) << 20);
#else
  static auto* pool = new PageLockedPool({}, 0);
#endif
  return *pool;
}

}  // namespace cumulus
