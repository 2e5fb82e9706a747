// Global registration (registration/global.h): alignment from any start on real scans, the
// GPU against our CPU method given the same descriptors, PCL's reference, and "no alignment
// found" for inputs that have none.
#include <QtTest>

#include <Eigen/Geometry>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "filter/filter.h"
#include "generate/generate.h"
#include "io/io.h"
#include "io/scan_poses.h"
#include "registration/global.h"
#include "registration/icp.h"
#include "test_support.h"

using namespace cumulus;

Q_DECLARE_METATYPE(cumulus::GlobalMethod)
Q_DECLARE_METATYPE(cumulus::GlobalStage)

namespace {

// A random rigid motion: rotation angle uniform in [0, max_deg] about a random axis, shift
// uniform in [-shift, shift] per axis.
Eigen::Matrix4d random_motion(Random& rng, double max_deg, double shift) {
  Eigen::Vector3d axis(rng.normal(), rng.normal(), rng.normal());
  axis.normalize();
  const double angle = rng.uniform() * max_deg * M_PI / 180.0;
  Eigen::Matrix4d m = Eigen::Matrix4d::Identity();
  m.topLeftCorner<3, 3>() = Eigen::AngleAxisd(angle, axis).toRotationMatrix();
  for (int d = 0; d < 3; ++d)
    m(d, 3) = (2 * rng.uniform() - 1) * shift;
  return m;
}

struct Error2 {
  double deg, dist;
};
Error2 error_of(const Eigen::Matrix4d& got, const Eigen::Matrix4d& want) {
  const Eigen::Matrix4d e = want.inverse() * got;
  return {rotation_angle_deg(e), translation_norm(e)};
}

struct Bunny {
  PointCloud source, target;
  Eigen::Matrix4d truth;
};

bool load_bunny(Bunny& b) {
  const QString s = test::sharedDataFile("bunny/bun045.ply");
  const QString t = test::sharedDataFile("bunny/bun000.ply");
  const QString conf = test::sharedDataFile("bunny/bun.conf");
  if (s.isEmpty() || t.isEmpty() || conf.isEmpty()) return false;
  b.source = finite_only(load_cloud(s.toStdString()));
  b.target = finite_only(load_cloud(t.toStdString()));
  b.truth = *relative_scan_pose(conf.toStdString(), "bun045.ply", "bun000.ply");
  return true;
}

#define CUMULUS_REQUIRE_BUNNY(b)                                                         \
  Bunny b;                                                                               \
  if (!load_bunny(b))                                                                    \
    QSKIP(                                                                               \
        "real data bunny/bun000.ply, bun045.ply and bun.conf not found (expected under " \
        "../shared/data or $CUMULUS_DATA)");

// The source moved by `motion`: the alignment to find is then truth * motion^-1.
double success_share(const Bunny& b, GlobalMethod method, int starts, std::uint64_t seed,
                     QString& report) {
  Random rng(seed);
  int ok = 0;
  for (int i = 0; i < starts; ++i) {
    const Eigen::Matrix4d motion = random_motion(rng, 180, 0.1);
    const GlobalResult r = register_global(transformed(b.source, motion), b.target, {}, method);
    const Error2 e = error_of(r.transform, b.truth * motion.inverse());
    const bool good = r.found && e.deg <= 2 && e.dist <= 0.002;
    ok += good;
    if (!good)
      report += QString("start %1: found %2, %3 deg, %4 mm (%5); ")
                    .arg(i)
                    .arg(r.found)
                    .arg(e.deg)
                    .arg(1000 * e.dist)
                    .arg(QString::fromStdString(r.reason));
  }
  return double(ok) / starts;
}

// LiDAR scans refined point to plane, as LiDAR odometry does: point to point stops along the
// scans' rings at a place that depends on where it started (measured: 0.9 degree apart).
GlobalParams lidar_params() {
  GlobalParams g;
  g.refinement.metric = IcpMetric::PointToPlane;
  return g;
}

// ICP with the refinement's parameters (its distance 1.5 voxels) from the identity.
Eigen::Matrix4d icp_from_identity(const PointCloud& source, const PointCloud& target) {
  const GlobalParams g = lidar_params();
  IcpParams ip = g.refinement;
  ip.max_correspondence_distance = g.inlier_distance * global_voxel(g, target);
  return icp(source, target, ip, IcpMethod::Cpu).transform;
}

// A noisy square plane of n x n points, 1 unit across.
// PCL's coarse stage alone, 3,000 iterations from `seed`: a few seconds on the bunny scans.
GlobalParams pcl_coarse_only(std::uint64_t seed) {
  GlobalParams p;
  p.pcl_iterations = 3000;
  p.refine = false;
  p.seed = seed;
  return p;
}

PointCloud noisy_plane(int n, std::uint64_t seed) {
  Random rng(seed);
  PointCloud c;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      c.points.push_back({float(i) / float(n), float(j) / float(n), float(rng.normal() * 1e-3)});
  c.width = std::uint32_t(c.size());
  return c;
}

}  // namespace

