// The peer: our clouds to the Open3D module's arrays and back. Open3D works in double and knows
// nothing of non-finite points, so each call passes the finite points (in the cloud's local
// coordinates, exactly) and maps the module's indices back to the input's. The module is loaded
// on first use (dlopen), from $CUMULUS_OPEN3D_MODULE, the build tree, or beside the program.
#include "peers/open3d_peer.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>

#include <Eigen/LU>

#include "core/error.h"
#include "peers/open3d_module.h"

namespace cumulus::open3d_peer {

namespace {

struct Loaded {
  const Module* module = nullptr;
  std::string why;  // when there is none
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    std::vector<std::string> paths;
    if (const char* env = std::getenv("CUMULUS_OPEN3D_MODULE"); env && *env) paths.push_back(env);
#ifdef CUMULUS_OPEN3D_MODULE_BUILD_PATH
    paths.push_back(CUMULUS_OPEN3D_MODULE_BUILD_PATH);
#endif
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) paths.push_back((exe.parent_path() / "libcumulus_open3d.so").string());
    for (const auto& p : paths) {
      if (!std::filesystem::exists(p, ec)) continue;
      void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) {
        r.why = std::string("the Open3D module ") + p + " does not load: " + dlerror();
        continue;
      }
      const auto entry = reinterpret_cast<const Module* (*)()>(dlsym(h, "cumulus_open3d_module"));
      if (!entry || entry()->abi != kModuleAbi) {
        r.why = "the Open3D module " + p + " is from another build of Cumulus";
        continue;
      }
      r.module = entry();
      return r;
    }
    if (r.why.empty())
      r.why =
          "no Open3D: this build has no Open3D module (install libopen3d-dev and configure "
          "again)";
    return r;
  }();
  return l;
}

const Module& module() {
  const Loaded& l = loaded();
  if (!l.module) throw Error(l.why);
  return *l.module;
}

bool finite(const Point3f& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
}

// The finite points as x, y, z doubles and, in `index`, each one's input index.
struct Finite {
  std::vector<double> xyz, normals;
  std::vector<std::int32_t> index;
  std::size_t non_finite = 0;
  std::size_t size() const { return index.size(); }
};

Finite finite_points(std::span<const Point3f> in, const std::vector<Point3f>* normals = nullptr) {
  Finite f;
  f.xyz.reserve(in.size() * 3);
  for (std::size_t i = 0; i < in.size(); ++i) {
    const Point3f& p = in[i];
    if (!finite(p)) {
      ++f.non_finite;
      continue;
    }
    f.xyz.insert(f.xyz.end(), {double(p.x), double(p.y), double(p.z)});
    if (normals) {
      const Point3f& n = (*normals)[i];
      f.normals.insert(f.normals.end(), {double(n.x), double(n.y), double(n.z)});
    }
    f.index.push_back(std::int32_t(i));
  }
  return f;
}

// Input indices of the finite points the module kept, ascending (or of the others).
std::vector<std::int32_t> input_indices(const Finite& f, const std::vector<std::size_t>& kept,
                                        bool others = false) {
  std::vector<char> in(f.size(), 0);
  for (std::size_t k : kept)
    in[k] = 1;
  std::vector<std::int32_t> out;
  for (std::size_t k = 0; k < f.size(); ++k)
    if (bool(in[k]) != others) out.push_back(f.index[k]);
  return out;
}

FilterResult kept_points(const PointCloud& cloud, const Finite& f,
                         const std::vector<std::size_t>& kept, bool negative, double ms) {
  FilterResult r;
  r.kept = input_indices(f, kept, negative);
  r.cloud = gather_points(cloud, r.kept);
  r.non_finite = f.non_finite;
  r.method = "open3d";
  r.total_ms = ms;
  return r;
}

