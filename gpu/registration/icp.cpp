// ICP: method names, parameter checks, the PCL reference, matrix helpers and dispatch.
#include "registration/icp.h"

#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/registration/icp.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "registration/cuda/gicp_gpu.h"
#include "registration/cuda/icp_gpu.h"
#include "registration/gicp_run.h"
#include "registration/icp_math.h"
#include "registration/icp_robust_pcl.h"

namespace cumulus {

namespace {

// The finite points: `points` itself when all are finite, else a copy without the others in
// `kept`. For the 40k-point bunny's 1.8 ms GPU registration (H200 host), copying both clouds
// regardless had cost 0.04 ms, and testing them point by point with is_finite 0.09-0.17 ms.
const std::vector<Point3f>& finite_points(const std::vector<Point3f>& points,
                                          std::vector<Point3f>& kept, std::size_t& dropped) {
  dropped = 0;
  if (all_finite(points.data(), points.size())) return points;
  for (const auto& p : points)
    if (is_finite(p)) kept.push_back(p);
  dropped = points.size() - kept.size();
  return kept;
}

// PCL's IterativeClosestPoint (or ...WithNormals) with access to the incremental transform and
// the pairs of the iteration in progress, read from the per-iteration callback to record the
// error curve.
template <class Base>
class Recording : public Base {
 public:
  const typename Base::Matrix4& incremental() const { return this->transformation_; }
  const pcl::Correspondences& pairs() const { return *this->correspondences_; }
};

// Every stop with its state in the loop (icp_math, PCL's convergence states), its name in JSON
// and CSV, and what it means.
struct StopWords {
  IcpStop stop;
  int state;
  const char* name;
  const char* description;
};
constexpr StopWords kStops[] = {
    {IcpStop::NotConverged, icp_math::kNotConverged, "not-converged", "has not stopped"},
    {IcpStop::Iterations, icp_math::kIterations, "max-iterations",
     "reached the maximum number of iterations"},
    {IcpStop::Transform, icp_math::kTransform, "transformation-epsilon",
     "the last step moved less than the transformation epsilon (translation squared, rotation "
     "cosine)"},
    {IcpStop::AbsoluteMse, icp_math::kAbsMse, "absolute-mse",
     "the mean squared error changed by less than 1e-12"},
    {IcpStop::RelativeMse, icp_math::kRelMse, "fitness-epsilon",
     "the mean squared error changed by less than the fitness epsilon (relative)"},
    {IcpStop::NoCorrespondences, icp_math::kNoCorrespondences, "no-correspondences",
     "fewer than 3 point pairs within the maximum correspondence distance"},
    {IcpStop::FailureAfterMaxIterations, icp_math::kFailureAfterMaxIterations,
     "failure-after-max-iterations",
     "reached the maximum number of iterations without meeting a criterion"},
    {IcpStop::SolverFailure, icp_math::kSolverFailure, "solver-failure",
     "GICP's BFGS solver ended without a usable step"},
};

const StopWords* words_of(IcpStop s) {
  for (const auto& w : kStops)
    if (w.stop == s) return &w;
  return nullptr;
}

}  // namespace

IcpStop stop_of_state(int state) {
  for (const auto& w : kStops)
    if (w.state == state) return w.stop;
  return IcpStop::NotConverged;
}

icp_math::Criteria device_criteria(const IcpCriteria& c) {
  icp_math::Criteria k;
  k.max_iterations = c.max_iterations;
  k.translation_threshold = c.transformation_epsilon;
  // PCL derives the rotation threshold from the transformation epsilon unless it is set.
  k.rotation_threshold =
      c.rotation_epsilon > 0 ? c.rotation_epsilon : 1.0 - c.transformation_epsilon;
  k.mse_relative = c.fitness_epsilon;
  k.mse_absolute = c.absolute_mse;
  k.failure_after_max_iterations = c.failure_after_max_iterations ? 1 : 0;
  return k;
}

namespace {

template <class Point>
std::shared_ptr<pcl::PointCloud<Point>> to_pcl(const std::vector<Point3f>& pts,
                                               const std::vector<Point3f>* normals) {
  auto c = std::make_shared<pcl::PointCloud<Point>>();
  c->resize(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    (*c)[i].x = pts[i].x;
    (*c)[i].y = pts[i].y;
    (*c)[i].z = pts[i].z;
    if constexpr (std::is_same_v<Point, pcl::PointNormal>) {
      const Point3f n = normals ? (*normals)[i] : Point3f{0, 0, 0};
      (*c)[i].normal_x = n.x;
      (*c)[i].normal_y = n.y;
      (*c)[i].normal_z = n.z;
    }
  }
  return c;
}

template <class Icp, class Point>
void run_pcl_icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                 const std::vector<Point3f>* target_normals, const IcpParams& params,
                 const IcpProgress& progress, IcpResult& out) {
  using Cloud = pcl::PointCloud<Point>;
  WallTimer stage;
  auto src = to_pcl<Point>(source, nullptr), tgt = to_pcl<Point>(target, target_normals);
  Recording<Icp> icp;
  if (params.kernel != RobustKernel::None)
    icp.setTransformationEstimation(
        std::make_shared<WeightedEstimation<Point>>(int(params.kernel), params.kernel_scale));
  icp.setInputSource(src);
  icp.setInputTarget(tgt);
  icp.setMaxCorrespondenceDistance(params.max_correspondence_distance);
  icp.setMaximumIterations(params.criteria.max_iterations);
  icp.setTransformationEpsilon(params.criteria.transformation_epsilon);
  if (params.criteria.rotation_epsilon > 0)
    icp.setTransformationRotationEpsilon(params.criteria.rotation_epsilon);
  icp.setEuclideanFitnessEpsilon(params.criteria.fitness_epsilon);
  icp.getConvergeCriteria()->setAbsoluteMSE(params.criteria.absolute_mse);
  icp.getConvergeCriteria()->setFailureAfterMaximumIterations(
      params.criteria.failure_after_max_iterations);
  bool first_call = true;  // registering calls the callback once before any iteration
  std::function<typename Icp::UpdateVisualizerCallbackSignature> record =
      [&](const Cloud&, const pcl::Indices&, const Cloud&, const pcl::Indices&) {
        if (first_call) {
          first_call = false;
          return;
        }
        IcpIteration it;
        const auto& pairs = icp.pairs();
        it.correspondences = pairs.size();
        double sum = 0;  // PCL's calculateMSE, in its order
        for (const auto& c : pairs)
          sum += c.distance;
        it.mse = sum / double(pairs.size());
        const auto& m = icp.incremental();
        it.rotation_cosine = 0.5 * (m(0, 0) + m(1, 1) + m(2, 2) - 1);
        it.translation_sq = m(0, 3) * m(0, 3) + m(1, 3) * m(1, 3) + m(2, 3) * m(2, 3);
        out.history.push_back(it);
        report_iteration(progress, out, params);
      };
  icp.registerVisualizationCallback(record);
  out.stages.emplace_back("setup", stage.ms());
  stage.reset();
  Cloud aligned;
  icp.align(aligned, params.initial);
  out.stages.emplace_back("iterations", stage.ms());
  stage.reset();
  out.transform = icp.getFinalTransformation();
  out.converged = icp.hasConverged();
  out.stop = stop_of_state(int(icp.getConvergeCriteria()->getConvergenceState()));
  out.iterations = int(out.history.size());
  out.fitness = icp.getFitnessScore();
  out.stages.emplace_back("fitness", stage.ms());
}

void run_pcl(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
             const std::vector<Point3f>* target_normals, const IcpParams& params,
             const IcpProgress& progress, IcpResult& out) {
  if (params.metric == IcpMetric::PointToPlane)
    run_pcl_icp<pcl::IterativeClosestPointWithNormals<pcl::PointNormal, pcl::PointNormal, double>,
                pcl::PointNormal>(source, target, target_normals, params, progress, out);
  else
    run_pcl_icp<pcl::IterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ, double>, pcl::PointXYZ>(
        source, target, nullptr, params, progress, out);
}

}  // namespace

