#pragma once
// The slabs of a clustering beyond one call: boundaries at quantiles of the finite points along
// the cloud's longest axis, each slab widened by a halo of the tolerance (every neighbour of a
// slab's point then lies in the slab), and the members of every slab. Each pass over the cloud
// runs on all cores.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"

namespace cumulus {

// Points a thread takes at least in a pass over a cloud (fewer cost more to start than they
// save).
constexpr std::size_t kSlabGrain = std::size_t(1) << 14;

// The member lists of all slabs in one array: slab s is members[begin[s], begin[s + 1]), its
// core points (each finite point is in exactly one core) in index order, then its halo points.
// The array is left unset until the threads fill it (a vector would zero a gigabyte on one
// thread first).
struct Slabs {
  std::unique_ptr<std::uint32_t[]> members;
  std::vector<std::size_t> begin, core;
  std::size_t finite = 0;  // finite points of the cloud (the others are in no slab)
  std::size_t count() const { return core.size(); }
  std::size_t size(std::size_t s) const { return begin[s + 1] - begin[s]; }
  std::size_t halo(std::size_t s) const { return size(s) - core[s]; }
};

// The fewest slabs (a power of two times the first guess) of at most `cap` points each with
// their halos; the time of each pass is appended to `stages`. InvalidArgument when more slabs
// would no longer be smaller (the cloud too dense along its axis for `cap`).
Slabs partition_into_slabs(const Point3f* points, std::size_t n, float tolerance, std::size_t cap,
                           StageTimes& stages);

}  // namespace cumulus
