#pragma once
// The tiling layer's planning pieces, shared by its search (tiles_nns.cpp) and its normals and
// features (tiles_features.cpp): a coarse grid over the points, calls planned as blocks of its
// cells, progress and timing. Private to tiles/.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "core/capacity.h"
#include "core/error.h"
#include "tiles/tiles.h"

namespace cumulus::tiles_detail {

// Widens every reach: a point outside a tile is then farther than the reach by more than the
// float rounding of its squared distance, so it can neither be a neighbour nor tie with one.
constexpr double kReachMargin = 1e-4;
// The GPU entry points index points and result entries with 32-bit integers.
constexpr std::size_t kGpuMaxCallPoints = std::size_t(1) << 27;
// Neighbours per query assumed for the device memory of radius searches (their count is known
// only after the search).
constexpr std::size_t kAssumedRadiusNeighbours = 32;

constexpr std::size_t kMaxCells = std::size_t(1) << 23;

inline float coordinate(const Point3f& p, int axis) {
  return axis == 0 ? p.x : axis == 1 ? p.y : p.z;
}

// Axis-aligned box in the cloud's local coordinates; empty while lo > hi.
struct Box {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  void add(const Point3f& p, double reach) {
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], double(coordinate(p, a)) - reach);
      hi[a] = std::max(hi[a], double(coordinate(p, a)) + reach);
    }
  }
};

// Cells [a, b] (inclusive) along each axis.
struct Block {
  int a[3] = {0, 0, 0}, b[3] = {0, 0, 0};
};

// A coarse grid over the finite targets: calls are blocks of its cells, sized by counting the
// targets in a block (3-D prefix sums) and handed the targets listed in those cells. Blocks
// rather than slabs, because a slab's halo spans the whole cross-section of the cloud: a
// LiDAR scan's sparse far points would pull the dense middle into every call near them.
class CoarseGrid {
 public:
  CoarseGrid(std::span<const Point3f> targets, std::span<const Point3f> queries, std::size_t cap) {
    Box all;
    std::size_t finite = 0;
    for (const auto* v : {&targets, &queries})
      for (const Point3f& p : *v)
        if (is_finite(p)) all.add(p, 0);
    for (const Point3f& p : targets)
      finite += is_finite(p) ? 1 : 0;
    double extent[3], largest = 0;
    for (int a = 0; a < 3; ++a) {
      lo_[a] = all.lo[a] <= all.hi[a] ? all.lo[a] : 0;
      extent[a] = all.lo[a] <= all.hi[a] ? all.hi[a] - all.lo[a] : 0;
      largest = std::max(largest, extent[a]);
    }
    // About 512 cells per call to begin with, flat extents counted as a thousandth of the
    // largest; then finer while a cell holds more than an eighth of a call.
    const double cells = std::clamp(512.0 * double(finite) / double(std::max<std::size_t>(cap, 1)),
                                    64.0, double(kMaxCells / 8));
    double volume = 1;
    for (double e : extent)
      volume *= std::max({e, largest * 1e-3, 1e-9});
    cell_ = std::cbrt(volume / cells);
    for (;;) {
      std::size_t total = 1;
      for (int a = 0; a < 3; ++a) {
        dim_[a] = int(std::clamp(std::ceil(extent[a] / cell_), 1.0, double(1 << 20)));
        total *= std::size_t(dim_[a]);
      }
      if (total > kMaxCells) {  // rounding up each axis overshot: coarser
        cell_ *= 1.25;
        continue;
      }
      start_.assign(total + 1, 0);
      for (const Point3f& p : targets)
        if (is_finite(p)) ++start_[cell_index(p) + 1];
      const std::uint32_t fullest = *std::max_element(start_.begin(), start_.end());
      // Points on one spot (duplicates, or a cloud without extent) never split: stop there.
      const bool finer_helps = largest > 0 && cell_ > largest * 1e-7;
      if (fullest <= std::max<std::size_t>(cap / 8, 1) || total * 8 > kMaxCells || !finer_helps)
        break;
      cell_ /= 2;
    }
    std::partial_sum(start_.begin(), start_.end(), start_.begin());
    list_.resize(start_.back());
    std::vector<std::uint32_t> fill(start_.begin(), start_.end() - 1);
    for (std::size_t i = 0; i < targets.size(); ++i)
      if (is_finite(targets[i])) list_[fill[cell_index(targets[i])]++] = std::uint32_t(i);
    // prefix_[(z * (Y + 1) + y) * (X + 1) + x]: targets in cells below (x, y, z).
    const std::size_t X = std::size_t(dim_[0]) + 1, Y = std::size_t(dim_[1]) + 1,
                      Z = std::size_t(dim_[2]) + 1;
    prefix_.assign(X * Y * Z, 0);
    auto P = [&](std::size_t x, std::size_t y, std::size_t z) -> std::uint32_t& {
      return prefix_[(z * Y + y) * X + x];
    };
    for (std::size_t z = 1; z < Z; ++z)
      for (std::size_t y = 1; y < Y; ++y)
        for (std::size_t x = 1; x < X; ++x) {
          const std::size_t c = ((z - 1) * (Y - 1) + (y - 1)) * (X - 1) + (x - 1);
          P(x, y, z) = (start_[c + 1] - start_[c]) + P(x - 1, y, z) + P(x, y - 1, z) +
                       P(x, y, z - 1) - P(x - 1, y - 1, z) - P(x - 1, y, z - 1) -
                       P(x, y - 1, z - 1) + P(x - 1, y - 1, z - 1);
        }
  }

