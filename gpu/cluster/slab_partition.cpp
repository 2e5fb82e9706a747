// The slabs of a clustering beyond one call (slab_partition.h).
#include "cluster/slab_partition.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/parallel.h"

namespace cumulus {

namespace {

float coordinate(const Point3f& p, int axis) {
  return axis == 0 ? p.x : axis == 1 ? p.y : p.z;
}

struct Extent {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  std::size_t finite = 0;
  // The first finite point of every window of `step` points: about a million, none missing
  // where any window has a finite point, the same on every machine.
  std::vector<Point3f> sample;
};

// The finite points' bounding box and, in the same pass, a sample for the slab boundaries.
Extent finite_extent(const Point3f* points, std::size_t n, std::size_t parts) {
  const std::size_t step = std::max<std::size_t>(1, n / 1'000'000);
  std::vector<Extent> part(parts);
  parallel_parts(n, parts, [&](std::size_t b, std::size_t e, std::size_t p) {
    Extent x;
    for (std::size_t i = b; i < e; ++i) {
      if (i % step == 0)  // a window may reach into the next part: only read there
        for (std::size_t k = i; k < std::min(n, i + step); ++k)
          if (is_finite(points[k])) {
            x.sample.push_back(points[k]);
            break;
          }
      if (!is_finite(points[i])) continue;
      ++x.finite;
      for (int a = 0; a < 3; ++a) {
        x.lo[a] = std::min(x.lo[a], double(coordinate(points[i], a)));
        x.hi[a] = std::max(x.hi[a], double(coordinate(points[i], a)));
      }
    }
    part[p] = std::move(x);
  });
  Extent all;
  for (std::size_t p = 0; p < parts; ++p) {
    all.sample.insert(all.sample.end(), part[p].sample.begin(), part[p].sample.end());
    all.finite += part[p].finite;
    for (int a = 0; a < 3; ++a) {
      all.lo[a] = std::min(all.lo[a], part[p].lo[a]);
      all.hi[a] = std::max(all.hi[a], part[p].hi[a]);
    }
  }
  return all;
}

// Puts the elements at the sorted positions [q, q_end) of data in place, as a sort would, in
// O(size log positions) instead of a whole sort.
void select_positions(float* data, float* first, float* last, const std::size_t* q,
                      const std::size_t* q_end) {
  if (q == q_end) return;
  const std::size_t* mid = q + (q_end - q) / 2;
  std::nth_element(first, data + *mid, last);
  select_positions(data, first, data + *mid, q, mid);
  select_positions(data, data + *mid + 1, last, mid + 1, q_end);
}

// Slab s covers [bound[s], bound[s + 1]) along the axis (its core) widened by the halo.
struct SlabBounds {
  std::vector<double> bound;
  double halo = 0;
  int axis = 0;