class TestGlobal : public QObject {
  Q_OBJECT

 private slots:
  void ourCpuMethodAlignsTheBunnyScans() {
    CUMULUS_REQUIRE_BUNNY(b);
    const GlobalResult r = register_global(b.source, b.target, {}, GlobalMethod::CpuMutual);
    QVERIFY2(r.found, r.reason.c_str());
    const Error2 coarse = error_of(r.coarse, b.truth), fine = error_of(r.transform, b.truth);
    qInfo("cpu-mutual: %zu pairs, %zu inliers, coarse %.3f deg %.2f mm, refined %.3f deg %.3f mm",
          r.matches.size(), r.inliers, coarse.deg, 1000 * coarse.dist, fine.deg, 1000 * fine.dist);
    QVERIFY(coarse.deg < 5 && coarse.dist < 0.01);
    QVERIFY(fine.deg <= 2 && fine.dist <= 0.002);
    QVERIFY(r.refined && r.refinement.converged);
    QCOMPARE(r.inlier.size(), r.matches.size());
  }

  void theSampleObjectPairAligns() {
    // The generated box with a sphere and a cylinder: flat faces and round parts whose
    // descriptors repeat, so fits of the wrong parts collect pairs too.
    const std::string dir = test::sampleDir().toStdString();
    const PointCloud source = load_cloud(dir + "/object_source.ply");
    const PointCloud target = load_cloud(dir + "/object_target.ply");
    const Eigen::Matrix4d truth = read_matrix_file(dir + "/object_pose.txt");
    const GlobalResult r = register_global(source, target, {}, GlobalMethod::CpuMutual);
    QVERIFY2(r.found, r.reason.c_str());
    const Error2 e = error_of(r.transform, truth);
    qInfo("sample object pair: %zu candidates, overlap %.3f, %.3f deg, %.3f mm", r.candidates,
          r.overlap, e.deg, 1000 * e.dist);
    QVERIFY(e.deg <= 1 && e.dist <= 0.002);
  }

  void pclReferenceAlignsTheBunnyScans() {
    CUMULUS_REQUIRE_BUNNY(b);
    GlobalParams p;
    p.pcl_iterations = 3000;  // PCL checks each surviving hypothesis against every keypoint
    const GlobalResult r = register_global(b.source, b.target, p, GlobalMethod::Cpu);
    QVERIFY2(r.found, r.reason.c_str());
    const Error2 fine = error_of(r.transform, b.truth);
    qInfo("PCL prerejective: %zu inliers, refined %.3f deg %.3f mm", r.inliers, fine.deg,
          1000 * fine.dist);
    QVERIFY(fine.deg <= 2 && fine.dist <= 0.002);
    QCOMPARE(r.method, std::string("cpu"));
  }

