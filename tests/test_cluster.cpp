// Euclidean clustering: PCL (the reference) against a brute-force reference, the canonical
// result, parameter checks, and every GPU method against PCL on real and generated clouds
// (GPU tests skip where no GPU can be used).
#include <QFileInfo>
#include <QHash>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <thread>

#include "cluster/cluster.h"
#include "cluster/cluster_compare.h"
#include "cluster/cluster_export.h"
#include "core/device.h"
#include "core/error.h"
#include "core/host_pages.h"
#include "core/page_locked_pool.h"
#include "core/parallel.h"
#include "core/timing.h"
#include "core/timing_stats.h"
#include "generate/generate.h"
#include "io/io.h"
#include "test_support.h"

using namespace cumulus;

namespace {

// A result's labels as a plain vector, to compare with a list written out.
std::vector<std::int32_t> plain(const UnfilledVector<std::int32_t>& labels) {
  return {labels.begin(), labels.end()};
}

PointCloud random_blobs(std::uint64_t seed, int n, bool with_nans) {
  Random rng(seed);
  PointCloud c;
  for (int i = 0; i < n; ++i) {
    const int blob = int(rng.uniform() * 12);
    c.points.push_back({float(blob % 4 * 3 + rng.normal() * 0.4),
                        float(blob / 4 * 3 + rng.normal() * 0.4), float(rng.normal() * 0.3)});
    if (with_nans && i % 37 == 5) c.points.back().y = NAN;
  }
  c.width = std::uint32_t(n);
  return c;
}

// 10,000 points 1 m apart in rows of 100: at tolerances up to 1 m as many components as points,
// past the 4,096 ranked before their count comes back (the sorted path).
PointCloud points_a_metre_apart() {
  PointCloud c;
  for (int i = 0; i < 10000; ++i)
    c.points.push_back({float(i % 100), float(i / 100), 0.0f});
  c.width = 10000;
  return c;
}

// Points on a line at exactly the tolerance apart, and a hair closer: PCL keeps only d < t.
PointCloud boundary_line() {
  PointCloud c;
  c.points = {{0, 0, 0}, {0.5f, 0, 0}, {1.0f, 0, 0}, {1.4999f, 0, 0}, {3, 0, 0}};
  c.width = 5;
  return c;
}

std::string why_no_gpu() {
  return "GPU test skipped: " + describe(query_device());
}

// PCL results cached per (file, tolerance): every GPU method is compared with the same one.
const ClusterResult& pcl_reference(const QString& key, const PointCloud& cloud,
                                   const ClusterParams& p) {
  static std::map<std::string, ClusterResult> cache;
  const std::string k = key.toStdString() + "@" + std::to_string(p.tolerance) + "/" +
                        std::to_string(p.min_size) + "/" + std::to_string(p.max_size);
  auto it = cache.find(k);
  if (it == cache.end())
    it = cache.emplace(k, euclidean_cluster(cloud, p, ClusterMethod::Cpu)).first;
  return it->second;
}

PointCloud load_case(const QString& name) {
  if (name.startsWith("generated:")) {
    const auto parts = name.mid(10).split(',');
    ClusterCloudParams p;
    p.size = parts[0].toULong();
    p.clusters = parts[1].toULong();
    p.degree = parts[2].toULong();
    p.point_distance = parts[3].toULong();
    return generate_cluster_cloud(p);
  }
  if (name == "blobs-with-nans") return random_blobs(9, 3000, true);
  if (name == "singles-and-lines") {
    // More components than the device ranks without a sort (6,000 single points 1 m apart),
    // and five lines of 30 points 0.1 m apart: with a size range that drops the lines, or the
    // singles, the sorted ranks skip components on both sides of the kept ones.
    PointCloud c;
    for (int i = 0; i < 6000; ++i)
      c.points.push_back({float(i % 100), float(i / 100), 0.0f});
    for (int line = 0; line < 5; ++line)
      for (int k = 0; k < 30; ++k)
        c.points.push_back({float(line) * 7.0f + 0.1f * float(k), 0.5f, 3.0f});
    c.width = std::uint32_t(c.size());
    return c;
  }
  if (name == "far-points") {
    // Points hundreds of kilometres out exceed the grid's cell coordinates and take the
    // far-point path of `gpu`; chains of them 0.3 m apart still form clusters.
    PointCloud c = random_blobs(11, 2000, true);
    for (int k = 0; k < 300; ++k)
      c.points.push_back({5.0e5f + 0.3f * float(k % 100), float(k / 100) * 2.0f, 1.0f});
    for (int k = 0; k < 20; ++k)
      c.points.push_back({-7.0e5f, 0.25f * float(k), -3.0f});
    c.width = std::uint32_t(c.size());
    return c;
  }
  if (name == "grid-edge") {
    // At tolerance 1 mm the cells' 21-bit coordinates end about 605.3 m out: chains 0.8 mm apart
    // across that edge join points of the grid with far points (one cluster), and a 2 mm gap
    // beyond it splits the second chain in two.
    PointCloud c;
    for (int k = 0; k < 1900; ++k) {
      const float x = 604.5f + 0.0008f * float(k);
      c.points.push_back({x, 0.0f, 0.0f});
      c.points.push_back({x + (k >= 1400 ? 0.002f : 0.0f), 1.0f, 0.0f});
    }
    c.width = std::uint32_t(c.size());
    return c;
  }
  if (name == "dense-cube") {
    // 10,000 points in a 2.9 m cube (about 3.4 a cell at tolerance 0.5) among 2,000 scattered
    // around it: `gpu` leaves more cell pairs open than its list holds and searches the rest
    // where it finds them.
    Random rng(5);
    PointCloud c;
    for (int i = 0; i < 12000; ++i) {
      const float lo = i < 10000 ? 0.0f : -3.0f, side = i < 10000 ? 2.9f : 9.0f;
      c.points.push_back({lo + side * float(rng.uniform()), lo + side * float(rng.uniform()),
                          lo + side * float(rng.uniform())});
    }
    c.width = std::uint32_t(c.size());
    return c;
  }
  if (name == "dense-cube-tiny" || name == "dense-cube-huge") {
    // The dense cube at scales whose tolerances put `gpu`'s box bounds in double (run_fast's
    // float_boxes): every other case has them in float.
    PointCloud c = load_case("dense-cube");
    const float scale = name == "dense-cube-tiny" ? 1e-14f : 1e13f;
    for (auto& p : c.points)
      p = {p.x * scale, p.y * scale, p.z * scale};
    return c;
  }
  if (name.startsWith("sample:"))
    return load_cloud((test::sampleDir() + "/" + name.mid(7)).toStdString());
  return load_cloud(test::sharedDataFile(name).toStdString());
}

}  // namespace

class TestCluster : public QObject {
  Q_OBJECT

