// Normals and features in tiles: each call with every point within reach of its own (its
// neighbourhood, and for FPFH its neighbours' too), normals from a tiled pass first.
#include <algorithm>
#include <cmath>

#include "tiles/tile_plan.h"

namespace cumulus {

using namespace tiles_detail;

namespace {

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
        const NormalsResult r = estimate_normals_call(part, params, method);
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

}  // namespace

NormalsResult estimate_normals_tiled(const PointCloud& cloud, const NormalParams& params,
                                     FeatureMethod method, const TileOptions& options) {
  validate(params, method);
  const std::size_t cap =
      effective_cap(options, normals_call_capacity(method, params, cloud.size()));
  Progress progress(options.progress, "normal estimation");
  if (cloud.size() <= cap)
    return one_call(progress,
                    [&] { return estimate_normals_call(cloud, params, method, options.progress); });
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
    return one_call(progress, [&] {
      return compute_features_call(cloud, params, method, normals, options.progress);
    });
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
      nr = estimate_normals_call(cloud, params.normals, method);
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
        const FeatureResult r = compute_features_call(part, params, method, &part_normals);
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
