// GICP (--metric gicp): PCL's GeneralizedIterativeClosestPoint is the reference; the GPU's loop
// replayed on the host (host_gicp) must equal it, and so must every GPU method.
#include <QtTest>

#include <algorithm>
#include <random>

#include <pcl/registration/gicp.h>
#include <pcl/search/kdtree.h>

#include "icp_cases.h"
#include "nns/nns.h"
#include "registration/cuda/gicp_gpu.h"
#include "registration/gicp_math.h"
#include "registration/gicp_run.h"

namespace gm = cumulus::gicp_math;

namespace {

const QStringList kGicpCases = {"bunny", "lidar-pair", "kitti", "generated"};

void make_gicp(Case& c) {
  c.params.metric = IcpMetric::Gicp;
  c.params.criteria.max_iterations = 50;
}

IcpResult run_pcl(const Case& c) {
  IcpResult r;
  pcl_gicp(c.source, c.target, c.params, r);
  return r;
}

IcpResult run_host(const Case& c) {
  IcpResult r;
  host_gicp(c.source, c.target, c.params, r);
  return r;
}

// tolerance: of the transforms' entries. Up to 1e-5 the pairs must be the same, the MSEs
// within 1e-4 (at the bunny's last iterations a mean of squares near 3e-6 m^2, where the
// transforms' last digits show) and the fitness within 1e-6 (relative); beyond, both within 1 %.
void expect_same_gicp(const IcpResult& ref, const IcpResult& r, double tolerance = 1e-5) {
  QCOMPARE(stop_name(r.stop), stop_name(ref.stop));
  QCOMPARE(r.iterations, ref.iterations);
  QCOMPARE(r.converged, ref.converged);
  QCOMPARE(r.history.size(), ref.history.size());
  for (std::size_t i = 0; i < r.history.size(); ++i) {
    if (tolerance <= 1e-5) {
      QCOMPARE(r.history[i].correspondences, ref.history[i].correspondences);
    } else {
      const double n = double(ref.history[i].correspondences);
      QVERIFY(std::abs(double(r.history[i].correspondences) - n) <= 0.01 * n);
    }
    const double dm = std::abs(r.history[i].mse - ref.history[i].mse) / ref.history[i].mse;
    QVERIFY2(dm <= (tolerance > 1e-5 ? 1e-2 : 1e-4),
             qPrintable(QString("iteration %1's MSE differs by %2").arg(i).arg(dm)));
  }
  const double dt = (r.transform - ref.transform).cwiseAbs().maxCoeff();
  QVERIFY2(dt <= tolerance, qPrintable(QString("transform differs by %1").arg(dt)));
  const double df = std::abs(r.fitness - ref.fitness) / std::abs(ref.fitness);
  QVERIFY2(
      df <= (tolerance > 1e-5 ? 1e-2 : 1e-6),
      qPrintable(
          QString("fitness %1 vs %2").arg(r.fitness, 0, 'g', 12).arg(ref.fitness, 0, 'g', 12)));
}

// How far PCL's answer moves when only the order of its points changes (the source reversed,
// then shuffled three ways): the rounding of its sums, which decides where its BFGS stops.
double pcl_spread(const Case& c, const IcpResult& ref) {
  double spread = 0;
  for (unsigned order = 0; order < 4; ++order) {
    Case s = c;
    if (order == 0) {
      std::reverse(s.source.begin(), s.source.end());
    } else {
      std::mt19937 rng(order);
      std::shuffle(s.source.begin(), s.source.end(), rng);
    }
    spread = std::max(spread, (run_pcl(s).transform - ref.transform).cwiseAbs().maxCoeff());
  }
  return spread;
}

// The case with GICP's metric and, unless "none", a robust kernel at half the pairs' distance.
bool load_gicp_case(const QString& name, Case& c, const QString& kernel = "none") {
  if (!load_case(name, c)) return false;
  make_gicp(c);
  c.params.kernel = *parse_kernel(kernel.toStdString());
  if (c.params.kernel != RobustKernel::None)
    c.params.kernel_scale = c.params.max_correspondence_distance / 2;
  return true;
}

}  // namespace