  std::size_t targets() const { return list_.size(); }

  int cell(double v, int axis) const {
    const double c = std::floor((v - lo_[axis]) / cell_);
    return int(std::clamp(c, 0.0, double(dim_[axis] - 1)));
  }

  // The cells that hold every target inside the box (the cell of a coordinate never decreases
  // with it, so a target within the box lies in a cell between those of the box's corners).
  Block block(const Box& box) const {
    Block b;
    for (int a = 0; a < 3; ++a) {
      b.a[a] = cell(box.lo[a], a);
      b.b[a] = cell(box.hi[a], a);
    }
    return b;
  }

  Block widen(Block b) const {
    for (int a = 0; a < 3; ++a) {
      b.a[a] = std::max(b.a[a] - 1, 0);
      b.b[a] = std::min(b.b[a] + 1, dim_[a] - 1);
    }
    return b;
  }

  bool whole(const Block& b) const {
    for (int a = 0; a < 3; ++a)
      if (b.a[a] > 0 || b.b[a] < dim_[a] - 1) return false;
    return true;
  }

  std::size_t count(const Block& b) const {
    const std::size_t X = std::size_t(dim_[0]) + 1, Y = std::size_t(dim_[1]) + 1;
    auto at = [&](int x, int y, int z) {
      return std::int64_t(prefix_[(std::size_t(z) * Y + std::size_t(y)) * X + std::size_t(x)]);
    };
    const int x0 = b.a[0], y0 = b.a[1], z0 = b.a[2], x1 = b.b[0] + 1, y1 = b.b[1] + 1,
              z1 = b.b[2] + 1;
    return std::size_t(at(x1, y1, z1) - at(x0, y1, z1) - at(x1, y0, z1) - at(x1, y1, z0) +
                       at(x0, y0, z1) + at(x0, y1, z0) + at(x1, y0, z0) - at(x0, y0, z0));
  }

  // The block's targets as ascending input indices: a call sees them in the input's order, so
  // ties between equally distant targets resolve as they would over the whole input.
  std::vector<std::uint32_t> members(const Block& b) const {
    std::vector<std::uint32_t> m;
    m.reserve(count(b));
    for (int z = b.a[2]; z <= b.b[2]; ++z)
      for (int y = b.a[1]; y <= b.b[1]; ++y) {
        const std::size_t row =
            (std::size_t(z) * std::size_t(dim_[1]) + std::size_t(y)) * std::size_t(dim_[0]);
        m.insert(m.end(), list_.begin() + start_[row + std::size_t(b.a[0])],
                 list_.begin() + start_[row + std::size_t(b.b[0]) + 1]);
      }
    std::sort(m.begin(), m.end());
    return m;
  }

  // Distance from p to the nearest face of the block with cells beyond it: no target outside
  // the block is closer (infinite for the whole grid).
  double gap(const Point3f& p, const Block& b) const {
    double g = INFINITY;
    for (int a = 0; a < 3; ++a) {
      const double v = coordinate(p, a);
      if (b.a[a] > 0) g = std::min(g, v - (lo_[a] + b.a[a] * cell_));
      if (b.b[a] < dim_[a] - 1) g = std::min(g, lo_[a] + (b.b[a] + 1) * cell_ - v);
    }
    return g - 1e-9 * cell_;
  }