const char* metric_name(IcpMetric m) {
  switch (m) {
    case IcpMetric::PointToPlane:
      return "point-to-plane";
    case IcpMetric::Gicp:
      return "gicp";
    default:
      return "point-to-point";
  }
}

std::optional<IcpMetric> parse_metric(std::string_view name) {
  for (const IcpMetric m : {IcpMetric::PointToPoint, IcpMetric::PointToPlane, IcpMetric::Gicp})
    if (name == metric_name(m)) return m;
  return std::nullopt;
}

const char* kernel_name(RobustKernel k) {
  switch (k) {
    case RobustKernel::Huber:
      return "huber";
    case RobustKernel::Tukey:
      return "tukey";
    default:
      return "none";
  }
}

std::optional<RobustKernel> parse_kernel(std::string_view name) {
  for (const RobustKernel k : {RobustKernel::None, RobustKernel::Huber, RobustKernel::Tukey})
    if (name == kernel_name(k)) return k;
  return std::nullopt;
}

const char* stop_name(IcpStop s) {
  const StopWords* w = words_of(s);
  return w ? w->name : "unknown";
}

std::string stop_description(IcpStop s) {
  const StopWords* w = words_of(s);
  return w ? w->description : "unknown";
}

void validate(const IcpParams& params) {
  const double d = params.max_correspondence_distance;
  if (!(d > 0) || !std::isfinite(d))
    throw InvalidArgument("the maximum correspondence distance must be a positive finite number");
  const IcpCriteria& c = params.criteria;
  if (c.max_iterations < 1 || c.max_iterations > 100000)
    throw InvalidArgument("the maximum number of iterations must be between 1 and 100000");
  if (!(c.transformation_epsilon >= 0) || !std::isfinite(c.transformation_epsilon))
    throw InvalidArgument("the transformation epsilon must be zero or a positive number");
  if (!(c.rotation_epsilon >= 0) || c.rotation_epsilon > 1)
    throw InvalidArgument("the rotation epsilon is a cosine: between 0 (unused) and 1");
  if (std::isnan(c.fitness_epsilon))
    throw InvalidArgument("the fitness epsilon must be a number (negative disables it)");
  if (!(c.absolute_mse >= 0)) throw InvalidArgument("the absolute MSE threshold must be >= 0");
  if (params.kernel != RobustKernel::None &&
      (!(params.kernel_scale > 0) || !std::isfinite(params.kernel_scale)))
    throw InvalidArgument(std::string("the ") + kernel_name(params.kernel) +
                          " kernel needs a positive finite scale (a distance)");
  if (params.metric == IcpMetric::Gicp) {
    const GicpParams& g = params.gicp;
    if (g.k < 3 || g.k > 64)
      throw InvalidArgument("GICP's covariance neighbourhood must be 3 to 64 points");
    if (!(g.epsilon > 0) || !(g.epsilon <= 1))
      throw InvalidArgument("GICP's covariance epsilon must be in (0, 1]");
    if (g.max_inner_iterations < 1 || g.max_inner_iterations > 1000)
      throw InvalidArgument("GICP's inner iterations must be between 1 and 1000");
    for (double v : {g.translation_gradient_tolerance, g.rotation_gradient_tolerance})
      if (!(v >= 0) || !std::isfinite(v))
        throw InvalidArgument("GICP's gradient tolerances must be zero or positive numbers");
    for (double v : {g.translation_epsilon, g.rotation_epsilon})
      if (!(v > 0) || !std::isfinite(v))
        throw InvalidArgument("GICP's transformation epsilons must be positive numbers");
  }
  const IcpGpuTuning& t = params.gpu;
  if (t.lanes < 1 || t.lanes > 32 || (t.lanes & (t.lanes - 1)) != 0)
    throw InvalidArgument("the gpu method's lanes per point must be 1, 2, 4, 8, 16 or 32");
  for (float v : {t.grid_points_per_cell, t.grid_within_reach, t.fine_points_per_cell})
    if (!(v > 0) || !std::isfinite(v))
      throw InvalidArgument("the gpu method's grid densities must be positive finite numbers");
  const Eigen::Matrix4d& m = params.initial;
  if (!m.allFinite()) throw InvalidArgument("the initial transform has non-finite entries");
  const Eigen::Matrix3d r = m.topLeftCorner<3, 3>();
  if ((r * r.transpose() - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() > 1e-4 ||
      r.determinant() < 0 || m.row(3) != Eigen::RowVector4d(0, 0, 0, 1))
    throw InvalidArgument(
        "the initial transform is not a rigid transform (rotation + "
        "translation, last row 0 0 0 1)");
}

IcpResult icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpMethod method) {
  return icp(source, target, nullptr, params, method);
}

