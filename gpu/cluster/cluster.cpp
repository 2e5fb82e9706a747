// Euclidean clustering: argument checks and dispatch: to the PCL reference (cluster_pcl.cpp),
// the GPU methods (cuda/), or the tiled layer (cluster_tiled.cpp) for clouds beyond one call.
#include <cmath>
#include <limits>

#include "cluster/cluster_impl.h"
#include "cluster/cuda/cluster_gpu.h"
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
  if (n > cluster_call_capacity(method, n))
    return euclidean_cluster_tiled(points, n, params, method);
  return euclidean_cluster_call(points, n, params, method);
}

ClusterResult euclidean_cluster_call(const Point3f* points, std::size_t n,
                                     const ClusterParams& params, ClusterMethod method) {
  validate(params);
  if (method == ClusterMethod::Cpu) {
    PointCloud cloud;
    cloud.points.assign(points, points + n);
    ClusterResult r = cluster_pcl(cloud, params);
    r.method = method_name(method);
    return r;
  }
  WallTimer total;
  ClusterResult r;
  gpu_cluster(points, n, params, method, r);
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
