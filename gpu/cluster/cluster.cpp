// Euclidean clustering: argument checks and dispatch: to the PCL reference (cluster_pcl.cpp),
// the GPU methods (cuda/), or the tiled layer (cluster_tiled.cpp) for clouds beyond one call.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "cluster/cluster_impl.h"
#include "cluster/cuda/cluster_gpu.h"
#include "core/device.h"
#include "core/error.h"

namespace cumulus {

void validate(const ClusterParams& p) {
  if (!(p.tolerance > 0) || !std::isfinite(p.tolerance))
    throw InvalidArgument("cluster tolerance must be a positive number of metres, got " +
                          std::to_string(p.tolerance));
  if (p.min_size > p.max_size)
    throw InvalidArgument("min cluster size (" + std::to_string(p.min_size) +
                          ") is larger than max cluster size (" + std::to_string(p.max_size) + ")");
}

namespace {

// A tolerance beyond the diagonal of the finite points' bounding box makes every pair of them
// neighbours: the answer is one cluster (or none, by the size filter), known at once, where a
// neighbour search would visit all n^2 pairs (minutes on one LiDAR frame). The 1 % margin keeps
// it exact under the float rounding of the methods' own distances.
std::optional<ClusterResult> one_cluster_if_tolerance_spans(const Point3f* points, std::size_t n,
                                                            const ClusterParams& params,
                                                            ClusterMethod method) {
  WallTimer total;
  // The diagonal of the box of the points visited, as far as they go.
  const auto diagonal_of = [&](std::size_t stride, std::size_t& finite) {
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    finite = 0;
    for (std::size_t i = 0; i < n; i += stride) {
      if (!is_finite(points[i])) continue;
      const double p[3] = {points[i].x, points[i].y, points[i].z};
      for (int k = 0; k < 3; ++k) {
        lo[k] = finite ? std::min(lo[k], p[k]) : p[k];
        hi[k] = finite ? std::max(hi[k], p[k]) : p[k];
      }
      ++finite;
    }
    return std::hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
  };
  const auto spans = [&](double diagonal) {
    return double(params.tolerance) > 1.01 * diagonal + 1e-6;
  };
  // 64 points bound the diagonal from below: an everyday tolerance is decided there, and the
  // pass over every point (a tenth of a GPU clustering's time on a LiDAR frame) is skipped.
  std::size_t finite = 0;
  if (!spans(diagonal_of(std::max<std::size_t>(1, n / 64), finite))) return std::nullopt;
  if (!spans(diagonal_of(1, finite)) || finite == 0) return std::nullopt;
  // A GPU method where no GPU can be used still says so, whatever the tolerance.
  if (is_gpu_method(method) && !query_device().available) return std::nullopt;
  std::vector<std::int32_t> component(n, -1);
  for (std::size_t i = 0; i < n; ++i)
    if (is_finite(points[i])) component[i] = 0;
  ClusterResult r;
  canonicalize(component, params, r);
  r.non_finite = n - finite;
  r.method = method_name(method);
  r.total_ms = total.ms();
  r.stages = {{"tolerance beyond extent: one cluster", r.total_ms}};
  return r;
}

}  // namespace

ClusterResult euclidean_cluster(const PointCloud& cloud, const ClusterParams& params,
                                ClusterMethod method, const ClusterProgress& progress) {
  validate(params);
  if (cloud.size() >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  if (auto r = one_cluster_if_tolerance_spans(cloud.points.data(), cloud.size(), params, method))
    return std::move(*r);
  if (method == ClusterMethod::Cpu) {
    ClusterResult r = cluster_pcl(cloud, params, progress);
    r.method = method_name(method);
    return r;
  }
  return euclidean_cluster(cloud.points.data(), cloud.size(), params, method, progress);
}

ClusterResult euclidean_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                                ClusterMethod method, const ClusterProgress& progress) {
  ClusterResult r;
  euclidean_cluster(points, n, params, method, r, progress);
  return r;
}

void euclidean_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                       ClusterMethod method, ClusterResult& into, const ClusterProgress& progress) {
  validate(params);
  if (n >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  if (auto r = one_cluster_if_tolerance_spans(points, n, params, method))
    into = std::move(*r);
  else if (n > cluster_call_capacity(method, n))
    into = euclidean_cluster_tiled(points, n, params, method, 0, progress);
  else
    euclidean_cluster_call(points, n, params, method, into, progress);
}

ClusterResult euclidean_cluster_call(const Point3f* points, std::size_t n,
                                     const ClusterParams& params, ClusterMethod method,
                                     const ClusterProgress& progress) {
  ClusterResult r;
  euclidean_cluster_call(points, n, params, method, r, progress);
  return r;
}

void euclidean_cluster_call(const Point3f* points, std::size_t n, const ClusterParams& params,
                            ClusterMethod method, ClusterResult& into,
                            const ClusterProgress& progress) {
  validate(params);
  if (method == ClusterMethod::Cpu) {
    PointCloud cloud;
    cloud.points.assign(points, points + n);
    into = cluster_pcl(cloud, params, progress);
    into.method = method_name(method);
    return;
  }
  WallTimer total;
  into.stages.clear();
  gpu_cluster(points, n, params, method, into);
  into.method = method_name(method);
  into.total_ms = total.ms();
}

}  // namespace cumulus