IcpResult icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const std::vector<Point3f>* target_normals, const IcpParams& params, IcpMethod method,
              const IcpProgress& progress) {
  validate(params);
  const bool plane = params.metric == IcpMetric::PointToPlane;
  if (plane && !target_normals)
    throw InvalidArgument("point-to-plane ICP needs the target's normals");
  if (plane && target_normals->size() != target.size())
    throw InvalidArgument("the target has " + std::to_string(target.size()) + " points but " +
                          std::to_string(target_normals->size()) + " normals");
  const WallTimer timer;
  IcpResult out;
  out.method = method_name(method);
  out.metric = params.metric;
  out.kernel = params.kernel;
  std::vector<Point3f> src_kept, tgt_kept, normals_kept;
  const auto& src = finite_points(source, src_kept, out.source_dropped);
  const auto& tgt = finite_points(target, tgt_kept, out.target_dropped);
  const std::vector<Point3f>* normals = plane ? target_normals : nullptr;
  if (plane && out.target_dropped > 0) {  // the normals of the points kept, in step
    for (std::size_t i = 0; i < target.size(); ++i)
      if (is_finite(target[i])) normals_kept.push_back((*target_normals)[i]);
    normals = &normals_kept;
  }
  out.source_points = src.size();
  out.target_points = tgt.size();
  if (src.size() < 3 || tgt.size() < 3)
    throw InvalidArgument(
        "ICP needs at least 3 finite points in the source and in the target "
        "(source has " +
        std::to_string(src.size()) + ", target " + std::to_string(tgt.size()) + ")");
  if (params.metric == IcpMetric::Gicp) {
    const std::size_t k = std::size_t(params.gicp.k);
    if (src.size() < k || tgt.size() < k)
      throw InvalidArgument("GICP needs at least its covariance neighbourhood (" +
                            std::to_string(k) + " points) in the source and in the target");
    if (method == IcpMethod::Cpu)
      pcl_gicp(src, tgt, params, out, progress);
    else
      gpu_gicp(src, tgt, params, method, out);
  } else if (method == IcpMethod::Cpu)
    run_pcl(src, tgt, normals, params, progress, out);
  else
    gpu_icp(src, tgt, normals, params, method, out);
  out.total_ms = timer.ms();
  return out;
}

