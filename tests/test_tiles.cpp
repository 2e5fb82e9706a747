// Neighbour search, normals and features in tiles: every tile size gives what one call over the
// whole cloud gives (CPU methods with forced tile sizes on real clouds; GPU methods under a GPU
// memory cap, where the plain entry points tile on their own), progress and cancel, refusals.
#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "test_support.h"
#include "tiles/tiles.h"

using namespace cumulus;

namespace {

bool load(const QString& rel, std::size_t step, PointCloud& out) {
  return test::loadSharedEveryNth(rel, step, out);
}

// A street scan with holes (NaN points) and a few points far from everything else.
PointCloud street_with_holes() {
  StreetSceneParams sp;
  sp.azimuth_steps = 500;
  PointCloud c = generate_street_scene(sp);
  for (std::size_t i = 0; i < c.size(); i += 97)
    c.points[i] = {NAN, 0, 0};
  c.points.push_back({500, 500, 5});
  c.points.push_back({-400, 20, 1});
  c.width = std::uint32_t(c.size());
  return c;
}

// A data row's cloud: the street scan for no file, else every step-th point of the file; false
// when the file is not there.
bool case_cloud(const QString& file, int step, PointCloud& c) {
  if (!file.isEmpty()) return load(file, std::size_t(step), c);
  c = street_with_holes();
  return true;
}

bool same_bits(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Same squared distances entry by entry, and the same targets unless two lie at one distance
// (FLANN orders such ties by its tree, which differs between tiled; the GPU methods by index).
// Returns the number of entries that differ in target only; fails on anything else.
std::size_t compare_knn(const KnnResult& whole, const KnnResult& tiled, bool exact) {
  std::size_t ties = 0;
  if (whole.indices.size() != tiled.indices.size()) {
    QTest::qFail("result sizes differ", __FILE__, __LINE__);
    return 0;
  }
  for (std::size_t e = 0; e < whole.indices.size(); ++e) {
    if (!same_bits(whole.sq_distances[e], tiled.sq_distances[e])) {
      QTest::qFail(qPrintable(QString("entry %1 (query %2): distance %3 whole, %4 in tiled")
                                  .arg(e)
                                  .arg(e / std::size_t(whole.k))
                                  .arg(double(whole.sq_distances[e]))
                                  .arg(double(tiled.sq_distances[e]))),
                   __FILE__, __LINE__);
      return ties;
    }
    if (whole.indices[e] != tiled.indices[e]) ++ties;
  }
  if (exact && ties) QTest::qFail("targets differ at equal distances", __FILE__, __LINE__);
  return ties;
}

bool same_radius_rows(const RadiusResult& a, const RadiusResult& b, bool exact) {
  if (a.offsets != b.offsets || a.sq_distances != b.sq_distances) return false;
  if (exact) return a.indices == b.indices;
  for (std::size_t q = 0; q + 1 < a.offsets.size(); ++q) {
    std::vector<std::int32_t> x(a.indices.begin() + a.offsets[q],
                                a.indices.begin() + a.offsets[q + 1]),
        y(b.indices.begin() + b.offsets[q], b.indices.begin() + b.offsets[q + 1]);
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    if (x != y) return false;
  }
  return true;
}

std::size_t differing_normals(const NormalsResult& a, const NormalsResult& b) {
  std::size_t d = 0;
  for (std::size_t i = 0; i < a.normals.size(); ++i) {
    const Point3f &x = a.normals[i], &y = b.normals[i];
    d += !(same_bits(x.x, y.x) && same_bits(x.y, y.y) && same_bits(x.z, y.z) &&
           same_bits(a.curvature[i], b.curvature[i]));
  }
  return d;
}

bool sliced(const StageTimes& stages) {
  return !stages.empty() && stages.front().first.rfind("plan (", 0) == 0;
}

}  // namespace

class TestTiles : public QObject {
  Q_OBJECT

 private slots:
  void knnInTilesEqualsWhole_data() {
    test::add_columns<QString, int, int, int>({"file", "step", "k", "tile"});
    QTest::addRow("bunny k=1, tiles of 4000") << "bunny/bun_zipper.ply" << 1 << 1 << 4000;
    QTest::addRow("bunny k=16, tiles of 6000") << "bunny/bun_zipper.ply" << 1 << 16 << 6000;
    QTest::addRow("kitti k=8, tiles of 5000") << "kitti/000000.bin" << 4 << 8 << 5000;
    QTest::addRow("street k=32, tiles of 4000") << "" << 1 << 32 << 4000;
  }
  // The points among themselves: one pass settles most queries, the rest go again with their
  // bound, and every row is the whole cloud's.
  void knnInTilesEqualsWhole() {
    QFETCH(QString, file);
    QFETCH(int, step);
    QFETCH(int, k);
    QFETCH(int, tile);
    PointCloud c;
    if (!case_cloud(file, step, c)) QSKIP(qPrintable("real data " + file + " not found"));
    const KnnResult whole = knn_search(c.points, c.points, k, NnsMethod::Cpu);
    std::size_t calls = 0;
    TileOptions o;
    o.max_tile_points = std::size_t(tile);
    o.progress = [&](std::size_t done, std::size_t planned) {
      calls = done;
      return done <= planned;
    };
    const KnnResult tiled = knn_search_tiled(c.points, c.points, k, NnsMethod::Cpu, INFINITY, o);
    QVERIFY(sliced(tiled.stages));
    QVERIFY2(calls > c.size() / std::size_t(tile), qPrintable(QString::number(calls)));
    const std::size_t ties = compare_knn(whole, tiled, false);
    qInfo("%zu points in %zu calls; %zu entries another target at the same distance", c.size(),
          calls, ties);
  }

