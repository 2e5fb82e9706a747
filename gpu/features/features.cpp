// Normals and point feature histograms: names, argument checks, the PCL reference, the paper's
// CPU half, dispatch, distances and export.
#include "features/features.h"

#include <pcl/features/fpfh.h>
#include <pcl/features/normal_3d.h>
#include <pcl/features/pfh.h>
#include <pcl/io/pcd_io.h>
#include <pcl/search/kdtree.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>

#include "core/device.h"
#include "core/error.h"
#include "features/cuda/features_gpu.h"
#include "io/atomic_file.h"
#include "io/pcl_cloud2.h"
#include "nns/nns.h"
#include "nns/reporting_kdtree.h"
#include "tiles/tiles.h"

namespace cumulus {

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void validate(const Neighbourhood& nb, FeatureMethod method, const char* what) {
  const std::string w = what;
  if (nb.k > 0 && nb.radius > 0) throw InvalidArgument(w + ": give either k or a radius, not both");
  if (nb.k <= 0 && !(nb.radius > 0)) {
    if (nb.k < 0 || nb.radius < 0 || std::isnan(nb.radius))
      throw InvalidArgument(w + ": k must be at least 1 and the radius positive");
    throw InvalidArgument(w + ": give k (at least 1) or a positive radius");
  }
  if (nb.radius > 0 && !std::isfinite(nb.radius))
    throw InvalidArgument(w + ": the radius must be finite");
  if (method == FeatureMethod::Gpu && nb.k > kMaxKnnK)
    throw InvalidArgument(w + ": the gpu method takes k up to " + std::to_string(kMaxKnnK) +
                          " (got " + std::to_string(nb.k) + ")");
}

void validate_viewpoint(const std::array<double, 3>& vp) {
  for (double v : vp)
    if (!std::isfinite(v)) throw InvalidArgument("the viewpoint must be finite");
}

// The finite points and where each came from.
struct Finite {
  std::vector<Point3f> points;
  std::vector<std::size_t> source;
};

Finite finite_points(const PointCloud& cloud) {
  Finite f;
  f.points.reserve(cloud.size());
  f.source.reserve(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i)
    if (is_finite(cloud.points[i])) {
      f.points.push_back(cloud.points[i]);
      f.source.push_back(i);
    }
  return f;
}

Point3f local_viewpoint(const PointCloud& cloud, const std::array<double, 3>& vp) {
  return {float(vp[0] - cloud.origin[0]), float(vp[1] - cloud.origin[1]),
          float(vp[2] - cloud.origin[2])};
}

using PclCloud = pcl::PointCloud<pcl::PointXYZ>;
using PclNormals = pcl::PointCloud<pcl::Normal>;
using PclTree = pcl::search::KdTree<pcl::PointXYZ>;

// The kd-tree every PCL stage of a call searches: one that reports and may stop the run when
// the caller follows its progress, PCL's own otherwise. `searches`: the call's in all.
std::shared_ptr<PclTree> search_tree(const FeatureProgress& progress, std::size_t searches,
                                     const char* what) {
  if (!progress) return std::make_shared<PclTree>();
  return std::make_shared<ReportingKdTree>(progress, searches, std::string(what) + " cancelled");
}

PclCloud::Ptr to_pcl(const std::vector<Point3f>& points) {
  auto c = std::make_shared<PclCloud>();
  c->resize(points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    (*c)[i] = pcl::PointXYZ(points[i].x, points[i].y, points[i].z);
  c->is_dense = true;  // non-finite points were left out
  return c;
}

// k is given to PCL as at most the cloud's size: its search returns the whole cloud either way,
// but its estimators allocate k entries up front (FPFH twice over: 16 GB for k = 10^9).
template <class Estimator>
void set_neighbourhood(Estimator& e, const Neighbourhood& nb, std::size_t points) {
  if (nb.k > 0)
    e.setKSearch(int(std::min<std::size_t>(std::size_t(nb.k), points)));
  else
    e.setRadiusSearch(double(nb.radius));
}

PclNormals::Ptr pcl_normals(const PclCloud::Ptr& cloud,
                            const pcl::search::KdTree<pcl::PointXYZ>::Ptr& tree,
                            const Neighbourhood& nb, Point3f vp) {
  pcl::NormalEstimation<pcl::PointXYZ, pcl::Normal> ne;
  ne.setInputCloud(cloud);
  ne.setSearchMethod(tree);
  set_neighbourhood(ne, nb, cloud->size());
  ne.setViewPoint(vp.x, vp.y, vp.z);
  auto normals = std::make_shared<PclNormals>();
  ne.compute(*normals);
  return normals;
}

PclNormals::Ptr to_pcl_normals(const std::vector<Point3f>& n) {
  auto c = std::make_shared<PclNormals>();
  c->resize(n.size());
  for (std::size_t i = 0; i < n.size(); ++i)
    (*c)[i] = pcl::Normal(n[i].x, n[i].y, n[i].z);
  return c;
}

template <class Estimator, class Signature>
void pcl_descriptors(Estimator& est, const PclCloud::Ptr& cloud, const PclNormals::Ptr& normals,
                     const pcl::search::KdTree<pcl::PointXYZ>::Ptr& tree, const Neighbourhood& nb,
                     ZeroedVector<float>& out, int bins) {
  est.setInputCloud(cloud);
  est.setInputNormals(normals);
  est.setSearchMethod(tree);
  set_neighbourhood(est, nb, cloud->size());
  pcl::PointCloud<Signature> sig;
  est.compute(sig);
  out.assign(cloud->size() * std::size_t(bins), 0.0f);  // a reused result's old rows gone too
  for (std::size_t i = 0; i < sig.size(); ++i)
    std::copy_n(sig[i].histogram, bins, out.begin() + std::ptrdiff_t(i * std::size_t(bins)));
}

// The paper's CPU half: each point's neighbourhood from the kd-tree the normals were estimated
// with (built here when the normals were given), searched as PCL's features search it.
HostNeighbours flann_neighbours(const PclCloud::Ptr& cloud,
                                const pcl::search::KdTree<pcl::PointXYZ>::Ptr& tree,
                                const Neighbourhood& nb) {
  if (tree->getInputCloud() != cloud) tree->setInputCloud(cloud);
  HostNeighbours h;
  h.offsets.assign(cloud->size() + 1, 0);
  pcl::Indices idx;
  std::vector<float> d2;
  for (std::size_t q = 0; q < cloud->size(); ++q) {
    if (nb.k > 0)
      tree->nearestKSearch(int(q), nb.k, idx, d2);
    else
      tree->radiusSearch(int(q), double(nb.radius), idx, d2);
    h.indices.insert(h.indices.end(), idx.begin(), idx.end());
    h.sq_distances.insert(h.sq_distances.end(), d2.begin(), d2.end());
    h.offsets[q + 1] = std::uint32_t(h.indices.size());
  }
  return h;
}

std::size_t count_nan(const std::vector<Point3f>& n) {
  std::size_t c = 0;
  for (const auto& v : n)
    c += is_finite(v) ? 0 : 1;
  return c;
}

// Back to one entry per input point, NaN for the points that were left out. With none left out
// the rows are already in place: moving them saves a second pass over what may be tens of MB
// of histograms (a few ms, as much as the GPU's whole histogram stage).
template <class V>
V expand(V&& in, const Finite& f, std::size_t n, std::size_t width,
         const typename V::value_type& fill) {
  if (f.source.size() == n && in.size() == n * width) return std::move(in);
  V out(n * width, fill);
  for (std::size_t i = 0; i < f.source.size() && !in.empty(); ++i)
    std::copy_n(in.begin() + std::ptrdiff_t(i * width), width,
                out.begin() + std::ptrdiff_t(f.source[i] * width));
  return out;
}

}  // namespace

const char* descriptor_name(Descriptor d) {
  return d == Descriptor::Pfh ? "pfh" : "fpfh";
}

std::optional<Descriptor> parse_descriptor(const std::string& name) {
  if (name == "pfh") return Descriptor::Pfh;
  if (name == "fpfh") return Descriptor::Fpfh;
  return std::nullopt;
}

int descriptor_bins(Descriptor d) {
  return d == Descriptor::Pfh ? 125 : 33;
}

std::string Neighbourhood::describe() const {
  std::ostringstream s;
  if (k > 0)
    s << "k=" << k;
  else
    s << "r=" << radius;
  return s.str();
}

void validate(const NormalParams& params, FeatureMethod method) {
  validate(params.neighbourhood, method, "normals");
  validate_viewpoint(params.viewpoint);
}

void validate(const FeatureParams& params, FeatureMethod method, bool normals_given) {
  validate(params.neighbourhood, method, "features");
  if (!normals_given) validate(params.normals.neighbourhood, method, "normals");
  validate_viewpoint(params.normals.viewpoint);
}

NormalsResult estimate_normals(const PointCloud& cloud, const NormalParams& params,
                               FeatureMethod method) {
  validate(params, method);
  if (method == FeatureMethod::Gpu &&
      cloud.size() > normals_call_capacity(method, params, cloud.size()))
    return estimate_normals_tiled(cloud, params, method);
  return estimate_normals_call(cloud, params, method);
}

NormalsResult estimate_normals_call(const PointCloud& cloud, const NormalParams& params,
                                    FeatureMethod method, const FeatureProgress& progress) {
  validate(params, method);
  const WallTimer timer;
  NormalsResult out;
  out.method = method_name(method);
  const Finite f = finite_points(cloud);
  out.non_finite_points = cloud.size() - f.points.size();
  const Point3f vp = local_viewpoint(cloud, params.viewpoint);
  std::vector<Point3f> normals;
  std::vector<float> curvature;
  if (method == FeatureMethod::Gpu) {
    gpu_normals(f.points, params.neighbourhood, vp, params.pcl_compatible, out);
    normals = std::move(out.normals);
    curvature = std::move(out.curvature);
  } else if (!f.points.empty()) {
    // The paper estimates normals on the CPU too, so both take PCL's.
    WallTimer stage;
    const auto pc = to_pcl(f.points);
    const auto tree = search_tree(progress, f.points.size(), "normal estimation");
    const auto pn = pcl_normals(pc, tree, params.neighbourhood, vp);
    normals.resize(pn->size());
    curvature.resize(pn->size());
    for (std::size_t i = 0; i < pn->size(); ++i) {
      normals[i] = {(*pn)[i].normal_x, (*pn)[i].normal_y, (*pn)[i].normal_z};
      curvature[i] = (*pn)[i].curvature;
    }
    out.stages.emplace_back("normals", stage.ms());
  }
  out.nan_normals = count_nan(normals);
  out.normals = expand(std::move(normals), f, cloud.size(), 1, Point3f{kNaN, kNaN, kNaN});
  out.curvature = expand(std::move(curvature), f, cloud.size(), 1, kNaN);
  out.total_ms = timer.ms();
  return out;
}

namespace {

// The parameters, and the given normals (one per point) where there are any.
void check_inputs(const PointCloud& cloud, const FeatureParams& params, FeatureMethod method,
                  const std::vector<Point3f>* normals) {
  validate(params, method, normals != nullptr);
  if (normals && normals->size() != cloud.size())
    throw InvalidArgument("features: " + std::to_string(normals->size()) + " normals for " +
                          std::to_string(cloud.size()) + " points");
}

}  // namespace

FeatureResult compute_features(const PointCloud& cloud, const FeatureParams& params,
                               FeatureMethod method, const std::vector<Point3f>* normals) {
  FeatureResult out;
  compute_features(cloud, params, method, normals, out);
  return out;
}

void compute_features(const PointCloud& cloud, const FeatureParams& params, FeatureMethod method,
                      const std::vector<Point3f>* normals, FeatureResult& into) {
  check_inputs(cloud, params, method, normals);
  if (method != FeatureMethod::Cpu &&
      cloud.size() > features_call_capacity(method, params, normals != nullptr, cloud.size()))
    into = compute_features_tiled(cloud, params, method, normals);
  else
    compute_features_call(cloud, params, method, normals, into);
}

FeatureResult compute_features_call(const PointCloud& cloud, const FeatureParams& params,
                                    FeatureMethod method, const std::vector<Point3f>* normals,
                                    const FeatureProgress& progress) {
  FeatureResult out;
  compute_features_call(cloud, params, method, normals, out, progress);
  return out;
}

void compute_features_call(const PointCloud& cloud, const FeatureParams& params,
                           FeatureMethod method, const std::vector<Point3f>* normals,
                           FeatureResult& out, const FeatureProgress& progress) {
  check_inputs(cloud, params, method, normals);
  const WallTimer timer;
  // Every field set anew; the vectors keep their memory (their contents are overwritten).
  out.stages.clear();
  out.curvature.clear();
  out.non_finite_points = out.nan_histograms = 0;
  out.descriptor = params.descriptor;
  out.bins = descriptor_bins(params.descriptor);
  out.method = method_name(method);
  const Finite f = finite_points(cloud);
  out.non_finite_points = cloud.size() - f.points.size();
  const Point3f vp = local_viewpoint(cloud, params.normals.viewpoint);
  std::vector<Point3f> given;
  if (normals) {
    given.reserve(f.points.size());
    for (std::size_t i : f.source)
      given.push_back((*normals)[i]);
  }

  if (!f.points.empty()) {
    if (method == FeatureMethod::Gpu) {
      gpu_features(f.points, params, vp, normals ? &given : nullptr, out);
      if (normals) out.normals = std::move(given);
    } else {
      const auto pc = to_pcl(f.points);
      // One search a point for the normals, for PFH and for the paper's neighbour lists; FPFH
      // searches twice (its points' SPFHs, then their weighting).
      const std::size_t n = f.points.size();
      const std::size_t searches =
          (normals ? 0 : n) +
          (method == FeatureMethod::Cpu && params.descriptor == Descriptor::Fpfh ? 2 * n : n);
      const auto tree = search_tree(progress, searches, "feature computation");
      WallTimer stage;
      PclNormals::Ptr pn;
      if (normals) {
        pn = to_pcl_normals(given);
        out.normals = std::move(given);
      } else {
        pn = pcl_normals(pc, tree, params.normals.neighbourhood, vp);
        out.normals.resize(pn->size());
        out.curvature.resize(pn->size());
        for (std::size_t i = 0; i < pn->size(); ++i) {
          out.normals[i] = {(*pn)[i].normal_x, (*pn)[i].normal_y, (*pn)[i].normal_z};
          out.curvature[i] = (*pn)[i].curvature;
        }
        out.stages.emplace_back("normals", stage.ms());
      }
      stage.reset();
      if (method == FeatureMethod::Cpu) {
        if (params.descriptor == Descriptor::Pfh) {
          pcl::PFHEstimation<pcl::PointXYZ, pcl::Normal, pcl::PFHSignature125> est;
          pcl_descriptors<decltype(est), pcl::PFHSignature125>(
              est, pc, pn, tree, params.neighbourhood, out.histograms, out.bins);
        } else {
          pcl::FPFHEstimation<pcl::PointXYZ, pcl::Normal, pcl::FPFHSignature33> est;
          pcl_descriptors<decltype(est), pcl::FPFHSignature33>(
              est, pc, pn, tree, params.neighbourhood, out.histograms, out.bins);
        }
        // PCL searches inside the estimator, so its neighbours are part of this stage.
        out.stages.emplace_back("descriptors", stage.ms());
      } else {
        const HostNeighbours nb = flann_neighbours(pc, tree, params.neighbourhood);
        out.stages.emplace_back("neighbours", stage.ms());
        gpu_paper_descriptors(f.points, out.normals, nb, params.descriptor, out);
      }
    }
  }
  out.nan_histograms = out.non_finite_points;
  out.histograms = expand(std::move(out.histograms), f, cloud.size(), std::size_t(out.bins), kNaN);
  out.normals = expand(std::move(out.normals), f, cloud.size(), 1, Point3f{kNaN, kNaN, kNaN});
  if (!out.curvature.empty())
    out.curvature = expand(std::move(out.curvature), f, cloud.size(), 1, kNaN);
  out.total_ms = timer.ms();
}

std::optional<HistogramDistance> parse_histogram_distance(const std::string& name) {
  if (name == "l2") return HistogramDistance::L2;
  if (name == "chi2" || name == "chi-squared") return HistogramDistance::ChiSquared;
  return std::nullopt;
}

HistogramDiff compare_histograms(const FeatureResult& a, const FeatureResult& b, double tol) {
  HistogramDiff d;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    bool bad = false;
    for (int j = 0; j < a.bins; ++j) {
      const float x = a.row(i)[j], y = b.row(i)[j];
      if (std::isnan(x) && std::isnan(y)) continue;
      const double e = std::isnan(x) != std::isnan(y) ? INFINITY : std::fabs(double(x) - y);
      d.max = std::max(d.max, e);
      bad |= e > tol;
    }
    if (bad && d.rows++ == 0) d.first = i;
  }
  return d;
}

