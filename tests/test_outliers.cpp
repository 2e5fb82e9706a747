// Outlier filters: PCL's StatisticalOutlierRemoval and RadiusOutlierRemoval do what their
// definitions say, the GPU keeps PCL's points on real scans (KITTI, the LiDAR pair, cuPCL's
// sample and PCL's organized table scene with its NaNs), the statistical threshold's rounding
// bound holds, and bad parameters are refused with the reason.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "core/device.h"
#include "core/error.h"
#include "filter/filter.h"
#include "filter/filter_impl.h"
#include "io/io.h"
#include "nns/nns.h"
#include "test_support.h"

using namespace cumulus;

namespace {

const char* const kScans[] = {"kitti/000000.bin", "lidar-pair/251370668.pcd", "cupcl/sample.pcd",
                              "pcl/table_scene_mug_stereo_textured.pcd"};

// PCL's statistical outlier removal written out: scores from FLANN's k nearest (the point
// itself first), PCL's serial sums and threshold, and its comparison.
std::vector<std::int32_t> statistical_definition(const PointCloud& c,
                                                 const StatisticalOutlierParams& p) {
  const int k = p.mean_k + 1;
  const KnnResult nn = knn_search(c.points, c.points, k, NnsMethod::Cpu);
  std::vector<float> score(c.size(), 0.0f);
  std::uint64_t valid = 0;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (!is_finite(c.points[i])) continue;
    double sum = 0;
    for (int j = 1; j < k; ++j)
      sum += std::sqrt(double(nn.sq_distances[i * std::size_t(k) + std::size_t(j)]));
    score[i] = float(sum / p.mean_k);
    ++valid;
  }
  const double t = sor_threshold_serial(score.data(), score.size(), valid, p.stddev_mul);
  std::vector<std::int32_t> kept;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (p.negative ? !(double(score[i]) <= t) : !(double(score[i]) > t))
      kept.push_back(std::int32_t(i));
  return kept;
}

// A finite point with at least min_neighbors others at squared distance <= radius^2 (double).
std::vector<std::int32_t> radius_definition(const PointCloud& c, const RadiusOutlierParams& p) {
  const int k = p.min_neighbors + 1;
  const KnnResult nn = knn_search(c.points, c.points, k, NnsMethod::Cpu);
  std::vector<std::int32_t> kept;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::size_t last = i * std::size_t(k) + std::size_t(k - 1);
    const bool inlier = is_finite(c.points[i]) && nn.indices[last] >= 0 &&
                        double(nn.sq_distances[last]) <= p.radius * p.radius;
    if (inlier != p.negative) kept.push_back(std::int32_t(i));
  }
  return kept;
}

PointCloud line_with_outlier() {
  PointCloud c;
  for (int i = 0; i < 20; ++i)
    c.points.push_back({float(i) * 0.1f, 0, 0});
  c.points.push_back({0.95f, 5, 0});  // far from the line
  c.points.push_back({NAN, 0, 0});
  c.width = std::uint32_t(c.points.size());
  return c;
}

}  // namespace

class TestOutliers : public QObject {
  Q_OBJECT

 private slots:
  // The definition needs FLANN's k nearest of every point: two scans, one with NaNs.
  void pclStatisticalOutlierRemovalIsTheDefinition_data() {
    QTest::addColumn<QString>("scan");
    QTest::newRow("lidar pair") << QString("lidar-pair/251370668.pcd");
    QTest::newRow("table scene, NaNs") << QString("pcl/table_scene_mug_stereo_textured.pcd");
  }
  void pclStatisticalOutlierRemovalIsTheDefinition() {
    QFETCH(QString, scan);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    const StatisticalOutlierParams p{20, 1.0, false};
    const FilterResult r = remove_statistical_outliers(c, p, FilterMethod::Cpu);
    QCOMPARE(r.kept, statistical_definition(c, p));
    QVERIFY(r.kept.size() < c.size());
  }