  // PCL's run in pieces, so that it can report and stop, keeps the best of its pieces by PCL's
  // own rule: the same draws of std::rand and the same result as one call of every iteration.
  void pclInPiecesGivesTheWholeRunsResult() {
    CUMULUS_REQUIRE_BUNNY(b);
    GlobalParams p = pcl_coarse_only(11);
    const GlobalResult whole = register_global(b.source, b.target, p, GlobalMethod::Cpu);
    std::map<GlobalStage, std::vector<std::size_t>> told;
    std::map<GlobalStage, std::set<std::size_t>> totals;
    const GlobalProgress follow = [&](GlobalStage stage, std::size_t done, std::size_t total) {
      told[stage].push_back(done);
      totals[stage].insert(total);
      return true;
    };
    const GlobalResult pieces = register_global(b.source, b.target, p, GlobalMethod::Cpu, follow);
    QVERIFY2(whole.found && pieces.found, whole.reason.c_str());
    QVERIFY(whole.coarse == pieces.coarse);
    QVERIFY(whole.matches.source == pieces.matches.source);
    QVERIFY(whole.matches.target == pieces.matches.target);
    QCOMPARE(pieces.inliers, whole.inliers);
    QCOMPARE(pieces.inlier_rmse, whole.inlier_rmse);
    // Several pieces ran (a report between two), and each stage counted up to its end.
    const auto& hypotheses = told[GlobalStage::Hypotheses];
    QVERIFY(std::count_if(hypotheses.begin(), hypotheses.end(), [&](std::size_t d) {
              return d > 0 && d < std::size_t(p.pcl_iterations);
            }) >= 1);
    QCOMPARE(hypotheses.back(), std::size_t(p.pcl_iterations));
    QVERIFY(std::is_sorted(hypotheses.begin(), hypotheses.end()));
    const auto& features = told[GlobalStage::Features];
    QVERIFY(features.size() >= 3 && features.front() == 0 && features.back() == 1000);
    QVERIFY(std::is_sorted(features.begin(), features.end()));
    QVERIFY(!told.count(GlobalStage::Matching) && !told.count(GlobalStage::Refinement));
    QVERIFY(totals[GlobalStage::Hypotheses] == std::set<std::size_t>{3000});
    QVERIFY(totals[GlobalStage::Features] == std::set<std::size_t>{1000});
    // Another start of the stream gives another run: the comparison above could fail.
    p.seed = 12;
    const GlobalResult other = register_global(b.source, b.target, p, GlobalMethod::Cpu, follow);
    QVERIFY(other.coarse != whole.coarse);
  }

  // PCL draws from the process's std::rand: each run starts it from its seed, so a run repeated
  // after others in the same process (a GUI session, a notebook) gives the same result.
  void pclRunRepeatedLaterInTheProcessGivesTheSameResult() {
    CUMULUS_REQUIRE_BUNNY(b);
    const GlobalParams p = pcl_coarse_only(7);
    const GlobalResult first = register_global(b.source, b.target, p, GlobalMethod::Cpu);
    std::srand(12345);  // anything else in the process that draws from std::rand
    for (int i = 0; i < 1000; ++i)
      (void)std::rand();
    const GlobalResult again = register_global(b.source, b.target, p, GlobalMethod::Cpu);
    QVERIFY2(first.found && again.found, first.reason.c_str());
    QVERIFY(first.coarse == again.coarse);
    QCOMPARE(again.inliers, first.inliers);
    QCOMPARE(again.inlier_rmse, first.inlier_rmse);
  }

