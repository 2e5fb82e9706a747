#include "cluster/cluster_export.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/io.h"

namespace cumulus {

std::vector<ClusterSummary> summarize_clusters(const PointCloud& cloud, const ClusterResult& r) {
  if (r.labels.size() != cloud.size())
    throw InvalidArgument("the result does not belong to this cloud");
  // One pass with no test of whether a cluster was seen: its box starts empty (+inf, -inf).
  // (The GUI summarises each live result on its way to the screen.)
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<ClusterSummary> out(r.sizes.size());
  for (auto& s : out)
    for (int a = 0; a < 3; ++a) {
      s.min[a] = inf;
      s.max[a] = -inf;
    }
  const double o[3] = {cloud.origin[0], cloud.origin[1], cloud.origin[2]};
  const std::int32_t* labels = r.labels.data();
  const Point3f* points = cloud.points.data();
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const std::int32_t l = labels[i];
    if (l < 0) continue;
    ClusterSummary& s = out[std::size_t(l)];
    const double w[3] = {o[0] + points[i].x, o[1] + points[i].y, o[2] + points[i].z};
    for (int a = 0; a < 3; ++a) {
      s.centroid[a] += w[a];
      s.min[a] = std::min(s.min[a], w[a]);
      s.max[a] = std::max(s.max[a], w[a]);
    }
    ++s.size;
  }
  for (std::size_t c = 0; c < out.size(); ++c) {
    ClusterSummary& s = out[c];
    s.id = int(c);
    for (int a = 0; a < 3; ++a) {
      if (s.size == 0) s.min[a] = s.max[a] = 0;
      s.centroid[a] /= double(std::max<std::size_t>(s.size, 1));
    }
  }
  return out;
}

PointCloud with_labels(const PointCloud& cloud, const ClusterResult& r) {
  if (r.labels.size() != cloud.size())
    throw InvalidArgument("the result does not belong to this cloud");
  PointCloud out = cloud;
  out.labels.assign(r.labels.begin(), r.labels.end());
  return out;
}

void save_cluster_csv(const std::string& path, const PointCloud& cloud, const ClusterResult& r) {
  AtomicOstream f(path);
  f << "id,size,centroid_x,centroid_y,centroid_z,min_x,min_y,min_z,max_x,max_y,max_z\n"
    << std::setprecision(10);
  for (const auto& s : summarize_clusters(cloud, r)) {
    f << s.id << ',' << s.size;
    for (double v : s.centroid)
      f << ',' << v;
    for (double v : s.min)
      f << ',' << v;
    for (double v : s.max)
      f << ',' << v;
    f << '\n';
  }
  f.commit();
}

void save_cluster_files(const std::string& dir, const PointCloud& cloud, const ClusterResult& r,
                        const std::string& extension, const SaveOptions& options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(dir, "cannot create folder: " + ec.message());
  std::vector<PointCloud> parts(r.sizes.size());
  for (auto& p : parts)
    p.origin = cloud.origin;
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const int l = r.labels[i];
    if (l < 0) continue;
    auto& p = parts[std::size_t(l)];
    p.points.push_back(cloud.points[i]);
    if (cloud.has_intensity()) p.intensity.push_back(cloud.intensity[i]);
    if (cloud.has_rgb()) p.rgb.push_back(cloud.rgb[i]);
    if (cloud.has_normals()) p.normals.push_back(cloud.normals[i]);
  }
  for (std::size_t c = 0; c < parts.size(); ++c) {
    parts[c].width = std::uint32_t(parts[c].size());
    char name[64];
    std::snprintf(name, sizeof name, "/cluster_%04zu.", c);
    save_cloud(dir + name + extension, parts[c], options);
  }
}

}  // namespace cumulus
