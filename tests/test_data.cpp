// Projections between images and clouds, and the deterministic generators behind sample_data/.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "core/error.h"
#include "generate/generate.h"
#include "generate/shapes_impl.h"
#include "io/io.h"
#include "io/projection.h"
#include "test_support.h"

using namespace cumulus;

class TestData : public QObject {
  Q_OBJECT

 private slots:
  void pinholeBackProjection() {
    DepthImage img;
    img.width = 3;
    img.height = 2;
    img.depth = {2.0f, 0.0f, 2.0f, NAN, 4.0f, 1.0f};
    const PointCloud c = depth_to_cloud(img, {100, 200, 1, 0.5});
    QCOMPARE(c.width, 3u);
    QCOMPARE(c.height, 2u);
    QCOMPARE(c.count_non_finite(), std::size_t(2));
    QCOMPARE(c.points[0].x, -0.02f);   // (0 - 1) * 2 / 100
    QCOMPARE(c.points[0].y, -0.005f);  // (0 - 0.5) * 2 / 200
    QCOMPARE(c.points[4].z, 4.0f);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, depth_to_cloud(img, {0, 1, 0, 0}));
  }

  void allFiniteFindsAnyNonFiniteCoordinate() {
    // Every length around the 16-word blocks, every coordinate, and each kind of non-finite
    // value; the largest finite values and subnormals must pass.
    const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
    for (std::size_t n : {0, 1, 5, 6, 16, 17, 40, 1001}) {
      std::vector<Point3f> pts(n);
      for (std::size_t i = 0; i < n; ++i)
        pts[i] = {i % 2 ? FLT_MAX : -FLT_MAX, i % 3 ? FLT_MIN / 4 : -0.0f, float(i)};
      QVERIFY(all_finite(pts.data(), n));
      for (std::size_t i = 0; i < n; ++i)
        for (int axis = 0; axis < 3; ++axis)
          for (float v : bad) {
            std::vector<Point3f> q = pts;
            (axis == 0 ? q[i].x : axis == 1 ? q[i].y : q[i].z) = v;
            QVERIFY2(
                !all_finite(q.data(), n),
                qPrintable(QString("n %1 point %2 axis %3 %4").arg(n).arg(i).arg(axis).arg(v)));
          }
    }
  }

  void nonFiniteCountIsThePointByPointCount() {
    // count_non_finite skips blocks of 4,096 points that all_finite passes: non-finite points
    // at either end of a block, across several blocks, in the short last block, in every
    // coordinate and of each kind; a point with several non-finite coordinates counts once.
    const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
    for (std::size_t n : {0, 1, 4095, 4096, 4097, 12289}) {
      PointCloud c;
      c.points.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        c.points[i] = {float(i), i % 3 ? FLT_MAX : -FLT_MIN / 4, -float(i % 7)};
      QCOMPARE(c.count_non_finite(), std::size_t(0));
      std::size_t expected = 0;
      for (std::size_t i : {std::size_t(0), std::size_t(4095), std::size_t(4096), std::size_t(8191),
                            std::size_t(12288), n - 1}) {
        if (i >= n || !is_finite(c.points[i])) continue;
        const float v = bad[i % 4];
        (i % 3 == 0 ? c.points[i].x : i % 3 == 1 ? c.points[i].y : c.points[i].z) = v;
        if (i % 2) c.points[i].z = v;
        ++expected;
        QCOMPARE(c.count_non_finite(), expected);
      }
    }
    // Blocks with many: every lane of the four-point groups, every coordinate and combination.
    std::mt19937 rng(7);
    for (const int percent : {1, 30, 100}) {
      PointCloud c;
      c.points.resize(10001);
      for (std::size_t i = 0; i < c.size(); ++i) {
        c.points[i] = {float(i), -float(i), 0.5f};
        if (int(rng() % 100) >= percent) continue;
        const unsigned axes = 1 + rng() % 7;  // a non-empty set of coordinates
        const float v = bad[rng() % 4];
        if (axes & 1) c.points[i].x = v;
        if (axes & 2) c.points[i].y = v;
        if (axes & 4) c.points[i].z = v;
      }
      const auto by_point = std::size_t(std::count_if(
          c.points.begin(), c.points.end(), [](const Point3f& p) { return !is_finite(p); }));
      QCOMPARE(c.count_non_finite(), by_point);
    }
  }

  void rangeImageRoundTrip() {
    RangeImageModel m{10.0, -20.0, 360, 16};
    DepthImage img;
    img.width = m.width;
    img.height = m.height;
    for (std::uint32_t i = 0; i < m.width * m.height; ++i)
      img.depth.push_back(i % 11 == 0 ? 0.0f : 5.0f + (i % 17));
    const PointCloud c = range_image_to_cloud(img, m);
    const DepthImage back = cloud_to_range_image(c, m);
    QCOMPARE(back.count_valid(), img.count_valid());
    for (std::size_t i = 0; i < img.size(); ++i)
      QVERIFY(std::abs(back.depth[i] - img.depth[i]) < 1e-4f);
  }

  void realRangeImageToCloud() {
    CUMULUS_REQUIRE_DATA(path, "depth/scan10159.png");
    const DepthImage img = load_depth_image(path.toStdString(), 1.0 / 500);
    const PointCloud c = range_image_to_cloud(img, {2.0, -24.8, 0, 0});
    QCOMPARE(c.size(), img.size());
    QCOMPARE(c.size() - c.count_non_finite(), img.count_valid());
  }

  void badRangeModelsRejected() {
    PointCloud c;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, cloud_to_range_image(c, {-5, 5, 100, 10}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, cloud_to_range_image(c, {5, -5, 0, 10}));
  }

  void randomIsPortable() {
    // Fixed outputs pin the generator, so sample data is the same on every machine.
    Random r(42);
    const std::uint64_t first = r.next_u64();
    Random again(42);
    QCOMPARE(again.next_u64(), first);
    Random other(43);
    QVERIFY(other.next_u64() != first);
    double sum = 0;
    for (int i = 0; i < 20000; ++i)
      sum += r.uniform();
    QVERIFY(std::abs(sum / 20000 - 0.5) < 0.01);
  }

  void streetSceneLooksLikeAnHdl64Scan() {
    const PointCloud c = generate_street_scene({});
    QVERIFY2(c.size() > 110000 && c.size() < 125000, qPrintable(QString::number(c.size())));
    const ExtraField* ring = c.find_extra("ring");
    QVERIFY(ring);
    std::set<float> rings(ring->values.begin(), ring->values.end());
    QCOMPARE(rings.size(), std::size_t(64));
    QVERIFY(c.has_intensity());
    QCOMPARE(c.count_non_finite(), std::size_t(0));
    // Ground at -1.73 m below the sensor holds many points.
    const auto ground = std::count_if(c.points.begin(), c.points.end(), [](const Point3f& p) {
      return std::abs(p.z + 1.73f) < 0.05f;
    });
    QVERIFY(ground > 20000);
  }

  void streetSceneMapsOneToOneOntoItsRangeImage() {
    StreetSceneParams p;
    const PointCloud c = generate_street_scene(p);
    const DepthImage img = cloud_to_range_image(
        c, {p.fov_up_deg, p.fov_down_deg, std::uint32_t(p.azimuth_steps), std::uint32_t(p.beams)});
    QCOMPARE(img.count_valid(), c.size());
  }

  void streetSceneLabelsEveryClassVegetationIncluded() {
    StreetSceneParams p;
    const PointCloud c = generate_street_scene(p);
    const ExtraField* semantic = c.find_extra("semantic");
    QVERIFY(semantic);
    std::map<int, std::size_t> count;
    for (const float v : semantic->values)
      ++count[int(v)];
    QCOMPARE(count.size(), std::size_t(6));  // ground, building, vehicle, pole, pedestrian, trees
    QVERIFY2(count[int(StreetClass::Vegetation)] > c.size() / 100,
             qPrintable(QString::number(count[int(StreetClass::Vegetation)])));
    // Without the trees: no vegetation, and no more of anything else (the trees only hide).
    p.vegetation = false;
    const PointCloud bare = generate_street_scene(p);
    std::map<int, std::size_t> bare_count;
    for (const float v : bare.find_extra("semantic")->values)
      ++bare_count[int(v)];
    QCOMPARE(bare_count.count(int(StreetClass::Vegetation)), std::size_t(0));
    for (const auto& [label, n] : count)
      if (label != int(StreetClass::Vegetation)) QVERIFY(n <= bare_count[label]);
  }

  void foliageStopsRaysInsideItOrLetsThemThrough() {
    using namespace generate_detail;
    const Object crown{Shape::Foliage, {10, 0, 0}, {2, 0, 0}, 0, 0.3, StreetClass::Vegetation};
    int through = 0, rays = 0;
    for (int i = -40; i <= 40; ++i)
      for (int j = -40; j <= 40; ++j) {
        V3 dir{10, i * 0.045, j * 0.045};
        dir = dir * (1 / dir.norm());
        // Where the ray enters and leaves the sphere.
        const double b = dir.x * 10, disc = b * b - (100 - 4);
        if (disc <= 0) continue;
        ++rays;
        Hit hit, again;
        intersect(crown, {0, 0, 0}, dir, hit);
        intersect(crown, {0, 0, 0}, dir, again);
        QCOMPARE(hit.t, again.t);  // each ray decides, not each call
        if (std::isinf(hit.t)) {
          ++through;
          continue;
        }
        const double in = b - std::sqrt(disc), out = b + std::sqrt(disc);
        QVERIFY(hit.t >= in - 1e-9 && hit.t <= in + 0.6 * (out - in) + 1e-9);
        QCOMPARE(hit.semantic, int(StreetClass::Vegetation));
      }
    QVERIFY(rays > 4000);
    // A quarter of the rays find a gap.
    QVERIFY2(through > rays / 5 && through < rays * 3 / 10,
             qPrintable(QString("%1 of %2").arg(through).arg(rays)));
  }

  void generatorsAreDeterministic() {
    const PointCloud a = generate_street_scene({}), b = generate_street_scene({});
    QCOMPARE(a.size(), b.size());
    QVERIFY(std::equal(
        a.points.begin(), a.points.end(), b.points.begin(),
        [](const Point3f& p, const Point3f& q) { return p.x == q.x && p.y == q.y && p.z == q.z; }));
    StreetSceneParams other;
    other.seed = 7;
    QVERIFY(generate_street_scene(other).size() != a.size() ||
            generate_street_scene(other).points[100].x != a.points[100].x);
  }

  void committedSampleDataIsReproducible() {
    // sample_data/ must be exactly what the generator makes from the default seed.
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    StreetSceneParams p;
    save_pcd(d + "/street_scene.pcd", generate_street_scene(p), PcdEncoding::BinaryCompressed);
    const QByteArray fresh = test::readAll(dir.path() + "/street_scene.pcd");
    const QByteArray committed = test::readAll(test::sampleDir() + "/street_scene.pcd");
    QVERIFY(!committed.isEmpty());
    QVERIFY2(fresh == committed,
             "sample_data/street_scene.pcd differs from `cumulus-cli generate sample`");
  }

  void scanPairPoseAlignsTheViews() {
    const ScanPair pair = generate_scan_pair({});
    QVERIFY(pair.source.size() > 5000 && pair.target.size() > 5000);
    const auto& T = pair.source_to_target;
    // Transformed source points must lie on the target's surface where the views overlap: the
    // median nearest-target distance of a sample is a few sample spacings.
    std::vector<double> nearest;
    for (std::size_t i = 0; i < pair.source.size(); i += 97) {
      const auto& s = pair.source.points[i];
      const double x = T[0] * s.x + T[1] * s.y + T[2] * s.z + T[3];
      const double y = T[4] * s.x + T[5] * s.y + T[6] * s.z + T[7];
      const double z = T[8] * s.x + T[9] * s.y + T[10] * s.z + T[11];
      double best = 1e9;
      for (const auto& t : pair.target.points)
        best =
            std::min(best, (x - t.x) * (x - t.x) + (y - t.y) * (y - t.y) + (z - t.z) * (z - t.z));
      nearest.push_back(std::sqrt(best));
    }
    std::nth_element(nearest.begin(), nearest.begin() + nearest.size() / 2, nearest.end());
    QVERIFY2(nearest[nearest.size() / 2] < 0.004,
             qPrintable(QString::number(nearest[nearest.size() / 2])));
    // Without the pose the views do not line up.
    double unaligned = 0;
    for (std::size_t i = 0; i < pair.source.size(); i += 997) {
      const auto& s = pair.source.points[i];
      double best = 1e9;
      for (const auto& t : pair.target.points)
        best = std::min(best, double((s.x - t.x) * (s.x - t.x) + (s.y - t.y) * (s.y - t.y) +
                                     (s.z - t.z) * (s.z - t.z)));
      unaligned = std::max(unaligned, std::sqrt(best));
    }
    QVERIFY(unaligned > 0.01);
  }
};

QTEST_GUILESS_MAIN(TestData)
#include "test_data.moc"