  // Told to stop at its first report in a stage, a run ends there with Cancelled: no later stage
  // starts.
  void eachStageStopsWhenTold_data() {
    QTest::addColumn<GlobalMethod>("method");
    QTest::addColumn<GlobalStage>("stage");
    QTest::newRow("cpu features") << GlobalMethod::Cpu << GlobalStage::Features;
    QTest::newRow("cpu hypotheses") << GlobalMethod::Cpu << GlobalStage::Hypotheses;
    QTest::newRow("cpu refinement") << GlobalMethod::Cpu << GlobalStage::Refinement;
    QTest::newRow("cpu-mutual features") << GlobalMethod::CpuMutual << GlobalStage::Features;
    QTest::newRow("cpu-mutual matching") << GlobalMethod::CpuMutual << GlobalStage::Matching;
    QTest::newRow("cpu-mutual hypotheses") << GlobalMethod::CpuMutual << GlobalStage::Hypotheses;
    QTest::newRow("cpu-mutual refinement") << GlobalMethod::CpuMutual << GlobalStage::Refinement;
    QTest::newRow("gpu features") << GlobalMethod::Gpu << GlobalStage::Features;
    QTest::newRow("gpu hypotheses") << GlobalMethod::Gpu << GlobalStage::Hypotheses;
  }
  void eachStageStopsWhenTold() {
    QFETCH(GlobalMethod, method);
    QFETCH(GlobalStage, stage);
    if (method == GlobalMethod::Gpu) CUMULUS_REQUIRE_GPU();
    CUMULUS_REQUIRE_BUNNY(b);
    GlobalParams p;
    p.pcl_iterations = 3000;
    std::vector<GlobalStage> told;
    const GlobalProgress stop_there = [&](GlobalStage s, std::size_t, std::size_t) {
      told.push_back(s);
      return s != stage;
    };
    bool cancelled = false;
    try {
      register_global(b.source, b.target, p, method, stop_there);
    } catch (const Cancelled&) {
      cancelled = true;
    }
    QVERIFY(cancelled);
    QVERIFY(!told.empty() && told.back() == stage);
    QCOMPARE(std::count(told.begin(), told.end(), stage), std::ptrdiff_t(1));
    QVERIFY(std::is_sorted(told.begin(), told.end()));
  }

  void randomStartsAlignOnTheCpu() {
    CUMULUS_REQUIRE_BUNNY(b);
    QString report;
    const double share = success_share(b, GlobalMethod::CpuMutual, 4, 7, report);
    qInfo("cpu-mutual: %.0f %% of 4 random starts", 100 * share);
    QVERIFY2(share == 1.0, qPrintable(report));
  }

  void gpuGivesTheCpuMethodsPairsAndHypothesis() {
    CUMULUS_REQUIRE_GPU();
    CUMULUS_REQUIRE_BUNNY(b);
    // The same keypoints and descriptors for both (PCL's FPFH), so only the two searches differ.
    const double voxel = global_voxel({}, b.target);
    VoxelGridParams grid;
    grid.leaf = {float(voxel), float(voxel), float(voxel)};
    const PointCloud sk = voxel_grid(b.source, grid, FilterMethod::Cpu).cloud;
    const PointCloud tk = voxel_grid(b.target, grid, FilterMethod::Cpu).cloud;
    FeatureParams fp;
    fp.neighbourhood = Neighbourhood::within(float(5 * voxel));
    fp.normals.neighbourhood = Neighbourhood::within(float(2 * voxel));
    const FeatureResult fs = compute_features(sk, fp, FeatureMethod::Cpu);
    const FeatureResult ft = compute_features(tk, fp, FeatureMethod::Cpu);
    const FeatureMatches cpu = match_features(fs, ft, GlobalMethod::CpuMutual);
    const FeatureMatches gpu = match_features(fs, ft, GlobalMethod::Gpu);
    QVERIFY(cpu.size() > 100);
    QVERIFY(cpu.source == gpu.source);
    QVERIFY(cpu.target == gpu.target);
    const GlobalParams p;
    const CoarseFit a =
        estimate_coarse(sk.points, tk.points, cpu, p, 1.5 * voxel, GlobalMethod::CpuMutual);
    const CoarseFit g =
        estimate_coarse(sk.points, tk.points, cpu, p, 1.5 * voxel, GlobalMethod::Gpu);
    QCOMPARE(g.best_hypothesis, a.best_hypothesis);
    QCOMPARE(g.valid_hypotheses, a.valid_hypotheses);
    QCOMPARE(g.drawn_hypotheses, a.drawn_hypotheses);
    QCOMPARE(g.candidates, a.candidates);
    QCOMPARE(g.overlap, a.overlap);
    QCOMPARE(g.inliers, a.inliers);
    QVERIFY(g.inlier == a.inlier);
    QVERIFY((g.transform - a.transform).cwiseAbs().maxCoeff() == 0);
  }

