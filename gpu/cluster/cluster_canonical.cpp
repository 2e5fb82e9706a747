// The canonical result every method returns, and an independent O(n^2) reference for tests.
#include <algorithm>
#include <numeric>

#include "cluster/cluster.h"
#include "cluster/cluster_impl.h"
#include "core/error.h"
#include "core/union_find.h"

namespace cumulus {

void rank_components(std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& size,
                     const std::vector<std::int32_t>& first, const ClusterParams& params,
                     std::vector<std::int32_t>& rank, ClusterResult& r) {
  std::sort(ids.begin(), ids.end(), [&](std::int32_t a, std::int32_t b) {
    if (size[std::size_t(a)] != size[std::size_t(b)])
      return size[std::size_t(a)] > size[std::size_t(b)];
    return first[std::size_t(a)] < first[std::size_t(b)];
  });
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
  std::vector<std::int32_t> rank(n, -1);
  rank_components(ids, size, first, params, rank, r);
  r.labels.assign(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (component[i] >= 0) r.labels[i] = rank[std::size_t(component[i])];
}

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

}  // namespace cumulus
