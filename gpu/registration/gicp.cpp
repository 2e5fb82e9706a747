// GICP on the host: PCL's GeneralizedIterativeClosestPoint (the `cpu` method) and the GPU's loop
// replayed on one thread (gicp_math.h), which the tests hold against PCL where there is no GPU.
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/registration/gicp.h>

#include <cmath>
#include <functional>

#include "core/error.h"
#include "registration/cuda/icp_gpu.h"
#include "registration/gicp_math.h"
#include "registration/gicp_run.h"
#include "registration/icp_math.h"

namespace cumulus {

namespace gm = gicp_math;
namespace im = icp_math;

namespace {

using Cloud = pcl::PointCloud<pcl::PointXYZ>;

std::shared_ptr<Cloud> to_cloud(const std::vector<Point3f>& pts) {
  auto c = std::make_shared<Cloud>();
  c->resize(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i)
    (*c)[i] = pcl::PointXYZ(pts[i].x, pts[i].y, pts[i].z);
  return c;
}

void to_array(const Eigen::Matrix4d& m, double* out) {
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      out[4 * r + c] = m(r, c);
}

void to_float(const double* m, float* out) {
  for (int i = 0; i < 16; ++i)
    out[i] = float(m[i]);
}

// The source moved by the guess, as PCL's GICP moves it before its loop.
std::vector<Point3f> guessed(const std::vector<Point3f>& source, const Eigen::Matrix4d& guess) {
  double g[16];
  to_array(guess, g);
  std::vector<Point3f> out(source.size());
  for (std::size_t i = 0; i < source.size(); ++i)
    gm::apply_double(g, &source[i].x, &out[i].x);
  return out;
}

// Squared distance of each pair under the transform m (cast to float, as PCL's loop applies it).
template <class Pairs>
void pair_distances(const std::vector<Point3f>& moved_source, const std::vector<Point3f>& target,
                    const double* m, const Pairs& src_index, const Pairs& tgt_index,
                    std::vector<float>& d2) {
  float mf[16];
  to_float(m, mf);
  d2.resize(src_index.size());
  for (std::size_t k = 0; k < src_index.size(); ++k) {
    float q[3];
    gm::apply_float(mf, &moved_source[std::size_t(src_index[k])].x, q);
    d2[k] = gm::dist2(q, &target[std::size_t(tgt_index[k])].x);
  }
}

// Which stop the loop's end means, by PCL's test (delta under 1 before the iteration count).
int stop_of(double delta, int iterations, int max_iterations) {
  if (delta < 1) return im::kTransform;
  return iterations >= max_iterations ? im::kIterations : im::kNotConverged;
}

using PclGicp = pcl::GeneralizedIterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ, double>;

// PCL's GICP with its transforms in view and, with a robust kernel, each pair's Mahalanobis
// matrix scaled by its weight before the BFGS (PCL computes the matrices just before).
class RecordingGicp : public PclGicp {
 public:
  RecordingGicp(int kernel, double scale) {
    auto solve = rigid_transformation_estimation_;
    rigid_transformation_estimation_ = [this, solve, kernel, scale](
                                           const Cloud& src, const pcl::Indices& isrc,
                                           const Cloud& tgt, const pcl::Indices& itgt, Matrix4& t) {
      last_pairs = isrc.size();
      if (kernel != im::kNoKernel) {
        double m[16];
        to_array(t, m);
        float mf[16];
        to_float(m, mf);
        for (std::size_t k = 0; k < isrc.size(); ++k) {
          float q[3];
          const auto& p = src[std::size_t(isrc[k])];
          const float pp[3] = {p.x, p.y, p.z};
          gm::apply_float(mf, pp, q);
          const auto& u = tgt[std::size_t(itgt[k])];
          const float uu[3] = {u.x, u.y, u.z};
          const double w = im::robust_weight(kernel, scale, std::sqrt(double(gm::dist2(q, uu))));
          mahalanobis_[std::size_t(isrc[k])] *= w;
        }
      }
      solve(src, isrc, tgt, itgt, t);
    };
  }
  const Matrix4& current() const { return transformation_; }
  const Matrix4& previous() const { return previous_transformation_; }
  std::size_t last_pairs = 0;
};

void set_parameters(PclGicp& g, const IcpParams& params) {
  g.setMaxCorrespondenceDistance(params.max_correspondence_distance);
  g.setMaximumIterations(params.criteria.max_iterations);
  g.setTransformationEpsilon(params.gicp.translation_epsilon);
  g.setRotationEpsilon(params.gicp.rotation_epsilon);
  g.setCorrespondenceRandomness(params.gicp.k);
  g.setMaximumOptimizerIterations(params.gicp.max_inner_iterations);
  g.setTranslationGradientTolerance(params.gicp.translation_gradient_tolerance);
  g.setRotationGradientTolerance(params.gicp.rotation_gradient_tolerance);
}

}  // namespace

void pcl_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpResult& out, const IcpProgress& progress) {
  WallTimer stage;
  auto src = to_cloud(source), tgt = to_cloud(target);
  RecordingGicp g(int(params.kernel), params.kernel_scale);
  set_parameters(g, params);
  // PCL sets the covariances' epsilon only through its constructor's default; ours must agree.
  if (params.gicp.epsilon != GicpParams{}.epsilon)
    throw InvalidArgument("the cpu (PCL) GICP has a fixed covariance epsilon of 0.001");
  g.setInputSource(src);
  g.setInputTarget(tgt);
  const std::vector<Point3f> moved = guessed(source, params.initial);
  double last_delta = INFINITY;
  std::vector<float> d2;
  bool first_call = true;  // registering calls the callback once before any iteration
  std::function<PclGicp::UpdateVisualizerCallbackSignature> record =
      [&](const Cloud&, const pcl::Indices& isrc, const Cloud&, const pcl::Indices& itgt) {
        if (first_call) {
          first_call = false;
          return;
        }
        double prev[16], cur[16];
        to_array(g.previous(), prev);
        to_array(g.current(), cur);
        IcpIteration it;
        it.correspondences = isrc.size();
        pair_distances(moved, target, prev, isrc, itgt, d2);
        double sum = 0;
        for (float v : d2)
          sum += double(v);
        it.mse = isrc.empty() ? 0 : sum / double(isrc.size());
        gm::increment(prev, cur, it.rotation_cosine, it.translation_sq);
        last_delta =
            gm::delta(prev, cur, params.gicp.rotation_epsilon, params.gicp.translation_epsilon);
        out.history.push_back(it);
        report_iteration(progress, out, params);
      };
  g.registerVisualizationCallback(record);
  out.stages.emplace_back("setup", stage.ms());
  stage.reset();
  Cloud aligned;
  g.align(aligned, params.initial);
  out.stages.emplace_back("iterations", stage.ms());
  stage.reset();
  out.transform = g.getFinalTransformation();
  out.iterations = int(out.history.size());
  out.converged = g.hasConverged();
  if (out.converged)
    out.stop = stop_of_state(stop_of(last_delta, out.iterations, params.criteria.max_iterations));
  else
    out.stop = g.last_pairs < 4 ? IcpStop::NoCorrespondences : IcpStop::SolverFailure;
  out.fitness = g.getFitnessScore();
  out.stages.emplace_back("fitness", stage.ms());
}