  void pclRadiusOutlierRemovalIsTheDefinition_data() {
    pclStatisticalOutlierRemovalIsTheDefinition_data();
  }
  void pclRadiusOutlierRemovalIsTheDefinition() {
    QFETCH(QString, scan);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    for (const bool negative : {false, true}) {
      const RadiusOutlierParams p{scan.startsWith("pcl/") ? 0.005 : 0.3, 3, negative};
      const FilterResult r = remove_radius_outliers(c, p, FilterMethod::Cpu);
      QCOMPARE(r.kept, radius_definition(c, p));
      QVERIFY(!r.kept.empty() && r.kept.size() < c.size());
    }
  }

  void gpuKeepsPclsStatisticalInliers_data() {
    QTest::addColumn<QString>("scan");
    QTest::addColumn<int>("mean_k");
    QTest::addColumn<double>("stddev_mul");
    QTest::addColumn<bool>("negative");
    for (const char* s : kScans) {
      QTest::addRow("%s k 50 sd 1", s) << QString(s) << 50 << 1.0 << false;
      QTest::addRow("%s k 8 sd -0.5 outliers", s) << QString(s) << 8 << -0.5 << true;
    }
  }
  void gpuKeepsPclsStatisticalInliers() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, scan);
    QFETCH(int, mean_k);
    QFETCH(double, stddev_mul);
    QFETCH(bool, negative);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    const StatisticalOutlierParams p{mean_k, stddev_mul, negative};
    const FilterResult gpu = remove_statistical_outliers(c, p, FilterMethod::Gpu);
    const FilterResult pcl = remove_statistical_outliers(c, p, FilterMethod::Cpu);
    QCOMPARE(gpu.kept.size(), pcl.kept.size());
    QCOMPARE(gpu.kept, pcl.kept);
  }

  void gpuKeepsPclsRadiusInliers_data() {
    QTest::addColumn<QString>("scan");
    QTest::addColumn<double>("radius");
    QTest::addColumn<int>("min_neighbors");
    QTest::addColumn<bool>("negative");
    for (const char* s : kScans) {
      const bool fine = std::string(s).starts_with("pcl/");  // a table top a metre away
      QTest::addRow("%s r %g min 2", s, fine ? 0.005 : 0.5)
          << QString(s) << (fine ? 0.005 : 0.5) << 2 << false;
      QTest::addRow("%s r %g min 20 outliers", s, fine ? 0.01 : 1.0)
          << QString(s) << (fine ? 0.01 : 1.0) << 20 << true;
    }
  }
  void gpuKeepsPclsRadiusInliers() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, scan);
    QFETCH(double, radius);
    QFETCH(int, min_neighbors);
    QFETCH(bool, negative);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    const RadiusOutlierParams p{radius, min_neighbors, negative};
    const FilterResult gpu = remove_radius_outliers(c, p, FilterMethod::Gpu);
    const FilterResult pcl = remove_radius_outliers(c, p, FilterMethod::Cpu);
    QCOMPARE(gpu.kept.size(), pcl.kept.size());
    QCOMPARE(gpu.kept, pcl.kept);
  }

  // Scores summed in shuffled orders: PCL's serial threshold stays inside the range computed
  // from each order's sums, and the range is narrow enough to settle nearly every point.
  void thresholdRangeHoldsPclsSerialThreshold() {
    std::mt19937 rng(7);
    int usable = 0;
    for (int trial = 0; trial < 120; ++trial) {
      const std::size_t n = 1000 + std::size_t(rng() % 100000);
      std::vector<float> score(n);
      const bool nearly_constant = trial % 4 == 0;  // a variance that cancels to rounding
      std::lognormal_distribution<float> spread(-2.0f, nearly_constant ? 1e-4f : 0.7f);
      for (float& s : score)
        s = spread(rng);
      if (trial % 7 == 0)  // points that are not finite score 0
        for (std::size_t i = 0; i < n; i += 13)
          score[i] = 0;
      const std::uint64_t valid =
          std::uint64_t(std::count_if(score.begin(), score.end(), [](float s) { return s > 0; }));
      const double mul = trial % 3 == 0 ? -0.5 : trial % 3 == 1 ? 1.0 : 3.0;
      const double serial = sor_threshold_serial(score.data(), n, valid, mul);
      std::vector<float> shuffled = score;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      ScoreSums sums{0, 0, valid};
      // Pairwise, as a parallel reduction sums.
      std::vector<double> a(shuffled.begin(), shuffled.end()), b(n);
      for (std::size_t i = 0; i < n; ++i)
        b[i] = double(shuffled[i] * shuffled[i]);
      for (std::size_t width = 1; width < n; width *= 2)
        for (std::size_t i = 0; i + width < n; i += 2 * width) {
          a[i] += a[i + width];
          b[i] += b[i + width];
        }
      sums.sum = a[0];
      sums.sq_sum = b[0];
      const ThresholdRange r = sor_threshold_range(sums, mul);
      if (!r.usable) continue;
      ++usable;
      QVERIFY2(serial >= r.lo && serial <= r.hi, qPrintable(QString("trial %1: %2 outside [%3, %4]")
                                                                .arg(trial)
                                                                .arg(serial, 0, 'g', 17)
                                                                .arg(r.lo, 0, 'g', 17)
                                                                .arg(r.hi, 0, 'g', 17)));
      QVERIFY(sor_threshold(sums, mul) >= r.lo && sor_threshold(sums, mul) <= r.hi);
      if (!nearly_constant)
        QVERIFY2(r.hi - r.lo <= 1e-9 * std::abs(serial), qPrintable(QString::number(trial)));
    }
    QVERIFY(usable > 80);
  }

  void statisticalRemovesTheFarPointAndKeepsNaNs() {
    const PointCloud c = line_with_outlier();
    for (const FilterMethod m : all_methods<FilterMethod>()) {
      if (is_gpu_method(m) && !query_device().available) continue;
      const FilterResult r = remove_statistical_outliers(c, {4, 1.0, false}, m);
      std::vector<std::int32_t> expected(20);
      std::iota(expected.begin(), expected.end(), 0);
      expected.push_back(21);  // the NaN: PCL gives it score 0
      QCOMPARE(r.kept, expected);
      QCOMPARE(r.non_finite, std::size_t(1));
      QCOMPARE(remove_statistical_outliers(c, {4, 1.0, true}, m).kept,
               (std::vector<std::int32_t>{20}));
    }
  }

  // Neighbours exactly at the radius count (PCL's k-nearest branch compares <=); NaNs go.
  void radiusCountsNeighboursAtTheRadiusAndDropsNaNs() {
    PointCloud c;
    c.points = {{0, 0, 0}, {0.5f, 0, 0}, {3, 0, 0}, {NAN, 0, 0}};
    c.width = 4;
    for (const FilterMethod m : all_methods<FilterMethod>()) {
      if (is_gpu_method(m) && !query_device().available) continue;
      QCOMPARE(remove_radius_outliers(c, {0.5, 1, false}, m).kept,
               (std::vector<std::int32_t>{0, 1}));
      QCOMPARE(remove_radius_outliers(c, {0.5, 1, true}, m).kept,
               (std::vector<std::int32_t>{2, 3}));
      QCOMPARE(remove_radius_outliers(c, {0.4999, 1, false}, m).kept.size(), std::size_t(0));
      QCOMPARE(remove_radius_outliers(c, {10, 0, false}, m).kept,
               (std::vector<std::int32_t>{0, 1, 2}));
      QVERIFY(remove_radius_outliers(PointCloud{}, {1, 1, false}, m).kept.empty());
    }
  }

  // A clump of 3,000 points on a few millimetres (one cell of thousands, as near a LiDAR) beside
  // a thin line, counted at every threshold around the clump's own size, and the line alone: the
  // GPU keeps exactly PCL's points with either of its counts.
  void gpuCountInADenseCellKeepsPclsPoints() {
    PointCloud c;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> clump(-0.002f, 0.002f);
    for (int i = 0; i < 3000; ++i)
      c.points.push_back({clump(rng), clump(rng), clump(rng)});
    for (int i = 0; i < 400; ++i)  // 4 cm apart: two neighbours within 5 cm, none at its edge
      c.points.push_back({1.0f + 0.04f * float(i), 0.5f, 0});
    c.points.push_back({NAN, 0, 0});
    c.width = std::uint32_t(c.points.size());
    // What PCL keeps here, so that the comparison below covers both ends: every clump point
    // up to 2,999 others, none at 3,000; the line's inner points at 2, its ends at 1.
    QCOMPARE(remove_radius_outliers(c, {0.05, 2999, false}, FilterMethod::Cpu).kept.size(),
             std::size_t(3000));
    QCOMPARE(remove_radius_outliers(c, {0.05, 3000, false}, FilterMethod::Cpu).kept.size(),
             std::size_t(0));
    QCOMPARE(remove_radius_outliers(c, {0.05, 2, false}, FilterMethod::Cpu).kept.size(),
             std::size_t(3000 + 398));
    CUMULUS_REQUIRE_GPU();
    // The clump crowds its cell: counted a warp a point. The line alone: a thread a point.
    PointCloud line;
    line.points.assign(c.points.begin() + 3000, c.points.end());
    line.width = std::uint32_t(line.points.size());
    for (const auto& [cloud, counts] :
         {std::pair{&c, "counts, a warp a point"}, std::pair{&line, "counts, a thread a point"}}) {
      for (const int min_neighbors : {1, 2, 3, 2998, 2999, 3000}) {
        for (const bool negative : {false, true}) {
          const RadiusOutlierParams p{0.05, min_neighbors, negative};
          const FilterResult gpu = remove_radius_outliers(*cloud, p, FilterMethod::Gpu);
          const FilterResult pcl = remove_radius_outliers(*cloud, p, FilterMethod::Cpu);
          QVERIFY2(gpu.kept == pcl.kept, qPrintable(QString("%1, min %2%3: kept %4, PCL %5")
                                                        .arg(counts)
                                                        .arg(min_neighbors)
                                                        .arg(negative ? " outliers" : "")
                                                        .arg(gpu.kept.size())
                                                        .arg(pcl.kept.size())));
          QVERIFY2(
              std::ranges::any_of(gpu.stages, [&](const auto& st) { return st.first == counts; }),
              counts);
        }
      }
    }
  }

  void absurdParametersAreRefusedWithTheReason() {
    const PointCloud c = line_with_outlier();
    const auto refused = [&](auto&& call, const char* words) {
      try {
        call();
        QFAIL(qPrintable(QString("accepted; expected a refusal about ") + words));
      } catch (const InvalidArgument& e) {
        QVERIFY2(QString(e.what()).contains(words), e.what());
      }
    };
    const auto sor = [&](StatisticalOutlierParams p) {
      return [&c, p] { remove_statistical_outliers(c, p, FilterMethod::Cpu); };
    };
    const auto ror = [&](RadiusOutlierParams p) {
      return [&c, p] { remove_radius_outliers(c, p, FilterMethod::Cpu); };
    };
    refused(sor({0, 1.0, false}), "mean_k");
    refused(sor({kMaxOutlierMeanK + 1, 1.0, false}), "mean_k");
    refused(sor({4, NAN, false}), "multiplier");
    refused(sor({21, 1.0, false}), "finite points");  // 21 finite points, 22 needed
    refused(ror({0, 1, false}), "radius");
    refused(ror({-1, 1, false}), "radius");
    refused(ror({NAN, 1, false}), "radius");
    refused(ror({INFINITY, 1, false}), "radius");
    refused(ror({1, -1, false}), "neighbours");
    PointCloud empty;
    refused([&] { remove_statistical_outliers(empty, {}, FilterMethod::Cpu); }, "finite points");
  }
};

QTEST_GUILESS_MAIN(TestOutliers)
#include "test_outliers.moc"