  // Cells numbered along a Z curve: queries taken in this order form compact groups.
  std::uint64_t order_key(const Point3f& p) const {
    std::uint64_t key = 0;
    const std::uint64_t c[3] = {std::uint64_t(cell(p.x, 0)), std::uint64_t(cell(p.y, 1)),
                                std::uint64_t(cell(p.z, 2))};
    for (int bit = 0; bit < 21; ++bit)
      for (int a = 0; a < 3; ++a)
        key |= ((c[a] >> bit) & 1u) << (3 * bit + a);
    return key;
  }

  Block around(const Point3f& p) const {
    Block b;
    for (int a = 0; a < 3; ++a)
      b.a[a] = b.b[a] = cell(coordinate(p, a), a);
    return b;
  }

 private:
  std::size_t cell_index(const Point3f& p) const {
    return (std::size_t(cell(p.z, 2)) * std::size_t(dim_[1]) + std::size_t(cell(p.y, 1))) *
               std::size_t(dim_[0]) +
           std::size_t(cell(p.x, 0));
  }

  double lo_[3] = {0, 0, 0};
  double cell_ = 1;
  int dim_[3] = {1, 1, 1};
  std::vector<std::uint32_t> start_;   // CSR over cells (x fastest)
  std::vector<std::uint32_t> list_;    // input indices, cell by cell, ascending in a cell
  std::vector<std::uint32_t> prefix_;  // 3-D prefix sums of the cell counts
};

// The finite queries (input indices) in the grid's cell order.
inline std::vector<std::uint32_t> query_order(const CoarseGrid& g,
                                              std::span<const Point3f> queries) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed;
  for (std::size_t i = 0; i < queries.size(); ++i)
    if (is_finite(queries[i])) keyed.emplace_back(g.order_key(queries[i]), std::uint32_t(i));
  std::sort(keyed.begin(), keyed.end());
  std::vector<std::uint32_t> order(keyed.size());
  for (std::size_t i = 0; i < keyed.size(); ++i)
    order[i] = keyed[i].second;
  return order;
}

// One call: queries (input indices) and the block of cells whose targets it takes.
struct Call {
  std::vector<std::uint32_t> queries;
  Block block;
};

// Greedy runs of `order` (query indices in cell order), each call's block the cells within
// reach of its queries, at most `cap` points a call; a search of points among themselves
// (`self`) holds its queries among its targets. A query whose cells alone hold more goes to
// `oversized`, or without it is refused.
template <class Reach>
std::vector<Call> plan_calls(const CoarseGrid& g, std::span<const Point3f> queries,
                             const std::vector<std::uint32_t>& order, Reach&& reach, bool self,
                             std::size_t cap, const char* what,
                             std::vector<std::uint32_t>* oversized = nullptr) {
  std::vector<Call> calls;
  Call cur;
  Box box;
  for (std::uint32_t i : order) {
    const double r = reach(i);
    for (;;) {
      Box grown = box;
      grown.add(queries[i], r);
      const Block b = g.block(grown);
      const std::size_t size = g.count(b) + (self ? 0 : cur.queries.size() + 1);
      if (size <= cap) {
        box = grown;
        cur.block = b;
        cur.queries.push_back(i);
        break;
      }
      if (cur.queries.empty() && oversized) {
        oversized->push_back(i);
        break;
      }
      if (cur.queries.empty())
        throw InvalidArgument(std::string(what) + ": a query needs the " +
                              std::to_string(g.count(b)) +
                              " points of the cells within its reach in one call, more than the " +
                              std::to_string(cap) + " one call may take");
      // The call is full: the query starts the next one.
      calls.push_back(std::move(cur));
      cur = Call{};
      box = Box{};
    }
  }
  if (!cur.queries.empty()) calls.push_back(std::move(cur));
  // Outliers go one at a time; as many as that would be a call each for most of the cloud.
  if (oversized && oversized->size() > 64 + order.size() / 256)
    throw InvalidArgument(std::string(what) + ": " + std::to_string(oversized->size()) +
                          " queries each need more than the " + std::to_string(cap) +
                          " points one call may take: allow larger calls or a smaller reach");
  return calls;
}

inline std::vector<Point3f> gather(std::span<const Point3f> points,
                                   const std::vector<std::uint32_t>& idx) {
  std::vector<Point3f> out(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i)
    out[i] = points[idx[i]];
  return out;
}

// Where input point i sits among a tile's members.
inline std::size_t local_of(const std::vector<std::uint32_t>& members, std::uint32_t i) {
  return std::size_t(std::lower_bound(members.begin(), members.end(), i) - members.begin());
}

