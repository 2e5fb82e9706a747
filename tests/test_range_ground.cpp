// The range-image ground (issue 32): it finds the ground of generated streets, level and hilly,
// with F1 >= 0.95 where one RANSAC plane cannot follow the ramp; the GPU labels exactly the
// CPU's points on real scans; pixels and column classification behave as documented; bad input
// is refused with the reason.
#include <QtTest>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "generate/generate.h"
#include "ground/range_ground.h"
#include "ground/range_ground_impl.h"
#include "objects/pipeline.h"
#include "test_support.h"

using namespace cumulus;

namespace {

PointCloud street(StreetTerrain terrain, std::uint64_t seed) {
  StreetSceneParams sp;
  sp.seed = seed;
  sp.beams = 32;  // half the image's rows: the columns' empty pixels are compacted away
  sp.terrain = terrain;
  return generate_street_scene(sp);
}

std::vector<RangeGroundMethod> usable_methods() {
  std::vector<RangeGroundMethod> m;
  for (const RangeGroundMethod x : all_methods<RangeGroundMethod>())
    if (!is_gpu_method(x) || query_device().available) m.push_back(x);
  return m;
}

}  // namespace

class TestRangeGround : public QObject {
  Q_OBJECT

 private slots:
  void groundF1OnLevelAndHillyStreets() {
    for (const StreetTerrain terrain : {StreetTerrain::Level, StreetTerrain::Hilly}) {
      const PointCloud c = street(terrain, 4);
      for (const RangeGroundMethod m : usable_methods()) {
        const GroundScore g = score_ground(c, segment_ground_range(c, {}, m).ground);
        qInfo("%s street, %s: precision %.4f recall %.4f F1 %.4f",
              terrain == StreetTerrain::Hilly ? "hilly" : "level", method_name(m), g.precision,
              g.recall, g.f1);
        QVERIFY2(g.f1 >= 0.95, method_name(m));
      }
    }
  }

  // The hilly street's ramp and climbs are what one plane cannot follow.
  void followsARampThatOnePlaneCannot() {
    const PointCloud c = street(StreetTerrain::Hilly, 4);
    GroundPlaneParams plane;
    plane.axis = {0, 0, 1};
    const double f1_plane =
        score_ground(c, segment_ground_plane(c, plane, GroundMethod::Cpu).ground).f1;
    const double f1_range =
        score_ground(c, segment_ground_range(c, {}, RangeGroundMethod::Cpu).ground).f1;
    qInfo("hilly street F1: range-rdp %.4f, RANSAC plane %.4f", f1_range, f1_plane);
    QVERIFY(f1_range > f1_plane);
  }

