// ICP: the shared iteration arithmetic against Eigen's Umeyama and PCL's convergence criteria, a
// host replica of the GPU loop against PCL, PCL against ground truth, stop reasons, bad input,
// and every GPU method against PCL (GPU tests skip where no GPU can be used).
#include <pcl/kdtree/kdtree_flann.h>
#include <pcl/registration/default_convergence_criteria.h>

#include <Eigen/Geometry>
#include <cmath>
#include <fstream>
#include <map>

#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "registration/cuda/icp_gpu.h"
#include "registration/icp.h"
#include "registration/icp_math.h"
#include "test_support.h"

#include "icp_cases.h"

// A case's points as clouds of their own, without normals.
PointCloud cloud_of(const std::vector<Point3f>& points) {
  PointCloud c;
  c.points = points;
  c.width = std::uint32_t(points.size());
  return c;
}

class TestIcp : public QObject {
  Q_OBJECT

 private slots:
  void rigid_estimate_equals_eigen_umeyama_from_any_start() {
    Random rng(3);
    for (int trial = 0; trial < 200; ++trial) {
      // Volumes, planes (rank 2) and noisy reflections of one another.
      const double flat = trial % 3 == 0 ? 0.0 : 0.5;
      const auto src = random_vectors(rng, 50, flat);
      const Eigen::Matrix4d truth =
          rigid_transform(rng.normal() * 40, rng.normal() * 40, rng.normal() * 40, rng.normal(),
                          rng.normal(), rng.normal());
      Eigen::Matrix<double, 3, Eigen::Dynamic> a(3, 50), b(3, 50);
      const double centre[3] = {0.3, -0.2, 0.1};
      im::Sums sums;
      for (int i = 0; i < 50; ++i) {
        Eigen::Vector3d t =
            truth.topLeftCorner<3, 3>() * src[std::size_t(i)] + truth.topRightCorner<3, 1>();
        if (trial % 5 == 1) t.z() = -t.z() + rng.normal() * 0.01;  // far from rigid
        a.col(i) = src[std::size_t(i)];
        b.col(i) = t;
        const double s3[3] = {a(0, i) - centre[0], a(1, i) - centre[1], a(2, i) - centre[2]};
        const double t3[3] = {b(0, i) - centre[0], b(1, i) - centre[1], b(2, i) - centre[2]};
        im::add(sums, s3, t3, 0);
      }
      const Eigen::Matrix4d eigen = Eigen::umeyama(a, b, false);
      // From the identity and, as the GPU loop does, from the V of an earlier solve (any
      // rotation here): the same transform, and V stays a rotation.
      const Eigen::Matrix4d start =
          rigid_transform(rng.normal() * 90, rng.normal() * 90, rng.normal() * 90, 0, 0, 0);
      double v[9];
      for (int i = 0; i < 9; ++i)
        v[i] = start(i % 3, i / 3);
      // And with Newton's steps from that rotation (which take the Jacobi sweeps' place
      // wherever they cannot vouch for their answer).
      double rot[9];
      for (int i = 0; i < 9; ++i)
        rot[i] = start(i / 3, i % 3);
      for (double* warm : {static_cast<double*>(nullptr), v, rot}) {
        double m[16];
        if (warm == rot)
          im::estimate_rigid(sums, centre, m, nullptr, rot);
        else
          im::estimate_rigid(sums, centre, m, warm);
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c)
            QVERIFY2(std::abs(m[4 * r + c] - eigen(r, c)) < 1e-9,
                     qPrintable(QString("trial %1 (%2,%3), %4: %5 vs %6")
                                    .arg(trial)
                                    .arg(r)
                                    .arg(c)
                                    .arg(warm == rot ? "newton"
                                         : warm      ? "warm"
                                                     : "cold")
                                    .arg(m[4 * r + c])
                                    .arg(eigen(r, c))));
      }
      const Eigen::Map<const Eigen::Matrix3d> vm(v), rm(rot);
      QVERIFY((vm.transpose() * vm - Eigen::Matrix3d::Identity()).norm() < 1e-12);
      QVERIFY((rm.transpose() * rm - Eigen::Matrix3d::Identity()).norm() < 1e-12);
    }
  }

  void newton_rotation_is_the_jacobi_rotation_or_declines() {
    Random rng(11);
    int taken = 0;
    for (int trial = 0; trial < 20000; ++trial) {
      // a = U diag(s) V^T: volumes, planes (s3 = 0), the reflected kind (s3 < 0), ill-conditioned
      // ones down to 1e-3 and rank one; scaled over twelve orders of magnitude.
      const Eigen::Matrix3d u =
          rigid_transform(rng.normal() * 90, rng.normal() * 90, rng.normal() * 90, 0, 0, 0)
              .topLeftCorner<3, 3>();
      const Eigen::Matrix3d v =
          rigid_transform(rng.normal() * 90, rng.normal() * 90, rng.normal() * 90, 0, 0, 0)
              .topLeftCorner<3, 3>();
      const double s2 = trial % 9 == 0 ? 0.0 : std::pow(10.0, -3 * rng.uniform());
      double s3 = trial % 4 == 0 ? 0.0 : s2 * rng.uniform();
      if (trial % 3 == 0) s3 = -s3;
      const double scale = std::pow(10.0, rng.uniform(-6, 6));
      const Eigen::Matrix3d am =
          scale * u * Eigen::Vector3d(1, s2, s3).asDiagonal() * v.transpose();
      double a[9];
      for (int i = 0; i < 9; ++i)
        a[i] = am(i / 3, i % 3);
      double jacobi[9];
      im::umeyama_rotation(a, jacobi);
      // Starts from the answer turned by 1e-9 to 1 radian about a random axis.
      const double turn = std::pow(10.0, rng.uniform(-9, 0));
      const Eigen::Vector3d axis =
          Eigen::Vector3d(rng.normal(), rng.normal(), rng.normal()).normalized();
      const Eigen::Matrix3d start =
          Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(jacobi) *
          Eigen::AngleAxisd(turn, axis).toRotationMatrix();
      double r[9];
      for (int i = 0; i < 9; ++i)
        r[i] = start(i / 3, i % 3);
      const bool took = im::umeyama_rotation_newton(a, r);
      if (!took) {
        for (int i = 0; i < 9; ++i)
          QCOMPARE(r[i], start(i / 3, i % 3));  // declined: the start untouched
        // Rank one has no unique answer; there it must always decline.
        continue;
      }
      QVERIFY2(s2 > 0, qPrintable(QString("trial %1: rank one taken").arg(trial)));
      ++taken;
      for (int i = 0; i < 9; ++i)
        QVERIFY2(std::abs(r[i] - jacobi[i]) < 1e-11,
                 qPrintable(QString("trial %1 entry %2: %3 vs %4 (s %5 %6, turn %7)")
                                .arg(trial)
                                .arg(i)
                                .arg(r[i], 0, 'g', 17)
                                .arg(jacobi[i], 0, 'g', 17)
                                .arg(s2)
                                .arg(s3)
                                .arg(turn)));
    }
    // Every start near a clear answer is taken: ICP's case.
    QVERIFY2(taken > 14000, qPrintable(QString("%1 of 20000 taken").arg(taken)));
  }

  void newton_rotation_declines_nans() {
    double a[9] = {1, 0, 0, 0, 1, 0, 0, 0, NAN};
    double r[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    QVERIFY(!im::umeyama_rotation_newton(a, r));
  }

  void convergence_test_replays_pcl() {
    // Drive PCL's DefaultConvergenceCriteria and ours with the same steps and errors.
    Random rng(5);
    for (int trial = 0; trial < 300; ++trial) {
      int iterations = 0;
      Eigen::Matrix4d step = Eigen::Matrix4d::Identity();
      pcl::Correspondences pairs(1);
      pcl::registration::DefaultConvergenceCriteria<double> pcl(iterations, step, pairs);
      im::Criteria k;
      k.max_iterations = 1 + trial % 12;
      k.translation_threshold = trial % 4 == 0 ? 0 : 1e-6;
      k.rotation_threshold = 1 - k.translation_threshold;
      k.mse_relative = trial % 3 == 0 ? -DBL_MAX : 1e-3;
      k.failure_after_max_iterations = trial % 7 == 0;
      pcl.setMaximumIterations(k.max_iterations);
      pcl.setTranslationThreshold(k.translation_threshold);
      pcl.setRotationThreshold(k.rotation_threshold);
      pcl.setRelativeMSE(k.mse_relative);
      pcl.setFailureAfterMaximumIterations(k.failure_after_max_iterations);
      im::ConvergenceState ours;
      float mse = 1.0f;
      for (int it = 1; it <= 20; ++it) {
        iterations = it;
        const double scale = std::pow(10.0, -double(it) * (1 + trial % 3));
        step = rigid_transform(rng.normal() * scale, 0, 0, rng.normal() * scale, 0, 0);
        if (rng.uniform() < 0.2) step = Eigen::Matrix4d::Identity();
        mse *= float(rng.uniform() < 0.3 ? 1.0 : 0.5 + 0.5 * rng.uniform());
        pairs[0].distance = mse;
        const bool pcl_done = pcl.hasConverged();
        const int pcl_state = int(pcl.getConvergenceState());
        double m[16], cos_angle, tsq;
        for (int r = 0; r < 4; ++r)
          for (int c = 0; c < 4; ++c)
            m[4 * r + c] = step(r, c);
        const int state = im::check_convergence(k, ours, it, m, double(mse), &cos_angle, &tsq);
        QCOMPARE(state, pcl_state);
        QCOMPARE(state == im::kIterations || state == im::kTransform || state == im::kAbsMse ||
                     state == im::kRelMse,
                 pcl_done);
        if (state != im::kNotConverged) break;
      }
    }
  }

  void host_replica_equals_pcl_data() {
    QTest::addColumn<QString>("name");
    // The LiDAR frames take minutes here on two cores; gpu_equals_pcl runs them on the device.
    for (const auto& c : kCases)
      if (!c.startsWith("kitti") && !c.startsWith("lidar-pair")) QTest::newRow(qPrintable(c)) << c;
  }
  void host_replica_equals_pcl() {
    QFETCH(QString, name);
    Case c;
    if (!load_case(name, c)) QSKIP(qPrintable("data for " + name + " not found"));
    expect_same(pcl_result(name, c), host_replica(c));
  }

  void pcl_finds_the_known_transforms() {
    Case c = generated_pair();
    c.params.criteria.max_iterations = 150;
    c.params.criteria.transformation_epsilon = 1e-12;
    const IcpResult r = icp(c.source, c.target, c.params, IcpMethod::Cpu);
    const Eigen::Matrix4d e = c.truth->inverse() * r.transform;
    QVERIFY2(
        rotation_angle_deg(e) < 0.05 && translation_norm(e) < 5e-3,
        qPrintable(
            QString("off by %1 deg, %2 m").arg(rotation_angle_deg(e)).arg(translation_norm(e))));
    QVERIFY(r.converged);
    QVERIFY(r.fitness < 1e-3);
    // The error curve falls.
    QVERIFY(r.history.front().mse > r.history.back().mse);
  }

  void pcl_aligns_the_bunny_near_its_ground_truth() {
    Case c;
    if (!load_case("bunny", c)) QSKIP("bunny data not found");
    const IcpResult& r = pcl_result("bunny", c);
    const Eigen::Matrix4d before = c.truth->inverse() * c.params.initial;
    const Eigen::Matrix4d after = c.truth->inverse() * r.transform;
    // From 5 degrees off to within 1.5 degrees and 2 mm of the scanner's registration.
    QVERIFY(rotation_angle_deg(before) > 4.5);
    QVERIFY2(
        rotation_angle_deg(after) < 1.5 && translation_norm(after) < 0.002,
        qPrintable(
            QString("%1 deg, %2 m").arg(rotation_angle_deg(after)).arg(translation_norm(after))));
  }

  void stop_reasons_follow_pcl() {
    for (const char* name : {"stops-on-transform", "stops-on-fitness", "no-correspondences",
                             "fails-at-max-iterations"}) {
      Case c;
      QVERIFY(load_case(name, c));
      const IcpResult& r = pcl_result(name, c);
      const IcpStop expected = QString(name) == "stops-on-transform" ? IcpStop::Transform
                               : QString(name) == "stops-on-fitness" ? IcpStop::RelativeMse
                               : QString(name) == "no-correspondences"
                                   ? IcpStop::NoCorrespondences
                                   : IcpStop::FailureAfterMaxIterations;
      QCOMPARE(stop_name(r.stop), stop_name(expected));
      QCOMPARE(r.converged, expected == IcpStop::Transform || expected == IcpStop::RelativeMse);
    }
    Case c;
    load_case("no-correspondences", c);
    QCOMPARE(pcl_result("no-correspondences", c).iterations, 0);
  }

  void point_to_plane_finds_the_known_transform_in_fewer_iterations() {
    Case c;
    QVERIFY(load_case("generated plane", c));
    c.params.criteria.max_iterations = 150;
    c.params.criteria.transformation_epsilon = 1e-12;
    const IcpResult plane = icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu);
    const Eigen::Matrix4d e = c.truth->inverse() * plane.transform;
    QVERIFY2(
        rotation_angle_deg(e) < 0.05 && translation_norm(e) < 5e-3,
        qPrintable(
            QString("off by %1 deg, %2 m").arg(rotation_angle_deg(e)).arg(translation_norm(e))));
    c.params.metric = IcpMetric::PointToPoint;
    const IcpResult point = icp(c.source, c.target, c.params, IcpMethod::Cpu);
    qInfo("generated street: point to plane %d iterations, point to point %d", plane.iterations,
          point.iterations);
    QVERIFY(plane.iterations < point.iterations);
  }

  void point_to_plane_estimates_the_targets_normals_when_it_has_none() {
    Case c;
    QVERIFY(load_case("generated plane", c));
    const PointCloud source = cloud_of(c.source);
    PointCloud target = cloud_of(c.target);
    const IcpResult own = icp(source, target, c.params, IcpMethod::Cpu);
    QCOMPARE(own.stages.front().first, std::string("normals"));
    // The same normals as PCL's NormalEstimation with k = 20, so the same registration.
    expect_same(pcl_result("generated plane", c), own);
    target.normals = c.target_normals;
    expect_same(own, icp(source, target, c.params, IcpMethod::Cpu));
  }

  // PCL's loops (point to point, point to plane, GICP) report each iteration as (done,
  // max_iterations); followed to the end they give the same registration to the bit, and told to
  // stop they end with Cancelled right after the iteration that was told.
  void cpu_runs_report_each_iteration_and_stop() {
    for (const IcpMetric metric :
         {IcpMetric::PointToPoint, IcpMetric::PointToPlane, IcpMetric::Gicp}) {
      Case c;
      QVERIFY(load_case("generated plane", c));
      c.params.metric = metric;
      c.params.criteria.max_iterations = 40;
      c.params.criteria.transformation_epsilon = 1e-12;
      const QString what = metric_name(metric);
      const IcpResult plain = icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu);
      QVERIFY2(plain.iterations >= 3, qPrintable(what));
      std::vector<int> seen;
      int most = 0;
      const IcpResult followed = icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu,
                                     [&](int done, int max_iterations) {
                                       seen.push_back(done);
                                       most = max_iterations;
                                       return true;
                                     });
      QVERIFY2((followed.transform.array() == plain.transform.array()).all(), qPrintable(what));
      QCOMPARE(followed.iterations, plain.iterations);
      QCOMPARE(stop_name(followed.stop), stop_name(plain.stop));
      QCOMPARE(int(seen.size()), plain.iterations);
      for (std::size_t k = 0; k < seen.size(); ++k)
        QCOMPARE(seen[k], int(k) + 1);
      QCOMPARE(most, 40);
      seen.clear();
      try {
        icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu, [&](int done, int) {
          seen.push_back(done);
          return done < 2;
        });
        QFAIL(qPrintable(what + ": expected Cancelled"));
      } catch (const Cancelled& e) {
        QCOMPARE(QString(e.what()), QString("registration cancelled"));
      }
      QCOMPARE(seen, std::vector<int>({1, 2}));
    }
  }

  // Point to plane on a target without normals estimates them first with PCL: a stop asked for
  // then ends the run before its first iteration, between two of the normals' searches.
  void cpu_point_to_plane_stops_while_estimating_normals() {
    Case c;
    QVERIFY(load_case("generated plane", c));
    std::vector<int> seen;
    try {
      icp(cloud_of(c.source), cloud_of(c.target), c.params, IcpMethod::Cpu, [&](int done, int) {
        seen.push_back(done);
        return false;
      });
      QFAIL("expected Cancelled");
    } catch (const Cancelled& e) {
      QCOMPARE(QString(e.what()), QString("normal estimation cancelled"));
    }
    QCOMPARE(seen, std::vector<int>({0}));
  }

  void point_to_plane_bad_input_is_a_clear_error() {
    Case c;
    QVERIFY(load_case("generated plane", c));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, c.params, IcpMethod::Cpu));
    std::vector<Point3f> short_normals(c.target_normals.begin(), c.target_normals.begin() + 5);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             icp(c.source, c.target, &short_normals, c.params, IcpMethod::Cpu));
    PointCloud s, t;
    s.points = c.source;
    t.points = c.target;
    s.width = std::uint32_t(s.points.size());
    t.width = std::uint32_t(t.points.size());
    IcpParams p = c.params;
    p.normals_k = 1;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(s, t, p, IcpMethod::Cpu));
    QCOMPARE(parse_metric("point-to-plane"), std::optional(IcpMetric::PointToPlane));
    QVERIFY(!parse_metric("plane"));
  }

  void bad_input_is_a_clear_error() {
    Case c = generated_pair();
    IcpParams p = c.params;
    p.max_correspondence_distance = -1;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, p, IcpMethod::Cpu));
    p = c.params;
    p.max_correspondence_distance = NAN;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, p, IcpMethod::Cpu));
    p = c.params;
    p.criteria.max_iterations = 0;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, p, IcpMethod::Cpu));
    p = c.params;
    p.initial(0, 0) = 2;  // a scale is not rigid
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, p, IcpMethod::Cpu));
    p = c.params;
    const std::vector<Point3f> two = {{0, 0, 0}, {1, 0, 0}, {NAN, 0, 0}};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(two, c.target, p, IcpMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, {}, p, IcpMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_matrix("1 2 3"));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_matrix("1 0 0 0 0 1 0 0 0 0 1 0 0 0 0 x"));
    QVERIFY_THROWS_EXCEPTION(IoError, read_matrix_file("/nonexistent/matrix.txt"));
    QCOMPARE(parse_matrix("[1, 0, 0, 2; 0 1 0 3\n0 0 1 4\n0 0 0 1]")(1, 3), 3.0);
  }

  void non_finite_points_are_left_out_and_counted() {
    Case c = generated_pair();
    auto source = c.source;
    source.insert(source.begin() + 10, Point3f{NAN, 1, 2});
    source.push_back(Point3f{INFINITY, 0, 0});
    const IcpResult r = icp(source, c.target, c.params, IcpMethod::Cpu);
    QCOMPARE(r.source_dropped, std::size_t(2));
    QCOMPARE(r.source_points, c.source.size());
    expect_same(icp(c.source, c.target, c.params, IcpMethod::Cpu), r);
  }

  void utm_origins_give_world_transforms() {
    // The same pair stored far from the origin with a local origin per cloud.
    Case c = generated_pair();
    PointCloud s, t;
    s.points = c.source;
    t.points = c.target;
    const IcpResult plain = icp(s, t, c.params, IcpMethod::Cpu);
    s.origin = {500000.0, 4000000.0, 100.0};
    t.origin = {500000.0, 4000000.0, 100.0};
    // Shift the source's local frame by 3 m; its world points stay where they were.
    s.origin[0] += 3.0;
    for (auto& p : s.points)
      p.x -= 3.0f;
    const IcpResult far = icp(s, t, c.params, IcpMethod::Cpu);
    // World transform = T(o) * plain * T(-o): its rotation equals, translation moves.
    Eigen::Matrix4d to = Eigen::Matrix4d::Identity(), back = Eigen::Matrix4d::Identity();
    to.topRightCorner<3, 1>() = Eigen::Vector3d(500000.0, 4000000.0, 100.0);
    back.topRightCorner<3, 1>() = -to.topRightCorner<3, 1>();
    const Eigen::Matrix4d expected = to * plain.transform * back;
    QVERIFY((far.transform.topLeftCorner<3, 3>() - expected.topLeftCorner<3, 3>())
                .cwiseAbs()
                .maxCoeff() < 1e-5);
    QVERIFY((far.transform.topRightCorner<3, 1>() - expected.topRightCorner<3, 1>()).norm() < 1e-2);
    // Moving the source cloud by the result puts it on the target.
    const PointCloud moved = transformed(s, far.transform);
    double worst = 0;
    for (std::size_t i = 0; i < moved.size(); i += 97) {
      const double wx = moved.origin[0] + moved.points[i].x;
      const Eigen::Vector4d expect =
          plain.transform * Eigen::Vector4d(c.source[i].x, c.source[i].y, c.source[i].z, 1);
      worst = std::max(worst, std::abs(wx - (500000.0 + expect.x())));
    }
    QVERIFY2(worst < 0.01, qPrintable(QString::number(worst)));
  }

  // A third of the source replaced by clutter near the surface: the kernels weigh it down and
  // end nearer the truth than PCL's plain least squares.
  void robust_kernels_weigh_clutter_down() {
    Case c = cluttered_bunny();
    if (c.source.empty()) QSKIP("bunny data not found");
    const auto error = [&](const IcpParams& p) {
      const IcpResult r = icp(c.source, c.target, p, IcpMethod::Cpu);
      return rotation_angle_deg(c.truth->inverse() * r.transform);
    };
    const double plain = error(c.params);
    // Huber at the clutter's scale; Tukey, which drops every pair beyond its scale, at the
    // start's (the 1 cm max distance): at 2-4 mm it kept too few pairs 5 degrees off and ended
    // 6.5-7.5 degrees off (measured).
    for (const RobustKernel k : {RobustKernel::Huber, RobustKernel::Tukey}) {
      IcpParams p = c.params;
      p.kernel = k;
      p.kernel_scale = k == RobustKernel::Huber ? 0.002 : 0.01;
      const double robust = error(p);
      qInfo("%s: %.3f deg from the truth, %.3f without a kernel", kernel_name(k), robust, plain);
      QVERIFY(robust < plain);
    }
  }

  void a_kernel_needs_a_scale() {
    Case c = generated_pair();
    c.params.kernel = RobustKernel::Tukey;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, c.params, IcpMethod::Cpu));
    c.params.kernel_scale = NAN;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(c.source, c.target, c.params, IcpMethod::Cpu));
    QCOMPARE(parse_kernel("huber").value(), RobustKernel::Huber);
    QVERIFY(!parse_kernel("cauchy"));
  }

  // Without a kernel every pair weighs 1 and the weighted estimation is PCL's own result.
  void a_weighted_estimation_of_ones_is_pcls() {
    Case c = generated_pair();
    const IcpResult plain = icp(c.source, c.target, c.params, IcpMethod::Cpu);
    c.params.kernel = RobustKernel::Huber;
    c.params.kernel_scale = 1e6;  // every residual within: every weight 1
    const IcpResult ones = icp(c.source, c.target, c.params, IcpMethod::Cpu);
    QCOMPARE(ones.iterations, plain.iterations);
    QVERIFY((ones.transform - plain.transform).cwiseAbs().maxCoeff() < 1e-9);
  }

  void gpu_kernels_equal_the_cpus_data() {
    test::add_columns<QString, QString>({"kernel", "metric"});
    for (const char* k : {"huber", "tukey"})
      for (const char* m : {"point-to-point", "point-to-plane"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(k, m))) << QString(k) << QString(m);
  }
  void gpu_kernels_equal_the_cpus() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, kernel);
    QFETCH(QString, metric);
    Case c = cluttered_bunny();
    if (c.source.empty()) QSKIP("bunny data not found");
    c.params.kernel = *parse_kernel(kernel.toStdString());
    c.params.kernel_scale = c.params.kernel == RobustKernel::Huber ? 0.002 : 0.01;
    if (*parse_metric(metric.toStdString()) == IcpMetric::PointToPlane) make_point_to_plane(c);
    const IcpResult cpu = icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu);
    for (const IcpMethod m : {IcpMethod::Gpu, IcpMethod::GpuKdTree}) {
      const IcpResult gpu = icp(c.source, c.target, c.normals(), c.params, m);
      QCOMPARE(gpu.iterations, cpu.iterations);
      QCOMPARE(stop_name(gpu.stop), stop_name(cpu.stop));
      const double dt = (gpu.transform - cpu.transform).cwiseAbs().maxCoeff();
      QVERIFY2(dt <= 1e-6,
               qPrintable(QString("%1: transform differs by %2").arg(method_name(m)).arg(dt)));
    }
  }

  // The sums kernel's threads take runs of consecutive points (two loaded ahead, the rest one
  // after another) and list them for the next search in their own order: PCL's answer however
  // long the runs, point to point and point to plane.
  void gpu_sums_of_runs_of_points_equal_pcl_data() {
    test::add_columns<QString>({"metric"});
    for (const char* m : {"point-to-point", "point-to-plane"})
      QTest::newRow(m) << QString(m);
  }
  void gpu_sums_of_runs_of_points_equal_pcl() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, metric);
    Case c = dense_generated_pair(200000);
    if (*parse_metric(metric.toStdString()) == IcpMetric::PointToPlane) make_point_to_plane(c);
    const IcpResult r = icp(c.source, c.target, c.normals(), c.params, IcpMethod::Gpu);
    expect_same(icp(c.source, c.target, c.normals(), c.params, IcpMethod::Cpu), r);
    QVERIFY((r.transform - *c.truth).cwiseAbs().maxCoeff() < 0.005);
  }

  void gpu_methods_report_no_gpu_clearly() {
    if (query_device().available) QSKIP("a GPU is available here");
    Case c = generated_pair();
    for (auto m : {IcpMethod::Gpu, IcpMethod::GpuKdTree, IcpMethod::GpuBruteForce})
      QVERIFY_THROWS_EXCEPTION(GpuError, icp(c.source, c.target, c.params, m));
  }

  void gpu_equals_pcl_data() {
    test::add_columns<QString, QString>({"name", "method"});
    for (const auto& c : kCases)
      for (const char* m : {"gpu", "gpu-kdtree", "gpu-bruteforce"})
        QTest::newRow(qPrintable(c + " " + m)) << c << QString(m);
  }
  void gpu_equals_pcl() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, name);
    QFETCH(QString, method);
    Case c;
    if (!load_case(name, c)) QSKIP(qPrintable("data for " + name + " not found"));
    const IcpMethod m = *parse_method<IcpMethod>(method.toStdString());
    const IcpResult r = icp(c.source, c.target, c.normals(), c.params, m);
    expect_same(pcl_result(name, c), r);
    // Twice in a row: the reused workspace leaves nothing behind.
    expect_same(r, icp(c.source, c.target, c.normals(), c.params, m));
  }
};

QTEST_GUILESS_MAIN(TestIcp)
#include "test_icp.moc"