  // Queries of one cloud among the targets of another, with and without a distance limit.
  void knnOfOtherQueriesInTilesEqualsWhole() {
    PointCloud target, source;
    if (!load("lidar-pair/251370668.pcd", 2, target) ||
        !load("lidar-pair/251371071.pcd", 3, source))
      QSKIP("real data lidar-pair not found");
    for (float max_distance : {INFINITY, 1.0f})
      for (int k : {1, 5}) {
        const KnnResult whole =
            knn_search(target.points, source.points, k, NnsMethod::Cpu, max_distance);
        TileOptions o;
        o.max_tile_points = (target.size() + source.size()) / 6;
        const KnnResult tiled =
            knn_search_tiled(target.points, source.points, k, NnsMethod::Cpu, max_distance, o);
        QVERIFY(sliced(tiled.stages));
        compare_knn(whole, tiled, false);
      }
  }

  void radiusInTilesEqualsWhole() {
    PointCloud bunny, kitti;
    if (!load("bunny/bun_zipper.ply", 1, bunny)) QSKIP("real data bunny not found");
    const PointCloud street = street_with_holes();
    struct Case {
      const PointCloud* cloud;
      float radius;
      std::size_t tile, max_nn;
    };
    for (const Case& cs : {Case{&bunny, 0.005f, 4000, 0}, Case{&bunny, 0.004f, 2500, 10},
                           Case{&street, 0.5f, 8000, 0}}) {
      const auto& pts = cs.cloud->points;
      const RadiusResult whole = radius_search(pts, pts, cs.radius, NnsMethod::Cpu, cs.max_nn);
      TileOptions o;
      o.max_tile_points = cs.tile;
      const RadiusResult tiled =
          radius_search_tiled(pts, pts, cs.radius, NnsMethod::Cpu, cs.max_nn, o);
      QVERIFY(sliced(tiled.stages));
      QVERIFY2(same_radius_rows(whole, tiled, false),
               qPrintable(QString("r=%1 max_nn=%2").arg(double(cs.radius)).arg(cs.max_nn)));
    }
  }

  void normalsInTilesEqualWhole_data() {
    test::add_columns<QString, int, int, float>({"file", "step", "k", "radius"});
    QTest::addRow("bunny k=16") << "bunny/bun_zipper.ply" << 1 << 16 << 0.0f;
    QTest::addRow("bunny r=5mm") << "bunny/bun_zipper.ply" << 1 << 0 << 0.005f;
    QTest::addRow("kitti k=16") << "kitti/000000.bin" << 4 << 16 << 0.0f;
    QTest::addRow("street k=10") << "" << 1 << 10 << 0.0f;
  }
  void normalsInTilesEqualWhole() {
    QFETCH(QString, file);
    QFETCH(int, step);
    QFETCH(int, k);
    QFETCH(float, radius);
    PointCloud c;
    if (!case_cloud(file, step, c)) QSKIP(qPrintable("real data " + file + " not found"));
    NormalParams p;
    p.neighbourhood = {k, radius};
    const NormalsResult whole = estimate_normals(c, p, FeatureMethod::Cpu);
    TileOptions o;
    o.max_tile_points = c.size() / 5;
    const NormalsResult tiled = estimate_normals_tiled(c, p, FeatureMethod::Cpu, o);
    QVERIFY(sliced(tiled.stages));
    QCOMPARE(tiled.non_finite_points, whole.non_finite_points);
    QCOMPARE(tiled.nan_normals, whole.nan_normals);
    const std::size_t differ = differing_normals(whole, tiled);
    qInfo("%zu points: %zu normals not bit for bit the whole cloud's", c.size(), differ);
    QCOMPARE(differ, std::size_t(0));
  }

