#pragma once
// Vectors for results that are written whole as soon as they are sized. A std::vector zero-fills
// what resize() adds, on the calling thread, before anything can be written into it:
// - ZeroedVector (the features' histograms: 18 MB for the bunny's PFH, 62 MB for a KITTI
//   frame's; the k-NN and radius results: 64 MB for a KITTI frame's 64 nearest): for a fresh
//   result that was one thread writing every byte of memory the kernel had just mapped as zeros,
//   which on some hosts took longer than the GPU took to compute the rows. Storage comes from
//   calloc, so a fresh allocation reads zero (for large ones the C library maps new pages and
//   writes nothing).
// - UnfilledVector (the clustering's labels, which the host widens from the device's 16 bits
//   straight into the result where the result is not page-locked): the zero-fill left every line of
//   a fresh KITTI frame's 0.5 MB of labels modified in the calling core's cache, and the helper
//   threads widening into it took 20-21 us against 8-10 without it (an H200's 16-core host), each
//   write fetching its line from that core. Storage comes from malloc: nothing reads zero, an
//   element is defined once written.
// An UnfilledVector can also ask for page-locked storage (HostMemory::PageLocked: the labels
// that the device writes straight into, core/page_locked_pool.h); where the pool has none to give
// it is malloc'd as usual. Moves and swaps carry the request along; copies do not.
// Either way resize() writes nothing (default-initialisation). The one difference from
// std::vector for ZeroedVector: elements that a shrink cut off and a later resize within the
// capacity brings back hold what they held, not zero. resize(n, value), assign() and the
// constructors with a value write as usual.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/page_locked_pool.h"

namespace cumulus {

enum class HostMemory { Pageable, PageLocked };

template <class T, bool Zeroed>
struct UnwrittenAllocator {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "leaving elements unwritten is only right for plain values");
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UnwrittenAllocator<U, Zeroed>;
  };

  // Every allocator frees what any other gave (deallocate asks the pool whose block it is), so
  // the request moves with the storage and a copy starts pageable.
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using is_always_equal = std::true_type;

  UnwrittenAllocator() noexcept = default;
  explicit UnwrittenAllocator(HostMemory memory) noexcept
      requires(!Zeroed)  // a pool's block is not zero
      : page_locked(memory == HostMemory::PageLocked) {}
  template <class U>
  UnwrittenAllocator(const UnwrittenAllocator<U, Zeroed>& other) noexcept
      : page_locked(other.page_locked) {}
  UnwrittenAllocator select_on_container_copy_construction() const noexcept { return {}; }

  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    if (page_locked)
      if (void* p = page_locked_pool().take(n * sizeof(T))) return static_cast<T*>(p);
    void* p = Zeroed ? std::calloc(n ? n : 1, sizeof(T)) : std::malloc((n ? n : 1) * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept {
    if (!page_locked_pool().give_back(p)) std::free(p);
  }

  // Default-initialisation: for a plain value, no write.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const UnwrittenAllocator&, const UnwrittenAllocator&) noexcept {
    return true;
  }

  bool page_locked = false;
};

template <class T>
using ZeroedVector = std::vector<T, UnwrittenAllocator<T, true>>;
template <class T>
using UnfilledVector = std::vector<T, UnwrittenAllocator<T, false>>;

}  // namespace cumulus