  void gpuAlignsNineteenOfTwentyRandomStartsAtLeast() {
    CUMULUS_REQUIRE_GPU();
    CUMULUS_REQUIRE_BUNNY(b);
    // The measure is 100 starts (bench register); 20 keep the test short.
    QString report;
    const double share = success_share(b, GlobalMethod::Gpu, 20, 11, report);
    qInfo("gpu: %.0f %% of 20 random starts; %s", 100 * share, qPrintable(report));
    QVERIFY2(share >= 0.95, qPrintable(report));
  }

  void kittiFramesWithARandomYawAlign() {
    CUMULUS_REQUIRE_DATA(f0, "kitti/000000.bin");
    CUMULUS_REQUIRE_DATA(f1, "kitti/000001.bin");
    const PointCloud target = load_cloud(f0.toStdString());
    const PointCloud source = load_cloud(f1.toStdString());
    // What the refinement's ICP finds from the identity, the frames being 0.1 s apart: the
    // basin to land in.
    const Eigen::Matrix4d near = icp_from_identity(source, target);
    const GlobalMethod method =
        query_device().available ? GlobalMethod::Gpu : GlobalMethod::CpuMutual;
    Random rng(3);
    for (int i = 0; i < 2; ++i) {
      const double yaw = (2 * rng.uniform() - 1) * 180;
      const Eigen::Matrix4d motion = rigid_transform(0, 0, yaw, 1.5, -1.0, 0);
      const GlobalResult r =
          register_global(transformed(source, motion), target, lidar_params(), method);
      QVERIFY2(r.found, r.reason.c_str());
      const Error2 e = error_of(r.transform, near * motion.inverse());
      qInfo("KITTI 1 -> 0, yaw %.1f: %.3f deg, %.3f m from ICP's alignment", yaw, e.deg, e.dist);
      QVERIFY(e.deg <= 0.1 && e.dist <= 0.01);
    }
  }

  void lidarPairWithARandomYawAligns() {
    CUMULUS_REQUIRE_DATA(s, "lidar-pair/251371071.pcd");
    CUMULUS_REQUIRE_DATA(t, "lidar-pair/251370668.pcd");
    CUMULUS_REQUIRE_DATA(rel, "lidar-pair/relative.txt");
    const PointCloud source = load_cloud(s.toStdString());
    const PointCloud target = load_cloud(t.toStdString());
    const Eigen::Matrix4d near = icp_from_identity(source, target);
    const GlobalMethod method =
        query_device().available ? GlobalMethod::Gpu : GlobalMethod::CpuMutual;
    const Eigen::Matrix4d motion = rigid_transform(0, 0, 137, -2, 1, 0);
    const GlobalResult r =
        register_global(transformed(source, motion), target, lidar_params(), method);
    QVERIFY2(r.found, r.reason.c_str());
    const Error2 e = error_of(r.transform, near * motion.inverse());
    const Error2 et = error_of(r.transform, read_matrix_file(rel.toStdString()) * motion.inverse());
    qInfo(
        "LiDAR pair, yaw 137: %.4f deg, %.4f m from ICP's alignment, %.3f deg, %.3f m from the "
        "published pose",
        e.deg, e.dist, et.deg, et.dist);
    QVERIFY(e.deg <= 0.1 && e.dist <= 0.01);
    QVERIFY(et.deg <= 0.5 && et.dist <= 0.05);
  }