void host_gicp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
               const IcpParams& params, IcpResult& out) {
  const GicpParams& gp = params.gicp;
  auto src = to_cloud(source), tgt = to_cloud(target);
  pcl::KdTreeFLANN<pcl::PointXYZ> src_tree, tgt_tree;
  src_tree.setInputCloud(src);
  tgt_tree.setInputCloud(tgt);
  const auto covariances = [&](const std::vector<Point3f>& pts,
                               const pcl::KdTreeFLANN<pcl::PointXYZ>& tree) {
    std::vector<double> cov(pts.size() * 9);
    pcl::Indices nn;
    std::vector<float> nd;
    std::vector<float> nb(std::size_t(gp.k) * 3);
    for (std::size_t i = 0; i < pts.size(); ++i) {
      tree.nearestKSearch(pcl::PointXYZ(pts[i].x, pts[i].y, pts[i].z), gp.k, nn, nd);
      for (int j = 0; j < gp.k; ++j) {
        const Point3f& p = pts[std::size_t(nn[std::size_t(j)])];
        nb[3 * std::size_t(j)] = p.x;
        nb[3 * std::size_t(j) + 1] = p.y;
        nb[3 * std::size_t(j) + 2] = p.z;
      }
      gm::regularised_covariance(nb.data(), gp.k, gp.epsilon, &cov[9 * i]);
    }
    return cov;
  };
  const std::vector<double> cov_src = covariances(source, src_tree);
  const std::vector<double> cov_tgt = covariances(target, tgt_tree);
  const std::vector<Point3f> moved = guessed(source, params.initial);
  double guess[16], t[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
  to_array(params.initial, guess);
  const double max_d2 = params.max_correspondence_distance * params.max_correspondence_distance;
  std::vector<int> isrc, itgt;
  std::vector<double> maha(source.size() * 9);
  pcl::Indices nn(1);
  std::vector<float> nd(1);
  int state = im::kNotConverged;
  out.cost_evaluations = 0;
  while (state == im::kNotConverged) {
    double full[16];
    im::multiply(t, guess, full);
    const double r[9] = {full[0], full[1], full[2], full[4], full[5],
                         full[6], full[8], full[9], full[10]};
    float tf[16];
    to_float(t, tf);
    isrc.clear();
    itgt.clear();
    double d2_sum = 0;
    for (std::size_t i = 0; i < moved.size(); ++i) {
      float q[3];
      gm::apply_float(tf, &moved[i].x, q);
      tgt_tree.nearestKSearch(pcl::PointXYZ(q[0], q[1], q[2]), 1, nn, nd);
      if (!(double(nd[0]) < max_d2)) continue;
      const std::size_t j = std::size_t(nn[0]);
      const double w = im::robust_weight(int(params.kernel), params.kernel_scale,
                                         std::sqrt(double(gm::dist2(q, &target[j].x))));
      gm::mahalanobis(r, &cov_src[9 * i], &cov_tgt[9 * j], w, &maha[9 * i]);
      isrc.push_back(int(i));
      itgt.push_back(int(j));
      d2_sum += double(nd[0]);
    }
    if (isrc.size() < 4) {
      state = im::kNoCorrespondences;
      break;
    }
    const double m = double(isrc.size());
    auto eval = [&](const double* x, double& f, double* g) {
      float mf[16];
      gm::float_transform_of(x, mf);
      gm::CostSums s;
      for (std::size_t k = 0; k < isrc.size(); ++k)
        gm::add_cost(s, mf, &moved[std::size_t(isrc[k])].x, &target[std::size_t(itgt[k])].x,
                     &maha[9 * std::size_t(isrc[k])]);
      gm::finish_cost(s, m, x, f, g);
    };
    double x[6];
    gm::state_of(t, x);
    gm::Bfgs<decltype(eval)> bfgs(
        eval, {gp.translation_gradient_tolerance, gp.rotation_gradient_tolerance});
    int inner = 0, evaluations = 0;
    const bool ok = bfgs.minimise(x, gp.max_inner_iterations, inner, evaluations);
    out.cost_evaluations += evaluations;
    if (!ok) {
      state = im::kSolverFailure;
      break;
    }
    double next[16];
    gm::transform_of(x, next);
    IcpIteration it;
    it.correspondences = isrc.size();
    it.mse = d2_sum / m;
    gm::increment(t, next, it.rotation_cosine, it.translation_sq);
    out.history.push_back(it);
    const double delta = gm::delta(t, next, gp.rotation_epsilon, gp.translation_epsilon);
    for (int i = 0; i < 16; ++i)
      t[i] = next[i];
    state = stop_of(delta, int(out.history.size()), params.criteria.max_iterations);
  }
  Eigen::Matrix4d tm;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      tm(r, c) = t[4 * r + c];
  out.transform = tm * params.initial;
  out.iterations = int(out.history.size());
  out.stop = stop_of_state(state);
  out.converged = state == im::kTransform || state == im::kIterations;
  // PCL's getFitnessScore: every source point moved by the result, to its nearest target.
  double f[16];
  to_array(out.transform, f);
  double sum = 0;
  for (const Point3f& p : source) {
    float q[3];
    gm::apply_double(f, &p.x, q);
    tgt_tree.nearestKSearch(pcl::PointXYZ(q[0], q[1], q[2]), 1, nn, nd);
    sum += double(nd[0]);
  }
  out.fitness = sum / double(source.size());
}

}  // namespace cumulus
