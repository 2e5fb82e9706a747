// Objects and the pipeline: a box's centroid, extents, heading and height above the ground are
// recovered; the CPU pipeline is PCL's tutorial chain stage by stage; the GPU pipeline keeps
// the deterministic stages' points and finds a ground plane within a degree of PCL's; a stage
// that leaves nothing is named.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <numbers>
#include <set>

#include "core/device.h"
#include "core/error.h"
#include "io/io.h"
#include "objects/objects.h"
#include "objects/pipeline.h"
#include "objects/pipeline_compare.h"
#include "test_support.h"

using namespace cumulus;

namespace {

// The surface of a 4 x 1.8 x 1.5 m box turned 30 degrees, its bottom 0.3 m above the ground
// z = -1.73, sampled on a 5 cm grid; far from the origin, as in a georeferenced scan.
PointCloud car(std::vector<std::int32_t>& labels) {
  PointCloud c;
  c.origin = {500000, 4000000, 100};
  const double yaw = 30 * std::numbers::pi / 180, cy = std::cos(yaw), sy = std::sin(yaw);
  const double half[3] = {2.0, 0.9, 0.75};
  const double centre[3] = {10, 5, -1.73 + 0.3 + 0.75};
  for (double u = -half[0]; u <= half[0] + 1e-9; u += 0.05)
    for (double v = -half[1]; v <= half[1] + 1e-9; v += 0.05)
      for (double w = -half[2]; w <= half[2] + 1e-9; w += 0.05) {
        const bool surface = std::abs(std::abs(u) - half[0]) < 1e-9 ||
                             std::abs(std::abs(v) - half[1]) < 1e-9 ||
                             std::abs(std::abs(w) - half[2]) < 1e-9;
        if (!surface) continue;
        c.points.push_back({float(centre[0] + cy * u - sy * v), float(centre[1] + sy * u + cy * v),
                            float(centre[2] + w)});
        labels.push_back(0);
      }
  c.points.push_back({0, 0, 0});  // unlabelled
  labels.push_back(-1);
  c.points.push_back({NAN, 0, 0});
  labels.push_back(0);
  c.width = std::uint32_t(c.points.size());
  return c;
}

}  // namespace

class TestObjects : public QObject {
  Q_OBJECT

