// Clustering beyond one call (GPU memory, or the 2^26 points a `gpu` call takes): slabs with
// halos along the longest axis, one call per slab, an exact union-find merge on the host.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "cluster/cluster.h"
#include "core/capacity.h"
#include "core/device.h"
#include "core/error.h"
#include "core/union_find.h"

namespace cumulus {

namespace {

// Device bytes a `gpu` call needs per point (hash slots for 2 to 4 cells per point, the sorted
// points, union-find and relabelling arrays), rounded up from its workspace.
constexpr std::size_t kGpuBytesPerPoint = 320;
constexpr std::size_t kGpuMaxCallPoints = std::size_t(1) << 26;

float coordinate(const Point3f& p, int axis) {
  return axis == 0 ? p.x : axis == 1 ? p.y : p.z;
}

// Slab members (indices into the cloud) for `slabs` slabs of about equal point counts.
std::vector<std::vector<std::uint32_t>> partition(const Point3f* points,
                                                  const std::vector<std::uint32_t>& finite_idx,
                                                  int axis, std::size_t slabs, double halo) {
  // Boundaries at quantiles of a sample of the coordinates.
  const std::size_t m = finite_idx.size(), step = std::max<std::size_t>(1, m / 1'000'000);
  std::vector<float> sample;
  for (std::size_t i = 0; i < m; i += step)
    sample.push_back(coordinate(points[finite_idx[i]], axis));
  std::sort(sample.begin(), sample.end());
  std::vector<double> bound(slabs + 1);  // slab s: [bound[s], bound[s + 1])
  bound.front() = -INFINITY;
  bound.back() = INFINITY;
  for (std::size_t s = 1; s < slabs; ++s)
    bound[s] = sample[s * sample.size() / slabs];
  // A point belongs to every slab whose range widened by the halo holds it.
  auto for_each_slab = [&](double v, auto&& f) {
    const auto core =
        std::size_t(std::upper_bound(bound.begin() + 1, bound.end() - 1, v) - bound.begin() - 1);
    f(core);
    for (std::size_t s = core; s > 0 && v < bound[s] + halo;)
      f(--s);
    for (std::size_t s = core + 1; s < slabs && v >= bound[s] - halo; ++s)
      f(s);
  };
  std::vector<std::size_t> count(slabs, 0);
  for (std::uint32_t i : finite_idx)
    for_each_slab(coordinate(points[i], axis), [&](std::size_t s) { ++count[s]; });
  std::vector<std::vector<std::uint32_t>> members(slabs);
  for (std::size_t s = 0; s < slabs; ++s)
    members[s].reserve(count[s]);
  for (std::uint32_t i : finite_idx)
    for_each_slab(coordinate(points[i], axis), [&](std::size_t s) { members[s].push_back(i); });
  return members;
}

}  // namespace

std::size_t cluster_call_capacity(ClusterMethod method, std::size_t n) {
  if (method != ClusterMethod::Gpu) return std::numeric_limits<std::size_t>::max();
  return gpu_call_capacity(kGpuBytesPerPoint, n, kGpuMaxCallPoints);
}

ClusterResult euclidean_cluster_tiled(const Point3f* points, std::size_t n,
                                      const ClusterParams& params, ClusterMethod method,
                                      std::size_t max_tile_points,
                                      const ClusterProgress& progress) {
  validate(params);
  if (n >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  WallTimer total, t;
  const std::size_t capacity = cluster_call_capacity(method, n);
  const std::size_t cap = max_tile_points > 0 ? std::min(max_tile_points, capacity) : capacity;
  std::vector<std::uint32_t> finite_idx;
  finite_idx.reserve(n);
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_finite(points[i])) continue;
    finite_idx.push_back(std::uint32_t(i));
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], double(coordinate(points[i], a)));
      hi[a] = std::max(hi[a], double(coordinate(points[i], a)));
    }
  }
  int axis = 0;
  for (int a = 1; a < 3; ++a)
    if (hi[a] - lo[a] > hi[axis] - lo[axis]) axis = a;
  // Every neighbour of a slab's point lies within the tolerance along the axis; the margin
  // covers the float rounding of the distance test.
  const double halo = double(params.tolerance) * (1.0 + 1e-4);
  // A fifth of each slab left for its halos to begin with.
  std::size_t slabs = std::max<std::size_t>(1, (finite_idx.size() * 5 / 4 + cap - 1) / cap);
  std::vector<std::vector<std::uint32_t>> members;
  while (true) {
    members = partition(points, finite_idx, axis, slabs, halo);
    std::size_t largest = 0;
    for (const auto& m : members)
      largest = std::max(largest, m.size());
    if (largest <= cap) break;
    // Halos made a slab too big: more slabs, unless they no longer shrink.
    if (slabs >= finite_idx.size() || 2 * halo * double(2 * slabs) > hi[axis] - lo[axis])
      throw InvalidArgument("the cloud is too dense along its longest axis for slabs of " +
                            std::to_string(cap) + " points at tolerance " +
                            std::to_string(params.tolerance));
    slabs *= 2;
  }
  ClusterResult r;
  r.stages.emplace_back("partition (" + std::to_string(slabs) + " slabs)", t.ms());

  // Each slab clustered whole (every component kept); components are numbered across slabs.
  ClusterParams all = params;
  all.min_size = 1;
  all.max_size = std::numeric_limits<std::int32_t>::max();
  ClusterTileMerge merge(n);
  std::vector<Point3f> buffer;
  double call_ms = 0, merge_ms = 0;
  for (std::size_t s = 0; s < slabs; ++s) {
    const auto& mem = members[s];
    t.reset();
    buffer.resize(mem.size());
    for (std::size_t k = 0; k < mem.size(); ++k)
      buffer[k] = points[mem[k]];
    ClusterResult part;
    if (!buffer.empty()) {
      part = euclidean_cluster_call(buffer.data(), buffer.size(), all, method);
    }
    call_ms += t.ms();
    t.reset();
    merge.add(mem.data(), part.labels.data(), mem.size());
    merge_ms += t.ms();
    if (progress && !progress(s + 1, slabs)) throw Cancelled("clustering cancelled");
  }
  r.stages.emplace_back(std::string(method_name(method)) + " per slab", call_ms);
  t.reset();
  ClusterResult merged = merge.finish(params);
  r.stages.emplace_back("merge", merge_ms + t.ms() - merged.stages.back().second);
  r.stages.push_back(merged.stages.back());
  merged.stages = std::move(r.stages);
  merged.method = method_name(method);
  merged.total_ms = total.ms();
  return merged;
}

