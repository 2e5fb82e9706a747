#pragma once
// The ICP tests' cases and references: the bunny, LiDAR and generated pairs with their ground
// truth, PCL's result per case (cached), and a host replica of the GPU loop. Included by
// test_icp.cpp only.
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/registration/default_convergence_criteria.h>

#include <Eigen/Geometry>
#include <cmath>
#include <fstream>
#include <map>

#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "generate/generate.h"
#include "io/io.h"
#include "io/scan_poses.h"
#include "registration/cuda/icp_gpu.h"
#include "registration/icp.h"
#include "registration/icp_math.h"
#include "test_support.h"

using namespace cumulus;
namespace im = cumulus::icp_math;

namespace {

std::vector<Point3f> finite_points(const std::vector<Point3f>& pts, std::size_t step = 1) {
  std::vector<Point3f> out;
  for (std::size_t i = 0; i < pts.size(); ++i)
    if (std::isfinite(pts[i].x) && std::isfinite(pts[i].y) && std::isfinite(pts[i].z))
      out.push_back(pts[i]);
  std::vector<Point3f> thin;
  for (std::size_t i = 0; i < out.size(); i += step)
    thin.push_back(out[i]);
  return thin;
}

struct Case {
  std::vector<Point3f> source, target;
  std::vector<Point3f> target_normals;  // point to plane: PCL's normals of the target (k = 20)
  IcpParams params;
  std::optional<Eigen::Matrix4d> truth;
  const std::vector<Point3f>* normals() const {
    return params.metric == IcpMetric::PointToPlane ? &target_normals : nullptr;
  }
};

// 5 mm of noise on each coordinate: fitness above the rounding floor, and the true transform is
// still the minimum (interleaved samples of sparse rings bias point-to-point ICP).
Point3f with_noise(const Point3f& p, Random& rng) {
  return {p.x + float(rng.normal() * 0.005), p.y + float(rng.normal() * 0.005),
          p.z + float(rng.normal() * 0.005)};
}

// The pair of `target` and `noisy` (the same samples with noise) moved by a known transform: the
// exact answer is known.
Case known_transform_pair(std::vector<Point3f> target, const std::vector<Point3f>& noisy,
                          int max_iterations) {
  Case c;
  c.target = std::move(target);
  const Eigen::Matrix4d truth = rigid_transform(0.5, -0.3, 1.5, 0.2, -0.15, 0.03);
  c.source = transform_points(noisy, truth.inverse());
  c.truth = truth;
  c.params.max_correspondence_distance = 1.0;
  c.params.criteria.max_iterations = max_iterations;
  return c;
}

// A street scene (every fourth sample) and the same scene moved.
Case generated_pair() {
  const auto all = finite_points(generate_street_scene(StreetSceneParams{}).points);
  Random rng(17);
  std::vector<Point3f> target, noisy;
  for (std::size_t i = 0; i < all.size(); i += 4) {
    target.push_back(all[i]);
    noisy.push_back(with_noise(all[i], rng));
  }
  return known_transform_pair(std::move(target), noisy, 60);
}

// The generated pair made dense: every sample of the scene and jittered copies of it (1 cm),
// past `points`. More points than the GPU's sums kernel has threads (at most 256 blocks of 256),
// so each of its threads adds a run of several. It starts near the answer: far from it, steps
// of a few centimetres compound each one-ulp difference of a float step into the next points
// (8 iterations from the generated pair's start ended 0.04 from the truth, and the fitness
// 1.8e-6 from PCL's on an H200).
[[maybe_unused]] Case dense_generated_pair(std::size_t points) {
  const auto all = finite_points(generate_street_scene(StreetSceneParams{}).points);
  Random rng(23);
  std::vector<Point3f> target, noisy;
  for (int copy = 0; target.size() < points; ++copy)
    for (const Point3f& p : all) {
      const double j = copy == 0 ? 0.0 : 0.01;
      target.push_back({float(p.x + rng.normal() * j), float(p.y + rng.normal() * j),
                        float(p.z + rng.normal() * j)});
      noisy.push_back(with_noise(target.back(), rng));
    }
  Case c = known_transform_pair(std::move(target), noisy, 10);
  c.params.initial = rigid_transform(0.1, -0.1, 0.2, 0.02, -0.015, 0.01) * *c.truth;
  return c;
}

// The case made point to plane, on PCL's normals of the target (20 neighbours).
void make_point_to_plane(Case& c) {
  c.params.metric = IcpMetric::PointToPlane;
  PointCloud t;
  t.points = c.target;
  t.width = std::uint32_t(t.points.size());
  NormalParams np;
  np.neighbourhood = Neighbourhood::nearest(20);
  c.target_normals = estimate_normals(t, np, FeatureMethod::Cpu).normals;
}

bool load_case(const QString& given, Case& c) {
  // "NAME plane": the case with the point-to-plane metric on PCL's normals of the target.
  const bool plane = given.endsWith(" plane");
  const QString name = plane ? given.chopped(6) : given;
  if (plane) {
    if (!load_case(name, c)) return false;
    make_point_to_plane(c);
    return true;
  }
  auto path = [&](const char* rel) { return test::sharedDataFile(rel); };
  auto have = [&](const char* rel) { return !path(rel).isEmpty(); };
  if (name == "bunny") {
    // A copy of the data without its pose file skips the case, as one without the scans does.
    if (!have("bunny/bun000.ply") || !have("bunny/bun045.ply") || !have("bunny/bun.conf"))
      return false;
    c.target = finite_points(load_cloud(path("bunny/bun000.ply").toStdString()).points, 4);
    c.source = finite_points(load_cloud(path("bunny/bun045.ply").toStdString()).points, 4);
    c.truth = relative_scan_pose(path("bunny/bun.conf").toStdString(), "bun045.ply", "bun000.ply");
    c.params.max_correspondence_distance = 0.01;
    c.params.criteria.max_iterations = 30;
    c.params.initial = rigid_transform(3, -4, 2, 0.006, -0.005, 0.004) * *c.truth;
  } else if (name == "lidar-pair") {
    if (!have("lidar-pair/251371071.pcd") || !have("lidar-pair/251370668.pcd") ||
        !have("lidar-pair/relative.txt"))
      return false;
    c.source = finite_points(load_cloud(path("lidar-pair/251371071.pcd").toStdString()).points, 3);
    c.target = finite_points(load_cloud(path("lidar-pair/251370668.pcd").toStdString()).points, 3);
    c.truth = read_matrix_file(path("lidar-pair/relative.txt").toStdString());
    c.params.max_correspondence_distance = 1.0;
    c.params.criteria.max_iterations = 25;
  } else if (name == "kitti") {
    if (!have("kitti/000000.bin") || !have("kitti/000001.bin")) return false;
    c.source = finite_points(load_cloud(path("kitti/000001.bin").toStdString()).points, 3);
    c.target = finite_points(load_cloud(path("kitti/000000.bin").toStdString()).points, 3);
    c.params.max_correspondence_distance = 1.0;
    c.params.criteria.max_iterations = 20;
  } else if (name == "generated") {
    c = generated_pair();
  } else if (name == "stops-on-transform") {
    c = generated_pair();
    c.params.criteria.transformation_epsilon = 1e-6;
    c.params.criteria.fitness_epsilon = -1;
  } else if (name == "stops-on-fitness") {
    c = generated_pair();
    c.params.criteria.transformation_epsilon = 0;
    c.params.criteria.fitness_epsilon = 1e-3;
  } else if (name == "no-correspondences") {
    c = generated_pair();
    c.params.initial = rigid_transform(0, 0, 0, 500, 0, 0);
  } else if (name == "fails-at-max-iterations") {
    c = generated_pair();
    c.params.criteria.max_iterations = 2;
    c.params.criteria.failure_after_max_iterations = true;
  } else {
    return false;
  }
  return true;
}

const QStringList kCases = {"bunny",
                            "lidar-pair",
                            "kitti",
                            "generated",
                            "stops-on-transform",
                            "stops-on-fitness",
                            "no-correspondences",
                            "fails-at-max-iterations",
                            "bunny plane",
                            "lidar-pair plane",
                            "kitti plane",
                            "generated plane",
                            "stops-on-transform plane"};

// PCL once per case: every method is compared with the same run.
[[maybe_unused]] const IcpResult& pcl_result(const QString& name, const Case& c) {
  static std::map<QString, IcpResult> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu)).first;
  return it->second;
}

