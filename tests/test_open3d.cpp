// Open3D as the benchmarks' peer: on real scans its DBSCAN (min_points 1) is exactly PCL's
// Euclidean clustering, its radius outlier removal keeps PCL's points, its k-NN distances are
// PCL's, its RANSAC plane is the road PCL finds, its ICP lands where PCL's does, and its FPFH from
// PCL's normals is PCL's plus the point's own SPFH (which PCL leaves out); the chain in Open3D's
// calls finds about PCL's objects. Without Open3D in the build every test skips, and the peer
// refuses to run with the reason.
#include <QtTest>

#include <Eigen/LU>

#include "cluster/cluster.h"
#include "core/error.h"
#include "features/features.h"
#include "filter/filter.h"
#include "generate/generate.h"
#include "ground/ground.h"
#include "io/io.h"
#include "nns/nns.h"
#include "objects/pipeline.h"
#include "peers/open3d_peer.h"
#include "registration/icp.h"
#include "test_support.h"

using namespace cumulus;

#define REQUIRE_OPEN3D() \
  if (!open3d_peer::available()) QSKIP(qPrintable(QString::fromStdString(open3d_peer::version())))

namespace {

void add_scans() {
  QTest::addColumn<QString>("scan");
  for (const char* s : {"kitti/000000.bin", "lidar-pair/251370668.pcd", "cupcl/sample.pcd"})
    QTest::newRow(s) << QString(s);
}

PointCloud load_scan(const QString& rel) {
  const QString path = test::sharedDataFile(rel);
  return path.isEmpty() ? PointCloud{} : load_cloud(path.toStdString());
}

}  // namespace

class TestOpen3d : public QObject {
  Q_OBJECT

 private slots:
  void withoutOpen3dThePeerSaysWhy() {
    if (open3d_peer::available()) {
      QVERIFY(open3d_peer::version().rfind("Open3D ", 0) == 0);
      return;
    }
    QVERIFY_THROWS_EXCEPTION(Error, open3d_peer::cluster(PointCloud{}, ClusterParams{}));
    QVERIFY(open3d_peer::version().find("libopen3d-dev") != std::string::npos);
  }

  void dbscanIsEuclideanClustering_data() { add_scans(); }
  void dbscanIsEuclideanClustering() {
    REQUIRE_OPEN3D();
    QFETCH(QString, scan);
    const PointCloud cloud = load_scan(scan);
    if (cloud.empty()) QSKIP(qPrintable("real data " + scan + " not found"));
    const ClusterParams p{0.5f, 10, 100000};
    const ClusterResult pcl = euclidean_cluster(cloud, p, ClusterMethod::Cpu);
    const ClusterResult o3d = open3d_peer::cluster(cloud, p);
    QCOMPARE(o3d.sizes, pcl.sizes);
    QVERIFY(o3d.labels == pcl.labels);
  }

  void dbscanSkipsNonFinitePoints() {
    REQUIRE_OPEN3D();
    PointCloud c = generate_cluster_cloud({4096, 16, 32, 4, 1.0f, 5});
    for (std::size_t i = 0; i < c.size(); i += 41)
      c.points[i].z = NAN;
    const ClusterParams p{1.0f, 1, 1000000};
    const ClusterResult pcl = euclidean_cluster(c, p, ClusterMethod::Cpu);
    const ClusterResult o3d = open3d_peer::cluster(c, p);
    QCOMPARE(o3d.non_finite, pcl.non_finite);
    QVERIFY(o3d.labels == pcl.labels);
  }

  void radiusOutliersKeepPclsPoints_data() { add_scans(); }
  void radiusOutliersKeepPclsPoints() {
    REQUIRE_OPEN3D();
    QFETCH(QString, scan);
    const PointCloud cloud = load_scan(scan);
    if (cloud.empty()) QSKIP(qPrintable("real data " + scan + " not found"));
    const RadiusOutlierParams p{0.5, 2, false};
    const FilterResult pcl = remove_radius_outliers(cloud, p, FilterMethod::Cpu);
    const FilterResult o3d = open3d_peer::remove_radius_outliers(cloud, p);
    QCOMPARE(o3d.kept.size(), pcl.kept.size());
    QVERIFY(o3d.kept == pcl.kept);
  }

