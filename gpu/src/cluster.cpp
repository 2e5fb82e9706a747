// Euclidean clustering: method names, the canonical result, the PCL reference, a brute-force
// reference for tests, and dispatch to the GPU methods.
#include "cumulus/cluster.h"

#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>
#include <pcl/segmentation/extract_clusters.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cluster_gpu.h"
#include "cumulus/device.h"
#include "cumulus/error.h"
#include "union_find.h"

namespace cumulus {

namespace {

struct MethodName {
  ClusterMethod method;
  const char* name;
};

constexpr MethodName kNames[] = {
    {ClusterMethod::Cpu, "cpu"},
    {ClusterMethod::Gpu, "gpu"},
    {ClusterMethod::GpuVertexEs, "gpu-vertex-es"},
    {ClusterMethod::GpuVertexRs, "gpu-vertex-rs"},
    {ClusterMethod::GpuEdgeEs, "gpu-edge-es"},
    {ClusterMethod::GpuEdgeRs, "gpu-edge-rs"},
    {ClusterMethod::GpuMatrixEs, "gpu-matrix-es"},
    {ClusterMethod::GpuMatrixRs, "gpu-matrix-rs"},
};

}  // namespace

const char* method_name(ClusterMethod m) {
  for (const auto& n : kNames)
    if (n.method == m) return n.name;
  return "unknown";
}

std::optional<ClusterMethod> parse_cluster_method(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.method;
  return std::nullopt;
}

const std::vector<ClusterMethod>& all_cluster_methods() {
  static const std::vector<ClusterMethod> all = [] {
    std::vector<ClusterMethod> v;
    for (const auto& n : kNames)
      v.push_back(n.method);
    return v;
  }();
  return all;
}

bool is_gpu_method(ClusterMethod m) {
  return m != ClusterMethod::Cpu;
}

ClusterMethod default_cluster_method() {
  return query_device().available ? ClusterMethod::Gpu : ClusterMethod::Cpu;
}

void validate(const ClusterParams& p) {
  if (!(p.tolerance > 0) || !std::isfinite(p.tolerance))
    throw InvalidArgument("cluster tolerance must be a positive number of metres, got " +
                          std::to_string(p.tolerance));
  if (p.min_size > p.max_size)
    throw InvalidArgument("min cluster size (" + std::to_string(p.min_size) +
                          ") is larger than max cluster size (" + std::to_string(p.max_size) + ")");
}

void canonicalize(const std::vector<std::int32_t>& component, const ClusterParams& params,
                  ClusterResult& r) {
  const std::size_t n = component.size();
  // Component -> (size, smallest point index); components are arbitrary ids, so map them first.
  std::vector<std::int32_t> first(n, -1), size(n, 0);
  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t c = component[i];
    if (c < 0) continue;
    if (std::size_t(c) >= n) throw Error("internal: component id out of range");
    if (first[std::size_t(c)] < 0) first[std::size_t(c)] = std::int32_t(i), ids.push_back(c);
    ++size[std::size_t(c)];
  }
  std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
    if (size[std::size_t(a)] != size[std::size_t(b)])
      return size[std::size_t(a)] > size[std::size_t(b)];
    return first[std::size_t(a)] < first[std::size_t(b)];
  });
  std::vector<std::int32_t> rank(n, -1);
  r.sizes.clear();
  r.dropped_clusters = 0;
  for (std::int32_t c : ids) {
    const auto s = std::size_t(size[std::size_t(c)]);
    if (s < params.min_size || s > params.max_size) {
      ++r.dropped_clusters;
      continue;
    }
    rank[std::size_t(c)] = std::int32_t(r.sizes.size());
    r.sizes.push_back(s);
  }
  r.labels.assign(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (component[i] >= 0) r.labels[i] = rank[std::size_t(component[i])];
}

