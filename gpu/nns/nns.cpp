// Neighbour search: method names, argument checks, the PCL/FLANN reference and dispatch.
#include "nns/nns.h"

#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <span>

#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "nns/cuda/nns_gpu.h"
#include "tiles/tiles.h"

namespace cumulus {

namespace {

pcl::PointCloud<pcl::PointXYZ>::Ptr to_pcl(std::span<const Point3f> points) {
  auto cloud = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  cloud->resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    (*cloud)[i] = pcl::PointXYZ(points[i].x, points[i].y, points[i].z);
  cloud->is_dense = false;  // lets FLANN skip non-finite targets
  return cloud;
}

// FLANN's tree over the targets (it leaves non-finite ones out); false when none is finite, as
// FLANN cannot build an empty tree.
bool build_tree(std::span<const Point3f> targets, pcl::KdTreeFLANN<pcl::PointXYZ>& tree) {
  for (const auto& p : targets)
    if (is_finite(p)) {
      tree.setInputCloud(to_pcl(targets));
      return true;
    }
  return false;
}

// PCL squares a double radius and hands FLANN a float.
float squared(float r) {
  return float(double(r) * double(r));
}

}  // namespace

void validate_knn(int k, NnsMethod method, float max_distance) {
  if (k < 1) throw InvalidArgument("k must be at least 1 (got " + std::to_string(k) + ")");
  if (method != NnsMethod::Cpu && k > kMaxKnnK)
    throw InvalidArgument("the GPU methods take k up to " + std::to_string(kMaxKnnK) + " (got " +
                          std::to_string(k) + ")");
  if (std::isnan(max_distance) || max_distance < 0)
    throw InvalidArgument("the maximum distance must be zero or positive");
}

void validate_radius(float radius) {
  if (!(radius > 0) || !std::isfinite(radius))
    throw InvalidArgument("the search radius must be a positive finite number");
}

namespace {
// Targets and queries one call holds: a search of points among themselves holds them once.
std::size_t call_points(std::span<const Point3f> targets, std::span<const Point3f> queries) {
  return &targets == &queries ? targets.size() : targets.size() + queries.size();
}
}  // namespace

KnnResult knn_search(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
                     NnsMethod method, float max_distance) {
  validate_knn(k, method, max_distance);
  const std::size_t n = call_points(targets, queries);
  if (method != NnsMethod::Cpu && n > nns_call_capacity(method, k, n))
    return knn_search_tiled(targets, queries, k, method, max_distance);
  return knn_search_call(targets, queries, k, method, max_distance);
}

KnnResult knn_search_call(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
                          NnsMethod method, float max_distance) {
  validate_knn(k, method, max_distance);
  const WallTimer timer;
  KnnResult out;
  out.k = k;
  out.method = method_name(method);
  const float max_d2 = std::isinf(max_distance) ? INFINITY : squared(max_distance);
  if (method != NnsMethod::Cpu) {
    gpu_knn(targets, queries, k, method, max_d2, out);
    out.total_ms = timer.ms();
    return out;
  }
  const std::size_t m = queries.size() * std::size_t(k);
  out.indices.assign(m, -1);
  out.sq_distances.assign(m, INFINITY);
  WallTimer stage;
  pcl::KdTreeFLANN<pcl::PointXYZ> tree;
  const bool any_target = build_tree(targets, tree);
  out.stages.emplace_back("build", stage.ms());
  stage.reset();
  pcl::Indices idx;
  std::vector<float> d2;
  for (std::size_t q = 0; q < queries.size() && any_target; ++q) {
    if (!is_finite(queries[q])) continue;
    const pcl::PointXYZ p(queries[q].x, queries[q].y, queries[q].z);
    const int found = tree.nearestKSearch(p, k, idx, d2);
    for (int j = 0, kept = 0; j < found; ++j) {
      if (!(d2[std::size_t(j)] <= max_d2)) break;
      out.indices[q * std::size_t(k) + std::size_t(kept)] = idx[std::size_t(j)];
      out.sq_distances[q * std::size_t(k) + std::size_t(kept)] = d2[std::size_t(j)];
      ++kept;
    }
  }
  out.stages.emplace_back("search", stage.ms());
  out.total_ms = timer.ms();
  return out;
}

RadiusResult radius_search(std::span<const Point3f> targets, std::span<const Point3f> queries,
                           float radius, NnsMethod method, std::size_t max_neighbours) {
  validate_radius(radius);
  const std::size_t n = call_points(targets, queries);
  if (method != NnsMethod::Cpu && n > nns_call_capacity(method, 0, n))
    return radius_search_tiled(targets, queries, radius, method, max_neighbours);
  return radius_search_call(targets, queries, radius, method, max_neighbours);
}

RadiusResult radius_search_call(std::span<const Point3f> targets, std::span<const Point3f> queries,
                                float radius, NnsMethod method, std::size_t max_neighbours) {
  validate_radius(radius);
  const WallTimer timer;
  RadiusResult out;
  out.method = method_name(method);
  const float r2 = squared(radius);
  if (method != NnsMethod::Cpu) {
    gpu_radius(targets, queries, r2, method, out);
  } else {
    WallTimer stage;
    pcl::KdTreeFLANN<pcl::PointXYZ> tree;
    const bool any_target = build_tree(targets, tree);
    out.stages.emplace_back("build", stage.ms());
    stage.reset();
    out.offsets.assign(queries.size() + 1, 0);
    pcl::Indices idx;
    std::vector<float> d2;
    for (std::size_t q = 0; q < queries.size(); ++q) {
      out.offsets[q] = std::uint32_t(out.indices.size());
      if (!any_target || !is_finite(queries[q])) continue;
      const pcl::PointXYZ p(queries[q].x, queries[q].y, queries[q].z);
      const int found = tree.radiusSearch(p, double(radius), idx, d2);
      out.indices.insert(out.indices.end(), idx.begin(), idx.begin() + found);
      out.sq_distances.insert(out.sq_distances.end(), d2.begin(), d2.begin() + found);
    }
    out.offsets[queries.size()] = std::uint32_t(out.indices.size());
    out.stages.emplace_back("search", stage.ms());
  }
  if (max_neighbours > 0) {
    // Both sides are sorted by distance, so keeping each query's first entries is PCL's max_nn.
    std::size_t w = 0;
    for (std::size_t q = 0; q + 1 < out.offsets.size(); ++q) {
      const std::size_t b = out.offsets[q],
                        e = std::min<std::size_t>(out.offsets[q + 1], b + max_neighbours);
      out.offsets[q] = std::uint32_t(w);
      for (std::size_t j = b; j < e; ++j, ++w) {
        out.indices[w] = out.indices[j];
        out.sq_distances[w] = out.sq_distances[j];
      }
    }
    out.offsets.back() = std::uint32_t(w);
    out.indices.resize(w);
    out.sq_distances.resize(w);
  }
  out.total_ms = timer.ms();
  return out;
}

}  // namespace cumulus