// The bar: same iterations and stop reason, transform within 1e-5, fitness 1e-6 relative.
// The bunny case with a third of its source points replaced by clutter: points 2-8 mm off the
// surface in random directions (a seeded stream), as spray, dust or a passing object would add.
[[maybe_unused]] Case cluttered_bunny() {
  Case c;
  if (!load_case("bunny", c)) return Case{};
  Random rng(5);
  for (std::size_t i = 0; i < c.source.size(); i += 3) {
    double v[3] = {rng.normal(), rng.normal(), rng.normal()};
    const double len = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    const double r = rng.uniform(0.002, 0.008) / len;
    c.source[i] = {float(c.source[i].x + v[0] * r), float(c.source[i].y + v[1] * r),
                   float(c.source[i].z + v[2] * r)};
  }
  return c;
}

[[maybe_unused]] void expect_same(const IcpResult& ref, const IcpResult& r) {
  QCOMPARE(stop_name(r.stop), stop_name(ref.stop));
  QCOMPARE(r.iterations, ref.iterations);
  QCOMPARE(r.converged, ref.converged);
  QCOMPARE(r.history.size(), ref.history.size());
  for (std::size_t i = 0; i < r.history.size(); ++i)
    QCOMPARE(r.history[i].correspondences, ref.history[i].correspondences);
  const double dt = (r.transform - ref.transform).cwiseAbs().maxCoeff();
  QVERIFY2(dt <= 1e-5, qPrintable(QString("transform differs by %1").arg(dt)));
  const double df = std::abs(r.fitness - ref.fitness) / std::abs(ref.fitness);
  QVERIFY2(
      df <= 1e-6,
      qPrintable(
          QString("fitness %1 vs %2").arg(r.fitness, 0, 'g', 12).arg(ref.fitness, 0, 'g', 12)));
}