  void gpuLabelsTheCpusPoints_data() {
    QTest::addColumn<QString>("scan");
    for (const char* s : {"kitti/000000.bin", "kitti/000001.bin", "kitti/000002.bin",
                          "lidar-pair/251370668.pcd", "cupcl/sample.pcd"})
      QTest::newRow(s) << QString(s);
  }
  void gpuLabelsTheCpusPoints() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, scan);
    CUMULUS_REQUIRE_DATA(path, scan);
    const PointCloud c = load_cloud(path.toStdString());
    const GroundResult cpu = segment_ground_range(c, {}, RangeGroundMethod::Cpu);
    const GroundResult gpu = segment_ground_range(c, {}, RangeGroundMethod::Gpu);
    qInfo("%zu ground points of %zu", cpu.ground.size(), c.size());
    QCOMPARE(gpu.ground, cpu.ground);
    QVERIFY(cpu.ground.size() > c.size() / 10);
  }

  void gpuLabelsTheCpusPointsOnGeneratedStreets() {
    CUMULUS_REQUIRE_GPU();
    for (const StreetTerrain terrain : {StreetTerrain::Level, StreetTerrain::Hilly}) {
      PointCloud c = street(terrain, 5);
      c.points[7] = {NAN, 0, 0};
      c.points[8] = {0, 0, 0};  // at the sensor: no pixel
      QCOMPARE(segment_ground_range(c, {}, RangeGroundMethod::Gpu).ground,
               segment_ground_range(c, {}, RangeGroundMethod::Cpu).ground);
    }
  }

  // A point in the middle of a pixel lands in it; rows outside the field of view clamp.
  void pixelsFollowTheRangeImageModel() {
    RangeGroundParams p;
    p.rows = 16;
    p.columns = 360;
    const RangeTables tables = range_tables(p);
    const auto t = tables.view();
    const double deg = std::numbers::pi / 180;
    const double span = p.fov_up_deg - p.fov_down_deg;
    for (int r = 0; r < int(p.rows); ++r)
      for (int c = 0; c < int(p.columns); c += 7) {
        const double el = (p.fov_up_deg - (r + 0.5) * span / p.rows) * deg;
        const double az = std::numbers::pi - (c + 0.5) * 2 * std::numbers::pi / p.columns;
        const Point3f q{float(10 * std::cos(el) * std::cos(az)),
                        float(10 * std::cos(el) * std::sin(az)), float(10 * std::sin(el))};
        float range = 0;
        QCOMPARE(range_math::pixel_of(q, t, &range), r * int(p.columns) + c);
        QVERIFY(std::abs(range - 10.0f) < 1e-4f);
      }
    float range = 0;
    QCOMPARE(range_math::pixel_of({1, 0, 5}, t, &range) / int(p.columns), 0);  // far above
    QCOMPARE(range_math::pixel_of({1, 0, -5}, t, &range) / int(p.columns), int(p.rows) - 1);
    QCOMPARE(range_math::pixel_of({0, 0, 0}, t, &range), -1);
  }

  // A column seen near to far: road, a car's side and roof, the road behind it.
  void classificationFollowsTheRoadPastACar() {
    const std::vector<Point3f> column = {
        {30, 0, -1.7f},   {20, 0, -1.72f},  {8.6f, 0, -0.3f},  {8.0f, 0, -0.3f}, {7.6f, 0, -0.3f},
        {7.5f, 0, -0.8f}, {7.5f, 0, -1.3f}, {7.0f, 0, -1.72f}, {5, 0, -1.73f},   {4, 0, -1.73f}};
    const int m = int(column.size());
    const std::vector<bool> cut = {true, true, true, false, true, false, true, true, false, true};
    std::vector<int> a(std::size_t(m), -2);
    range_math::classify_column(
        m, [&](int k) { return bool(cut[std::size_t(k)]); },
        [&](int k) { return column[std::size_t(k)]; },
        [&](int k, int x, int) { a[std::size_t(k)] = x; }, range_rules(RangeGroundParams{}));
    // Ground: slots 7 to 9 (the road before the car) and 0 to 1 (behind it); the roof (2 to 4)
    // is flat but 1.4 m above the last ground, the side (4 to 7) steep.
    for (int k = 0; k < m; ++k) {
      const bool ground = k <= 1 || k >= 7;
      QVERIFY2((a[std::size_t(k)] >= 0) == ground, qPrintable(QString("slot %1").arg(k)));
    }
  }

  void pipelineRemovesTheRangeGround() {
    const PointCloud c = street(StreetTerrain::Hilly, 6);
    PipelineParams p = lidar_chain();
    p.ground.reset();
    p.range_ground = RangeGroundParams{};
    const PipelineResult r = run_pipeline(c, p, "cpu");
    QCOMPARE(r.stages[1].name, std::string("range ground"));
    QVERIFY(r.ground_points > 0);
    QVERIFY(!r.objects.empty());
    p.ground = GroundPlaneParams{};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_pipeline(c, p, "cpu"));
  }

  void badInputIsRefusedWithTheReason() {
    const PointCloud c = street(StreetTerrain::Level, 1);
    const auto refused = [&](auto change) {
      RangeGroundParams p;
      change(p);
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, segment_ground_range(c, p, RangeGroundMethod::Cpu));
    };
    refused([](RangeGroundParams& p) { p.rows = 0; });
    refused([](RangeGroundParams& p) { p.rows = 5000; });
    refused([](RangeGroundParams& p) { p.columns = 0; });
    refused([](RangeGroundParams& p) { p.fov_up_deg = -30; });
    refused([](RangeGroundParams& p) { p.fov_down_deg = -95; });
    refused([](RangeGroundParams& p) { p.epsilon = 0; });
    refused([](RangeGroundParams& p) { p.epsilon = NAN; });
    refused([](RangeGroundParams& p) { p.max_slope_deg = 90; });
    refused([](RangeGroundParams& p) { p.max_step = -1; });
    refused([](RangeGroundParams& p) { p.threshold = INFINITY; });
    refused([](RangeGroundParams& p) { p.sensor_height = -1; });
    PointCloud empty;
    QVERIFY_THROWS_EXCEPTION(Error, segment_ground_range(empty, {}, RangeGroundMethod::Cpu));
    PointCloud nan;
    nan.points = {{NAN, 0, 0}, {0, INFINITY, 0}};
    QVERIFY_THROWS_EXCEPTION(Error, segment_ground_range(nan, {}, RangeGroundMethod::Cpu));
    // Points high above the sensor's ground: no ground, said so.
    PointCloud sky;
    for (int i = 0; i < 100; ++i)
      sky.points.push_back({float(5 + i), 0, 20});
    try {
      segment_ground_range(sky, {}, RangeGroundMethod::Cpu);
      QFAIL("no ground was accepted");
    } catch (const Error& e) {
      QVERIFY(std::string(e.what()).find("no ground") != std::string::npos);
    }
    // NaNs among the points are never ground.
    PointCloud holes = c;
    for (std::size_t i = 0; i < holes.size(); i += 50)
      holes.points[i].z = NAN;
    for (const auto i : segment_ground_range(holes, {}, RangeGroundMethod::Cpu).ground)
      QVERIFY(is_finite(holes.points[std::size_t(i)]));
  }
};

QTEST_GUILESS_MAIN(TestRangeGround)
#include "test_range_ground.moc"