  std::size_t count() const { return bound.size() - 1; }
  // f(slab, is_core) for every slab that holds coordinate v.
  template <class F>
  void for_each_slab(double v, F&& f) const {
    const std::size_t slabs = count();
    const auto core =
        std::size_t(std::upper_bound(bound.begin() + 1, bound.end() - 1, v) - bound.begin() - 1);
    f(core, true);
    for (std::size_t s = core; s > 0 && v < bound[s] + halo;)
      f(--s, false);
    for (std::size_t s = core + 1; s < slabs && v >= bound[s] - halo; ++s)
      f(s, false);
  }
};

// Boundaries at the sample's quantiles.
SlabBounds slab_bounds(std::vector<float>& sample, std::size_t slabs, int axis, double halo) {
  std::vector<std::size_t> at;
  for (std::size_t s = 1; s < slabs; ++s)
    at.push_back(s * sample.size() / slabs);
  at.erase(std::unique(at.begin(), at.end()), at.end());
  select_positions(sample.data(), sample.data(), sample.data() + sample.size(), at.data(),
                   at.data() + at.size());
  SlabBounds b;
  b.axis = axis;
  b.halo = halo;
  b.bound.resize(slabs + 1);
  b.bound.front() = -INFINITY;
  b.bound.back() = INFINITY;
  for (std::size_t s = 1; s < slabs; ++s)
    b.bound[s] = sample[s * sample.size() / slabs];
  return b;
}

// Counts each part's core and halo members of each slab (counts[p][2 s], counts[p][2 s + 1]).
std::vector<std::vector<std::size_t>> count_members(const Point3f* points, std::size_t n,
                                                    std::size_t parts, const SlabBounds& b) {
  std::vector<std::vector<std::size_t>> counts(parts);
  parallel_parts(n, parts, [&](std::size_t lo, std::size_t hi, std::size_t p) {
    std::vector<std::size_t> c(2 * b.count(), 0);
    for (std::size_t i = lo; i < hi; ++i) {
      if (!is_finite(points[i])) continue;
      b.for_each_slab(coordinate(points[i], b.axis),
                      [&](std::size_t s, bool core) { ++c[2 * s + (core ? 0 : 1)]; });
    }
    counts[p] = std::move(c);
  });
  return counts;
}

// Largest slab size the counts give.
std::size_t largest_slab(const std::vector<std::vector<std::size_t>>& counts, std::size_t slabs) {
  std::size_t largest = 0;
  for (std::size_t s = 0; s < slabs; ++s) {
    std::size_t m = 0;
    for (const auto& c : counts)
      m += c[2 * s] + c[2 * s + 1];
    largest = std::max(largest, m);
  }
  return largest;
}

Slabs fill_members(const Point3f* points, std::size_t n, std::size_t parts,
                   const SlabBounds& bounds, const std::vector<std::vector<std::size_t>>& counts) {
  const std::size_t slabs = bounds.count();
  Slabs out;
  out.begin.assign(slabs + 1, 0);
  out.core.assign(slabs, 0);
  // Where each part writes its core and its halo members of each slab.
  std::vector<std::vector<std::size_t>> at(parts, std::vector<std::size_t>(2 * slabs));
  for (std::size_t s = 0; s < slabs; ++s) {
    std::size_t core = 0, halo = 0;
    for (const auto& c : counts)
      core += c[2 * s], halo += c[2 * s + 1];
    out.core[s] = core;
    out.begin[s + 1] = out.begin[s] + core + halo;
    std::size_t core_at = out.begin[s], halo_at = out.begin[s] + core;
    for (std::size_t p = 0; p < parts; ++p) {
      at[p][2 * s] = core_at, at[p][2 * s + 1] = halo_at;
      core_at += counts[p][2 * s], halo_at += counts[p][2 * s + 1];
    }
  }
  out.members.reset(new std::uint32_t[out.begin.back()]);
  parallel_parts(n, parts, [&](std::size_t lo, std::size_t hi, std::size_t p) {
    std::vector<std::size_t>& next = at[p];
    for (std::size_t i = lo; i < hi; ++i) {
      if (!is_finite(points[i])) continue;
      bounds.for_each_slab(coordinate(points[i], bounds.axis), [&](std::size_t s, bool core) {
        out.members[next[2 * s + (core ? 0 : 1)]++] = std::uint32_t(i);
      });
    }
  });
  return out;
}

}  // namespace

Slabs partition_into_slabs(const Point3f* points, std::size_t n, float tolerance, std::size_t cap,
                           StageTimes& stages) {
  WallTimer t;
  const std::size_t parts = parts_for(n, kSlabGrain);
  const Extent extent = finite_extent(points, n, parts);
  const std::size_t finite = extent.finite;
  int axis = 0;
  for (int a = 1; a < 3; ++a)
    if (extent.hi[a] - extent.lo[a] > extent.hi[axis] - extent.lo[axis]) axis = a;
  const double span = extent.hi[axis] - extent.lo[axis];
  // Every neighbour of a slab's point lies within the tolerance along the axis; the margin
  // covers the float rounding of the distance test.
  const double halo = double(tolerance) * (1.0 + 1e-4);
  std::vector<float> sample;
  sample.reserve(extent.sample.size());
  for (const Point3f& p : extent.sample)
    sample.push_back(coordinate(p, axis));
  stages.emplace_back("bounds and sample", t.ms());
  t.reset();
  // A fifth of each slab left for its halos to begin with.
  std::size_t count = std::max<std::size_t>(1, (finite * 5 / 4 + cap - 1) / cap);
  SlabBounds bounds = slab_bounds(sample, count, axis, halo);
  auto counts = count_members(points, n, parts, bounds);
  while (largest_slab(counts, count) > cap) {
    // Halos made a slab too big: more slabs, unless they no longer shrink.
    if (count >= finite || 2 * halo * double(2 * count) > span)
      throw InvalidArgument("the cloud is too dense along its longest axis for slabs of " +
                            std::to_string(cap) + " points at tolerance " +
                            std::to_string(tolerance));
    count *= 2;
    bounds = slab_bounds(sample, count, axis, halo);
    counts = count_members(points, n, parts, bounds);
  }
  stages.emplace_back("slab counts", t.ms());
  t.reset();
  Slabs slabs = fill_members(points, n, parts, bounds, counts);
  slabs.finite = finite;
  stages.emplace_back("slab members", t.ms());
  return slabs;
}

}  // namespace cumulus