namespace {

ClusterResult cluster_pcl(const PointCloud& cloud, const ClusterParams& params) {
  ClusterResult r;
  WallTimer total;
  WallTimer t;
  // PCL's kd-tree cannot take non-finite points; cluster the finite ones and map back.
  auto pc = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  std::vector<std::int32_t> original;
  pc->reserve(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const auto& p = cloud.points[i];
    if (!is_finite(p)) continue;
    pc->push_back(pcl::PointXYZ(p.x, p.y, p.z));
    original.push_back(std::int32_t(i));
  }
  r.non_finite = cloud.size() - original.size();
  r.stages.emplace_back("convert", t.ms());
  std::vector<std::int32_t> component(cloud.size(), -1);
  if (!pc->empty()) {
    t.reset();
    auto tree = std::make_shared<pcl::search::KdTree<pcl::PointXYZ>>();
    tree->setInputCloud(pc);
    r.stages.emplace_back("kd-tree", t.ms());
    t.reset();
    pcl::EuclideanClusterExtraction<pcl::PointXYZ> ec;
    ec.setClusterTolerance(params.tolerance);
    // Extract every component; the size filter is applied in canonicalize() so dropped
    // clusters can be counted. PCL's own filter keeps min <= size <= max, the same rule.
    ec.setMinClusterSize(1);
    ec.setMaxClusterSize(std::numeric_limits<int>::max());
    ec.setSearchMethod(tree);
    ec.setInputCloud(pc);
    std::vector<pcl::PointIndices> clusters;
    ec.extract(clusters);
    r.stages.emplace_back("extract", t.ms());
    for (std::size_t c = 0; c < clusters.size(); ++c)
      for (auto idx : clusters[c].indices)
        component[std::size_t(original[std::size_t(idx)])] = std::int32_t(c);
    // Component ids must be < n for canonicalize(); cluster count <= finite points holds.
  }
  t.reset();
  canonicalize(component, params, r);
  r.stages.emplace_back("canonicalize", t.ms());
  r.total_ms = total.ms();
  return r;
}

}  // namespace

ClusterResult cluster_brute_force(const PointCloud& cloud, const ClusterParams& params) {
  validate(params);
  const std::size_t n = cloud.size();
  std::vector<std::int32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  const double t2 = double(params.tolerance) * params.tolerance;
  ClusterResult r;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_finite(cloud.points[i])) {
      ++r.non_finite;
      continue;
    }
    for (std::size_t j = i + 1; j < n; ++j) {
      if (!is_finite(cloud.points[j])) continue;
      // Same float arithmetic as PCL's kd-tree and our kernels: squared differences in float.
      const float dx = cloud.points[i].x - cloud.points[j].x,
                  dy = cloud.points[i].y - cloud.points[j].y,
                  dz = cloud.points[i].z - cloud.points[j].z;
      if (dx * dx + dy * dy + dz * dz < float(t2)) unite(parent, std::int32_t(i), std::int32_t(j));
    }
  }
  std::vector<std::int32_t> component(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (is_finite(cloud.points[i])) component[i] = find_root(parent, std::int32_t(i));
  canonicalize(component, params, r);
  r.method = "brute-force";
  return r;
}

ClusterResult euclidean_cluster(const PointCloud& cloud, const ClusterParams& params,
                                ClusterMethod method) {
  validate(params);
  if (cloud.size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  if (method == ClusterMethod::Cpu) {
    ClusterResult r = cluster_pcl(cloud, params);
    r.method = method_name(method);
    return r;
  }
  return euclidean_cluster(cloud.points.data(), cloud.size(), params, method);
}

ClusterResult euclidean_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                                ClusterMethod method) {
  validate(params);
  if (n >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  if (method == ClusterMethod::Cpu) {
    PointCloud cloud;
    cloud.points.assign(points, points + n);
    return euclidean_cluster(cloud, params, method);
  }
  if (n > cluster_call_capacity(method, n))
    return euclidean_cluster_tiled(points, n, params, method);
  WallTimer total;
  ClusterResult r;
  gpu_cluster(points, n, params, method, r);
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