// Components at `eps` as Open3D's DBSCAN (min_points 1) finds them, over the input points.
std::vector<std::int32_t> dbscan_components(const Finite& f, std::size_t n, double eps) {
  const std::vector<int> labels = module().dbscan(f.xyz, eps, 1);
  std::vector<std::int32_t> component(n, -1);
  for (std::size_t k = 0; k < labels.size(); ++k)
    component[std::size_t(f.index[k])] = labels[k];
  return component;
}

std::array<double, 4> facing(const std::array<double, 4>& m, const std::array<double, 3>& origin,
                             const std::optional<std::array<double, 3>>& axis) {
  const std::array<double, 3> up = axis.value_or(std::array<double, 3>{0, 0, 1});
  const double len = std::sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2]);
  const double s = (m[0] * up[0] + m[1] * up[1] + m[2] * up[2] < 0 ? -1 : 1) / len;
  const std::array<double, 4> p{m[0] * s, m[1] * s, m[2] * s, m[3] * s};
  // Local to world: n . (x - origin) + d = 0.
  return {p[0], p[1], p[2], p[3] - (p[0] * origin[0] + p[1] * origin[1] + p[2] * origin[2])};
}

}  // namespace

bool available() {
  return loaded().module != nullptr;
}

std::string version() {
  const Loaded& l = loaded();
  return l.module ? l.module->version : l.why;
}

ClusterResult cluster(const PointCloud& cloud, const ClusterParams& params) {
  validate(params);
  module();
  WallTimer total;
  const Finite f = finite_points(cloud.points);
  ClusterResult r;
  canonicalize(dbscan_components(f, cloud.size(), double(params.tolerance)), params, r);
  r.non_finite = f.non_finite;
  r.method = "open3d";
  r.total_ms = total.ms();
  return r;
}

FilterResult voxel_grid(const PointCloud& cloud, const VoxelGridParams& params) {
  validate(params, cloud);
  if (params.leaf[0] != params.leaf[1] || params.leaf[0] != params.leaf[2])
    throw InvalidArgument("Open3D's voxel grid takes one leaf size for x, y and z");
  if (params.min_points_per_voxel > 1)
    throw InvalidArgument("Open3D's voxel grid keeps every occupied voxel");
  module();
  WallTimer total;
  const Finite f = finite_points(cloud.points);
  const std::vector<double> down = module().voxel_down_sample(f.xyz, double(params.leaf[0]));
  FilterResult r;
  r.cloud.origin = cloud.origin;
  for (std::size_t i = 0; i + 2 < down.size(); i += 3)
    r.cloud.points.push_back({float(down[i]), float(down[i + 1]), float(down[i + 2])});
  r.cloud.width = std::uint32_t(r.cloud.size());
  r.non_finite = f.non_finite;
  r.method = "open3d";
  r.total_ms = total.ms();
  return r;
}

FilterResult remove_statistical_outliers(const PointCloud& cloud,
                                         const StatisticalOutlierParams& params) {
  validate(params);
  module();
  WallTimer total;
  const Finite f = finite_points(cloud.points);
  const auto kept =
      module().statistical_outliers(f.xyz, std::size_t(params.mean_k), params.stddev_mul);
  return kept_points(cloud, f, kept, params.negative, total.ms());
}

FilterResult remove_radius_outliers(const PointCloud& cloud, const RadiusOutlierParams& params) {
  validate(params);
  module();
  WallTimer total;
  const Finite f = finite_points(cloud.points);
  // Open3D keeps a point with more than nb_points in its radius, itself included: PCL's
  // min_neighbors besides the point itself.
  const auto kept =
      module().radius_outliers(f.xyz, std::size_t(params.min_neighbors), params.radius);
  return kept_points(cloud, f, kept, params.negative, total.ms());
}

