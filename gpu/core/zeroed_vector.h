#pragma once
// Vectors for results that are written whole as soon as they are sized (the features'
// histograms: 18 MB for the bunny's PFH, 62 MB for a KITTI frame's; the k-NN and radius
// results: 64 MB for a KITTI frame's 64 nearest). A std::vector zero-fills what resize() adds,
// on the calling thread, before anything can be written into it: for a fresh result that was
// one thread writing every byte of memory the kernel had just mapped as zeros, which on some
// hosts took longer than the GPU took to compute the rows.
//
// Here storage comes from calloc, so a fresh allocation reads zero (for large ones the C library
// maps new pages and writes nothing), and resize() writes nothing. The one difference from
// std::vector: elements that a shrink cut off and a later resize within the capacity brings back
// hold what they held, not zero. resize(n, value) and assign() write as usual.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace cumulus {

template <class T>
struct ZeroedAllocator {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_default_constructible_v<T>,
                "leaving elements unwritten is only right for plain values");
  using value_type = T;

  ZeroedAllocator() noexcept = default;
  template <class U>
  ZeroedAllocator(const ZeroedAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    void* p = std::calloc(n ? n : 1, sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  // Default-initialisation: for a plain value, no write.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  friend bool operator==(const ZeroedAllocator&, const ZeroedAllocator&) noexcept { return true; }
};

template <class T>
using ZeroedVector = std::vector<T, ZeroedAllocator<T>>;

}  // namespace cumulus
