// Filters: PCL's CropBox and VoxelGrid are what the documented definitions say, and the GPU
// keeps PCL's points on real scans (KITTI, the LiDAR pair, cuPCL's sample and PCL's organized
// table scene with its NaNs); bad parameters are refused with the reason.
#include <QtTest>

#include <cmath>
#include <map>

#include "core/device.h"
#include "core/error.h"
#include "filter/filter.h"
#include "io/io.h"
#include "test_support.h"

using namespace cumulus;

namespace {

const char* const kScans[] = {"kitti/000000.bin", "lidar-pair/251370668.pcd", "cupcl/sample.pcd",
                              "pcl/table_scene_mug_stereo_textured.pcd"};

// The middle half of the cloud's extent in x and y, all of z, in world coordinates.
CropBoxParams middle_box(const PointCloud& c, bool negative) {
  const Bounds b = c.local_bounds();
  CropBoxParams p;
  const float lo[3] = {b.min.x, b.min.y, b.min.z}, hi[3] = {b.max.x, b.max.y, b.max.z};
  for (int k = 0; k < 3; ++k) {
    const double quarter = k < 2 ? (hi[k] - lo[k]) / 4.0 : 0.0;
    p.min[std::size_t(k)] = c.origin[std::size_t(k)] + lo[k] + quarter;
    p.max[std::size_t(k)] = c.origin[std::size_t(k)] + hi[k] - quarter;
  }
  p.negative = negative;
  return p;
}

// VoxelGrid as documented: PCL's float binning, voxels in key order, centroids in double.
std::vector<Point3f> voxel_definition(const PointCloud& c, const VoxelGridParams& params) {
  const Bounds b = c.local_bounds();
  std::map<std::uint32_t, std::pair<std::size_t, std::array<double, 3>>> voxels;
  float inv[3], min_b[3];
  std::uint32_t mul[3];
  std::uint64_t m = 1;
  const float lo[3] = {b.min.x, b.min.y, b.min.z}, hi[3] = {b.max.x, b.max.y, b.max.z};
  for (int k = 0; k < 3; ++k) {
    inv[k] = 1.0f / params.leaf[std::size_t(k)];
    min_b[k] = float(int(std::floor(lo[k] * inv[k])));
    mul[k] = std::uint32_t(m);
    m *= std::uint64_t(int(std::floor(hi[k] * inv[k])) - int(min_b[k]) + 1);
  }
  for (const auto& p : c.points) {
    if (!is_finite(p)) continue;
    const float v[3] = {p.x, p.y, p.z};
    std::uint32_t key = 0;
    for (int k = 0; k < 3; ++k) {
      volatile float scaled = v[k] * inv[k];  // rounded on its own, as PCL's
      volatile float shifted = std::floor(scaled) - min_b[k];
      key += std::uint32_t(int(shifted)) * mul[k];
    }
    auto& [count, sum] = voxels[key];
    ++count;
    for (int k = 0; k < 3; ++k)
      sum[std::size_t(k)] += v[k];
  }
  std::vector<Point3f> out;
  for (const auto& [key, voxel] : voxels) {
    const auto& [count, sum] = voxel;
    if (count < params.min_points_per_voxel) continue;
    out.push_back({float(sum[0] / double(count)), float(sum[1] / double(count)),
                   float(sum[2] / double(count))});
  }
  return out;
}

// Largest coordinate difference of two point lists of one length.
double max_difference(const std::vector<Point3f>& a, const std::vector<Point3f>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    d = std::max({d, std::abs(double(a[i].x) - b[i].x), std::abs(double(a[i].y) - b[i].y),
                  std::abs(double(a[i].z) - b[i].z)});
  return d;
}

void add_scan_rows() {
  QTest::addColumn<QString>("scan");
  for (const char* s : kScans)
    QTest::newRow(s) << QString(s);
}

}  // namespace

class TestFilter : public QObject {
  Q_OBJECT