// PCL's GICP opened up for the tests: its covariances, Mahalanobis matrices, functor and BFGS.
struct Peek : public pcl::GeneralizedIterativeClosestPoint<pcl::PointXYZ, pcl::PointXYZ, double> {
  void covariances(pcl::PointCloud<pcl::PointXYZ>::ConstPtr c, MatricesVector& out) {
    auto tree = std::make_shared<pcl::search::KdTree<pcl::PointXYZ>>();
    tree->setInputCloud(c);
    computeCovariances<pcl::PointXYZ>(c, tree, out);
  }
  using GeneralizedIterativeClosestPoint::base_transformation_;
  using GeneralizedIterativeClosestPoint::estimateRigidTransformationBFGS;
  using GeneralizedIterativeClosestPoint::mahalanobis_;
  using GeneralizedIterativeClosestPoint::OptimizationFunctorWithIndices;
  using GeneralizedIterativeClosestPoint::tmp_idx_src_;
  using GeneralizedIterativeClosestPoint::tmp_idx_tgt_;
  using GeneralizedIterativeClosestPoint::tmp_src_;
  using GeneralizedIterativeClosestPoint::tmp_tgt_;
};

// The first GICP iteration of a case from the identity: PCL's covariances and pairs, the
// Mahalanobis matrices in PCL's GICP and in `maha`, and our cost over them (a gicp_math::Bfgs
// evaluation).
struct FirstIteration {
  const Case& c;
  Peek peek;
  pcl::PointCloud<pcl::PointXYZ>::Ptr src = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  pcl::PointCloud<pcl::PointXYZ>::Ptr tgt = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
  pcl::Indices isrc, itgt;
  std::vector<double> maha;

  explicit FirstIteration(const Case& cs) : c(cs) {
    for (const auto& p : c.source)
      src->push_back(pcl::PointXYZ(p.x, p.y, p.z));
    for (const auto& p : c.target)
      tgt->push_back(pcl::PointXYZ(p.x, p.y, p.z));
    Peek::MatricesVector cs_src, cs_tgt;
    peek.covariances(src, cs_src);
    peek.covariances(tgt, cs_tgt);
    pcl::KdTreeFLANN<pcl::PointXYZ> tree;
    tree.setInputCloud(tgt);
    maha.assign(c.source.size() * 9, 0);
    peek.mahalanobis_.assign(c.source.size(), Eigen::Matrix3d::Identity());
    const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double max_d2 =
        c.params.max_correspondence_distance * c.params.max_correspondence_distance;
    for (std::size_t i = 0; i < c.source.size(); ++i) {
      pcl::Indices nn;
      std::vector<float> nd;
      tree.nearestKSearch((*src)[i], 1, nn, nd);
      if (!(nd[0] < max_d2)) continue;
      const std::size_t j = std::size_t(nn[0]);
      gm::mahalanobis(identity, cs_src[i].data(), cs_tgt[j].data(), 1, &maha[9 * i]);
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 3; ++k)
          peek.mahalanobis_[i](r, k) = maha[9 * i + std::size_t(3 * r + k)];
      isrc.push_back(int(i));
      itgt.push_back(int(j));
    }
    peek.base_transformation_.setIdentity();
    peek.tmp_src_ = src.get();
    peek.tmp_tgt_ = tgt.get();
    peek.tmp_idx_src_ = &isrc;
    peek.tmp_idx_tgt_ = &itgt;
  }

  void cost(const double* x, double& f, double* g) const {
    float mf[16];
    gm::float_transform_of(x, mf);
    gm::CostSums s;
    for (std::size_t k = 0; k < isrc.size(); ++k)
      gm::add_cost(s, mf, &c.source[std::size_t(isrc[k])].x, &c.target[std::size_t(itgt[k])].x,
                   &maha[9 * std::size_t(isrc[k])]);
    gm::finish_cost(s, double(isrc.size()), x, f, g);
  }
  void operator()(const double* x, double& f, double* g) const { cost(x, f, g); }
};

class TestGicp : public QObject {
  Q_OBJECT
 private slots:
  // Our cost and gradient (gicp_math) against PCL's own functor, at the first iteration's pairs
  // of the LiDAR pair: equal to the last bit, wherever the state is.
  void cost_equals_pcls_functor() {
    Case c;
    if (!load_gicp_case("lidar-pair", c)) QSKIP("LiDAR pair not found");
    FirstIteration fi(c);
    Peek::OptimizationFunctorWithIndices pcl_cost(&fi.peek);
    for (double scale : {0.0, 0.5, 1.0, 2.0}) {
      Eigen::Matrix<double, 6, 1> x;
      x << 0.455 * scale, 0.107 * scale, -0.017 * scale, 0.003 * scale, -0.002 * scale,
          -0.0107 * scale;
      double f_pcl = 0, f = 0, g[6];
      Eigen::Matrix<double, 6, 1> g_pcl;
      pcl_cost.fdf(x, f_pcl, g_pcl);
      fi.cost(x.data(), f, g);
      QCOMPARE(f, f_pcl);
      for (int k = 0; k < 6; ++k)
        QVERIFY2(std::abs(g[k] - g_pcl[k]) <= 1e-13 * std::abs(g_pcl[k]),
                 qPrintable(QString("g[%1]: %2 vs PCL's %3").arg(k).arg(g[k]).arg(g_pcl[k])));
    }
  }