  void aPlaneHasNoAlignment() {
    // Every in-plane motion fits a plane: reporting one would be a wrong transform.
    const PointCloud plane = noisy_plane(80, 1), other = noisy_plane(80, 2);
    const GlobalResult r = register_global(plane, other, {}, GlobalMethod::CpuMutual);
    qInfo("plane: %zu pairs, %zu inliers, overlap %.2f, %zu valid: %s", r.matches.size(), r.inliers,
          r.overlap, r.valid_hypotheses, r.reason.c_str());
    QVERIFY(!r.found);
    QVERIFY(!r.reason.empty());
  }

  void tooFewPointsSayWhy() {
    PointCloud tiny;
    tiny.points = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    tiny.width = 4;
    const GlobalResult r = register_global(tiny, tiny, {}, GlobalMethod::CpuMutual);
    QVERIFY(!r.found);
    QVERIFY2(r.reason.find("pairs") != std::string::npos ||
                 r.reason.find("keypoints") != std::string::npos,
             r.reason.c_str());
    PointCloud two;
    two.points = {{0, 0, 0}, {1, 0, 0}};
    two.width = 2;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             register_global(two, tiny, {}, GlobalMethod::CpuMutual));
  }

  void nonFinitePointsAreLeftOut() {
    CUMULUS_REQUIRE_BUNNY(b);
    PointCloud holey = b.source;
    for (std::size_t i = 0; i < holey.size(); i += 10)
      holey.points[i] = {NAN, 0, 0};
    const GlobalResult r = register_global(holey, b.target, {}, GlobalMethod::CpuMutual);
    QVERIFY2(r.found, r.reason.c_str());
    const Error2 e = error_of(r.transform, b.truth);
    QVERIFY(e.deg <= 2 && e.dist <= 0.002);
  }

  void absurdParametersAreRefused() {
    const PointCloud c = noisy_plane(10, 1);
    const auto refused = [&](GlobalParams p) {
      try {
        register_global(c, c, p, GlobalMethod::CpuMutual);
      } catch (const InvalidArgument&) {
        return true;
      }
      return false;
    };
    GlobalParams p;
    p.voxel = -1;
    QVERIFY(refused(p));
    p = {};
    p.voxel = NAN;
    QVERIFY(refused(p));
    p = {};
    p.hypotheses = 0;
    QVERIFY(refused(p));
    p = {};
    p.confidence = 1;
    QVERIFY(refused(p));
    p = {};
    p.similarity = 1;
    QVERIFY(refused(p));
    p = {};
    p.min_overlap = 1.5;
    QVERIFY(refused(p));
    p = {};
    p.feature_radius = 1;  // not above the normals' 2
    QVERIFY(refused(p));
    p = {};
    p.voxel = 1e-9;  // the grid's indices would overflow
    QVERIFY(refused(p));
  }

  void matchesExportAsCsv() {
    CUMULUS_REQUIRE_BUNNY(b);
    const GlobalResult r = register_global(b.source, b.target, {}, GlobalMethod::CpuMutual);
    QTemporaryDir dir;
    const std::string path = dir.filePath("pairs.csv").toStdString();
    write_matches_csv(path, r);
    std::ifstream in(path);
    std::string header, line;
    std::getline(in, header);
    QCOMPARE(header, std::string("source_index,target_index,sx,sy,sz,tx,ty,tz,inlier"));
    std::size_t rows = 0, inliers = 0;
    while (std::getline(in, line)) {
      ++rows;
      inliers += line.back() == '1';
    }
    QCOMPARE(rows, r.matches.size());
    QCOMPARE(inliers, r.inliers);
  }
};

QTEST_GUILESS_MAIN(TestGlobal)
#include "test_global.moc"