 private slots:
  // PCL's CropBox keeps what the definition keeps, and the GPU what PCL keeps.
  void cropBoxKeepsTheDefinitionsPoints_data() { add_scan_rows(); }
  void cropBoxKeepsTheDefinitionsPoints() {
    QFETCH(QString, scan);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    for (const bool negative : {false, true}) {
      const CropBoxParams p = middle_box(c, negative);
      const FilterResult r = crop_box(c, p, FilterMethod::Cpu);
      // The box in the cloud's local float coordinates, bounds included.
      float lo[3], hi[3];
      for (int k = 0; k < 3; ++k) {
        lo[k] = float(p.min[std::size_t(k)] - c.origin[std::size_t(k)]);
        hi[k] = float(p.max[std::size_t(k)] - c.origin[std::size_t(k)]);
      }
      std::vector<std::int32_t> expected;
      for (std::size_t i = 0; i < c.size(); ++i) {
        const Point3f& q = c.points[i];
        if (!is_finite(q)) continue;
        const bool inside = q.x >= lo[0] && q.y >= lo[1] && q.z >= lo[2] && q.x <= hi[0] &&
                            q.y <= hi[1] && q.z <= hi[2];
        if (inside != negative) expected.push_back(std::int32_t(i));
      }
      QCOMPARE(r.kept, expected);
      QVERIFY(!r.kept.empty());
      if (query_device().available) QCOMPARE(crop_box(c, p, FilterMethod::Gpu).kept, r.kept);
      QCOMPARE(r.cloud.size(), r.kept.size());
    }
  }