IcpResult icp(const PointCloud& source, const PointCloud& target, const IcpParams& params,
              IcpMethod method, const IcpProgress& progress) {
  // Point to plane: the target's own normals, or estimated here (the time is a stage).
  const std::vector<Point3f>* normals = nullptr;
  NormalsResult estimated;
  double normals_ms = -1;
  if (params.metric == IcpMetric::PointToPlane) {
    if (target.has_normals()) {
      normals = &target.normals;
    } else {
      if (params.normals_k < 3 || params.normals_k > 1000)
        throw InvalidArgument("the normals' neighbourhood must be 3 to 1000 points");
      const WallTimer t;
      NormalParams np;
      np.neighbourhood = Neighbourhood::nearest(params.normals_k);
      if (method == IcpMethod::Cpu && progress)
        // PCL's normals, as estimate_normals gives them, stoppable between two searches: a
        // large k over a large target takes seconds before the first iteration.
        estimated = estimate_normals_call(
            target, np, FeatureMethod::Cpu,
            [&](std::size_t, std::size_t) { return progress(0, params.criteria.max_iterations); });
      else
        estimated = estimate_normals(
            target, np, method == IcpMethod::Cpu ? FeatureMethod::Cpu : FeatureMethod::Gpu);
      normals = &estimated.normals;
      normals_ms = t.ms();
    }
  }
  const auto with_normals_stage = [&](IcpResult r) {
    if (normals_ms >= 0) {
      r.stages.insert(r.stages.begin(), {"normals", normals_ms});
      r.total_ms += normals_ms;
    }
    return r;
  };
  const Eigen::Vector3d ot(target.origin[0], target.origin[1], target.origin[2]);
  const Eigen::Vector3d os(source.origin[0], source.origin[1], source.origin[2]);
  if (ot.isZero() && os.isZero())
    return with_normals_stage(icp(source.points, target.points, normals, params, method, progress));
  // Work in the target's local frame (float offsets stay small there) and report the transform
  // in world coordinates: world_t = ot + T_local (world_s - ot).
  Eigen::Matrix4d to_local = Eigen::Matrix4d::Identity(), to_world = Eigen::Matrix4d::Identity();
  to_local.topRightCorner<3, 1>() = -ot;
  to_world.topRightCorner<3, 1>() = ot;
  std::vector<Point3f> shifted(source.points.size());
  const Eigen::Vector3d delta = os - ot;
  for (std::size_t i = 0; i < shifted.size(); ++i) {
    const Point3f& p = source.points[i];
    shifted[i] = Point3f{float(double(p.x) + delta.x()), float(double(p.y) + delta.y()),
                         float(double(p.z) + delta.z())};
  }
  IcpParams local = params;
  local.initial = to_local * params.initial * to_world;
  IcpResult r = icp(shifted, target.points, normals, local, method, progress);
  r.transform = to_world * r.transform * to_local;
  return with_normals_stage(std::move(r));
}