 private slots:
  void orientedBoxStandsOnTheGround() {
    std::vector<std::int32_t> labels;
    const PointCloud c = car(labels);
    const std::array<double, 4> ground{0, 0, 1, 1.73 - c.origin[2]};  // z = 100 - 1.73 world
    const auto objects = describe_objects(c, labels, ground);
    QCOMPARE(objects.size(), std::size_t(1));
    const DetectedObject& o = objects[0];
    QCOMPARE(o.points, labels.size() - 2);
    QVERIFY(std::abs(o.box.size[0] - 4.0) < 1e-3 && std::abs(o.box.size[1] - 1.8) < 1e-3 &&
            std::abs(o.box.size[2] - 1.5) < 1e-3);
    // The heading along the long side, either way round.
    const double along = std::abs(o.box.heading[0] * std::cos(std::numbers::pi / 6) +
                                  o.box.heading[1] * std::sin(std::numbers::pi / 6));
    QVERIFY2(along > 0.99999, qPrintable(QString::number(along)));
    QVERIFY(std::abs(o.box.centre[0] - (c.origin[0] + 10)) < 1e-3);
    QVERIFY(std::abs(o.box.centre[1] - (c.origin[1] + 5)) < 1e-3);
    QVERIFY2(std::abs(o.above_ground - 0.3) < 1e-4, qPrintable(QString::number(o.above_ground)));
    QVERIFY(o.min[2] < o.max[2] && std::abs(o.max[2] - o.min[2] - 1.5) < 1e-3);
    // The corners: the bottom face at the box's bottom.
    const auto corners = o.box.corners();
    QVERIFY(std::abs(corners[0][2] - (c.origin[2] - 1.73 + 0.3)) < 1e-3);
    QVERIFY(std::abs(corners[4][2] - corners[0][2] - 1.5) < 1e-3);
    // Without a ground: z is up and the height unknown.
    QVERIFY(std::isnan(describe_objects(c, labels, std::nullopt)[0].above_ground));
    labels.pop_back();
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, describe_objects(c, labels, ground));
  }

  // PCL's tutorial chain: VoxelGrid, SACSegmentation, EuclideanClusterExtraction, each on the
  // previous stage's output.
  void cpuPipelineIsPclsChain() {
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    const PipelineParams p = lidar_chain();
    const PipelineResult r = run_pipeline(street, p, "cpu");
    const PointCloud voxels = voxel_grid(street, *p.voxel, FilterMethod::Cpu).cloud;
    const GroundResult ground = segment_ground_plane(voxels, *p.ground, GroundMethod::Cpu);
    const PointCloud rest = gather_points(voxels, off_ground(voxels, ground.ground));
    const ClusterResult clusters = euclidean_cluster(rest, *p.cluster, ClusterMethod::Cpu);
    QCOMPARE(r.stages.size(), std::size_t(4));
    QCOMPARE(r.stages[0].points_out, voxels.size());
    QCOMPARE(r.ground_points, ground.ground.size());
    QCOMPARE(r.cloud.size(), rest.size());
    QCOMPARE(r.labels, clusters.labels);
    QCOMPARE(r.objects.size(), clusters.sizes.size());
    QVERIFY(r.objects.size() > 20);
    for (std::size_t i = 0; i < r.objects.size(); ++i)
      QCOMPARE(r.objects[i].points, clusters.sizes[i]);
  }

  // A followed chain reports in thousandths of its stages, moving within PCL's clustering, and
  // gives the result it gives unfollowed.
  void followedChainReportsAndGivesTheSameResult() {
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    PipelineParams p = lidar_chain();
    p.statistical = StatisticalOutlierParams{8, 1.0, false};
    std::vector<std::size_t> told;
    std::set<std::size_t> totals;
    const PipelineProgress follow = [&](std::size_t done, std::size_t total) {
      told.push_back(done);
      totals.insert(total);
      return true;
    };
    const PipelineResult followed = run_pipeline(street, p, "cpu", nullptr, follow);
    const PipelineResult plain = run_pipeline(street, p, "cpu");
    QCOMPARE(followed.stages.size(), std::size_t(5));  // voxels, outliers, ground, clusters, boxes
    QCOMPARE(followed.filtered.size(), plain.filtered.size());
    QCOMPARE(followed.ground, plain.ground);
    QCOMPARE(followed.labels, plain.labels);
    QCOMPARE(followed.objects.size(), plain.objects.size());
    QVERIFY(totals == std::set<std::size_t>{4000});
    QVERIFY(std::is_sorted(told.begin(), told.end()));
    QCOMPARE(told.front(), std::size_t(0));
    QCOMPARE(told.back(), std::size_t(4000));
    // Each stage's start, and the clustering's searches within the fourth.
    for (const std::size_t start : {0, 1000, 2000, 3000})
      QVERIFY(std::count(told.begin(), told.end(), start) >= 1);
    QVERIFY(std::count_if(told.begin(), told.end(),
                          [](std::size_t d) { return d > 3000 && d < 4000; }) >= 1);
  }

  // Told to stop, the chain ends with Cancelled: before its first stage, or within clustering.
  void chainStopsWhenTold() {
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    const PipelineParams p = lidar_chain();
    std::size_t last = 0, asked = 0;
    QVERIFY_THROWS_EXCEPTION(
        Cancelled, run_pipeline(street, p, "cpu", nullptr, [&](std::size_t done, std::size_t) {
          ++asked;
          last = done;
          return false;
        }));
    QCOMPARE(asked, std::size_t(1));
    QCOMPARE(last, std::size_t(0));
    // Clustering is the third of three stages: stopped in it, nothing reaches its end.
    QVERIFY_THROWS_EXCEPTION(
        Cancelled, run_pipeline(street, p, "cpu", nullptr, [&](std::size_t done, std::size_t) {
          last = done;
          return done <= 2000;
        }));
    QVERIFY2(last > 2000 && last < 3000, qPrintable(QString::number(last)));
  }

  // The deterministic stages keep PCL's points; the ground plane may differ within its noise.
  void gpuPipelineKeepsTheFiltersPoints() {
    CUMULUS_REQUIRE_GPU();
    CUMULUS_REQUIRE_DATA(path, QString("kitti/000000.bin"));
    const PointCloud c = load_cloud(path.toStdString());
    PipelineParams p = lidar_chain();
    p.statistical = StatisticalOutlierParams{20, 2.0, false};
    const PipelineResult cpu = run_pipeline(c, p, "cpu"), gpu = run_pipeline(c, p, "gpu");
    QCOMPARE(gpu.stages.size(), cpu.stages.size());
    QCOMPARE(gpu.stages[0].points_out, cpu.stages[0].points_out);
    QCOMPARE(gpu.stages[1].points_out, cpu.stages[1].points_out);
    // RANSAC on a downsampled, filtered cloud: the planes agree to within a degree.
    const double angle = plane_angle_deg(*gpu.ground_plane, *cpu.ground_plane);
    QVERIFY2(angle < 1.0, qPrintable(QString("%1 degrees").arg(angle)));
    // The objects follow the plane: which near-ground points it leaves decides small clusters
    // (measured: 156 objects against PCL's 186 here, 170 against 170 without the outlier
    // stage), so only their figures are shown.
    qInfo("%zu objects, PCL %zu; planes %.3f degrees apart", gpu.objects.size(), cpu.objects.size(),
          angle);
    QVERIFY(!gpu.objects.empty());
  }

  // The device-resident chain keeps the points on the GPU from stage to stage; it runs the same
  // kernels as each stage's own call, so it gives their result, whichever stages are on.
  void deviceChainGivesTheStageByStageResult_data() {
    QTest::addColumn<QString>("scan");
    QTest::addColumn<bool>("voxel");
    QTest::addColumn<bool>("ground");
    for (const char* scan : {"kitti/000000.bin", "street_scene.pcd"})
      for (const bool voxel : {true, false})
        for (const bool ground : {true, false})
          QTest::addRow("%s%s%s", scan, voxel ? ", voxel" : "", ground ? ", ground" : "")
              << QString(scan) << voxel << ground;
  }
  void deviceChainGivesTheStageByStageResult() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, scan);
    QFETCH(bool, voxel);
    QFETCH(bool, ground);
    const QString path =
        scan.startsWith("kitti") ? test::sharedDataFile(scan) : test::sampleDir() + "/" + scan;
    if (path.isEmpty()) QSKIP("real data not found");
    PointCloud c = load_cloud(path.toStdString());
    for (std::size_t i = 0; i < c.size(); i += 997)
      c.points[i].y = NAN;  // the stages skip them alike
    PipelineParams p = lidar_chain();
    if (!voxel) p.voxel.reset();
    if (!ground) p.ground.reset();
    const PipelineResult chain = run_pipeline(c, p, "gpu"),
                         stages = run_pipeline(c, p, "gpu-stages");
    QCOMPARE(chain.stages.size(), stages.stages.size());
    for (std::size_t k = 0; k < chain.stages.size(); ++k) {
      QCOMPARE(chain.stages[k].name, stages.stages[k].name);
      QCOMPARE(chain.stages[k].points_out, stages.stages[k].points_out);
    }
    // Bit for bit (NaNs included where no voxel grid ran).
    QCOMPARE(chain.filtered.size(), stages.filtered.size());
    QVERIFY(std::memcmp(chain.filtered.points.data(), stages.filtered.points.data(),
                        chain.filtered.size() * sizeof(Point3f)) == 0);
    QVERIFY(chain.ground == stages.ground);
    QVERIFY(chain.ground_plane == stages.ground_plane);
    QVERIFY(chain.kept == stages.kept);
    QVERIFY(chain.labels == stages.labels);
    // The chain sums its boxes on the GPU in another order than the host: rounding apart.
    QCOMPARE(chain.objects.size(), stages.objects.size());
    for (std::size_t k = 0; k < chain.objects.size(); ++k) {
      const DetectedObject &a = chain.objects[k], &b = stages.objects[k];
      QCOMPARE(a.points, b.points);
      for (std::size_t d = 0; d < 3; ++d) {
        QVERIFY(std::abs(a.centroid[d] - b.centroid[d]) < 1e-9);
        QCOMPARE(a.min[d], b.min[d]);  // bounds of the same floats: exact
        QCOMPARE(a.max[d], b.max[d]);
        QVERIFY(std::abs(a.box.centre[d] - b.box.centre[d]) < 1e-6);
        QVERIFY(std::abs(a.box.size[d] - b.box.size[d]) < 1e-6);
      }
    }
  }

  // The device-resident chain refuses what leaves nothing, naming the stage, as the stage-by-stage
  // chain does.
  void deviceChainNamesTheStageThatLeavesNothing() {
    CUMULUS_REQUIRE_GPU();
    PointCloud nan_cloud;
    nan_cloud.points.assign(100, Point3f{NAN, 0, 0});
    nan_cloud.width = 100;
    const auto message = [](const PointCloud& c, const PipelineParams& p) {
      try {
        run_pipeline(c, p, "gpu");
      } catch (const Error& e) {
        return QString(e.what());
      }
      return QString("no error");
    };
    QVERIFY(message(nan_cloud, lidar_chain()).contains("voxel grid stage left no point"));
    PointCloud two;
    two.points = {{0, 0, 0}, {1, 0, 0}};
    two.width = 2;
    PipelineParams no_voxel = lidar_chain();
    no_voxel.voxel.reset();
    QVERIFY(message(two, no_voxel).contains("at least 3 finite points"));
    QVERIFY(message(PointCloud{}, lidar_chain()).contains("no point"));
    // A flat floor and nothing on it: the ground takes every point.
    PointCloud floor;
    for (int i = 0; i < 50; ++i)
      for (int j = 0; j < 50; ++j)
        floor.points.push_back({i * 0.2f, j * 0.2f, 0});
    floor.width = std::uint32_t(floor.size());
    QVERIFY2(message(floor, lidar_chain()).contains("ground plane stage left no point"),
             qPrintable(message(floor, lidar_chain())));
  }

  // The verdict the compare window and `bench pipeline` give: identical runs agree at every
  // stage; a filter, a ground or a clustering that differs is named, with its figures.
  void comparedPipelinesNameTheStageThatDiffers() {
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    const PipelineResult r = run_pipeline(street, lidar_chain(), "cpu");
    const PipelineAgreement same = compare_pipelines(r, r);
    QVERIFY2(same.agrees && same.identical, same.summary.c_str());
    QCOMPARE(same.stages.size(), std::size_t(3));  // voxel grid, ground plane, clustering
    QCOMPARE(same.differing_points, std::size_t(0));
    QCOMPARE(same.point_differs.size(), r.filtered.size());
    // A plane tilted by a degree is beyond the 0.5-degree bound, even with the same inliers.
    PipelineResult tilted = r;
    const double t = std::numbers::pi / 180;
    auto& g = *tilted.ground_plane;
    const double b = g[1] * std::cos(t) - g[2] * std::sin(t),
                 c = g[1] * std::sin(t) + g[2] * std::cos(t);
    g[1] = b;
    g[2] = c;
    tilted.ground.push_back(tilted.ground.back());  // a different inlier list
    const PipelineAgreement ground = compare_pipelines(r, tilted);
    QVERIFY(!ground.agrees);
    QVERIFY2(QString::fromStdString(ground.summary).startsWith("DIFFERENT: ground plane 1 deg"),
             ground.summary.c_str());
    // One voxel fewer: the voxel grid is named, and no point-by-point marks are possible.
    PipelineResult fewer = r;
    --fewer.stages[0].points_out;
    fewer.filtered.points.pop_back();
    const PipelineAgreement voxels = compare_pipelines(r, fewer);
    QVERIFY(!voxels.agrees);
    QVERIFY2(voxels.summary.find("voxel grid") != std::string::npos, voxels.summary.c_str());
    QVERIFY(voxels.point_differs.empty());
    // Two objects swapped for one: the clustering differs, and its points are marked.
    PipelineResult merged = r;
    for (auto& l : merged.labels)
      if (l == 1) l = 0;
    const PipelineAgreement clusters = compare_pipelines(r, merged);
    QVERIFY(!clusters.agrees);
    QVERIFY2(clusters.summary.find("clustering") != std::string::npos, clusters.summary.c_str());
    QVERIFY(clusters.differing_points > 0);
  }

  void aStageThatLeavesNothingIsNamed() {
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    PipelineParams p;
    p.crop = CropBoxParams{{1000, 1000, 0}, {1001, 1001, 1}, false};
    try {
      run_pipeline(street, p, "cpu");
      QFAIL("an empty crop went through");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("crop box stage left no point"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_pipeline(street, p, "quantum"));
  }
};

QTEST_GUILESS_MAIN(TestObjects)
#include "test_objects.moc"