  void knnDistancesArePcls() {
    REQUIRE_OPEN3D();
    CUMULUS_REQUIRE_DATA(path, "kitti/000001.bin");
    const PointCloud target = load_scan("kitti/000000.bin"),
                     source = load_cloud(path.toStdString());
    std::vector<Point3f> queries;
    for (std::size_t i = 0; i < source.size(); i += 7)
      queries.push_back(source.points[i]);
    const KnnResult pcl = knn_search(target.points, queries, 8, NnsMethod::Cpu);
    const KnnResult o3d = open3d_peer::knn(target.points, queries, 8);
    QCOMPARE(o3d.sq_distances.size(), pcl.sq_distances.size());
    // Open3D measures in double and rounds once; PCL sums in float: a few ulps apart at most.
    for (std::size_t i = 0; i < pcl.sq_distances.size(); ++i)
      QVERIFY2(std::abs(o3d.sq_distances[i] - pcl.sq_distances[i]) <=
                   4e-6f * std::max(1.0f, pcl.sq_distances[i]),
               qPrintable(QString("entry %1: %2 against %3")
                              .arg(i)
                              .arg(o3d.sq_distances[i])
                              .arg(pcl.sq_distances[i])));
  }

  void planeIsPclsRoad_data() { add_scans(); }
  void planeIsPclsRoad() {
    REQUIRE_OPEN3D();
    QFETCH(QString, scan);
    const PointCloud cloud = load_scan(scan);
    if (cloud.empty()) QSKIP(qPrintable("real data " + scan + " not found"));
    GroundPlaneParams p;
    p.threshold = 0.2;
    const GroundResult pcl = segment_ground_plane(cloud, p, GroundMethod::Cpu);
    const GroundResult o3d = open3d_peer::ground_plane(cloud, p);
    QVERIFY2(plane_angle_deg(o3d.plane, pcl.plane) < 1.0,
             qPrintable(QString::number(plane_angle_deg(o3d.plane, pcl.plane))));
    QVERIFY(double(o3d.ground.size()) >= 0.98 * double(pcl.ground.size()));
    QVERIFY(std::is_sorted(o3d.ground.begin(), o3d.ground.end()));
  }