  void featuresInTilesEqualWhole_data() {
    test::add_columns<int, int, float>({"descriptor", "k", "radius"});
    QTest::addRow("pfh k=16") << 0 << 16 << 0.0f;
    QTest::addRow("fpfh k=16") << 1 << 16 << 0.0f;
    QTest::addRow("fpfh r=6mm") << 1 << 0 << 0.006f;
  }
  // Normals estimated inside (a tile pass of their own) and histograms in tiled.
  void featuresInTilesEqualWhole() {
    QFETCH(int, descriptor);
    QFETCH(int, k);
    QFETCH(float, radius);
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 2, c)) QSKIP("real data bunny not found");
    FeatureParams p;
    p.descriptor = descriptor ? Descriptor::Fpfh : Descriptor::Pfh;
    p.neighbourhood = {k, radius};
    p.normals.neighbourhood = Neighbourhood::nearest(12);
    const FeatureResult whole = compute_features(c, p, FeatureMethod::Cpu);
    TileOptions o;
    o.max_tile_points = c.size() / 4;
    std::size_t calls = 0;
    o.progress = [&](std::size_t done, std::size_t) { return ++calls == done; };
    const FeatureResult tiled = compute_features_tiled(c, p, FeatureMethod::Cpu, nullptr, o);
    QCOMPARE(tiled.bins, whole.bins);
    QCOMPARE(tiled.curvature.size(), c.size());
    const HistogramDiff d = compare_histograms(whole, tiled, 0.0);
    qInfo("%zu points in %zu calls: %zu rows differ (max %.3g)", c.size(), calls, d.rows, d.max);
    QCOMPARE(d.rows, std::size_t(0));
    for (std::size_t i = 0; i < c.size(); ++i)
      QVERIFY(same_bits(whole.normals[i].x, tiled.normals[i].x));
  }

  void givenNormalsAreUsedAsGiven() {
    const PointCloud c = street_with_holes();
    const NormalsResult n = estimate_normals(c, {}, FeatureMethod::Cpu);
    FeatureParams p;
    p.descriptor = Descriptor::Pfh;
    p.neighbourhood = Neighbourhood::nearest(8);
    TileOptions o;
    o.max_tile_points = c.size() / 3;
    const FeatureResult whole = compute_features(c, p, FeatureMethod::Cpu, &n.normals);
    const FeatureResult tiled = compute_features_tiled(c, p, FeatureMethod::Cpu, &n.normals, o);
    QVERIFY(tiled.curvature.empty());
    QCOMPARE(tiled.nan_histograms, whole.nan_histograms);
    QCOMPARE(compare_histograms(whole, tiled, 0.0).rows, std::size_t(0));
  }

  void aRunThatFitsIsOneCall() {
    const PointCloud c = street_with_holes();
    std::size_t calls = 0;
    TileOptions o;
    o.progress = [&](std::size_t done, std::size_t planned) {
      calls = done;
      return planned == 1;
    };
    const KnnResult r = knn_search_tiled(c.points, c.points, 4, NnsMethod::Cpu, INFINITY, o);
    QCOMPARE(calls, std::size_t(1));
    QVERIFY(!sliced(r.stages));
  }

  void tiledRunsStopWhenCancelled() {
    const PointCloud c = street_with_holes();
    TileOptions o;
    o.max_tile_points = c.size() / 8;
    std::size_t calls = 0;
    o.progress = [&](std::size_t done, std::size_t) {
      calls = done;
      return done < 2;
    };
    QVERIFY_THROWS_EXCEPTION(Cancelled, estimate_normals_tiled(c, {}, FeatureMethod::Cpu, o));
    QCOMPARE(calls, std::size_t(2));
    calls = 0;
    QVERIFY_THROWS_EXCEPTION(Cancelled,
                             radius_search_tiled(c.points, c.points, 0.3f, NnsMethod::Cpu, 0, o));
    QCOMPARE(calls, std::size_t(2));
  }

  // A few far points whose reach exceeds a call go in parts or alone; a reach that exceeds a
  // call for many points is refused with the numbers.
  void aReachBeyondOneCallForManyIsRefused() {
    const PointCloud c = street_with_holes();
    TileOptions o;
    o.max_tile_points = 500;
    try {
      radius_search_tiled(c.points, c.points, 100.0f, NnsMethod::Cpu, 0, o);
      QFAIL("a 100 m radius fitted calls of 500 points");
    } catch (const InvalidArgument& e) {
      QVERIFY2(QString(e.what()).contains("more than the 500"), e.what());
    }
    NormalParams p;
    p.neighbourhood = Neighbourhood::within(50.0f);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, estimate_normals_tiled(c, p, FeatureMethod::Cpu, o));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument, knn_search_tiled(c.points, c.points, 600, NnsMethod::Cpu, INFINITY, o));
  }

  // Points on one spot cannot be split by any grid: a few go alone, a crowd is refused, and
  // neither loops.
  void pointsOnOneSpotEndCleanly() {
    TileOptions o;
    o.max_tile_points = 100;
    const std::vector<Point3f> crowd(1000, Point3f{1, 2, 3});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             knn_search_tiled(crowd, crowd, 4, NnsMethod::Cpu, INFINITY, o));
    PointCloud c = street_with_holes();
    c.points.insert(c.points.end(), 40, Point3f{3, 4, 0});
    c.width = std::uint32_t(c.size());
    o.max_tile_points = 4000;
    const KnnResult whole = knn_search(c.points, c.points, 8, NnsMethod::Cpu);
    compare_knn(whole, knn_search_tiled(c.points, c.points, 8, NnsMethod::Cpu, INFINITY, o), false);
  }

  void badArgumentsAreRefusedBeforeAnyWork() {
    const PointCloud c = street_with_holes();
    TileOptions o;
    o.max_tile_points = 100;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             knn_search_tiled(c.points, c.points, 0, NnsMethod::Cpu, INFINITY, o));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             radius_search_tiled(c.points, c.points, -1, NnsMethod::Cpu, 0, o));
    NormalParams np;
    np.neighbourhood = {0, NAN};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, estimate_normals_tiled(c, np, FeatureMethod::Cpu, o));
    std::vector<Point3f> wrong(3);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             compute_features_tiled(c, {}, FeatureMethod::Cpu, &wrong, o));
  }

  void emptyAndAllNanCloudsGiveEmptyRows() {
    const std::vector<Point3f> none, nans(5, Point3f{NAN, NAN, NAN});
    TileOptions o;
    o.max_tile_points = 2;
    const KnnResult a = knn_search_tiled(nans, nans, 3, NnsMethod::Cpu, INFINITY, o);
    QCOMPARE(a.indices, ZeroedVector<std::int32_t>(15, -1));
    const RadiusResult b = radius_search_tiled(none, nans, 1.0f, NnsMethod::Cpu, 0, o);
    QCOMPARE(b.offsets, std::vector<std::uint32_t>(6, 0));
  }

  // ---- GPU: a memory cap makes the plain entry points work in tiled ----

  void gpuSearchesUnderAMemoryCapEqualOneCall() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    if (!load("kitti/000000.bin", 1, c)) QSKIP("real data kitti not found");
    for (NnsMethod m : {NnsMethod::Gpu, NnsMethod::GpuKdTree, NnsMethod::GpuBruteForce}) {
      const KnnResult whole = knn_search(c.points, c.points, 16, m);
      const RadiusResult rwhole = radius_search(c.points, c.points, 0.4f, m);
      KnnResult tiled;
      RadiusResult rslabs;
      {
        const test::MemoryCap cap(c.size() / 6 * (64 + 8 * 16));
        tiled = knn_search(c.points, c.points, 16, m);
        rslabs = radius_search(c.points, c.points, 0.4f, m);
      }
      QVERIFY2(sliced(tiled.stages), method_name(m));
      QVERIFY2(sliced(rslabs.stages), method_name(m));
      compare_knn(whole, tiled, true);
      QVERIFY2(same_radius_rows(rwhole, rslabs, true), method_name(m));
    }
  }

  void gpuNormalsAndFeaturesUnderAMemoryCapEqualOneCall() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    if (!load("kitti/000000.bin", 2, c)) QSKIP("real data kitti not found");
    NormalParams np;
    np.neighbourhood = Neighbourhood::nearest(16);
    FeatureParams fp;
    fp.neighbourhood = Neighbourhood::nearest(24);
    fp.normals = np;
    const NormalsResult nwhole = estimate_normals(c, np, FeatureMethod::Gpu);
    std::vector<FeatureResult> fwhole;
    for (Descriptor d : {Descriptor::Pfh, Descriptor::Fpfh}) {
      fp.descriptor = d;
      fwhole.push_back(compute_features(c, fp, FeatureMethod::Gpu));
    }
    const test::MemoryCap cap(c.size() / 5 * 600);
    const NormalsResult nslabs = estimate_normals(c, np, FeatureMethod::Gpu);
    QVERIFY(sliced(nslabs.stages));
    QCOMPARE(differing_normals(nwhole, nslabs), std::size_t(0));
    for (Descriptor d : {Descriptor::Pfh, Descriptor::Fpfh}) {
      fp.descriptor = d;
      const FeatureResult tiled = compute_features(c, fp, FeatureMethod::Gpu);
      const FeatureResult& whole = fwhole[d == Descriptor::Pfh ? 0 : 1];
      QVERIFY(tiled.stages.size() > 3);
      const HistogramDiff diff = compare_histograms(whole, tiled, 0.0);
      qInfo("%s: %zu rows differ (max %.3g)", descriptor_name(d), diff.rows, diff.max);
      QCOMPARE(diff.rows, std::size_t(0));
    }
  }
};

QTEST_GUILESS_MAIN(TestTiles)
#include "test_tiles.moc"
