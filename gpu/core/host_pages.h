#pragma once
// Mapping in the pages of a large fresh host allocation on all cores. A result of tens of
// megabytes (KITTI's PFH histograms: 62 MB) comes from a fresh mmap on every call, and first
// touching its pages one at a time from one thread (std::vector's zero-fill) took longer than
// computing it: about 35 ms for 62 MB on a 16-core virtual machine.
#include <cstddef>

#include "core/zeroed_vector.h"

namespace cumulus {

// Maps in the pages wholly inside [p, p + bytes) for writing, split over the host threads, without
// writing to them (MADV_POPULATE_WRITE: they read as zero, as fresh pages do). Best effort: where
// the kernel lacks it nothing happens, and the first writes map the pages as before.
void prefault_pages(void* p, std::size_t bytes);

// Sizes `v` to n elements for a writer that then writes all of them: what it held is dropped
// (not copied into larger storage), its pages are mapped in as above, and nothing is written
// (core/zeroed_vector.h).
template <class T>
void size_for_writing(ZeroedVector<T>& v, std::size_t n) {
  v.clear();
  v.reserve(n);
  prefault_pages(v.data(), n * sizeof(T));
  v.resize(n);
}

}  // namespace cumulus