GroundResult ground_plane(const PointCloud& cloud, const GroundPlaneParams& params) {
  validate(params);
  module();
  WallTimer total;
  const Finite f = finite_points(cloud.points);
  if (f.size() < 3) throw Error("ground plane (open3d): fewer than three finite points");
  std::vector<std::size_t> inliers;
  const std::array<double, 4> m = module().segment_plane(
      f.xyz, params.threshold, params.max_iterations, int(params.seed & 0x7fffffff), inliers);
  if (inliers.empty() || !std::isfinite(m[0] + m[1] + m[2]) ||
      (m[0] == 0 && m[1] == 0 && m[2] == 0))
    throw Error("ground plane (open3d): no plane found");
  GroundResult r;
  r.plane = facing(m, cloud.origin, params.axis);
  r.ground = input_indices(f, inliers);
  r.non_finite = f.non_finite;
  r.hypotheses = params.max_iterations;
  r.method = "open3d";
  r.total_ms = total.ms();
  return r;
}

IcpResult icp(const PointCloud& source, const PointCloud& target,
              const std::vector<Point3f>* target_normals, const IcpParams& params) {
  validate(params);
  if (params.metric == IcpMetric::Gicp)
    throw InvalidArgument(
        "this build's Open3D module runs point-to-point and point-to-plane ICP, "
        "not GICP");
  const bool plane = params.metric == IcpMetric::PointToPlane;
  if (plane && (!target_normals || target_normals->size() != target.size()))
    throw InvalidArgument("Open3D's point-to-plane ICP needs one normal per target point");
  module();
  WallTimer total;
  const Finite src = finite_points(source.points);
  Finite tgt = finite_points(target.points, plane ? target_normals : nullptr);
  if (plane) {
    // A non-finite target normal would poison Open3D's solve; PCL leaves those pairs out.
    Finite kept;
    for (std::size_t i = 0; i < tgt.size(); ++i)
      if (std::isfinite(tgt.normals[3 * i] + tgt.normals[3 * i + 1] + tgt.normals[3 * i + 2])) {
        kept.xyz.insert(kept.xyz.end(), &tgt.xyz[3 * i], &tgt.xyz[3 * i + 3]);
        kept.normals.insert(kept.normals.end(), &tgt.normals[3 * i], &tgt.normals[3 * i + 3]);
        kept.index.push_back(tgt.index[i]);
      }
    tgt = std::move(kept);
  }
  // As our methods do: in the target's local frame, the transform reported in world
  // coordinates. `shift` takes source-local points into the target's local frame.
  Eigen::Matrix4d shift = Eigen::Matrix4d::Identity(), to_local = Eigen::Matrix4d::Identity(),
                  to_world = Eigen::Matrix4d::Identity();
  for (int a = 0; a < 3; ++a) {
    shift(a, 3) = source.origin[std::size_t(a)] - target.origin[std::size_t(a)];
    to_local(a, 3) = -target.origin[std::size_t(a)];
    to_world(a, 3) = target.origin[std::size_t(a)];
  }
  std::array<double, 16> init;
  Eigen::Map<Eigen::Matrix4d>(init.data()) = to_local * params.initial * to_world * shift;
  const double eps = std::max(params.criteria.fitness_epsilon, 0.0);
  const ModuleIcp res =
      module().icp(src.xyz, tgt.xyz, tgt.normals, params.max_correspondence_distance, init, eps,
                   eps, params.criteria.max_iterations);
  IcpResult r;
  r.transform = to_world * Eigen::Map<const Eigen::Matrix4d>(res.transform.data()) *
                shift.inverse() * to_local;
  r.converged = res.fitness > 0;
  r.stop = res.fitness > 0 ? IcpStop::Iterations : IcpStop::NoCorrespondences;
  // Open3D's inlier RMSE squared: the pairs within the distance only, unlike PCL's score.
  r.fitness = res.inlier_rmse * res.inlier_rmse;
  r.source_points = src.size();
  r.target_points = tgt.size();
  r.source_dropped = src.non_finite;
  r.target_dropped = target.size() - tgt.size();
  r.method = "open3d";
  r.metric = params.metric;
  r.total_ms = total.ms();
  return r;
}