class Progress {
 public:
  Progress(const std::function<bool(std::size_t, std::size_t)>& f, const char* what)
      : f_(f), what_(what) {}
  void plan(std::size_t calls) { planned_ += calls; }
  void step() {
    ++done_;
    if (f_ && !f_(done_, planned_)) throw Cancelled(std::string(what_) + " cancelled");
  }

 private:
  const std::function<bool(std::size_t, std::size_t)>& f_;
  const char* what_;
  std::size_t done_ = 0, planned_ = 0;
};

// A run that fits in one call: that call, reported as one.
template <class Run>
auto one_call(Progress& progress, Run&& run) {
  progress.plan(1);
  auto r = run();
  progress.step();
  return r;
}

inline std::size_t effective_cap(const TileOptions& o, std::size_t capacity) {
  return o.max_tile_points > 0 ? std::min(o.max_tile_points, capacity) : capacity;
}

inline NnsMethod search_method_for(FeatureMethod m) {
  return m == FeatureMethod::Gpu ? NnsMethod::Gpu : NnsMethod::Cpu;
}

// Squared k-th distance of a query to the targets of the smallest block around its cell that
// holds k: an upper bound of its k-th nearest distance (infinite with fewer than k targets).
inline double nearby_kth_d2(const Point3f& p, std::span<const Point3f> targets, const CoarseGrid& g,
                            int k) {
  if (g.targets() < std::size_t(k)) return INFINITY;
  Block b = g.around(p);
  while (g.count(b) < std::size_t(k))
    b = g.widen(b);
  std::vector<double> d2;
  for (std::uint32_t i : g.members(b)) {
    const Point3f& o = targets[i];
    const double dx = double(o.x) - p.x, dy = double(o.y) - p.y, dz = double(o.z) - p.z;
    d2.push_back(dx * dx + dy * dy + dz * dz);
  }
  std::nth_element(d2.begin(), d2.begin() + (k - 1), d2.end());
  return d2[std::size_t(k - 1)] * (1 + kReachMargin);
}

struct Timing {
  double plan = 0, calls = 0, merge = 0;
  std::size_t count = 0;  // calls made
};

// One outlier query against every target within `reach` of it, in parts of a call each:
// `search(part, found)` appends (squared distance, input index) entries for a part's targets,
// returned together in the order one call orders them (distance, then index).
template <class Search>
std::vector<std::pair<float, std::int32_t>> search_in_parts(const CoarseGrid& grid,
                                                            const Point3f& query, double reach,
                                                            std::size_t cap, Progress& progress,
                                                            Timing& time, Search&& search) {
  Box box;
  box.add(query, reach);
  const std::vector<std::uint32_t> members = grid.members(grid.block(box));
  const std::size_t part = std::max<std::size_t>(cap - 1, 1);
  progress.plan((members.size() + part - 1) / part);
  std::vector<std::pair<float, std::int32_t>> found;
  for (std::size_t from = 0; from < members.size(); from += part) {
    const WallTimer t;
    const std::vector<std::uint32_t> chunk(
        members.begin() + std::ptrdiff_t(from),
        members.begin() + std::ptrdiff_t(std::min(members.size(), from + part)));
    search(chunk, found);
    time.calls += t.ms();
    ++time.count;
    progress.step();
  }
  std::sort(found.begin(), found.end());
  return found;
}

inline void finish_stages(StageTimes& stages, const char* call, const Timing& time) {
  stages.emplace_back("plan (" + std::to_string(time.count) + " calls)", time.plan);
  stages.emplace_back(std::string(call) + " per tile", time.calls);
  stages.emplace_back("merge", time.merge);
}

// k nearest of every query in tiled calls (tiles_nns.cpp); `self` when queries are the targets.
KnnResult knn_in_calls(std::span<const Point3f> targets, std::span<const Point3f> queries,
                       bool self, int k, NnsMethod method, float max_distance, std::size_t cap,
                       Progress& progress, Timing& time);

// The k-th neighbour's distance of every point among the cloud's points (NaN where not finite,
// infinite where the cloud has fewer than k finite points); the k-NN rows in `rows` if given.
std::vector<double> kth_distances(std::span<const Point3f> points, int k, NnsMethod method,
                                  std::size_t cap, Progress& progress, Timing& time,
                                  KnnResult* rows = nullptr);

// Bytes of device memory per point of a neighbourhood's rows (tiles_nns.cpp).
std::size_t row_bytes(int k);

}  // namespace cumulus::tiles_detail
