// Neighbour search, normals and features in tiles: a coarse grid over the points, runs of
// queries in its cell order with the cells within their reach, one call per tile, results put
// back in place (see cumulus/tiles.h).
#include "cumulus/tiles.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "capacity.h"
#include "cumulus/error.h"

namespace cumulus {

namespace {

// Widens every reach: a point outside a tile is then farther than the reach by more than the
// float rounding of its squared distance, so it can neither be a neighbour nor tie with one.
constexpr double kReachMargin = 1e-4;
// The GPU entry points index points and result entries with 32-bit integers.
constexpr std::size_t kGpuMaxCallPoints = std::size_t(1) << 27;
// Neighbours per query assumed for the device memory of radius searches (their count is known
// only after the search).
constexpr std::size_t kAssumedRadiusNeighbours = 32;

constexpr std::size_t kMaxCells = std::size_t(1) << 23;

float coordinate(const Point3f& p, int axis) {
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
  CoarseGrid(const std::vector<Point3f>& targets, const std::vector<Point3f>& queries,
             std::size_t cap) {
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
std::vector<std::uint32_t> query_order(const CoarseGrid& g, const std::vector<Point3f>& queries) {
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
std::vector<Call> plan_calls(const CoarseGrid& g, const std::vector<Point3f>& queries,
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

std::vector<Point3f> gather(const std::vector<Point3f>& points,
                            const std::vector<std::uint32_t>& idx) {
  std::vector<Point3f> out(idx.size());
  for (std::size_t i = 0; i < idx.size(); ++i)
    out[i] = points[idx[i]];
  return out;
}

// Where input point i sits among a tile's members.
std::size_t local_of(const std::vector<std::uint32_t>& members, std::uint32_t i) {
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

std::size_t effective_cap(const TileOptions& o, std::size_t capacity) {
  return o.max_tile_points > 0 ? std::min(o.max_tile_points, capacity) : capacity;
}

NnsMethod search_method_for(FeatureMethod m) {
  return m == FeatureMethod::Gpu ? NnsMethod::Gpu : NnsMethod::Cpu;
}

// Squared k-th distance of a query to the targets of the smallest block around its cell that
// holds k: an upper bound of its k-th nearest distance (infinite with fewer than k targets).
double nearby_kth_d2(const Point3f& p, const std::vector<Point3f>& targets, const CoarseGrid& g,
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

KnnResult knn_in_calls(const std::vector<Point3f>& targets, const std::vector<Point3f>& queries,
                       bool self, int k, NnsMethod method, float max_distance, std::size_t cap,
                       Progress& progress, Timing& time) {
  WallTimer t;
  const CoarseGrid grid(targets, queries, cap);
  const std::vector<std::uint32_t> order = query_order(grid, queries);
  const std::size_t kk = std::size_t(k);
  KnnResult out;
  out.k = k;
  out.method = method_name(method);
  out.indices.assign(queries.size() * kk, -1);
  out.sq_distances.assign(queries.size() * kk, INFINITY);
  const double max_d2 =
      std::isinf(max_distance) ? INFINITY : double(float(double(max_distance) * max_distance));
  // First pass: runs of queries filling two thirds of a call, their block widened while it
  // fits; a query's result stands when its bound (k-th distance, or the maximum distance) is
  // short of the block's faces, as it is for all but outliers.
  // Queries for the second pass, and the reach each goes with.
  std::vector<std::uint32_t> oversized;
  std::vector<char> again_mark(queries.size(), 0);
  std::vector<double> reach(queries.size(), 0.0);
  std::vector<Call> calls = plan_calls(
      grid, queries, order, [](std::uint32_t) { return 0.0; }, self,
      std::max<std::size_t>(cap / 3 * 2, 1), "k-NN", &oversized);
  for (std::uint32_t i : oversized) {  // a cell beyond two thirds of a call: duplicates
    again_mark[i] = 1;
    reach[i] = std::sqrt(std::min(nearby_kth_d2(queries[i], targets, grid, k), max_d2));
  }
  oversized.clear();
  for (Call& c : calls)
    for (Block w = grid.widen(c.block);
         !grid.whole(c.block) && grid.count(w) + (self ? 0 : c.queries.size()) <= cap;
         w = grid.widen(w))
      c.block = w;
  progress.plan(calls.size());
  time.plan += t.ms();
  for (int pass = 0; pass < 2; ++pass) {
    for (const Call& c : calls) {
      t.reset();
      const std::vector<std::uint32_t> members = grid.members(c.block);
      std::vector<Point3f> q(c.queries.size());
      for (std::size_t j = 0; j < q.size(); ++j)
        q[j] = queries[c.queries[j]];
      const KnnResult r = knn_search(gather(targets, members), q, k, method, max_distance);
      time.calls += t.ms();
      ++time.count;
      t.reset();
      for (std::size_t j = 0; j < q.size(); ++j) {
        const std::size_t row = c.queries[j] * kk;
        for (std::size_t e = 0; e < kk; ++e) {
          const std::int32_t local = r.indices[j * kk + e];
          out.indices[row + e] = local < 0 ? -1 : std::int32_t(members[std::size_t(local)]);
          out.sq_distances[row + e] = r.sq_distances[j * kk + e];
        }
        if (pass == 1) continue;
        const double gap = grid.gap(q[j], c.block);
        double bound2 =
            r.indices[j * kk + kk - 1] >= 0 ? double(r.sq_distances[j * kk + kk - 1]) : max_d2;
        if (bound2 < gap * gap * (1 - kReachMargin)) continue;
        if (std::isinf(bound2)) bound2 = nearby_kth_d2(q[j], targets, grid, k);
        again_mark[c.queries[j]] = 1;
        reach[c.queries[j]] = std::sqrt(std::min(bound2, max_d2)) * (1 + kReachMargin);
      }
      time.merge += t.ms();
      progress.step();
    }
    if (pass == 1) break;
    // Second pass: each query left over with every target within its bound, which holds its
    // k nearest; these results are final.
    t.reset();
    std::vector<std::uint32_t> again;
    for (std::uint32_t i : order)
      if (again_mark[i]) again.push_back(i);
    if (again.empty()) break;
    calls = plan_calls(
        grid, queries, again, [&](std::uint32_t i) { return reach[i]; }, self, cap, "k-NN",
        &oversized);
    progress.plan(calls.size());
    time.plan += t.ms();
  }
  // Queries whose reach alone holds more than a call (outliers far from everything): their
  // targets in parts of a call each, the k best of all parts kept, ties by index as a call
  // would order them.
  for (std::uint32_t i : oversized) {
    const auto best = search_in_parts(
        grid, queries[i], reach[i], cap, progress, time,
        [&](const std::vector<std::uint32_t>& chunk, auto& found) {
          const KnnResult r =
              knn_search(gather(targets, chunk), {queries[i]}, k, method, max_distance);
          for (std::size_t e = 0; e < kk; ++e)
            if (r.indices[e] >= 0)
              found.emplace_back(r.sq_distances[e], std::int32_t(chunk[std::size_t(r.indices[e])]));
        });
    for (std::size_t e = 0; e < kk && e < best.size(); ++e) {
      out.indices[i * kk + e] = best[e].second;
      out.sq_distances[i * kk + e] = best[e].first;
    }
  }
  return out;
}

// The k-th neighbour's distance of every point among the cloud's points (NaN where not finite,
// infinite where the cloud has fewer than k finite points).
std::vector<double> kth_distances(const std::vector<Point3f>& points, int k, NnsMethod method,
                                  std::size_t cap, Progress& progress, Timing& time,
                                  KnnResult* rows = nullptr) {
  KnnResult r = knn_in_calls(points, points, true, k, method, INFINITY, cap, progress, time);
  std::vector<double> d(points.size(), NAN);
  const std::size_t kk = std::size_t(k);
  for (std::size_t i = 0; i < points.size(); ++i)
    if (is_finite(points[i]))
      d[i] = r.indices[i * kk + kk - 1] < 0 ? INFINITY
                                            : std::sqrt(double(r.sq_distances[i * kk + kk - 1]));
  if (rows) *rows = std::move(r);
  return d;
}

void finish_stages(StageTimes& stages, const char* call, const Timing& time) {
  stages.emplace_back("plan (" + std::to_string(time.count) + " calls)", time.plan);
  stages.emplace_back(std::string(call) + " per tile", time.calls);
  stages.emplace_back("merge", time.merge);
}

using MembersOf = std::function<std::vector<std::uint32_t>(std::uint32_t)>;

// Calls over the cloud's finite points, each with every point within `reach` (by input index)
// of its own, handed to `run(part of the cloud, its members, its own points as input indices)`.
// A point whose reach alone holds more than a call gets a call of its own with just the points
// `members_of` names (its neighbourhood: the same result from far fewer points), or without
// `members_of` is refused.
template <class Reach, class Run>
void for_each_cloud_call(const PointCloud& cloud, Reach&& reach, std::size_t cap, const char* what,
                         Progress& progress, Timing& time, const MembersOf& members_of, Run&& run) {
  WallTimer t;
  const CoarseGrid grid(cloud.points, {}, cap);
  std::vector<std::uint32_t> oversized;
  std::vector<Call> calls = plan_calls(grid, cloud.points, query_order(grid, cloud.points), reach,
                                       true, cap, what, members_of ? &oversized : nullptr);
  progress.plan(calls.size() + oversized.size());
  time.plan += t.ms();
  auto call = [&](const std::vector<std::uint32_t>& members,
                  const std::vector<std::uint32_t>& own) {
    t.reset();
    PointCloud part;
    part.origin = cloud.origin;
    part.points = gather(cloud.points, members);
    part.width = std::uint32_t(part.points.size());
    run(part, members, own);
    time.calls += t.ms();
    ++time.count;
    progress.step();
  };
  for (const Call& c : calls)
    call(grid.members(c.block), c.queries);
  for (std::uint32_t i : oversized) {
    std::vector<std::uint32_t> members = members_of(i);
    members.push_back(i);
    std::sort(members.begin(), members.end());
    members.erase(std::unique(members.begin(), members.end()), members.end());
    if (members.size() > cap)
      throw InvalidArgument(std::string(what) + ": point " + std::to_string(i) + " needs " +
                            std::to_string(members.size()) + " points in one call, more than the " +
                            std::to_string(cap) + " one call may take");
    call(members, {i});
  }
}

// The neighbours of point i in k-NN rows.
std::vector<std::uint32_t> row_of(const KnnResult& rows, std::uint32_t i) {
  std::vector<std::uint32_t> m;
  for (int e = 0; e < rows.k; ++e) {
    const std::int32_t o = rows.indices[std::size_t(i) * std::size_t(rows.k) + std::size_t(e)];
    if (o >= 0) m.push_back(std::uint32_t(o));
  }
  return m;
}

// How far a point's neighbourhood reaches: the radius, or its k-th neighbour's distance from a
// tiled k-NN pass (whose rows name the neighbourhoods, for points that go alone).
struct NeighbourReach {
  float radius = 0;
  std::vector<double> kth;  // k neighbourhoods only
  KnnResult rows;
  double at(std::uint32_t i) const { return kth.empty() ? double(radius) : kth[i]; }
};

NeighbourReach neighbourhood_reach(const PointCloud& cloud, const Neighbourhood& nb,
                                   FeatureMethod method, std::size_t cap, Progress& progress,
                                   Timing& time) {
  NeighbourReach r;
  r.radius = nb.radius;
  if (nb.k <= 0) return r;
  const std::size_t knn_cap =
      std::min(cap, nns_call_capacity(search_method_for(method), nb.k, cloud.size()));
  r.kth = kth_distances(cloud.points, nb.k, search_method_for(method), knn_cap, progress, time,
                        &r.rows);
  return r;
}

// `reach` is params.neighbourhood's (features whose descriptors share it reuse their own).
NormalsResult normals_in_tiles(const PointCloud& cloud, const NormalParams& params,
                               FeatureMethod method, std::size_t cap, Progress& progress,
                               const NeighbourReach& reach, Timing time = {}) {
  const WallTimer total;
  MembersOf members_of;
  if (params.neighbourhood.k > 0)
    members_of = [&](std::uint32_t i) { return row_of(reach.rows, i); };
  NormalsResult out;
  out.method = method_name(method);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  out.normals.assign(cloud.size(), Point3f{nan, nan, nan});
  out.curvature.assign(cloud.size(), nan);
  for_each_cloud_call(
      cloud, [&](std::uint32_t i) { return reach.at(i) * (1 + kReachMargin); }, cap, "normals",
      progress, time, members_of,
      [&](const PointCloud& part, const std::vector<std::uint32_t>& members,
          const std::vector<std::uint32_t>& own) {
        const NormalsResult r = estimate_normals(part, params, method);
        for (std::uint32_t i : own) {
          const std::size_t l = local_of(members, i);
          out.normals[i] = r.normals[l];
          out.curvature[i] = r.curvature[l];
        }
      });
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (!is_finite(cloud.points[i]))
      ++out.non_finite_points;
    else if (!is_finite(out.normals[i]))
      ++out.nan_normals;
  }
  finish_stages(out.stages, "normals", time);
  out.total_ms = total.ms();
  return out;
}

// Bytes of device memory per point of a neighbourhood's rows: k entries, or for a radius (k 0)
// an assumed count of entries with their sort keys.
std::size_t row_bytes(int k) {
  return k > 0 ? 8 * std::size_t(k) : 24 * kAssumedRadiusNeighbours;
}

}  // namespace

std::size_t nns_call_capacity(NnsMethod method, int k, std::size_t points) {
  if (method == NnsMethod::Cpu) return std::numeric_limits<std::size_t>::max();
  // The index (points, sorted copy, cell keys and ranges) and the query's results.
  const std::size_t per_point = 64 + row_bytes(k) + (k > 0 ? 0 : 8);
  return gpu_call_capacity(per_point, points, kGpuMaxCallPoints);
}

std::size_t normals_call_capacity(FeatureMethod method, const NormalParams& params,
                                  std::size_t points) {
  if (method != FeatureMethod::Gpu) return std::numeric_limits<std::size_t>::max();
  return gpu_call_capacity(64 + row_bytes(params.neighbourhood.k) + 16, points, kGpuMaxCallPoints);
}

std::size_t features_call_capacity(FeatureMethod method, const FeatureParams& params,
                                   bool normals_given, std::size_t points) {
  if (method == FeatureMethod::Cpu) return std::numeric_limits<std::size_t>::max();
  const std::size_t hist = 4 * std::size_t(descriptor_bins(params.descriptor)) +
                           (params.descriptor == Descriptor::Fpfh ? 4 * 33 : 0);
  std::size_t per_point = 64 + row_bytes(params.neighbourhood.k) + 16 + hist;
  const bool own_normal_rows = params.normals.neighbourhood.k != params.neighbourhood.k ||
                               params.normals.neighbourhood.radius != params.neighbourhood.radius;
  if (method == FeatureMethod::Gpu && !normals_given && own_normal_rows)
    per_point += row_bytes(params.normals.neighbourhood.k);
  return gpu_call_capacity(per_point, points, kGpuMaxCallPoints);
}

KnnResult knn_search_tiled(const std::vector<Point3f>& targets, const std::vector<Point3f>& queries,
                           int k, NnsMethod method, float max_distance,
                           const TileOptions& options) {
  validate_knn(k, method, max_distance);
  const bool self = &targets == &queries;
  const std::size_t n = self ? targets.size() : targets.size() + queries.size();
  const std::size_t cap = effective_cap(options, nns_call_capacity(method, k, n));
  Progress progress(options.progress, "k-NN search");
  if (n <= cap)
    return one_call(progress,
                    [&] { return knn_search(targets, queries, k, method, max_distance); });
  const WallTimer total;
  Timing time;
  KnnResult out =
      knn_in_calls(targets, queries, self, k, method, max_distance, cap, progress, time);
  finish_stages(out.stages, method_name(method), time);
  out.total_ms = total.ms();
  return out;
}

RadiusResult radius_search_tiled(const std::vector<Point3f>& targets,
                                 const std::vector<Point3f>& queries, float radius,
                                 NnsMethod method, std::size_t max_neighbours,
                                 const TileOptions& options) {
  validate_radius(radius);
  const bool self = &targets == &queries;
  const std::size_t n = self ? targets.size() : targets.size() + queries.size();
  const std::size_t cap = effective_cap(options, nns_call_capacity(method, 0, n));
  Progress progress(options.progress, "radius search");
  if (n <= cap)
    return one_call(
        progress, [&] { return radius_search(targets, queries, radius, method, max_neighbours); });
  const WallTimer total;
  Timing time;
  WallTimer t;
  const CoarseGrid grid(targets, queries, cap);
  const double reach = double(radius) * (1 + kReachMargin);
  std::vector<std::uint32_t> oversized;
  const std::vector<Call> calls = plan_calls(
      grid, queries, query_order(grid, queries), [&](std::uint32_t) { return reach; }, self, cap,
      "radius search", &oversized);
  progress.plan(calls.size());
  time.plan = t.ms();
  // Each call's rows, kept until every query's count is known.
  struct Part {
    std::vector<std::uint32_t> queries;  // input indices
    RadiusResult rows;
  };
  std::vector<Part> parts;
  parts.reserve(calls.size());
  std::vector<std::uint32_t> count(queries.size() + 1, 0);
  for (const Call& c : calls) {
    t.reset();
    const std::vector<std::uint32_t> members = grid.members(c.block);
    Part p;
    p.queries = c.queries;
    std::vector<Point3f> q(c.queries.size());
    for (std::size_t j = 0; j < q.size(); ++j)
      q[j] = queries[c.queries[j]];
    p.rows = radius_search(gather(targets, members), q, radius, method, max_neighbours);
    time.calls += t.ms();
    ++time.count;
    t.reset();
    for (auto& idx : p.rows.indices)
      idx = std::int32_t(members[std::size_t(idx)]);
    for (std::size_t j = 0; j < q.size(); ++j)
      count[p.queries[j]] = p.rows.offsets[j + 1] - p.rows.offsets[j];
    p.rows.stages.clear();
    parts.push_back(std::move(p));
    time.merge += t.ms();
    progress.step();
  }
  // A query whose cells alone hold more than a call: its targets in parts of a call each, the
  // rows joined and ordered as one call orders them.
  for (std::uint32_t i : oversized) {
    auto row = search_in_parts(
        grid, queries[i], reach, cap, progress, time,
        [&](const std::vector<std::uint32_t>& chunk, auto& found) {
          const RadiusResult r =
              radius_search(gather(targets, chunk), {queries[i]}, radius, method, max_neighbours);
          for (std::size_t e = 0; e < r.indices.size(); ++e)
            found.emplace_back(r.sq_distances[e], std::int32_t(chunk[std::size_t(r.indices[e])]));
        });
    if (max_neighbours > 0 && row.size() > max_neighbours) row.resize(max_neighbours);
    Part p;
    p.queries = {i};
    p.rows.offsets = {0, std::uint32_t(row.size())};
    for (const auto& [d2, idx] : row) {
      p.rows.indices.push_back(idx);
      p.rows.sq_distances.push_back(d2);
    }
    count[i] = std::uint32_t(row.size());
    parts.push_back(std::move(p));
  }
  t.reset();
  RadiusResult out;
  out.method = method_name(method);
  out.offsets.assign(queries.size() + 1, 0);
  std::exclusive_scan(count.begin(), count.end(), out.offsets.begin(), std::uint32_t(0));
  out.indices.resize(out.offsets.back());
  out.sq_distances.resize(out.offsets.back());
  for (const Part& p : parts)
    for (std::size_t j = 0; j < p.queries.size(); ++j) {
      const std::size_t b = p.rows.offsets[j], e = p.rows.offsets[j + 1],
                        to = out.offsets[p.queries[j]];
      std::copy(p.rows.indices.begin() + std::ptrdiff_t(b),
                p.rows.indices.begin() + std::ptrdiff_t(e),
                out.indices.begin() + std::ptrdiff_t(to));
      std::copy(p.rows.sq_distances.begin() + std::ptrdiff_t(b),
                p.rows.sq_distances.begin() + std::ptrdiff_t(e),
                out.sq_distances.begin() + std::ptrdiff_t(to));
    }
  time.merge += t.ms();
  finish_stages(out.stages, method_name(method), time);
  out.total_ms = total.ms();
  return out;
}

NormalsResult estimate_normals_tiled(const PointCloud& cloud, const NormalParams& params,
                                     FeatureMethod method, const TileOptions& options) {
  validate(params, method);
  const std::size_t cap =
      effective_cap(options, normals_call_capacity(method, params, cloud.size()));
  Progress progress(options.progress, "normal estimation");
  if (cloud.size() <= cap)
    return one_call(progress, [&] { return estimate_normals(cloud, params, method); });
  Timing time;
  const NeighbourReach reach =
      neighbourhood_reach(cloud, params.neighbourhood, method, cap, progress, time);
  return normals_in_tiles(cloud, params, method, cap, progress, reach, time);
}

FeatureResult compute_features_tiled(const PointCloud& cloud, const FeatureParams& params,
                                     FeatureMethod method, const std::vector<Point3f>* normals,
                                     const TileOptions& options) {
  validate(params, method, normals != nullptr);
  if (normals && normals->size() != cloud.size())
    throw InvalidArgument("features: " + std::to_string(normals->size()) + " normals for " +
                          std::to_string(cloud.size()) + " points");
  const std::size_t n = cloud.size();
  const std::size_t cap =
      effective_cap(options, features_call_capacity(method, params, normals != nullptr, n));
  Progress progress(options.progress, "feature computation");
  if (n <= cap)
    return one_call(progress, [&] { return compute_features(cloud, params, method, normals); });
  const WallTimer total;
  FeatureResult out;
  out.descriptor = params.descriptor;
  out.bins = descriptor_bins(params.descriptor);
  out.method = method_name(method);
  Timing time;
  const Neighbourhood& nb = params.neighbourhood;
  const NeighbourReach reach = neighbourhood_reach(cloud, nb, method, cap, progress, time);
  // Every tile takes its normals from one pass over the whole cloud, so a point's normal does
  // not depend on the tile that computes its neighbours' histograms.
  if (normals) {
    out.normals = *normals;
  } else {
    const std::size_t ncap = std::min(cap, normals_call_capacity(method, params.normals, n));
    const Neighbourhood& nn = params.normals.neighbourhood;
    NormalsResult nr;
    if (n <= ncap)
      nr = estimate_normals(cloud, params.normals, method);
    else if (nn.k == nb.k && nn.radius == nb.radius)  // one k-NN pass serves both
      nr = normals_in_tiles(cloud, params.normals, method, ncap, progress, reach);
    else
      nr = normals_in_tiles(cloud, params.normals, method, ncap, progress,
                            neighbourhood_reach(cloud, nn, method, ncap, progress, time));
    out.stages.emplace_back("normals", nr.total_ms);
    out.normals = std::move(nr.normals);
    out.curvature = std::move(nr.curvature);
  }
  // An FPFH adds its neighbours' own histograms, so it reaches their neighbourhoods too: the
  // radius once more, or the farthest k-th distance among its neighbours.
  const bool fpfh = params.descriptor == Descriptor::Fpfh;
  std::vector<double> farthest;
  if (fpfh && nb.k > 0) {
    farthest.assign(n, 0.0);
    for (std::size_t i = 0; i < n; ++i)
      if (is_finite(cloud.points[i]))
        for (std::uint32_t o : row_of(reach.rows, std::uint32_t(i)))
          farthest[i] = std::max(farthest[i], reach.kth[o]);
  }
  auto reach_of = [&](std::uint32_t i) {
    const double own = reach.at(i);
    const double more = !fpfh ? 0.0 : farthest.empty() ? own : farthest[i];
    return (own + more) * (1 + kReachMargin);
  };
  MembersOf members_of;
  if (nb.k > 0)
    members_of = [&](std::uint32_t i) {
      std::vector<std::uint32_t> m = row_of(reach.rows, i);
      if (fpfh)
        for (std::size_t j = 0, own = m.size(); j < own; ++j) {
          const std::vector<std::uint32_t> more = row_of(reach.rows, m[j]);
          m.insert(m.end(), more.begin(), more.end());
        }
      return m;
    };
  const std::size_t bins = std::size_t(out.bins);
  out.histograms.assign(n * bins, std::numeric_limits<float>::quiet_NaN());
  for_each_cloud_call(
      cloud, reach_of, cap, "features", progress, time, members_of,
      [&](const PointCloud& part, const std::vector<std::uint32_t>& members,
          const std::vector<std::uint32_t>& own) {
        const std::vector<Point3f> part_normals = gather(out.normals, members);
        const FeatureResult r = compute_features(part, params, method, &part_normals);
        for (std::uint32_t i : own)
          std::copy_n(r.row(local_of(members, i)), bins,
                      out.histograms.begin() + std::ptrdiff_t(std::size_t(i) * bins));
      });
  for (const Point3f& p : cloud.points)
    out.non_finite_points += is_finite(p) ? 0 : 1;
  out.nan_histograms = out.non_finite_points;
  finish_stages(out.stages, "features", time);
  out.total_ms = total.ms();
  return out;
}

}  // namespace cumulus