FeatureResult fpfh(const PointCloud& cloud, const FeatureParams& params,
                   const std::vector<Point3f>* normals) {
  if (params.descriptor != Descriptor::Fpfh) throw InvalidArgument("Open3D has no PFH");
  if (normals && normals->size() != cloud.size())
    throw InvalidArgument("Open3D's FPFH needs one normal per point");
  for (const Neighbourhood& n : {params.neighbourhood, params.normals.neighbourhood})
    if ((n.k > 0) == (n.radius > 0))
      throw InvalidArgument("Open3D's search takes k nearest or a radius, one of them");
  module();
  WallTimer total;
  Finite f = finite_points(cloud.points, normals);
  const auto& v = params.normals.viewpoint;
  const std::array<double, 3> viewpoint{v[0] - cloud.origin[0], v[1] - cloud.origin[1],
                                        v[2] - cloud.origin[2]};
  const std::vector<double> h = module().fpfh(
      f.xyz, f.normals, params.neighbourhood.k, double(params.neighbourhood.radius),
      params.normals.neighbourhood.k, double(params.normals.neighbourhood.radius), viewpoint);
  FeatureResult r;
  r.descriptor = Descriptor::Fpfh;
  r.bins = f.size() ? int(h.size() / f.size()) : 33;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r.histograms.assign(cloud.size() * std::size_t(r.bins), nan);
  r.normals.assign(cloud.size(), Point3f{nan, nan, nan});
  for (std::size_t k = 0; k < f.size(); ++k) {
    const auto i = std::size_t(f.index[k]);
    for (std::size_t b = 0; b < std::size_t(r.bins); ++b)
      r.histograms[i * std::size_t(r.bins) + b] = float(h[k * std::size_t(r.bins) + b]);
    r.normals[i] = {float(f.normals[3 * k]), float(f.normals[3 * k + 1]),
                    float(f.normals[3 * k + 2])};
  }
  r.non_finite_points = f.non_finite;
  r.nan_histograms = f.non_finite;
  r.method = "open3d";
  r.total_ms = total.ms();
  return r;
}

RansacFit ransac(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                 const FeatureResult& source_features, const FeatureResult& target_features,
                 double max_distance, double similarity, int iterations, int seed) {
  if (source_features.bins != 33 || source_features.size() != source.size() ||
      target_features.bins != 33 || target_features.size() != target.size())
    throw InvalidArgument("Open3D's RANSAC needs one FPFH row per keypoint");
  const auto rows = [](const FeatureResult& f) {
    return std::vector<double>(f.histograms.begin(), f.histograms.end());
  };
  const ModuleIcp r =
      module().ransac(finite_points(source).xyz, finite_points(target).xyz, rows(source_features),
                      rows(target_features), max_distance, similarity, iterations, seed);
  RansacFit out;
  out.transform = Eigen::Map<const Eigen::Matrix4d>(r.transform.data());
  out.fitness = r.fitness;
  out.inlier_rmse = r.inlier_rmse;
  return out;
}

KnnResult knn(std::span<const Point3f> targets, std::span<const Point3f> queries, int k) {
  if (k < 1) throw InvalidArgument("k must be at least 1");
  module();
  WallTimer total;
  const Finite t = finite_points(targets), q = finite_points(queries);
  std::vector<int> idx;
  std::vector<double> d2;
  module().knn(t.xyz, q.xyz, k, idx, d2);
  KnnResult r;
  r.k = k;
  r.indices.assign(queries.size() * std::size_t(k), -1);
  r.sq_distances.assign(queries.size() * std::size_t(k), std::numeric_limits<float>::infinity());
  for (std::size_t j = 0; j < q.size(); ++j)
    for (std::size_t m = 0; m < std::size_t(k); ++m) {
      const int i = idx[j * std::size_t(k) + m];
      if (i < 0) continue;
      const std::size_t out = std::size_t(q.index[j]) * std::size_t(k) + m;
      r.indices[out] = t.index[std::size_t(i)];
      r.sq_distances[out] = float(d2[j * std::size_t(k) + m]);
    }
  r.method = "open3d";
  r.total_ms = total.ms();
  return r;
}