std::vector<float> histogram_distances(const FeatureResult& features, const float* reference,
                                       HistogramDistance metric) {
  const std::size_t n = features.size(), b = std::size_t(features.bins);
  std::vector<float> out(n, kNaN);
  for (std::size_t i = 0; i < n; ++i) {
    const float* h = features.row(i);
    double d = 0;
    for (std::size_t j = 0; j < b; ++j) {
      const double x = h[j], y = reference[j];
      if (metric == HistogramDistance::L2) {
        d += (x - y) * (x - y);
      } else if (x + y > 0) {
        d += (x - y) * (x - y) / (x + y);
      }
    }
    out[i] = float(metric == HistogramDistance::L2 ? std::sqrt(d) : d);
  }
  return out;
}

namespace {
template <class Signature>
void save_signatures(const std::string& path, const FeatureResult& f) {
  pcl::PointCloud<Signature> c;
  c.resize(f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    std::copy_n(f.row(i), f.bins, c[i].histogram);
  // Binary PCD: at least the histograms' bytes.
  detail::write_through_scratch(
      path, "PCD", c.size() * sizeof(float) * f.bins,
      [&](const std::string& scratch) { return pcl::io::savePCDFileBinary(scratch, c); });
}
}  // namespace

void write_features_pcd(const std::string& path, const FeatureResult& features) {
  if (features.descriptor == Descriptor::Pfh)
    save_signatures<pcl::PFHSignature125>(path, features);
  else
    save_signatures<pcl::FPFHSignature33>(path, features);
}

void write_features_csv(const std::string& path, const PointCloud& cloud,
                        const FeatureResult& features) {
  if (features.size() != cloud.size())
    throw InvalidArgument("the features were computed for a different cloud");
  AtomicOstream out(path);
  out << "index,x,y,z";
  for (int b = 0; b < features.bins; ++b)
    out << ',' << descriptor_name(features.descriptor) << b;
  out << '\n';
  out.precision(9);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const Point3f& p = cloud.points[i];
    out << i << ',' << std::setprecision(15) << cloud.origin[0] + p.x << ','
        << cloud.origin[1] + p.y << ',' << cloud.origin[2] + p.z << std::setprecision(9);
    const float* h = features.row(i);
    for (int b = 0; b < features.bins; ++b)
      out << ',' << h[b];
    out << '\n';
  }
  out.commit();
}

}  // namespace cumulus