  // The GPU's kept ids come down with their count in one trip into page-locked memory, every
  // slot of the compaction's output with them: a call that keeps fewer points than the one
  // before must not hand back the earlier call's ids, nor one that keeps none or all.
  void gpuKeptIdsAreEachCallsOwn() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    const int n = 50000;
    for (int i = 0; i < n; ++i)
      c.points.push_back({float(i % 1000), float(i / 1000), float(i % 7)});
    c.points[123] = {NAN, 0, 0};
    c.width = n;
    const std::pair<double, double> xs[] = {{-1, 2000},   {100, 899.5}, {500, 500},
                                            {2000, 3000}, {-1, 2000},   {0, 0}};
    for (const auto& [lo, hi] : xs)
      for (const bool negative : {false, true}) {
        const CropBoxParams p{{lo, -1, -1}, {hi, 100, 10}, negative};
        const FilterResult cpu = crop_box(c, p, FilterMethod::Cpu);
        const FilterResult gpu = crop_box(c, p, FilterMethod::Gpu);
        QCOMPARE(gpu.kept, cpu.kept);
        QCOMPARE(gpu.cloud.points.size(), cpu.cloud.points.size());
        const FilterResult ror =
            remove_radius_outliers(gpu.cloud, {1.5, 3 + int(lo) % 5, negative}, FilterMethod::Gpu);
        QCOMPARE(ror.kept, remove_radius_outliers(gpu.cloud, {1.5, 3 + int(lo) % 5, negative},
                                                  FilterMethod::Cpu)
                               .kept);
      }
  }

  // Past KeptIdsDown's cap (2^24 points) the count is read first and only the kept ids come
  // down, into pageable memory.
  void gpuCropBeyondTheOneTripCapKeepsPclsPoints() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    const std::size_t n = (std::size_t(1) << 24) + 4097;
    c.points.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      c.points[i] = {float(i % 4096), float((i / 4096) % 4096), float(i % 13)};
    c.width = std::uint32_t(n);
    const CropBoxParams p{{1000, 5, 2}, {3000.5, 4000, 11}, false};
    const FilterResult cpu = crop_box(c, p, FilterMethod::Cpu);
    const FilterResult gpu = crop_box(c, p, FilterMethod::Gpu);
    QVERIFY(cpu.kept.size() > std::size_t(1) << 22);
    QCOMPARE(gpu.kept, cpu.kept);
    QCOMPARE(gpu.cloud.points.size(), cpu.kept.size());
  }

  void pclVoxelGridIsTheDefinition_data() { add_scan_rows(); }
  void pclVoxelGridIsTheDefinition() {
    QFETCH(QString, scan);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    for (const std::size_t min_points : {std::size_t(0), std::size_t(3)}) {
      const VoxelGridParams p{{0.1f, 0.1f, 0.1f}, min_points};
      const FilterResult r = voxel_grid(c, p, FilterMethod::Cpu);
      const std::vector<Point3f> expected = voxel_definition(c, p);
      QCOMPARE(r.cloud.size(), expected.size());
      // PCL sums each voxel in float, in its sort's order: a few float steps of a coordinate.
      QVERIFY2(max_difference(r.cloud.points, expected) < 1e-3,
               qPrintable(QString::number(max_difference(r.cloud.points, expected))));
    }
  }

  void gpuVoxelGridKeepsPclsVoxels_data() {
    QTest::addColumn<QString>("scan");
    QTest::addColumn<float>("leaf");
    QTest::addColumn<int>("min_points");
    for (const char* s : kScans)
      for (const float leaf : {0.05f, 0.1f, 0.3f})
        for (const int min_points : {0, 3})
          QTest::addRow("%s leaf %g min %d", s, double(leaf), min_points)
              << QString(s) << leaf << min_points;
  }
  void gpuVoxelGridKeepsPclsVoxels() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, scan);
    QFETCH(float, leaf);
    QFETCH(int, min_points);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    const VoxelGridParams p{{leaf, leaf, leaf}, std::size_t(min_points)};
    try {
      validate(p, c);
    } catch (const InvalidArgument&) {
      // A leaf too fine for the cloud (cuPCL's 190 m scene at 5 cm): both refuse it.
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, voxel_grid(c, p, FilterMethod::Gpu));
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, voxel_grid(c, p, FilterMethod::Cpu));
      return;
    }
    const FilterResult gpu = voxel_grid(c, p, FilterMethod::Gpu);
    const FilterResult pcl = voxel_grid(c, p, FilterMethod::Cpu);
    QCOMPARE(gpu.cloud.size(), pcl.cloud.size());
    QCOMPARE(gpu.cloud.intensity.size(), pcl.cloud.intensity.size());
    // The same voxels in the same order; centroids to PCL's float summation error.
    const double d = max_difference(gpu.cloud.points, pcl.cloud.points);
    QVERIFY2(d < 1e-3, qPrintable(QString::number(d)));
    // And the definition's double centroids (summed in index order; the GPU's lanes sum in
    // another, which is exact for these scans' floats), to the bit.
    QCOMPARE(max_difference(gpu.cloud.points, voxel_definition(c, p)), 0.0);
    for (std::size_t i = 0; i < gpu.cloud.intensity.size(); ++i)
      QVERIFY(std::abs(gpu.cloud.intensity[i] - pcl.cloud.intensity[i]) <=
              1e-4f * (1 + std::abs(pcl.cloud.intensity[i])));
  }

  // The centroids are summed by 1 to 32 lanes or a block a voxel, chosen by the mean points a
  // voxel, and voxels far above the mean by a block each: every choice gives the definition's
  // centroids to the bit and PCL's intensities (a voxel of 500 points among small ones is such
  // a voxel up to 16 lanes a voxel).
  void gpuVoxelCentroidsAtEveryDensityAreTheDefinitions() {
    CUMULUS_REQUIRE_GPU();
    for (const int mean : {1, 3, 6, 12, 24, 100, 300}) {
      PointCloud c;
      std::uint32_t seed = 12345u + std::uint32_t(mean);
      const auto next = [&] {
        seed = seed * 1664525u + 1013904223u;
        return float(seed >> 8) / float(1 << 24);
      };
      for (int v = 0; v < 2000; ++v) {
        const int count = v == 777 ? 500 : 1 + (v * 7) % (2 * mean);
        for (int k = 0; k < count; ++k) {
          c.points.push_back({float(v % 50) * 0.1f + 0.01f + 0.08f * next(),
                              float(v / 50) * 0.1f + 0.01f + 0.08f * next(),
                              0.05f + 0.03f * next()});
          c.intensity.push_back(100 * next());
        }
      }
      c.width = std::uint32_t(c.size());
      const VoxelGridParams p{{0.1f, 0.1f, 0.1f}, 0};
      const FilterResult gpu = voxel_grid(c, p, FilterMethod::Gpu);
      const FilterResult pcl = voxel_grid(c, p, FilterMethod::Cpu);
      QCOMPARE(gpu.cloud.size(), std::size_t(2000));
      QCOMPARE(pcl.cloud.size(), std::size_t(2000));
      QCOMPARE(max_difference(gpu.cloud.points, voxel_definition(c, p)), 0.0);
      for (std::size_t i = 0; i < gpu.cloud.intensity.size(); ++i)
        QVERIFY(std::abs(gpu.cloud.intensity[i] - pcl.cloud.intensity[i]) <=
                1e-4f * (1 + std::abs(pcl.cloud.intensity[i])));
    }
  }

  // gather_points: every field of every kept point (extra fields of several values included),
  // in the order kept.
  void gatheredPointsKeepEveryField() {
    PointCloud c;
    const int n = 70000;
    ExtraField extra{"triple", 3, {}};
    for (int i = 0; i < n; ++i) {
      c.points.push_back({float(i), float(-i), 0.5f});
      c.intensity.push_back(float(i) * 2);
      c.rgb.push_back({std::uint8_t(i), std::uint8_t(i >> 8), std::uint8_t(i >> 16)});
      c.normals.push_back({0, float(i), 1});
      c.labels.push_back(i % 97);
      for (int k = 0; k < 3; ++k)
        extra.values.push_back(double(i) * 3 + k);
    }
    c.extra.push_back(extra);
    c.width = n;
    std::vector<std::int32_t> kept;
    for (int i = 0; i < n; i += 1 + i % 5)
      kept.push_back(i);
    const PointCloud g = gather_points(c, kept);
    QCOMPARE(g.size(), kept.size());
    QCOMPARE(g.width, std::uint32_t(kept.size()));
    QCOMPARE(g.extra.size(), std::size_t(1));
    QCOMPARE(g.extra[0].values.size(), kept.size() * 3);
    for (std::size_t j = 0; j < kept.size(); ++j) {
      const auto i = std::size_t(kept[j]);
      QVERIFY(g.points[j].x == c.points[i].x && g.points[j].y == c.points[i].y);
      QCOMPARE(g.intensity[j], c.intensity[i]);
      QVERIFY(g.rgb[j].r == c.rgb[i].r && g.rgb[j].g == c.rgb[i].g && g.rgb[j].b == c.rgb[i].b);
      QCOMPARE(g.normals[j].y, c.normals[i].y);
      QCOMPARE(g.labels[j], c.labels[i]);
      for (std::size_t k = 0; k < 3; ++k)
        QCOMPARE(g.extra[0].values[j * 3 + k], c.extra[0].values[i * 3 + k]);
    }
    QVERIFY(gather_points(c, {}).empty());
  }

  void croppedPointsKeepTheirFields() {
    PointCloud c;
    for (int i = 0; i < 10; ++i) {
      c.points.push_back({float(i), 0, 0});
      c.intensity.push_back(float(i) * 10);
      c.labels.push_back(i);
    }
    c.points[3].y = NAN;
    c.width = 10;
    const FilterResult r = crop_box(c, {{1.5, -1, -1}, {6, 1, 1}, false}, FilterMethod::Cpu);
    QCOMPARE(r.kept, (std::vector<std::int32_t>{2, 4, 5, 6}));
    QCOMPARE(r.cloud.intensity, (std::vector<float>{20, 40, 50, 60}));
    QCOMPARE(r.cloud.labels, (std::vector<std::int32_t>{2, 4, 5, 6}));
    QCOMPARE(r.non_finite, std::size_t(1));
  }

  void absurdParametersAreRefusedWithTheReason() {
    PointCloud c;
    c.points = {{0, 0, 0}, {100, 100, 10}};
    c.width = 2;
    try {
      voxel_grid(c, {{1e-4f, 1e-4f, 1e-4f}, 0}, FilterMethod::Cpu);
      QFAIL("a leaf that overflows PCL's voxel index was accepted");
    } catch (const InvalidArgument& e) {
      QVERIFY2(QString(e.what()).contains("too small") && QString(e.what()).contains("fits"),
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             voxel_grid(c, {{0.0f, 0.1f, 0.1f}, 0}, FilterMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             crop_box(c, {{1, 0, 0}, {0, 1, 1}, false}, FilterMethod::Cpu));
  }

  // The refusal names a cubic leaf that fits, and a leaf a few per cent finer does not: for a
  // flat cloud (no volume), a cloud far from the origin, and leaves so fine that the float
  // products exceed every integer type.
  void aRefusedLeafNamesTheSmallestThatFits_data() {
    QTest::addColumn<QVector<float>>("xyz");
    QTest::addColumn<float>("leaf");
    QTest::addColumn<QString>("reason");
    QTest::addRow("volume, leaf 1e-4")
        << QVector<float>{0, 0, 0, 100, 100, 10} << 1e-4f << "voxels over";
    QTest::addRow("volume, leaf 1e-30")
        << QVector<float>{0, 0, 0, 158, 69, 4.2f} << 1e-30f << "voxels over";
    QTest::addRow("flat, leaf 1e-5")
        << QVector<float>{0, 0, 0, 200, 150, 0} << 1e-5f << "voxels over";
    QTest::addRow("a line, leaf 1e-38")
        << QVector<float>{-5, 0, 0, 5, 0, 0} << 1e-38f << "voxels over";
    QTest::addRow("far from the origin")
        << QVector<float>{1e7f, 1e7f, 0, 1e7f + 1, 1e7f, 0} << 1e-3f << "from the origin";
  }
  void aRefusedLeafNamesTheSmallestThatFits() {
    QFETCH(QVector<float>, xyz);
    QFETCH(float, leaf);
    QFETCH(QString, reason);
    PointCloud c;
    c.points = {{xyz[0], xyz[1], xyz[2]}, {xyz[3], xyz[4], xyz[5]}};
    c.width = 2;
    QString text;
    try {
      voxel_grid(c, {{leaf, leaf, leaf}, 0}, FilterMethod::Cpu);
      QFAIL("a leaf that overflows PCL's voxel lattice was accepted");
    } catch (const InvalidArgument& e) {
      text = e.what();
    }
    QVERIFY2(text.contains(reason), qPrintable(text));
    if (reason == "voxels over") {
      const QRegularExpressionMatch count =
          QRegularExpression("too small for this cloud: ([^ ]+) voxels over").match(text);
      QVERIFY2(count.hasMatch() && count.captured(1).toDouble() > 2147483647.0, qPrintable(text));
    }
    const QRegularExpressionMatch m =
        QRegularExpression("a cubic leaf of at least ([0-9.e+-]+) m fits").match(text);
    QVERIFY2(m.hasMatch(), qPrintable(text));
    const float fitting = m.captured(1).toFloat();
    QVERIFY2(fitting > 0 && std::isfinite(fitting), qPrintable(text));
    const FilterResult r = voxel_grid(c, {{fitting, fitting, fitting}, 0}, FilterMethod::Cpu);
    QCOMPARE(r.cloud.points.size(), std::size_t(2));
    const float finer = fitting / 1.05f;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             voxel_grid(c, {{finer, finer, finer}, 0}, FilterMethod::Cpu));
  }

  void emptyAndAllNaNClouds() {
    for (const FilterMethod m : all_methods<FilterMethod>()) {
      if (is_gpu_method(m) && !query_device().available) continue;
      PointCloud empty;
      QVERIFY(voxel_grid(empty, {}, m).cloud.empty());
      QVERIFY(crop_box(empty, {{0, 0, 0}, {1, 1, 1}, false}, m).kept.empty());
      PointCloud nans;
      nans.points.assign(5, Point3f{NAN, 0, 0});
      nans.width = 5;
      const FilterResult r = voxel_grid(nans, {}, m);
      QVERIFY(r.cloud.empty());
      QCOMPARE(r.non_finite, std::size_t(5));
    }
  }

  void gpuMethodsExplainWhenNoGpu() {
    if (query_device().available) QSKIP("this machine has a GPU");
    PointCloud c;
    c.points = {{0, 0, 0}};
    c.width = 1;
    try {
      voxel_grid(c, {}, FilterMethod::Gpu);
      QFAIL("expected GpuError");
    } catch (const GpuError& e) {
      QVERIFY2(QString(e.what()).contains("needs a GPU"), e.what());
    }
    QCOMPARE(default_method<FilterMethod>(), FilterMethod::Cpu);
  }
};

QTEST_GUILESS_MAIN(TestFilter)
#include "test_filter.moc"