  // Our BFGS (gicp_math::Bfgs, the GPU's) against PCL's BFGS driven as PCL's GICP drives it, on
  // the same cost: the same solution.
  void bfgs_equals_pcls_bfgs() {
    Case c;
    if (!load_gicp_case("lidar-pair", c)) QSKIP("LiDAR pair not found");
    FirstIteration fi(c);
    Eigen::Matrix4d t = Eigen::Matrix4d::Identity();
    fi.peek.setMaximumOptimizerIterations(20);
    fi.peek.estimateRigidTransformationBFGS(*fi.src, fi.isrc, *fi.tgt, fi.itgt, t);
    double x[6] = {0, 0, 0, 0, 0, 0};
    gm::Bfgs<FirstIteration> bfgs(fi, {1e-2, 1e-2});
    int inner = 0, evaluations = 0;
    QVERIFY(bfgs.minimise(x, 20, inner, evaluations));
    double m[16];
    gm::transform_of(x, m);
    for (int r = 0; r < 4; ++r)
      for (int k = 0; k < 4; ++k)
        QVERIFY2(
            std::abs(m[4 * r + k] - t(r, k)) <= 1e-14,
            qPrintable(
                QString("(%1, %2): %3 vs PCL's %4").arg(r).arg(k).arg(m[4 * r + k]).arg(t(r, k))));
    QVERIFY(inner > 1);
  }

  void metric_name_round_trips() {
    QCOMPARE(metric_name(IcpMetric::Gicp), "gicp");
    QCOMPARE(parse_metric("gicp"), std::optional(IcpMetric::Gicp));
  }

