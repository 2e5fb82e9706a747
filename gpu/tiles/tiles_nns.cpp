// Neighbour search in tiles: k nearest and radius searches, and how many points one call of a
// method takes (see tiles/tiles.h).
#include <algorithm>
#include <cmath>
#include <span>

#include "tiles/tile_plan.h"

namespace cumulus {

namespace tiles_detail {

KnnResult knn_in_calls(std::span<const Point3f> targets, std::span<const Point3f> queries,
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
      const KnnResult r = knn_search_call(gather(targets, members), q, k, method, max_distance);
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
          const KnnResult r = knn_search_call(gather(targets, chunk), queries.subspan(i, 1), k,
                                              method, max_distance);
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

std::vector<double> kth_distances(std::span<const Point3f> points, int k, NnsMethod method,
                                  std::size_t cap, Progress& progress, Timing& time,
                                  KnnResult* rows) {
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

// Bytes of device memory per point of a neighbourhood's rows: k entries, or for a radius (k 0)
// an assumed count of entries with their sort keys.
std::size_t row_bytes(int k) {
  return k > 0 ? 8 * std::size_t(k) : 24 * kAssumedRadiusNeighbours;
}

}  // namespace tiles_detail

using namespace tiles_detail;

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
                           (params.descriptor == Descriptor::Fpfh ? 4 * kGpuSpfhStride : 0);
  std::size_t per_point = 64 + row_bytes(params.neighbourhood.k) + 16 + hist;
  const bool own_normal_rows = params.normals.neighbourhood.k != params.neighbourhood.k ||
                               params.normals.neighbourhood.radius != params.neighbourhood.radius;
  if (method == FeatureMethod::Gpu && !normals_given && own_normal_rows)
    per_point += row_bytes(params.normals.neighbourhood.k);
  return gpu_call_capacity(per_point, points, kGpuMaxCallPoints);
}

KnnResult knn_search_tiled(std::span<const Point3f> targets, std::span<const Point3f> queries,
                           int k, NnsMethod method, float max_distance,
                           const TileOptions& options) {
  validate_knn(k, method, max_distance);
  const bool self = &targets == &queries;
  const std::size_t n = self ? targets.size() : targets.size() + queries.size();
  const std::size_t cap = effective_cap(options, nns_call_capacity(method, k, n));
  Progress progress(options.progress, "k-NN search");
  if (n <= cap)
    return one_call(progress,
                    [&] { return knn_search_call(targets, queries, k, method, max_distance); });
  const WallTimer total;
  Timing time;
  KnnResult out =
      knn_in_calls(targets, queries, self, k, method, max_distance, cap, progress, time);
  finish_stages(out.stages, method_name(method), time);
  out.total_ms = total.ms();
  return out;
}

RadiusResult radius_search_tiled(std::span<const Point3f> targets, std::span<const Point3f> queries,
                                 float radius, NnsMethod method, std::size_t max_neighbours,
                                 const TileOptions& options) {
  validate_radius(radius);
  const bool self = &targets == &queries;
  const std::size_t n = self ? targets.size() : targets.size() + queries.size();
  const std::size_t cap = effective_cap(options, nns_call_capacity(method, 0, n));
  Progress progress(options.progress, "radius search");
  if (n <= cap)
    return one_call(progress, [&] {
      return radius_search_call(targets, queries, radius, method, max_neighbours);
    });
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
    p.rows = radius_search_call(gather(targets, members), q, radius, method, max_neighbours);
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
          const RadiusResult r = radius_search_call(gather(targets, chunk), queries.subspan(i, 1),
                                                    radius, method, max_neighbours);
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

}  // namespace cumulus