// The GPU loop's arithmetic on the host: the same sums, solve and convergence state machine as
// icp_gpu.cu, with FLANN for the correspondences. Agreeing with PCL here proves the device
// arithmetic on machines without a GPU.
// Records a replica's iteration (n pairs, squared distances summing to d2) and returns the
// convergence state after it.
int record_iteration(IcpResult& out, const im::Criteria& k, im::ConvergenceState& conv,
                     int iterations, const double* step, double n, double d2) {
  IcpIteration h;
  h.correspondences = std::size_t(n);
  h.mse = d2 / n;
  const int state = im::check_convergence(k, conv, iterations, step, h.mse, &h.rotation_cosine,
                                          &h.translation_sq);
  out.history.push_back(h);
  return state;
}

// A replica's result: the final transform, the stop, and PCL's fitness score.
IcpResult finish_replica(const Case& c, const double* final_t, int iterations, int state,
                         IcpResult out, pcl::KdTreeFLANN<pcl::PointXYZ>& tree) {
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 4; ++col)
      out.transform(r, col) = final_t[4 * r + col];
  out.iterations = iterations;
  out.stop = stop_of_state(state);
  out.converged =
      out.stop != IcpStop::NoCorrespondences && out.stop != IcpStop::FailureAfterMaxIterations;
  pcl::Indices idx(1);
  std::vector<float> d2(1);
  double sum = 0;
  for (const auto& p : transform_points(c.source, out.transform)) {
    tree.nearestKSearch(pcl::PointXYZ(p.x, p.y, p.z), 1, idx, d2);
    sum += d2[0];
  }
  out.fitness = sum / double(c.source.size());
  return out;
}

IcpResult host_replica_plane(const Case& c);

[[maybe_unused]] IcpResult host_replica(const Case& c) {
  if (c.params.metric == IcpMetric::PointToPlane) return host_replica_plane(c);
  pcl::PointCloud<pcl::PointXYZ>::Ptr target(new pcl::PointCloud<pcl::PointXYZ>);
  for (const auto& p : c.target)
    target->push_back(pcl::PointXYZ(p.x, p.y, p.z));
  pcl::KdTreeFLANN<pcl::PointXYZ> tree;
  tree.setInputCloud(target);
  const im::Criteria k = device_criteria(c.params.criteria);
  im::ConvergenceState conv;
  double final_t[16];
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 4; ++col)
      final_t[4 * r + col] = c.params.initial(r, col);
  std::vector<Eigen::Vector4f> cur;
  const Eigen::Matrix4f guess = c.params.initial.cast<float>();
  for (const auto& p : c.source) {
    const Eigen::Vector4f v(p.x, p.y, p.z, 1.f);
    cur.push_back(c.params.initial == Eigen::Matrix4d::Identity() ? v : Eigen::Vector4f(guess * v));
  }
  const double centre[3] = {c.target[0].x, c.target[0].y, c.target[0].z};
  const double max_d2 = c.params.max_correspondence_distance * c.params.max_correspondence_distance;
  IcpResult out;
  int state = im::kNotConverged, iterations = 0;
  pcl::Indices idx(1);
  std::vector<float> d2(1);
  while (state == im::kNotConverged) {
    im::Sums sums;
    for (const auto& p : cur) {
      tree.nearestKSearch(pcl::PointXYZ(p.x(), p.y(), p.z()), 1, idx, d2);
      if (double(d2[0]) > max_d2) continue;
      const auto& t = (*target)[std::size_t(idx[0])];
      const double s3[3] = {p.x() - centre[0], p.y() - centre[1], p.z() - centre[2]};
      const double t3[3] = {t.x - centre[0], t.y - centre[1], t.z - centre[2]};
      im::add(sums, s3, t3, d2[0]);
    }
    if (sums.n < 3) {
      state = im::kNoCorrespondences;
      break;
    }
    double step[16];
    im::estimate_rigid(sums, centre, step);
    im::multiply(step, final_t, final_t);
    Eigen::Matrix4f stepf;
    for (int r = 0; r < 4; ++r)
      for (int col = 0; col < 4; ++col)
        stepf(r, col) = float(step[4 * r + col]);
    for (auto& p : cur)
      p = stepf * p;
    state = record_iteration(out, k, conv, ++iterations, step, sums.n, sums.d2);
  }
  return finish_replica(c, final_t, iterations, state, std::move(out), tree);
}