PipelineResult chain(const PointCloud& input, const PipelineParams& params) {
  if (params.range_ground)
    throw InvalidArgument("Open3D has no range-image ground: its chain removes a plane");
  module();
  WallTimer total;
  PipelineResult r;
  PointCloud cloud = input;
  const auto stage = [&](const char* name, std::size_t in, double ms) {
    r.stages.push_back({name, "open3d", in, cloud.size(), ms, {}});
    if (cloud.empty())
      throw Error(std::string("pipeline (open3d): the ") + name + " stage left no point");
  };
  if (params.crop) {
    WallTimer t;
    const std::size_t in = cloud.size();
    const Finite f = finite_points(cloud.points);
    const auto& c = *params.crop;
    const auto& o = cloud.origin;
    const std::array<double, 6> box{c.min[0] - o[0], c.min[1] - o[1], c.min[2] - o[2],
                                    c.max[0] - o[0], c.max[1] - o[1], c.max[2] - o[2]};
    cloud = kept_points(cloud, f, module().crop(f.xyz, box), c.negative, 0).cloud;
    stage("crop box", in, t.ms());
  }
  const auto filter = [&](const char* name, auto&& run) {
    const std::size_t in = cloud.size();
    FilterResult f = run();
    cloud = std::move(f.cloud);
    stage(name, in, f.total_ms);
  };
  if (params.voxel) filter("voxel grid", [&] { return voxel_grid(cloud, *params.voxel); });
  if (params.statistical)
    filter("statistical outliers",
           [&] { return remove_statistical_outliers(cloud, *params.statistical); });
  if (params.radius)
    filter("radius outliers", [&] { return remove_radius_outliers(cloud, *params.radius); });
  r.filtered = cloud;
  if (params.ground) {
    const std::size_t in = cloud.size();
    GroundResult g = ground_plane(cloud, *params.ground);
    WallTimer t;
    r.ground_plane = g.plane;
    r.ground_points = g.ground.size();
    r.kept = off_ground(cloud, g.ground);
    r.ground = std::move(g.ground);
    cloud = gather_points(cloud, r.kept);
    stage("ground plane", in, g.total_ms + t.ms());
  } else {
    r.kept.resize(cloud.size());
    for (std::size_t i = 0; i < cloud.size(); ++i)
      r.kept[i] = std::int32_t(i);
  }
  if (params.cluster) {
    const std::size_t in = cloud.size();
    WallTimer t;
    const Finite f = finite_points(cloud.points);
    ClusterResult c;
    canonicalize(dbscan_components(f, cloud.size(), double(params.cluster->tolerance)),
                 *params.cluster, c);
    r.labels = std::move(c.labels);
    r.stages.push_back({"clustering", "open3d", in, c.sizes.size(), t.ms(), {}});
    // What an Open3D user draws: an axis-aligned box per cluster from its points.
    WallTimer tb;
    std::vector<std::vector<std::size_t>> members(c.sizes.size());
    for (std::size_t k = 0; k < f.size(); ++k)
      if (const std::int32_t l = r.labels[std::size_t(f.index[k])]; l >= 0)
        members[std::size_t(l)].push_back(k);
    const std::size_t boxes = module().boxes(f.xyz, members);
    r.stages.push_back({"boxes", "open3d", c.sizes.size(), boxes, tb.ms(), {}});
  }
  r.total_ms = total.ms();
  r.cloud = std::move(cloud);
  if (params.cluster) r.objects = describe_objects(r.cloud, r.labels, r.ground_plane);
  return r;
}

}  // namespace cumulus::open3d_peer