  void icpLandsWherePclsDoes_data() {
    QTest::addColumn<QString>("cloud");
    QTest::addColumn<bool>("plane");
    for (const bool plane : {false, true}) {
      QTest::newRow(plane ? "bunny, point to plane" : "bunny") << "bunny" << plane;
      QTest::newRow(plane ? "street, point to plane" : "street") << "street" << plane;
    }
  }
  void icpLandsWherePclsDoes() {
    REQUIRE_OPEN3D();
    QFETCH(QString, cloud);
    QFETCH(bool, plane);
    PointCloud target;
    if (cloud == "bunny") {
      CUMULUS_REQUIRE_DATA(path, "bunny/bun_zipper.ply");
      target = load_cloud(path.toStdString());
    } else {
      const PointCloud street = generate_street_scene(StreetSceneParams{});
      for (std::size_t i = 0; i < street.size(); i += 4)
        target.points.push_back(street.points[i]);
    }
    const float scale = cloud == "bunny" ? 0.1f : 10.0f;  // the bunny is 15 cm tall
    // The same points, noisy (0.2 % of the scale) and moved by a known transform.
    PointCloud source = target;
    std::uint64_t state = 7;
    const auto noise = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return (float(state >> 40) / float(1 << 24) - 0.5f) * 0.004f * scale;
    };
    const Eigen::Matrix4d truth =
        rigid_transform(2, -1, 3, 0.02 * scale, -0.01 * scale, 0.005 * scale);
    const Eigen::Matrix4d back = truth.inverse();
    for (auto& p : source.points) {
      const Eigen::Vector4d q =
          back * Eigen::Vector4d(p.x + noise(), p.y + noise(), p.z + noise(), 1);
      p = {float(q.x()), float(q.y()), float(q.z())};
    }
    IcpParams params;
    params.max_correspondence_distance = 0.1 * scale;
    params.metric = plane ? IcpMetric::PointToPlane : IcpMetric::PointToPoint;
    std::vector<Point3f> normals;
    if (plane) {
      NormalParams np;
      np.neighbourhood = Neighbourhood::nearest(20);
      normals = estimate_normals(target, np, FeatureMethod::Cpu).normals;
    }
    const IcpResult pcl =
        icp(source.points, target.points, plane ? &normals : nullptr, params, IcpMethod::Cpu);
    const IcpResult o3d = open3d_peer::icp(source, target, plane ? &normals : nullptr, params);
    // Different stopping rules: the same minimum, not the same last step.
    for (const auto& [name, t] :
         {std::pair{"PCL", pcl.transform}, std::pair{"Open3D", o3d.transform}}) {
      const Eigen::Matrix4d e = truth.inverse() * t;
      QVERIFY2(rotation_angle_deg(e) < 0.1 && translation_norm(e) < 0.002 * scale,
               qPrintable(QString("%1 from the truth: %2 deg, %3 m")
                              .arg(name)
                              .arg(rotation_angle_deg(e))
                              .arg(translation_norm(e))));
    }
  }

  void fpfhIsPclsPlusThePointsOwnSpfh() {
    REQUIRE_OPEN3D();
    CUMULUS_REQUIRE_DATA(path, "bunny/bun_zipper.ply");
    const PointCloud bunny = load_cloud(path.toStdString());
    FeatureParams p;
    p.neighbourhood = p.normals.neighbourhood = Neighbourhood::nearest(32);
    const FeatureResult pcl = compute_features(bunny, p, FeatureMethod::Cpu);
    const FeatureResult o3d = open3d_peer::fpfh(bunny, p, &pcl.normals);
    QVERIFY(compare_histograms(pcl, o3d, 1e-3).rows > 0);  // not equal by definition
    // Open3D's = PCL's + a histogram of 100 per part (the point's own SPFH), but where a pair
    // angle on a bin edge rounds the other way (Open3D works in double, PCL in float): 113 of
    // 35,947 rows on this machine.
    const std::size_t rows = open3d_peer::fpfh_rows_pcl_plus_own_spfh(pcl, o3d, 1e-3);
    QVERIFY2(double(rows) >= 0.99 * double(pcl.size()),
             qPrintable(QString("%1 of %2 rows").arg(rows).arg(pcl.size())));
    // And the relation is not vacuous: PCL's against itself is no such sum.
    QCOMPARE(open3d_peer::fpfh_rows_pcl_plus_own_spfh(pcl, pcl, 1e-3), std::size_t(0));
  }

  void chainFindsPclsObjects() {
    REQUIRE_OPEN3D();
    const PointCloud street = load_cloud((test::sampleDir() + "/street_scene.pcd").toStdString());
    const PipelineResult pcl = run_pipeline(street, lidar_chain(), "cpu");
    const PipelineResult o3d = open3d_peer::chain(street, lidar_chain());
    QVERIFY2(
        std::abs(double(o3d.objects.size()) - double(pcl.objects.size())) <=
            0.1 * double(pcl.objects.size()),
        qPrintable(QString("%1 objects, PCL %2").arg(o3d.objects.size()).arg(pcl.objects.size())));
    QVERIFY(plane_angle_deg(*o3d.ground_plane, *pcl.ground_plane) < 1.0);
    QCOMPARE(o3d.stages.size(), pcl.stages.size());
  }

  void refusesWhatOpen3dCannotDo() {
    REQUIRE_OPEN3D();
    const PointCloud c = generate_cluster_cloud({1024, 4, 32, 4, 1.0f, 1});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, open3d_peer::voxel_grid(c, {{0.1f, 0.2f, 0.1f}, 0}));
    FeatureParams pfh;
    pfh.descriptor = Descriptor::Pfh;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, open3d_peer::fpfh(c, pfh));
    PipelineParams range = lidar_chain();
    range.ground.reset();
    range.range_ground = RangeGroundParams{};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, open3d_peer::chain(c, range));
    IcpParams plane;
    plane.metric = IcpMetric::PointToPlane;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, open3d_peer::icp(c, c, nullptr, plane));
  }
};

QTEST_GUILESS_MAIN(TestOpen3d)
#include "test_open3d.moc"