// PCL's transformPointCloudWithNormals with a double matrix, as icp_gpu.cu's apply_double.
Point3f apply_double(const double* m, const Point3f& p) {
  const auto row = [&](int r) {
    double acc = m[4 * r + 3];
    acc = double(p.x) * m[4 * r] + acc;
    acc = double(p.y) * m[4 * r + 1] + acc;
    acc = double(p.z) * m[4 * r + 2] + acc;
    return float(acc);
  };
  return {row(0), row(1), row(2)};
}

// The GPU's point-to-plane loop on the host: icp_math's plane sums, solve and transform, with
// FLANN for the correspondences.
IcpResult host_replica_plane(const Case& c) {
  pcl::PointCloud<pcl::PointXYZ>::Ptr target(new pcl::PointCloud<pcl::PointXYZ>);
  for (const auto& p : c.target)
    target->push_back(pcl::PointXYZ(p.x, p.y, p.z));
  pcl::KdTreeFLANN<pcl::PointXYZ> tree;
  tree.setInputCloud(target);
  const im::Criteria k = device_criteria(c.params.criteria);
  im::ConvergenceState conv;
  double final_t[16], step[16];
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 4; ++col)
      final_t[4 * r + col] = step[4 * r + col] = c.params.initial(r, col);
  std::vector<Point3f> cur = c.source;
  if (c.params.initial != Eigen::Matrix4d::Identity())
    for (auto& p : cur)
      p = apply_double(step, p);
  const double max_d2 = c.params.max_correspondence_distance * c.params.max_correspondence_distance;
  IcpResult out;
  int state = im::kNotConverged, iterations = 0;
  pcl::Indices idx(1);
  std::vector<float> d2(1);
  while (state == im::kNotConverged) {
    im::PlaneSums sums;
    for (const auto& p : cur) {
      tree.nearestKSearch(pcl::PointXYZ(p.x, p.y, p.z), 1, idx, d2);
      if (double(d2[0]) > max_d2) continue;
      const Point3f& t = c.target[std::size_t(idx[0])];
      const Point3f& n = c.target_normals[std::size_t(idx[0])];
      if (!is_finite(n)) {
        sums.n += 1;
        sums.d2 += d2[0];
        continue;
      }
      const float s3[3] = {p.x, p.y, p.z}, t3[3] = {t.x, t.y, t.z}, n3[3] = {n.x, n.y, n.z};
      im::add_plane(sums, s3, t3, n3, d2[0]);
    }
    if (sums.n < 3) {
      state = im::kNoCorrespondences;
      break;
    }
    double x[6];
    im::solve_plane(sums, x);
    im::plane_transform(x, step);
    im::multiply(step, final_t, final_t);
    for (auto& p : cur)
      p = apply_double(step, p);
    state = record_iteration(out, k, conv, ++iterations, step, sums.n, sums.d2);
  }
  return finish_replica(c, final_t, iterations, state, std::move(out), tree);
}

[[maybe_unused]] std::vector<Eigen::Vector3d> random_vectors(Random& rng, int n, double flat) {
  std::vector<Eigen::Vector3d> v;
  for (int i = 0; i < n; ++i)
    v.emplace_back(rng.normal(), rng.normal() * 0.7, rng.normal() * flat);
  return v;
}

}  // namespace