  // The covariance PCL builds: the neighbourhood's two widest directions at 1, its normal at
  // epsilon. Points on the plane z = 0 give diag(1, 1, epsilon).
  void a_plane_neighbourhood_gives_a_flat_disc() {
    std::vector<float> nb;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 4; ++j) {
        nb.push_back(0.1f * float(i));
        nb.push_back(0.07f * float(j));
        nb.push_back(0);
      }
    double c[9];
    gm::regularised_covariance(nb.data(), 20, 0.001, c);
    const double want[9] = {1, 0, 0, 0, 1, 0, 0, 0, 0.001};
    for (int i = 0; i < 9; ++i)
      QVERIFY2(std::abs(c[i] - want[i]) < 1e-12, qPrintable(QString::number(c[i])));
  }

  // The state's transform and back: PCL's Z-Y-X Euler angles.
  void state_and_transform_round_trip() {
    const Eigen::Matrix4d t = rigid_transform(10, -20, 30, 1, 2, 3);
    double m[16], x[6], back[16];
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c)
        m[4 * r + c] = t(r, c);
    gm::state_of(m, x);
    gm::transform_of(x, back);
    for (int i = 0; i < 16; ++i)
      QVERIFY(std::abs(back[i] - m[i]) < 1e-14);
  }

  // The gradient PCL derives by hand against central differences of the cost.
  void cost_gradient_matches_finite_differences() {
    Case c;
    if (!load_gicp_case("generated", c)) QSKIP("no generated case");
    const std::vector<double> maha = {2, 0.1, 0, 0.1, 1, 0.2, 0, 0.2, 50};
    const auto cost = [&](const double* x, double& f, double* g) {
      float mf[16];
      gm::float_transform_of(x, mf);
      gm::CostSums s;
      for (std::size_t i = 0; i < 200; ++i)
        gm::add_cost(s, mf, &c.source[i].x, &c.target[i].x, maha.data());
      gm::finish_cost(s, 200, x, f, g);
    };
    const double x[6] = {0.3, -0.2, 0.1, 0.05, -0.04, 0.3};
    double f, g[6];
    cost(x, f, g);
    for (int k = 0; k < 6; ++k) {
      double xp[6], xm[6], fp, fm, dummy[6];
      std::copy(x, x + 6, xp);
      std::copy(x, x + 6, xm);
      xp[k] += 1e-3;
      xm[k] -= 1e-3;
      cost(xp, fp, dummy);
      cost(xm, fm, dummy);
      const double numeric = (fp - fm) / 2e-3;
      QVERIFY2(
          std::abs(numeric - g[k]) <= 1e-3 * std::max(1.0, std::abs(g[k])),
          qPrintable(QString("d/dx%1: %2 analytic, %3 numeric").arg(k).arg(g[k]).arg(numeric)));
    }
  }

  void host_loop_equals_pcl_data() {
    test::add_columns<QString, QString>({"name", "kernel"});
    for (const auto& c : kGicpCases)
      QTest::newRow(qPrintable(c)) << c << QString("none");
    QTest::newRow("bunny tukey") << QString("bunny") << QString("tukey");
    QTest::newRow("lidar-pair huber") << QString("lidar-pair") << QString("huber");
  }
  void host_loop_equals_pcl() {
    QFETCH(QString, name);
    QFETCH(QString, kernel);
    Case c;
    if (!load_gicp_case(name, c, kernel)) QSKIP(qPrintable("data for " + name + " not found"));
    const IcpResult ref = run_pcl(c);
    QVERIFY2(ref.converged, stop_name(ref.stop));
    QVERIFY(ref.iterations > 1);
    const IcpResult r = run_host(c);
    QVERIFY(r.cost_evaluations > r.iterations);
    expect_same_gicp(ref, r);
  }

  void gicp_finds_the_known_transform() {
    Case c;
    if (!load_gicp_case("generated", c)) QSKIP("no generated case");
    const IcpResult r = icp(c.source, c.target, c.params, IcpMethod::Cpu);
    QVERIFY(r.converged);
    const Eigen::Matrix4d err = r.transform * c.truth->inverse();
    QVERIFY2(rotation_angle_deg(err) < 0.02, qPrintable(QString::number(rotation_angle_deg(err))));
    QVERIFY2(translation_norm(err) < 0.005, qPrintable(QString::number(translation_norm(err))));
  }

  void too_few_pairs_stop_the_loop() {
    Case c;
    if (!load_gicp_case("generated", c)) QSKIP("no generated case");
    c.params.initial = rigid_transform(0, 0, 0, 500, 0, 0);
    for (const IcpResult& r : {run_pcl(c), run_host(c)}) {
      QCOMPARE(r.stop, IcpStop::NoCorrespondences);
      QVERIFY(!r.converged);
      QCOMPARE(r.iterations, 0);
    }
  }

  void bad_parameters_are_clear_errors() {
    Case c;
    if (!load_gicp_case("generated", c)) QSKIP("no generated case");
    const auto fails = [&](auto edit, const char* words) {
      IcpParams p = c.params;
      edit(p);
      try {
        icp(c.source, c.target, p, IcpMethod::Cpu);
      } catch (const InvalidArgument& e) {
        QVERIFY2(std::string(e.what()).find(words) != std::string::npos, e.what());
        return;
      }
      QFAIL(words);
    };
    fails([](IcpParams& p) { p.gicp.k = 2; }, "neighbourhood");
    fails([](IcpParams& p) { p.gicp.k = 65; }, "neighbourhood");
    fails([](IcpParams& p) { p.gicp.epsilon = 0; }, "epsilon");
    fails([](IcpParams& p) { p.gicp.translation_epsilon = 0; }, "transformation epsilons");
    fails([](IcpParams& p) { p.gicp.rotation_gradient_tolerance = -1; }, "gradient");
    fails([](IcpParams& p) { p.gicp.max_inner_iterations = 0; }, "inner");
    fails([](IcpParams& p) { p.gicp.epsilon = 0.01; }, "fixed covariance epsilon");
    IcpParams p = c.params;
    const std::vector<Point3f> few(c.source.begin(), c.source.begin() + 10);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, icp(few, c.target, p, IcpMethod::Cpu));
  }

  void gpu_equals_pcl_data() {
    test::add_columns<QString, QString, QString>({"name", "method", "kernel"});
    for (const auto& c : kGicpCases)
      for (const char* m : {"gpu", "gpu-kdtree", "gpu-bruteforce"})
        QTest::newRow(qPrintable(c + " " + m)) << c << QString(m) << QString("none");
    QTest::newRow("bunny gpu tukey") << QString("bunny") << QString("gpu") << QString("tukey");
    QTest::newRow("lidar-pair gpu huber")
        << QString("lidar-pair") << QString("gpu") << QString("huber");
  }
  void gpu_equals_pcl() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, name);
    QFETCH(QString, method);
    QFETCH(QString, kernel);
    Case c;
    if (!load_gicp_case(name, c, kernel)) QSKIP(qPrintable("data for " + name + " not found"));
    const IcpMethod m = *parse_method<IcpMethod>(method.toStdString());
    const IcpResult r = icp(c.source, c.target, c.params, m);
    // The GPU adds the pairs' costs in another order. Where PCL's own answer moves more than
    // 1e-5 when its input is merely reordered (the bunny and KITTI: its BFGS stops where the
    // cost's last digits decide), ours is held to twice that.
    const IcpResult ref = run_pcl(c);
    const double own = pcl_spread(c, ref);
    const double tolerance = std::max(1e-5, 2 * own);
    qInfo("PCL moves by %g when reordered; the GPU differs from it by %g", own,
          (r.transform - ref.transform).cwiseAbs().maxCoeff());
    QString pairs;
    for (std::size_t i = 0; i < std::max(r.history.size(), ref.history.size()); ++i)
      pairs += QString(" %1/%2")
                   .arg(i < r.history.size() ? qint64(r.history[i].correspondences) : -1)
                   .arg(i < ref.history.size() ? qint64(ref.history[i].correspondences) : -1);
    qInfo("pairs per iteration (ours/PCL's):%s", qPrintable(pairs));
    expect_same_gicp(ref, r, tolerance);
    // Where the answer is stable, the same evaluations as the host's loop: the same BFGS path.
    if (own < 1e-9) QCOMPARE(r.cost_evaluations, run_host(c).cost_evaluations);
    // Twice in a row: the reused workspace leaves nothing behind.
    expect_same_gicp(r, icp(c.source, c.target, c.params, m), 0);
  }

  // The covariances' neighbourhoods: each point's 20 nearest among its own cloud, the same
  // from every GPU search.
  void gpu_searches_give_the_same_neighbourhoods() {
    CUMULUS_REQUIRE_GPU();
    Case c;
    if (!load_gicp_case("lidar-pair", c)) QSKIP("LiDAR pair not found");
    const KnnResult brute = knn_search(c.source, c.source, 20, NnsMethod::GpuBruteForce);
    for (NnsMethod m : {NnsMethod::Gpu, NnsMethod::GpuKdTree}) {
      const KnnResult r = knn_search(c.source, c.source, 20, m);
      std::size_t differ = 0;
      for (std::size_t i = 0; i < r.sq_distances.size(); ++i)
        differ += r.sq_distances[i] != brute.sq_distances[i];
      QVERIFY2(differ == 0, qPrintable(QString("%1: %2 of %3 distances differ")
                                           .arg(method_name(m))
                                           .arg(differ)
                                           .arg(r.sq_distances.size())));
    }
  }

  // The GPU's covariances against PCL's (computeCovariances, k = 20) for every search.
  void gpu_covariances_equal_pcls() {
    CUMULUS_REQUIRE_GPU();
    Case c;
    if (!load_gicp_case("lidar-pair", c)) QSKIP("LiDAR pair not found");
    auto cloud = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
    for (const auto& p : c.source)
      cloud->push_back(pcl::PointXYZ(p.x, p.y, p.z));
    Peek peek;
    Peek::MatricesVector ref;
    peek.covariances(cloud, ref);
    for (IcpMethod m : {IcpMethod::Gpu, IcpMethod::GpuKdTree, IcpMethod::GpuBruteForce}) {
      const std::vector<double> cov = gpu_gicp_covariances(c.source, 20, 0.001, m);
      double worst = 0;
      std::size_t at = 0;
      for (std::size_t i = 0; i < c.source.size(); ++i)
        for (int r = 0; r < 3; ++r)
          for (int k = 0; k < 3; ++k) {
            const double d = std::abs(cov[9 * i + std::size_t(3 * r + k)] - ref[i](r, k));
            if (d > worst) {
              worst = d;
              at = i;
            }
          }
      QVERIFY2(
          worst < 1e-9,
          qPrintable(QString("%1: point %2 off by %3").arg(method_name(m)).arg(at).arg(worst)));
    }
  }

  void gpu_methods_report_no_gpu_clearly() {
    if (query_device().available) QSKIP("a GPU is available here");
    Case c;
    if (!load_gicp_case("generated", c)) QSKIP("no generated case");
    QVERIFY_THROWS_EXCEPTION(GpuError, icp(c.source, c.target, c.params, IcpMethod::Gpu));
  }
};

QTEST_GUILESS_MAIN(TestGicp)
#include "test_gicp.moc"