 private slots:
  void pclMatchesBruteForce_data() {
    test::add_columns<double, int, int, bool>({"tolerance", "min", "max", "nans"});
    QTest::newRow("t0.3") << 0.3 << 1 << 1000000 << false;
    QTest::newRow("t0.6 min5") << 0.6 << 5 << 1000000 << false;
    QTest::newRow("t1.0 min2 max300") << 1.0 << 2 << 300 << true;
    QTest::newRow("t2.5") << 2.5 << 1 << 1000000 << true;
  }

  void pclMatchesBruteForce() {
    QFETCH(double, tolerance);
    QFETCH(int, min);
    QFETCH(int, max);
    QFETCH(bool, nans);
    const PointCloud c = random_blobs(3, 1500, nans);
    ClusterParams p{float(tolerance), std::size_t(min), std::size_t(max)};
    const ClusterResult pcl = euclidean_cluster(c, p, ClusterMethod::Cpu);
    const ClusterResult brute = cluster_brute_force(c, p);
    QCOMPARE(pcl.sizes, brute.sizes);
    QVERIFY(pcl.labels == brute.labels);
    QCOMPARE(pcl.non_finite, brute.non_finite);
    QCOMPARE(pcl.dropped_clusters, brute.dropped_clusters);
    QCOMPARE(pcl.method, std::string("cpu"));
  }

  void neighboursNeedStrictlyLessThanTolerance() {
    const ClusterResult r = euclidean_cluster(boundary_line(), {0.5f, 1, 100}, ClusterMethod::Cpu);
    // 0-0.5 and 0.5-1.0 are exactly 0.5 apart: not neighbours. 1.0-1.4999 are.
    QCOMPARE(r.sizes, (std::vector<std::size_t>{2, 1, 1, 1}));
    QCOMPARE(r.labels[2], r.labels[3]);
    QVERIFY(r.labels[0] != r.labels[1]);
  }

  void canonicalOrderIsSizeThenFirstIndex() {
    // Components: {0,3} size 2, {1} size 1, {2,4,5} size 3, {6} size 1.
    ClusterResult r;
    canonicalize({7, 1, 2, 7, 2, 2, 6, -1}, {1.0f, 1, 100}, r);
    QCOMPARE(r.sizes, (std::vector<std::size_t>{3, 2, 1, 1}));
    QCOMPARE(plain(r.labels), (std::vector<std::int32_t>{1, 2, 0, 1, 0, 0, 3, -1}));
    canonicalize({7, 1, 2, 7, 2, 2, 6, -1}, {1.0f, 2, 2}, r);
    QCOMPARE(r.sizes, (std::vector<std::size_t>{2}));
    QCOMPARE(plain(r.labels), (std::vector<std::int32_t>{0, -1, -1, 0, -1, -1, -1, -1}));
    QCOMPARE(r.dropped_clusters, std::size_t(3));
  }

  // A result's labels are sized without writing (every method then writes each one): a fresh
  // vector's pages stay untouched by resize(), where a std::vector's zero-fill makes the resident
  // memory grow by all of it; values given to resize() and assign() are written.
  void labelsAreSizedWithoutWriting() {
    const std::size_t n = std::size_t(16) << 20;  // 64 MB: the C library maps it fresh
    const std::size_t before = test::residentBytes();
    ClusterResult r;
    r.labels.resize(n);
    const std::size_t after = test::residentBytes();
    const std::size_t grew = after - std::min(before, after);
    QVERIFY2(grew < n * sizeof(std::int32_t) / 2,
             qPrintable(QString("resident grew by %1 bytes").arg(grew)));
    UnfilledVector<std::int32_t> small(100, -1);
    small.resize(200, 7);
    QCOMPARE(small[99], -1);
    QCOMPARE(small[150], 7);
    small.assign(300, 2);
    QVERIFY(std::all_of(small.begin(), small.end(), [](std::int32_t v) { return v == 2; }));
  }

  void agreementSaysIdenticalForEqualResults() {
    const PointCloud c = random_blobs(5, 600, true);
    const ClusterResult a = euclidean_cluster(c, {0.8f, 2, 1000}, ClusterMethod::Cpu);
    const ClusterAgreement v = compare_clusters(a, cluster_brute_force(c, {0.8f, 2, 1000}));
    QVERIFY(v.identical);
    QCOMPARE(v.differing_points, std::size_t(0));
    QVERIFY(v.reference_clusters.empty() && v.other_clusters.empty());
    QVERIFY(QString::fromStdString(v.summary).startsWith("identical partition"));
  }

