// core/host_pages.h on Linux.
#include "core/host_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "core/parallel.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older C libraries lack the name
#endif

namespace cumulus {

void prefault_pages(void* p, std::size_t bytes) {
  const auto page = std::uintptr_t(sysconf(_SC_PAGESIZE));
  const auto begin = (std::uintptr_t(p) + page - 1) / page * page;
  const auto end = (std::uintptr_t(p) + bytes) / page * page;
  if (end <= begin) return;
  const std::size_t pages = (end - begin) / page;
  parallel_parts(pages, parts_for(pages, 256), [&](std::size_t a, std::size_t b, std::size_t) {
    // A failure (EINVAL before Linux 5.14, ENOMEM) leaves the pages to the first writes.
    (void)madvise(reinterpret_cast<void*>(begin + a * page), (b - a) * page, MADV_POPULATE_WRITE);
  });
}

}  // namespace cumulus