ClusterTileMerge::ClusterTileMerge(std::size_t points) : first_(points, -1) {
  if (points >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
}

void ClusterTileMerge::add(const std::uint32_t* members, const std::int32_t* labels,
                           std::size_t count) {
  std::int32_t components = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (members[k] >= first_.size())
      throw InvalidArgument("tile member " + std::to_string(members[k]) +
                            " is outside the cloud of " + std::to_string(first_.size()) +
                            " points");
    components = std::max(components, labels[k] + 1);
  }
  if (parent_.size() + std::size_t(components) >=
      std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("too many tile components to merge");
  const auto base = std::int32_t(parent_.size());
  parent_.resize(parent_.size() + std::size_t(components));
  std::iota(parent_.begin() + base, parent_.end(), base);
  for (std::size_t k = 0; k < count; ++k) {
    if (labels[k] < 0) continue;
    const std::int32_t c = base + labels[k];
    std::int32_t& f = first_[members[k]];
    if (f < 0)
      f = c;
    else
      unite(parent_, f, c);
  }
}

ClusterResult ClusterTileMerge::finish(const ClusterParams& params) {
  validate(params);
  WallTimer t;
  // Roots as compact component ids (< n, as canonicalize() requires).
  const std::size_t n = first_.size();
  std::vector<std::int32_t> id(parent_.size(), -1), component(n, -1);
  std::int32_t next = 0;
  std::size_t placed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (first_[i] < 0) continue;
    ++placed;
    const auto root = std::size_t(find_root(parent_, first_[i]));
    if (id[root] < 0) id[root] = next++;
    component[i] = id[root];
  }
  ClusterResult r;
  canonicalize(component, params, r);
  r.non_finite = n - placed;
  r.stages.emplace_back("canonicalize", t.ms());
  return r;
}

}  // namespace cumulus