  void agreementListsWhatDiffers() {
    // Reference: {0,1,2} {3,4} {5}; other: a point moved from cluster 0 to 1, and 5 dropped.
    ClusterResult ref, other;
    canonicalize({0, 0, 0, 3, 3, 5}, {1.0f, 1, 100}, ref);
    canonicalize({0, 0, 3, 3, 3, -1}, {1.0f, 1, 100}, other);
    const ClusterAgreement v = compare_clusters(ref, other);
    QVERIFY(!v.identical);
    QCOMPARE(v.reference_clusters, (std::vector<int>{0, 1, 2}));
    QCOMPARE(v.other_clusters, (std::vector<int>{0, 1}));
    QCOMPARE(v.differing_points, std::size_t(6));
    // A relabelled but equal partition is identical; a merge is caught.
    ClusterResult merged;
    canonicalize({0, 0, 0, 0, 0, 5}, {1.0f, 1, 100}, merged);
    const ClusterAgreement m = compare_clusters(ref, merged);
    QVERIFY(!m.identical);
    QCOMPARE(m.point_differs, (std::vector<bool>{true, true, true, true, true, false}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compare_clusters(ref, ClusterResult{}));
  }

  void timingStatistics() {
    const TimingStats t = timing_stats({5, 1, 3, 9});
    QCOMPARE(t.median, 4.0);
    QCOMPARE(t.min, 1.0);
    QCOMPARE(t.max, 9.0);
    QCOMPARE(t.runs, std::size_t(4));
    const StageTimes m =
        median_stages({{{"a", 1}, {"b", 10}}, {{"a", 3}, {"b", 30}}, {{"a", 2}, {"b", 20}}});
    QCOMPARE(m, (StageTimes{{"a", 2}, {"b", 20}}));
  }

  void badParametersAreRejected() {
    const PointCloud c = random_blobs(1, 10, false);
    for (float t : {0.0f, -1.0f, NAN, INFINITY})
      QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                               euclidean_cluster(c, {t, 1, 10}, ClusterMethod::Cpu));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             euclidean_cluster(c, {1.0f, 10, 5}, ClusterMethod::Cpu));
  }

  void emptyAndAllNaNClouds() {
    PointCloud empty;
    QVERIFY(euclidean_cluster(empty, {}, ClusterMethod::Cpu).sizes.empty());
    PointCloud nans;
    nans.points.assign(5, {NAN, 0, 0});
    const ClusterResult r = euclidean_cluster(nans, {}, ClusterMethod::Cpu);
    QCOMPARE(r.non_finite, std::size_t(5));
    QCOMPARE(plain(r.labels), std::vector<std::int32_t>(5, -1));
  }

  void methodNamesRoundTrip() {
    for (auto m : all_methods<ClusterMethod>())
      QCOMPARE(parse_method<ClusterMethod>(method_name(m)), std::optional(m));
    QVERIFY(!parse_method<ClusterMethod>("gpu-fast").has_value());
    QCOMPARE(all_methods<ClusterMethod>().size(), std::size_t(8));
  }

  void gpuMethodsExplainWhenNoGpu() {
    if (query_device().available) QSKIP("this machine has a GPU");
    try {
      euclidean_cluster(random_blobs(1, 10, false), {}, ClusterMethod::Gpu);
      QFAIL("expected GpuError");
    } catch (const GpuError& e) {
      QVERIFY(QString(e.what()).contains("needs a GPU"));
    }
    QCOMPARE(default_method<ClusterMethod>(), ClusterMethod::Cpu);
  }

  void generatorHasTheRequestedStructure() {
    ClusterCloudParams p{4096, 16, 8, 4, 1.0f, 5};
    const PointCloud c = generate_cluster_cloud(p);
    const ClusterResult r = euclidean_cluster(c, {1.0f, 1, 1u << 30}, ClusterMethod::Cpu);
    QCOMPARE(r.sizes.size(), std::size_t(16));
    QCOMPARE(r.sizes.front(), std::size_t(256));
    // Point distance 4: consecutive members of a cluster are 4 indices apart.
    QCOMPARE(r.labels[0], r.labels[4]);
    QVERIFY(r.labels[0] != r.labels[1]);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, generate_cluster_cloud({100, 10, 20, 1, 1.0f, 1}));
  }

  // Each kept cluster's size, centroid and box in world coordinates (the cloud's origin added);
  // points with no cluster count nowhere.
  void summaryGivesEachClusterItsSizeCentroidAndBox() {
    PointCloud c;
    c.origin = {1000.0, -2000.0, 5.0};
    c.points = {{0, 0, 0}, {1, 2, 3}, {9, 9, 9}, {-1, 4, 1}, {2, -2, 2}, {7, 7, 7}};
    ClusterResult r;
    r.labels = {1, 0, -1, 0, 1, 0};
    r.sizes = {3, 2};
    const auto s = summarize_clusters(c, r);
    QCOMPARE(s.size(), std::size_t(2));
    QCOMPARE(s[0].id, 0);
    QCOMPARE(s[0].size, std::size_t(3));
    QCOMPARE(s[1].size, std::size_t(2));
    const double c0[3] = {1000 + 7.0 / 3, -2000 + 13.0 / 3, 5 + 11.0 / 3};
    const double lo0[3] = {999, -1998, 6}, hi0[3] = {1007, -1993, 12};
    const double lo1[3] = {1000, -2002, 5}, hi1[3] = {1002, -2000, 7};
    for (int a = 0; a < 3; ++a) {
      QVERIFY(std::abs(s[0].centroid[a] - c0[a]) < 1e-9);
      QCOMPARE(s[0].min[a], lo0[a]);
      QCOMPARE(s[0].max[a], hi0[a]);
      QCOMPARE(s[1].min[a], lo1[a]);
      QCOMPARE(s[1].max[a], hi1[a]);
    }
    QCOMPARE(s[1].centroid[0], 1001.0);
    r.labels.pop_back();
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, summarize_clusters(c, r));
  }

  void exportsSummaryAndFiles() {
    const PointCloud c = random_blobs(4, 800, false);
    const ClusterResult r = euclidean_cluster(c, {0.8f, 3, 100000}, ClusterMethod::Cpu);
    QTemporaryDir dir;
    save_cluster_csv((dir.path() + "/c.csv").toStdString(), c, r);
    const QList<QByteArray> lines = test::readAll(dir.path() + "/c.csv").trimmed().split('\n');
    QCOMPARE(lines.size(), int(r.sizes.size()) + 1);
    QVERIFY(lines[1].startsWith("0," + QByteArray::number(qulonglong(r.sizes[0])) + ","));
    save_cluster_files((dir.path() + "/parts").toStdString(), c, r, "pcd");
    QCOMPARE(load_cloud((dir.path() + "/parts/cluster_0000.pcd").toStdString()).size(), r.sizes[0]);
    save_cloud((dir.path() + "/labelled.pcd").toStdString(), with_labels(c, r));
    QVERIFY(std::ranges::equal(load_cloud((dir.path() + "/labelled.pcd").toStdString()).labels,
                               r.labels));
  }

  void pclOnRealFrame() {
    CUMULUS_REQUIRE_DATA(path, "kitti/000000.bin");
    const PointCloud c = load_cloud(path.toStdString());
    const ClusterResult& r = pcl_reference("kitti/000000.bin", c, {0.5f, 1, 1u << 30});
    std::size_t total = 0;
    for (auto s : r.sizes)
      total += s;
    QCOMPARE(total, c.size());
    QVERIFY(r.sizes.size() > 100);
  }

  // ---- every GPU method equals PCL ----------------------------------------------------------

  void gpuEqualsPcl_data() {
    test::add_columns<QString, double, int, int, int>(
        {"input", "tolerance", "min", "max", "method"});
    const struct {
      const char* input;
      double tol;
      int min, max;
      bool needs_data;
      bool fast_only = false;  // `gpu`'s own code paths
    } cases[] = {
        {"kitti/000000.bin", 0.5, 1, 1 << 30, true},
        {"kitti/000000.bin", 0.3, 10, 5000, true},
        {"kitti/000001.bin", 1.0, 1, 1 << 30, true},
        {"cupcl/sample.pcd", 0.5, 1, 1 << 30, true},
        {"lidar-pair/251370668.pcd", 0.4, 5, 1 << 30, true},
        {"sample:street_scene.pcd", 0.5, 20, 100000, false},
        {"generated:65536,128,32,4", 1.0, 1, 1 << 30, false},
        {"generated:65536,1024,16,1024", 1.0, 1, 1 << 30, false},
        {"blobs-with-nans", 0.7, 3, 400, false},
        {"singles-and-lines", 0.5, 1, 20, false},
        {"singles-and-lines", 0.5, 2, 1 << 30, false},
        {"far-points", 0.5, 1, 1 << 30, false},
        {"grid-edge", 0.001, 1, 1 << 30, false},
        {"dense-cube", 0.5, 1, 1 << 30, false},
        {"dense-cube-tiny", 0.5e-14, 1, 1 << 30, false, true},
        {"dense-cube-huge", 0.5e13, 1, 1 << 30, false, true},
    };
    for (const auto& c : cases) {
      if (c.needs_data && test::sharedDataFile(c.input).isEmpty()) continue;
      for (auto m : all_methods<ClusterMethod>()) {
        if (!is_gpu_method(m) || (c.fast_only && m != ClusterMethod::Gpu)) continue;
        const QString row = QString("%1 t=%2 [%3,%4] %5")
                                .arg(c.input)
                                .arg(c.tol)
                                .arg(c.min)
                                .arg(c.max)
                                .arg(method_name(m));
        QTest::newRow(qPrintable(row)) << QString(c.input) << c.tol << c.min << c.max << int(m);
      }
    }
  }

  void gpuEqualsPcl() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    QFETCH(QString, input);
    QFETCH(double, tolerance);
    QFETCH(int, min);
    QFETCH(int, max);
    QFETCH(int, method);
    static QHash<QString, std::shared_ptr<PointCloud>> clouds;
    if (!clouds.contains(input)) clouds[input] = std::make_shared<PointCloud>(load_case(input));
    const PointCloud& c = *clouds[input];
    const ClusterParams p{float(tolerance), std::size_t(min), std::size_t(max)};
    const ClusterResult& ref = pcl_reference(input, c, p);
    if (input == "grid-edge")  // the chain across the edge, and the one split beyond it
      QCOMPARE(ref.sizes, (std::vector<std::size_t>{1900, 1400, 500}));
    const ClusterResult r = euclidean_cluster(c, p, ClusterMethod(method));
    QCOMPARE(r.method, std::string(method_name(ClusterMethod(method))));
    QCOMPARE(r.non_finite, ref.non_finite);
    QCOMPARE(r.sizes, ref.sizes);
    QCOMPARE(r.dropped_clusters, ref.dropped_clusters);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < r.labels.size(); ++i)
      differ += r.labels[i] != ref.labels[i];
    QVERIFY2(differ == 0, qPrintable(QString("%1 labels differ from PCL").arg(differ)));
    QVERIFY(!r.stages.empty());
  }

  void gpuRepeatedRunsAreStable() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    const PointCloud c = load_case("generated:65536,128,32,4");
    const ClusterResult first = euclidean_cluster(c, {1.0f, 1, 1u << 30}, ClusterMethod::Gpu);
    for (int i = 0; i < 20; ++i)
      QVERIFY(euclidean_cluster(c, {1.0f, 1, 1u << 30}, ClusterMethod::Gpu).labels == first.labels);
    // Different sizes in a row reuse and grow the buffers.
    const PointCloud small = random_blobs(2, 100, true);
    QVERIFY(euclidean_cluster(small, {0.5f, 1, 100}, ClusterMethod::Gpu).labels ==
            euclidean_cluster(small, {0.5f, 1, 100}, ClusterMethod::Cpu).labels);
    PointCloud empty;
    QVERIFY(euclidean_cluster(empty, {}, ClusterMethod::Gpu).labels.empty());
  }

  void gpuResultsIntoAReusedResultEqualFreshOnes() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // 10,000 points 1 m apart in a row of lines: as many components as points, past the 4,096
    // that are ranked before their count comes back, so their labels take the second trip.
    const PointCloud singles = points_a_metre_apart();
    const std::vector<std::pair<PointCloud, ClusterParams>> cases = {
        {load_case("blobs-with-nans"), {0.7f, 3, 400}},
        {singles, {0.5f, 1, 1u << 30}},
        {load_case("far-points"), {0.5f, 1, 1u << 30}},
        {load_case("dense-cube"), {0.5f, 1, 1u << 30}},
        {PointCloud{}, {0.5f, 1, 1u << 30}},
        {random_blobs(2, 100, true), {0.5f, 1, 100}},
    };
    ClusterResult into;
    for (int round = 0; round < 2; ++round)
      for (const auto& [cloud, p] : cases) {
        euclidean_cluster(cloud.points.data(), cloud.size(), p, ClusterMethod::Gpu, into);
        const ClusterResult& ref =
            pcl_reference(QString("reuse-%1-%2").arg(cloud.size()).arg(p.tolerance), cloud, p);
        QCOMPARE(into.labels, ref.labels);
        QCOMPARE(into.sizes, ref.sizes);
        QCOMPARE(into.non_finite, ref.non_finite);
        QCOMPARE(into.dropped_clusters, ref.dropped_clusters);
        QCOMPARE(into.method, std::string("gpu"));
        // The stages of this call only, as in a fresh result.
        const ClusterResult fresh =
            euclidean_cluster(cloud.points.data(), cloud.size(), p, ClusterMethod::Gpu);
        QCOMPARE(into.stages.size(), fresh.stages.size());
      }
  }

  // The fast method's table and counters are cleared behind each call for the next one, which
  // then skips its own clearing; after the sorted path (more than 4,096 components, whose kernels
  // read the counters after the labels), after another method, and for a larger table the call
  // clears them itself. Each call of a run that takes every one of those turns gives PCL's labels.
  void gpuEachCallStartsFromAClearTable() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    const PointCloud singles = points_a_metre_apart();  // 10,000 components: the sorted path
    const PointCloud blobs = load_case("blobs-with-nans");
    const PointCloud large = load_case("generated:65536,128,32,4");  // a larger table
    const PointCloud small = random_blobs(2, 100, true);
    struct Call {
      const PointCloud* cloud;
      ClusterParams p;
      ClusterMethod method;
    };
    const std::vector<Call> calls = {
        {&blobs, {0.7f, 3, 400}, ClusterMethod::Gpu},
        {&blobs, {0.7f, 3, 400}, ClusterMethod::Gpu},  // cleared behind the first
        {&singles, {0.5f, 1, 1u << 30}, ClusterMethod::Gpu},
        {&blobs, {0.7f, 3, 400}, ClusterMethod::Gpu},  // after the sorted path
        {&small, {0.5f, 1, 100}, ClusterMethod::GpuEdgeRs},
        {&blobs, {0.7f, 1, 1u << 30}, ClusterMethod::Gpu},  // after another method
        {&large, {1.0f, 1, 1u << 30}, ClusterMethod::Gpu},
        {&small, {0.5f, 1, 100}, ClusterMethod::Gpu},  // a smaller table than the one cleared
        {&singles, {0.5f, 1, 1u << 30}, ClusterMethod::Gpu},
    };
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const Call& c = calls[k];
      const ClusterResult& ref = pcl_reference(
          QString("clear-%1-%2-%3").arg(c.cloud->size()).arg(c.p.tolerance).arg(c.p.min_size),
          *c.cloud, c.p);
      const ClusterResult r = euclidean_cluster(*c.cloud, c.p, c.method);
      QVERIFY2(r.labels == ref.labels, qPrintable(QString("call %1").arg(k)));
      QCOMPARE(r.sizes, ref.sizes);
      QCOMPARE(r.non_finite, ref.non_finite);
      QCOMPARE(r.dropped_clusters, ref.dropped_clusters);
    }
  }

  // A result's labels are written by the last kernel straight into page-locked storage from the
  // process's pool, a reused pageable result's storage included; where the pool has none to give
  // (its cap) they are widened into pageable storage as before. Both ways give PCL's labels, with
  // few components (ranked on the device before the count comes back) and with many (sorted).
  void gpuLabelsLandInPageLockedResultsOrAreWidened() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    const PointCloud singles = points_a_metre_apart();  // more components than the small path ranks
    const std::vector<std::pair<PointCloud, ClusterParams>> cases = {
        {load_case("generated:65536,128,32,4"), {0.5f, 1, 1u << 30}},
        {singles, {0.5f, 1, 1u << 30}},
    };
    PageLockedPool& pool = page_locked_pool();
    const std::size_t cap = pool.cap();
    for (const auto& [cloud, p] : cases) {
      const ClusterResult& ref =
          pcl_reference(QString("page-locked-%1").arg(cloud.size()), cloud, p);
      const ClusterResult fresh = euclidean_cluster(cloud, p, ClusterMethod::Gpu);
      QVERIFY(is_page_locked(fresh.labels.data()));
      QCOMPARE(fresh.labels, ref.labels);
      QCOMPARE(fresh.sizes, ref.sizes);
      ClusterResult reused;
      reused.labels.assign(cloud.size() + 7, 3);  // pageable, and longer than the cloud
      QVERIFY(!is_page_locked(reused.labels.data()));
      euclidean_cluster(cloud.points.data(), cloud.size(), p, ClusterMethod::Gpu, reused);
      QVERIFY(is_page_locked(reused.labels.data()));
      QCOMPARE(reused.labels, ref.labels);
      pool.set_cap(0);
      const ClusterResult widened = euclidean_cluster(cloud, p, ClusterMethod::Gpu);
      pool.set_cap(cap);
      QVERIFY(!is_page_locked(widened.labels.data()));
      QCOMPARE(widened.labels, ref.labels);
      QCOMPARE(widened.sizes, ref.sizes);
    }
  }

  void gpuStagesInsideTheKernelChainAreTimedByItsKernels() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // The grid, labelling and relabelling are one chain of dependent launches timed by stamps
    // its kernels write (an event between them would break the chain). Each call's stamps must
    // be its own: a larger cloud after a smaller one, then the smaller again.
    const PointCloud big = load_case("generated:65536,128,32,4");
    const PointCloud small = random_blobs(2, 100, true);
    // The labels come up with the relabelling's last kernel: no download stage.
    const std::vector<std::string> names = {"upload", "grid", "labelling", "canonicalize",
                                            "labels into the result (host)"};
    for (const PointCloud* c : {&small, &big, &small}) {
      const WallTimer call;
      const ClusterResult r = euclidean_cluster(*c, {1.0f, 1, 1u << 30}, ClusterMethod::Gpu);
      const double call_ms = call.ms();
      std::vector<std::string> got;
      double chain_ms = 0;
      for (const auto& [name, ms] : r.stages) {
        got.push_back(name);
        if (name == "grid" || name == "labelling" || name == "canonicalize") {
          QVERIFY2(ms > 0 && ms < call_ms,
                   qPrintable(
                       QString("%1 %2 ms of a %3 ms call").arg(name.c_str()).arg(ms).arg(call_ms)));
          chain_ms += ms;
        }
      }
      QCOMPARE(got, names);
      QVERIFY(chain_ms < call_ms);
    }
  }

  void gpuPageLockedPointsAreReadWhereTheyLie() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // `gpu` reads page-locked points over the bus in its first kernel instead of copying them
    // first: the same labels as from pageable memory (which PCL's are checked against), for
    // sizes off the kernel's 16-byte words and blocks (1001 points: 3003 floats; 37), with NaNs,
    // far points and a second call over the device's copy of the first, at the allocation's start
    // and inside it. A pointer off 16 bytes goes by the copy.
    for (const QString name : {"blobs-with-nans", "far-points", "generated:65536,128,32,4"}) {
      PointCloud c = load_case(name);
      for (std::size_t n : {c.size(), std::size_t(1001), std::size_t(37)}) {
        n = std::min(n, c.size());
        const ClusterParams p{0.5f, 1, 1u << 30};
        const ClusterResult ref = euclidean_cluster(c.points.data(), n, p, ClusterMethod::Gpu);
        auto pinned = allocate_pinned_points(n + 4);
        // At the allocation's start, 48 bytes into it (16-byte aligned) and 12 bytes into it.
        for (const std::size_t k : {0, 4, 1}) {
          std::copy(c.points.begin(), c.points.begin() + std::ptrdiff_t(n), pinned.get() + k);
          const ClusterResult r = euclidean_cluster(pinned.get() + k, n, p, ClusterMethod::Gpu);
          QCOMPARE(r.labels, ref.labels);
          QCOMPARE(r.sizes, ref.sizes);
          QCOMPARE(r.non_finite, ref.non_finite);
          const std::string want = k == 1 ? "upload" : "upload and grid";
          QVERIFY2(
              !r.stages.empty() && r.stages.front().first == want,
              qPrintable(QString("%1, %2 points, %3 points in: first stage %4")
                             .arg(name)
                             .arg(n)
                             .arg(k)
                             .arg(r.stages.empty() ? "none" : r.stages.front().first.c_str())));
        }
      }
    }
    // Pageable points are copied as before.
    const PointCloud small = random_blobs(2, 100, true);
    const ClusterResult r = euclidean_cluster(small, {0.5f, 1, 100}, ClusterMethod::Gpu);
    QCOMPARE(r.stages.front().first, std::string("upload"));
  }

  void gpuPageLockedChainIsTimedFromItsFirstKernel() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // From page-locked points the clock starts with no event: the chain's first kernel stamps
    // its start, and its three stages are all the kernels' stamps. After them the sorted path
    // (more than 4,096 components) is timed by events again, from the chain's last one.
    const PointCloud singles = points_a_metre_apart();
    const std::vector<std::string> small_path = {"upload and grid", "labelling", "canonicalize",
                                                 "labels into the result (host)"};
    const std::vector<std::string> sorted_path = {
        "upload and grid",       "labelling", "canonicalize",
        "canonicalize (sorted)", "download",  "labels into the result (host)"};
    const PointCloud blobs = load_case("generated:65536,128,32,4");
    for (const PointCloud* c : {&blobs, &singles, &blobs}) {
      auto pinned = allocate_pinned_points(c->size());
      std::copy(c->points.begin(), c->points.end(), pinned.get());
      const WallTimer call;
      const ClusterResult r =
          euclidean_cluster(pinned.get(), c->size(), {0.5f, 1, 1u << 30}, ClusterMethod::Gpu);
      const double call_ms = call.ms();
      std::vector<std::string> got;
      double timed_ms = 0;
      for (const auto& [name, ms] : r.stages) {
        got.push_back(name);
        if (name == "labels into the result (host)") continue;
        QVERIFY2(
            ms > 0 && ms < call_ms,
            qPrintable(QString("%1 %2 ms of a %3 ms call").arg(name.c_str()).arg(ms).arg(call_ms)));
        timed_ms += ms;
      }
      QCOMPARE(got, c == &singles ? sorted_path : small_path);
      QVERIFY(timed_ms < call_ms);
    }
  }

  void gpuLabelsAreAllInPlaceWhenTheCallReturns() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // The host stops waiting when k_labels' last block has written its mark into host memory,
    // not when the stream has run. Two clouds of one size whose labels differ at most points, one
    // after the other into one result: a label not yet in host memory when the call returned
    // would be the other cloud's.
    const PointCloud a = random_blobs(21, 60000, true);
    PointCloud b = a;
    std::reverse(b.points.begin(), b.points.end());
    const ClusterParams p{0.25f, 1, 1u << 30};
    const ClusterResult& ref_a = pcl_reference("in-place-a", a, p);
    const ClusterResult& ref_b = pcl_reference("in-place-b", b, p);
    QVERIFY(ref_a.labels != ref_b.labels);
    auto pinned_a = allocate_pinned_points(a.size()), pinned_b = allocate_pinned_points(b.size());
    std::copy(a.points.begin(), a.points.end(), pinned_a.get());
    std::copy(b.points.begin(), b.points.end(), pinned_b.get());
    ClusterResult into;
    for (int round = 0; round < 200; ++round) {
      const bool is_a = round % 2 == 0;
      const bool page_locked = round % 4 < 2;  // and from pageable points, by a copy
      const Point3f* from = page_locked ? (is_a ? pinned_a.get() : pinned_b.get())
                                        : (is_a ? a.points.data() : b.points.data());
      euclidean_cluster(from, a.size(), p, ClusterMethod::Gpu, into);
      const ClusterResult& ref = is_a ? ref_a : ref_b;
      QVERIFY2(plain(into.labels) == plain(ref.labels), qPrintable(QString("round %1").arg(round)));
      QCOMPARE(into.sizes, ref.sizes);
      QCOMPARE(into.non_finite, ref.non_finite);
    }
  }

  void gpuLargeCloudsArriveWhole_data() {
    QTest::addColumn<QString>("name");
    // 512 clusters: the labels come up in 16 bits and are widened on the host; 8,192: sorted on
    // the device and copied in.
    QTest::newRow("3M points, 512 clusters") << QString("generated:3000000,512,64,4");
    QTest::newRow("1.5M points, 8192 clusters") << QString("generated:1500000,8192,64,4");
  }
  void gpuLargeCloudsArriveWhole() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    QFETCH(QString, name);
    // From 32 MB a pageable upload registers the caller's range for its copy (core/cuda/
    // host_upload.cuh), and from 2^20 points a fresh result's pages are mapped in on every core
    // and its labels copied in by the ready threads (cluster_gpu.cu). The labels into a fresh
    // and a reused result, from pageable memory, read in place from page-locked memory and from
    // a page-locked pointer off 16 bytes (copied as page-locked memory is, unregistered), are
    // those of the slab layer, which brings each slab's labels down its own way and merges them.
    const PointCloud c = load_case(name);
    const ClusterParams p{0.5f, 1, 1u << 30};
    const ClusterResult slabs =
        euclidean_cluster_tiled(c.points.data(), c.size(), p, ClusterMethod::Gpu, c.size() / 2);
    QVERIFY(slabs.sizes.size() > 1);
    const auto same = [&](const ClusterResult& r) {
      QCOMPARE(r.labels, slabs.labels);
      QCOMPARE(r.sizes, slabs.sizes);
      QCOMPARE(r.non_finite, slabs.non_finite);
    };
    ClusterResult r = euclidean_cluster(c.points.data(), c.size(), p, ClusterMethod::Gpu);
    same(r);
    euclidean_cluster(c.points.data(), c.size(), p, ClusterMethod::Gpu, r);  // reused
    same(r);
    auto pinned = allocate_pinned_points(c.size() + 4);
    for (const std::size_t k : {0, 1}) {
      std::copy(c.points.begin(), c.points.end(), pinned.get() + k);
      same(euclidean_cluster(pinned.get() + k, c.size(), p, ClusterMethod::Gpu));
    }
  }

  void matrixMethodsRefuseWhatDoesNotFit() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    // Interleaved clusters leave one label per point after INITIAL_EC: a 20k x 20k matrix.
    const PointCloud c = load_case("generated:20480,1024,8,1024");
    set_gpu_memory_limit(64u << 20);
    for (auto m : {ClusterMethod::GpuMatrixEs, ClusterMethod::GpuMatrixRs}) {
      try {
        euclidean_cluster(c, {1.0f, 1, 1u << 30}, m);
        set_gpu_memory_limit(0);
        QFAIL("expected GpuError");
      } catch (const GpuError& e) {
        QVERIFY2(QString(e.what()).contains("adjacency matrix"), e.what());
      }
    }
    // The other methods are unaffected, and the matrix ones work again without the cap.
    QVERIFY(!euclidean_cluster(c, {1.0f, 1, 1u << 30}, ClusterMethod::Gpu).sizes.empty());
    set_gpu_memory_limit(0);
    QCOMPARE(euclidean_cluster(c, {1.0f, 1, 1u << 30}, ClusterMethod::GpuMatrixRs).sizes.size(),
             std::size_t(1024));
  }

  void tiledEqualsWhole_data() {
    test::add_columns<QString, float, int>({"name", "tolerance", "slabs"});
    QTest::newRow("blobs with NaNs, 8 slabs") << "blobs-with-nans" << 0.5f << 8;
    QTest::newRow("street scene, 12 slabs") << "sample:street_scene.pcd" << 0.5f << 12;
    QTest::newRow("far points, 4 slabs") << "far-points" << 0.5f << 4;
    // Large enough for the slab passes to split among threads, with more components in a slab
    // than the merge counts per thread (1024).
    QTest::newRow("8192 clusters, 3 slabs") << "generated:131072,8192,16,4" << 1.0f << 3;
    QTest::newRow("kitti 000000, 6 slabs") << "kitti/000000.bin" << 0.5f << 6;
  }

  // Slabs with halos, merged by union-find, give the labels of the whole cloud in one piece
  // (PCL on each slab here; the GPU the same below).
  void tiledEqualsWhole() {
    QFETCH(QString, name);
    QFETCH(float, tolerance);
    QFETCH(int, slabs);
    if (!name.contains(':') && name.contains('/') && test::sharedDataFile(name).isEmpty())
      QSKIP(qPrintable("real data " + name + " not found (expected under ../shared/data)"));
    const PointCloud c = load_case(name);
    const ClusterParams p{tolerance, 3, 100000};
    const ClusterResult& whole = pcl_reference(name, c, p);
    // Room for each slab's halos: three times its share of the points.
    std::size_t calls = 0;
    const ClusterResult tiled = euclidean_cluster_tiled(
        c.points.data(), c.size(), p, ClusterMethod::Cpu, 3 * c.size() / std::size_t(slabs),
        [&](std::size_t, std::size_t) { return ++calls > 0; });
    QVERIFY2(calls >= std::size_t(slabs) / 3, qPrintable(QString("%1 slabs").arg(calls)));
    QCOMPARE(tiled.labels, whole.labels);
    QCOMPARE(tiled.sizes, whole.sizes);
    QCOMPARE(tiled.non_finite, whole.non_finite);
    QCOMPARE(tiled.dropped_clusters, whole.dropped_clusters);
  }

  // The host passes of the slabs (core/parallel.h): every item in exactly one part, parts in
  // order, whatever the number of threads.
  void parallelPartsCoverEveryItemOnce() {
    for (std::size_t n : {std::size_t(0), std::size_t(5), std::size_t(1000003)}) {
      for (std::size_t parts : {std::size_t(1), std::size_t(3), host_threads() + 5}) {
        std::vector<int> seen(n, 0);
        std::vector<std::pair<std::size_t, std::size_t>> ranges(parts);
        parallel_parts(n, parts, [&](std::size_t b, std::size_t e, std::size_t p) {
          ranges[p] = {b, e};
          for (std::size_t i = b; i < e; ++i)
            ++seen[i];
        });
        QVERIFY(std::all_of(seen.begin(), seen.end(), [](int v) { return v == 1; }));
        for (std::size_t p = 0; p + 1 < parts; ++p)
          QCOMPARE(ranges[p].second, ranges[p + 1].first);
      }
    }
  }

  void parallelPartsRethrowWhatAPartThrows() {
    std::atomic<int> ran{0};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             parallel_parts(1000, 8, [&](std::size_t, std::size_t, std::size_t p) {
                               ++ran;
                               if (p == 5) throw InvalidArgument("part 5");
                             }));
    QCOMPARE(ran.load(), 8);  // the other parts still ran to their end
    // The threads are free again afterwards.
    std::atomic<std::size_t> sum{0};
    parallel_parts(100, 4, [&](std::size_t b, std::size_t e, std::size_t) { sum += e - b; });
    QCOMPARE(sum.load(), std::size_t(100));
  }

  // Two callers at once (the GUI's job and a Python thread): the second starts threads of its
  // own instead of waiting for the first.
  void parallelPartsFromTwoCallersAtOnce() {
    std::atomic<bool> inner_done{false};
    std::atomic<std::size_t> outer{0};
    parallel_parts(4, 4, [&](std::size_t b, std::size_t e, std::size_t p) {
      if (p == 0) {
        std::atomic<std::size_t> inner{0};
        parallel_parts(1000, 4,
                       [&](std::size_t ib, std::size_t ie, std::size_t) { inner += ie - ib; });
        inner_done = inner.load() == 1000;
      }
      outer += e - b;
    });
    QVERIFY(inner_done.load());
    QCOMPARE(outer.load(), std::size_t(4));
  }

  // The threads woken ahead of the labels' widening (core/parallel.h): every part runs once,
  // whether the helpers were woken or not.
  void readyThreadsRunEveryPartOnce() {
    ReadyThreads crew(2);
    for (bool woken : {false, true}) {
      if (woken) crew.wake();
      for (std::size_t parts : {std::size_t(0), std::size_t(1), std::size_t(7)}) {
        std::vector<std::atomic<int>> ran(parts);
        crew.run(parts, [&](std::size_t p) { ++ran[p]; });
        for (auto& r : ran)
          QCOMPARE(r.load(), 1);
      }
    }
  }

  // A woken helper takes a part: the caller's own part waits for one (up to 10 s, for a loaded
  // machine) before it ends, so the second part is left to a helper.
  void readyThreadsHelpOnceWoken() {
    ReadyThreads crew(2);
    crew.wake();
    const auto caller = std::this_thread::get_id();
    std::atomic<bool> helped{false};
    crew.run(2, [&](std::size_t) {
      if (std::this_thread::get_id() != caller) {
        helped = true;
        return;
      }
      for (int i = 0; i < 10000 && !helped; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    QVERIFY2(helped.load(), "no helper took a part");
  }

  void readyThreadsRethrowWhatAPartThrows() {
    ReadyThreads crew(2);
    crew.wake();
    std::atomic<int> ran{0};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, crew.run(8, [&](std::size_t p) {
      ++ran;
      if (p == 3) throw InvalidArgument("part 3");
    }));
    QCOMPARE(ran.load(), 8);  // the other parts still ran
    ReadyThreads alone(0);    // the calling thread only: the same
    ran = 0;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, alone.run(8, [&](std::size_t p) {
      ++ran;
      if (p == 3) throw InvalidArgument("part 3");
    }));
    QCOMPARE(ran.load(), 8);
    std::atomic<int> again{0};
    crew.run(4, [&](std::size_t) { ++again; });
    QCOMPARE(again.load(), 4);
  }

  // Two callers at once: the second runs its parts itself instead of waiting.
  void readyThreadsFromTwoCallersAtOnce() {
    ReadyThreads crew(2);
    crew.wake();
    std::atomic<int> a{0}, b{0};
    std::thread other([&] {
      crew.run(50, [&](std::size_t) {
        ++b;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      });
    });
    crew.run(50, [&](std::size_t) {
      ++a;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    });
    other.join();
    QCOMPARE(a.load(), 50);
    QCOMPARE(b.load(), 50);
  }

  // Mapping a large allocation's pages in ahead of use changes nothing in it: written pages keep
  // their values and fresh ones read zero (the features' histograms rely on both).
  void prefaultedPagesKeepWhatTheyHold() {
    std::vector<float> written(std::size_t(3) << 20);
    for (std::size_t i = 0; i < written.size(); ++i)
      written[i] = float(i % 1000);
    prefault_pages(written.data(), written.size() * sizeof(float));
    prefault_pages(written.data() + 1, 100);  // inside one page: nothing to map
    std::size_t changed = 0;
    for (std::size_t i = 0; i < written.size(); ++i)
      changed += written[i] != float(i % 1000);
    QCOMPARE(changed, std::size_t(0));
    const std::size_t bytes = std::size_t(64) << 20;
    void* fresh = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    QVERIFY(fresh != MAP_FAILED);
    prefault_pages(fresh, bytes);
    const auto* words = static_cast<const std::uint64_t*>(fresh);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < bytes / 8; ++i)
      nonzero += words[i] != 0;
    munmap(fresh, bytes);
    QCOMPARE(nonzero, std::size_t(0));
  }

  // The slab boundaries come from the first finite point of every window of n / 1M points; a
  // cloud whose points at the windows' starts are all NaN still gets its sample.
  void tiledSamplesPastNonFinitePoints() {
    PointCloud c = load_case("generated:2400000,600,2,64");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i = 0; i < c.size(); i += 2)
      c.points[i] = {nan, nan, nan};
    const ClusterParams p{1.0f, 1, 1u << 30};
    const ClusterResult whole =
        euclidean_cluster_call(c.points.data(), c.size(), p, ClusterMethod::Cpu);
    const ClusterResult tiled =
        euclidean_cluster_tiled(c.points.data(), c.size(), p, ClusterMethod::Cpu, c.size() / 4);
    QVERIFY2(tiled.stages.front().first.find("slabs") != std::string::npos,
             tiled.stages.front().first.c_str());
    QCOMPARE(tiled.non_finite, c.size() / 2);
    QCOMPARE(tiled.labels, whole.labels);
    QCOMPARE(tiled.sizes, whole.sizes);
  }

  void tiledRunStopsWhenCancelled() {
    const PointCloud c = load_case("blobs-with-nans");
    std::size_t seen = 0;
    QVERIFY_THROWS_EXCEPTION(
        Cancelled, euclidean_cluster_tiled(c.points.data(), c.size(), {0.5f}, ClusterMethod::Cpu,
                                           1000, [&](std::size_t done, std::size_t) {
                                             seen = done;
                                             return done < 2;
                                           }));
    QCOMPARE(seen, std::size_t(2));
  }

  // A tolerance beyond the cloud's extent answers at once: one cluster of the finite points, or
  // none by the size filter; just past the diagonal it is PCL's own answer.
  void toleranceBeyondTheExtentIsOneCluster() {
    const PointCloud c = random_blobs(3, 300, true);
    ClusterParams p{1e30f};
    const ClusterResult r = euclidean_cluster(c, p, ClusterMethod::Cpu);
    QVERIFY(r.non_finite > 0);
    QCOMPARE(r.sizes, std::vector<std::size_t>{c.size() - r.non_finite});
    QCOMPARE(r.stages.front().first, std::string("tolerance beyond extent: one cluster"));
    const Bounds b = c.local_bounds();
    p.tolerance = 1.02f * std::hypot(b.max.x - b.min.x, b.max.y - b.min.y, b.max.z - b.min.z);
    const ClusterResult pcl =
        euclidean_cluster_call(c.points.data(), c.size(), p, ClusterMethod::Cpu);
    QCOMPARE(euclidean_cluster(c, p, ClusterMethod::Cpu).labels, pcl.labels);
    p.min_size = c.size();
    const ClusterResult none = euclidean_cluster(c, p, ClusterMethod::Cpu);
    QVERIFY(none.sizes.empty());
    QCOMPARE(none.dropped_clusters, std::size_t(1));
  }

  void cpuRunReportsProgressAndStops() {
    const PointCloud c = random_blobs(5, 5000, false);
    std::size_t calls = 0, last = 0, total = 0;
    euclidean_cluster(c, {0.5f}, ClusterMethod::Cpu, [&](std::size_t done, std::size_t all) {
      ++calls, last = done, total = all;
      return true;
    });
    QVERIFY(calls > 0);
    QCOMPARE(total, c.size());
    QVERIFY(last <= total);
    QVERIFY_THROWS_EXCEPTION(Cancelled,
                             euclidean_cluster(c, {0.5f}, ClusterMethod::Cpu,
                                               [](std::size_t, std::size_t) { return false; }));
  }

  void tilingRefusesWhatSlabsCannotSplit() {
    PointCloud c;
    c.points.assign(1000, Point3f{1, 2, 3});  // one spot: no slab can be smaller than the cloud
    try {
      euclidean_cluster_tiled(c.points.data(), c.size(), {0.5f}, ClusterMethod::Cpu, 100);
      QFAIL("expected InvalidArgument");
    } catch (const InvalidArgument& e) {
      QVERIFY2(QString(e.what()).contains("too dense"), e.what());
    }
  }

  // A memory cap far below the cloud's needs makes `gpu` tile on its own; the labels stay PCL's.
  void gpuBeyondTheMemoryCapTiles_data() {
    QTest::addColumn<QString>("name");
    QTest::newRow("street scene") << "sample:street_scene.pcd";
    QTest::newRow("kitti 000000") << "kitti/000000.bin";
    QTest::newRow("far points") << "far-points";
  }

  void gpuBeyondTheMemoryCapTiles() {
    QFETCH(QString, name);
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    if (!name.contains(':') && !name.contains("far") && test::sharedDataFile(name).isEmpty())
      QSKIP(qPrintable("real data " + name + " not found (expected under ../shared/data)"));
    const PointCloud c = load_case(name);
    const ClusterParams p{0.5f, 1, 1u << 30};
    const ClusterResult whole = euclidean_cluster(c, p, ClusterMethod::Gpu);
    set_gpu_memory_limit(c.size() / 4 * 320);  // slabs of a quarter of the cloud
    ClusterResult tiled;
    try {
      tiled = euclidean_cluster(c, p, ClusterMethod::Gpu);
    } catch (...) {
      set_gpu_memory_limit(0);
      throw;
    }
    set_gpu_memory_limit(0);
    QVERIFY2(tiled.stages.front().first.find("slabs") != std::string::npos,
             tiled.stages.front().first.c_str());
    QCOMPARE(tiled.labels, whole.labels);
    QCOMPARE(tiled.sizes, whole.sizes);
    QCOMPARE(tiled.labels, pcl_reference(name, c, p).labels);
  }

  // Slabs of millions of points go up in several page-locked chunks each (two in turn, one
  // gathered while the other uploads); the labels stay one call's.
  void gpuSlabsOfManyChunksEqualOneCall() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    const PointCloud c = load_case("generated:12000000,6000,16,4");
    const ClusterParams p{1.0f, 1, 1u << 30};
    const ClusterResult whole = euclidean_cluster(c, p, ClusterMethod::Gpu);
    QVERIFY(whole.stages.front().first.find("slabs") == std::string::npos);
    for (std::size_t cap : {std::size_t(5'000'000), std::size_t(9'000'000)}) {
      const ClusterResult tiled =
          euclidean_cluster_tiled(c.points.data(), c.size(), p, ClusterMethod::Gpu, cap);
      QVERIFY2(tiled.stages.front().first.find("slabs") != std::string::npos,
               tiled.stages.front().first.c_str());
      QCOMPARE(tiled.labels, whole.labels);
      QCOMPARE(tiled.sizes, whole.sizes);
    }
  }

  void gpuBoundaryPairsDecideLikePcl() {
    if (!query_device().available) QSKIP(qPrintable(QString::fromStdString(why_no_gpu())));
    for (auto m : all_methods<ClusterMethod>())
      QVERIFY2(euclidean_cluster(boundary_line(), {0.5f, 1, 100}, m).labels ==
                   euclidean_cluster(boundary_line(), {0.5f, 1, 100}, ClusterMethod::Cpu).labels,
               method_name(m));
  }
};

QTEST_GUILESS_MAIN(TestCluster)
#include "test_cluster.moc"