PointCloud transformed(const PointCloud& cloud, const Eigen::Matrix4d& t) {
  // World transform applied in the cloud's local frame: p_local' = R p_local + (R o + t - o).
  const Eigen::Vector3d o(cloud.origin[0], cloud.origin[1], cloud.origin[2]);
  Eigen::Matrix4d local = t;
  local.topRightCorner<3, 1>() = t.topLeftCorner<3, 3>() * o + t.topRightCorner<3, 1>() - o;
  PointCloud out = cloud;
  out.points = transform_points(cloud.points, local);
  const Eigen::Matrix3d r = t.topLeftCorner<3, 3>();
  for (auto& n : out.normals) {
    const Eigen::Vector3d v = r * Eigen::Vector3d(n.x, n.y, n.z);
    n = Point3f{float(v.x()), float(v.y()), float(v.z())};
  }
  return out;
}

Eigen::Matrix4d rigid_transform(double rx_deg, double ry_deg, double rz_deg, double tx, double ty,
                                double tz) {
  const double k = M_PI / 180.0;
  const Eigen::Matrix3d r = (Eigen::AngleAxisd(rz_deg * k, Eigen::Vector3d::UnitZ()) *
                             Eigen::AngleAxisd(ry_deg * k, Eigen::Vector3d::UnitY()) *
                             Eigen::AngleAxisd(rx_deg * k, Eigen::Vector3d::UnitX()))
                                .toRotationMatrix();
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = r;
  m.topRightCorner<3, 1>() = Eigen::Vector3d(tx, ty, tz);
  return m;
}

double rotation_angle_deg(const Eigen::Matrix4d& t) {
  const double c = std::clamp(0.5 * (t.topLeftCorner<3, 3>().trace() - 1), -1.0, 1.0);
  return std::acos(c) * 180.0 / M_PI;
}

double translation_norm(const Eigen::Matrix4d& t) {
  return t.topRightCorner<3, 1>().norm();
}

std::vector<Point3f> transform_points(const std::vector<Point3f>& points,
                                      const Eigen::Matrix4d& t) {
  std::vector<Point3f> out(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point3f& p = points[i];
    if (!is_finite(p)) {
      out[i] = p;
      continue;
    }
    const Eigen::Vector4d q = t * Eigen::Vector4d(p.x, p.y, p.z, 1.0);
    out[i] = Point3f{float(q.x()), float(q.y()), float(q.z())};
  }
  return out;
}

Eigen::Matrix4d parse_matrix(const std::string& text) {
  std::string cleaned = text;
  for (char& ch : cleaned)
    if (ch == ',' || ch == ';' || ch == '[' || ch == ']') ch = ' ';
  std::istringstream in(cleaned);
  std::vector<double> v;
  std::string token;
  while (in >> token) {
    try {
      std::size_t used = 0;
      v.push_back(std::stod(token, &used));
      if (used != token.size()) throw std::invalid_argument(token);
    } catch (const std::exception&) {
      throw InvalidArgument("not a number in the 4x4 matrix: '" + token + "'");
    }
  }
  if (v.size() != 16)
    throw InvalidArgument("a 4x4 matrix needs 16 numbers (got " + std::to_string(v.size()) + ")");
  Eigen::Matrix4d m;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      m(r, c) = v[std::size_t(4 * r + c)];
  return m;
}

Eigen::Matrix4d read_matrix_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path, "cannot open the matrix file");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return parse_matrix(ss.str());
  } catch (const InvalidArgument& e) {
    throw IoError(path, e.what());
  }
}

std::string format_matrix(const Eigen::Matrix4d& t) {
  std::ostringstream out;
  out.precision(17);  // round-trips exactly
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 4; ++c)
      out << (c ? " " : "") << t(r, c);
    out << "\n";
  }
  return out.str();
}

}  // namespace cumulus
