// Normals, PFH and FPFH: the shared pair arithmetic against PCL's, a host replica of the GPU
// histograms against PCL, bad and degenerate input, export, and every GPU method against PCL
// (GPU tests skip where no GPU can be used).
#include <pcl/features/pfh_tools.h>
#include <pcl/io/pcd_io.h>
#include <pcl/point_types.h>
#include <pcl/search/kdtree.h>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "core/device.h"
#include "core/error.h"
#include "core/zeroed_vector.h"
#include "features/features.h"
#include "features/pair_math.h"
#include "features/pcl_normal.h"
#include "generate/generate.h"
#include "io/io.h"
#include "nns/nns.h"
#include "test_support.h"
#include "tiles/tiles.h"

#include "features_cases.h"

// PFH over the k nearest points, normals from their normals_k nearest.
FeatureParams pfh_nearest(int k, int normals_k) {
  FeatureParams p;
  p.descriptor = Descriptor::Pfh;
  p.neighbourhood = Neighbourhood::nearest(k);
  p.normals.neighbourhood = Neighbourhood::nearest(normals_k);
  return p;
}

class TestFeatures : public QObject {
  Q_OBJECT

 private slots:
  void method_and_descriptor_names_round_trip() {
    for (FeatureMethod m : all_methods<FeatureMethod>())
      QCOMPARE(parse_method<FeatureMethod>(method_name(m)), std::optional<FeatureMethod>(m));
    QVERIFY(!parse_method<FeatureMethod>("gpu-fast").has_value());
    QCOMPARE(parse_descriptor("pfh"), std::optional<Descriptor>(Descriptor::Pfh));
    QCOMPARE(descriptor_bins(Descriptor::Pfh), 125);
    QCOMPARE(descriptor_bins(Descriptor::Fpfh), 33);
  }

  // The shared arithmetic gives PCL's f1, f2, f3 bit for bit (on the host, glibc's atan2/acos):
  // random pairs, swapped pairs, zero distance and a normal along the line.
  void pair_features_equal_pcl_bit_for_bit() {
    std::mt19937 g(3);
    std::normal_distribution<float> u(0.0f, 1.0f);
    auto unit = [&] {
      const float x = u(g), y = u(g), z = u(g);
      const float l = std::sqrt(x * x + y * y + z * z);
      return Eigen::Vector4f(x / l, y / l, z / l, 0);
    };
    int swapped = 0;
    for (int t = 0; t < 200000; ++t) {
      Eigen::Vector4f p1(u(g), u(g), u(g), 1), p2(u(g), u(g), u(g), 1);
      if (t % 3 == 0) p2 = p1 + Eigen::Vector4f(0.01f * u(g), 0.01f * u(g), 0.01f * u(g), 0);
      if (t == 7) p2 = p1;
      Eigen::Vector4f n1 = unit(), n2 = unit();
      if (t == 11) {
        n1 = p2 - p1;
        n1[3] = 0;
        n1 /= n1.norm();
      }
      float e1, e2, e3, e4, a1, a2, a3;
      pcl::computePairFeatures(p1, n1, p2, n2, e1, e2, e3, e4);
      fm::pair_features({p1.x(), p1.y(), p1.z()}, {n1.x(), n1.y(), n1.z()},
                        {p2.x(), p2.y(), p2.z()}, {n2.x(), n2.y(), n2.z()}, a1, a2, a3);
      if (!same_float(a1, e1) || !same_float(a2, e2) || !same_float(a3, e3))
        QFAIL(qPrintable(QString("pair %1: (%2 %3 %4) vs PCL (%5 %6 %7)")
                             .arg(t)
                             .arg(double(a1), 0, 'g', 9)
                             .arg(double(a2), 0, 'g', 9)
                             .arg(double(a3), 0, 'g', 9)
                             .arg(double(e1), 0, 'g', 9)
                             .arg(double(e2), 0, 'g', 9)
                             .arg(double(e3), 0, 'g', 9)));
      swapped += std::fabs(n1.dot(p2 - p1)) < std::fabs(n2.dot(p2 - p1));
    }
    QVERIFY(swapped > 1000);  // the swap branch was exercised
  }

  void binning_matches_pcl_edges() {
    QCOMPARE(fm::angle_bin(0.0f, 5), 2);  // zero features: PFH bin 2 + 10 + 50
    QCOMPARE(fm::angle_bin(float(-M_PI), 5), 0);
    QCOMPARE(fm::angle_bin(float(M_PI), 5), 4);  // clamped
    QCOMPARE(fm::cosine_bin(-1.0f, 5), 0);
    QCOMPARE(fm::cosine_bin(1.0f, 5), 4);
    QCOMPARE(fm::cosine_bin(0.2f, 5), 3);
    QCOMPARE(fm::cosine_bin(std::nanf(""), 5), 0);
    QCOMPARE(fm::repeated_sum(0.1f, 3), 0.1f + 0.1f + 0.1f);
  }

  // The device's float atan2f is a few ulps from glibc's atan2: an angle that near a bin edge
  // must go to the host, one far from every edge must not.
  void angles_near_a_bin_edge_are_unsure() {
    for (int bins : {5, 11}) {
      const float edge = float(-M_PI + 2 * M_PI * 2 / bins);  // the edge between bins 1 and 2
      float near = edge;
      for (int i = 0; i < 12; ++i)
        near = std::nextafter(near, 0.0f);
      QVERIFY(fm::angle_bin_unsure(edge, bins));
      QVERIFY(fm::angle_bin_unsure(near, bins));
      const float middle = float(-M_PI + 2 * M_PI * 2.5 / bins);
      QVERIFY(!fm::angle_bin_unsure(middle, bins));
      QVERIFY(!fm::angle_bin_unsure(0.0f, bins));  // with an odd number of bins, 0 is a middle
    }
  }

  // The GPU kernels' algorithm, run on the host: PCL's PFH on the bunny, every bin equal.
  void host_replica_pfh_equals_pcl_on_bunny() {
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 3, c)) QSKIP("real data bunny/bun_zipper.ply not found");
    const FeatureParams p = pfh_nearest(16, 16);
    const FeatureResult pcl = compute_features(c, p, FeatureMethod::Cpu);
    const auto rep = replica_pfh(c.points, pcl.normals, 16);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < rep.size(); ++i)
      differ += rep[i] != pcl.histograms[i];
    QCOMPARE(differ, std::size_t(0));
  }

  void rejects_bad_parameters() {
    const PointCloud c = cloud_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}});
    FeatureParams p;
    p.neighbourhood = {0, 0};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.neighbourhood = {4, 0.5f};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.neighbourhood = Neighbourhood::within(std::nanf(""));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.neighbourhood = Neighbourhood::within(-1);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.neighbourhood = Neighbourhood::within(INFINITY);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.neighbourhood = Neighbourhood::nearest(kMaxKnnK + 1);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Gpu));
    p.neighbourhood = Neighbourhood::nearest(3);
    p.normals.viewpoint = {0, NAN, 0};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu));
    p.normals.viewpoint = {0, 0, 0};
    const std::vector<Point3f> two(2);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, compute_features(c, p, FeatureMethod::Cpu, &two));
    NormalParams np;
    np.neighbourhood = {-2, 0};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, estimate_normals(c, np, FeatureMethod::Cpu));
  }

  void gpu_methods_fail_cleanly_without_a_gpu() {
    if (gpu_usable()) QSKIP("a GPU is available here");
    const PointCloud c = cloud_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}});
    QVERIFY_THROWS_EXCEPTION(GpuError, compute_features(c, FeatureParams{}, FeatureMethod::Gpu));
    QVERIFY_THROWS_EXCEPTION(GpuError,
                             compute_features(c, FeatureParams{}, FeatureMethod::GpuPaper));
    QVERIFY_THROWS_EXCEPTION(GpuError, estimate_normals(c, NormalParams{}, FeatureMethod::Gpu));
  }

  // Non-finite points are left out before searching: their rows are NaN, counted, and the
  // other rows equal those of the cloud without them.
  void non_finite_points_are_dropped_and_counted() {
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 20, c)) QSKIP("real data bunny/bun_zipper.ply not found");
    PointCloud holed = c;
    holed.points.insert(holed.points.begin() + 5, {NAN, 0, 0});
    holed.points.push_back({1, INFINITY, 0});
    holed.width = std::uint32_t(holed.points.size());
    FeatureParams p;
    p.neighbourhood = Neighbourhood::nearest(10);
    p.normals.neighbourhood = Neighbourhood::nearest(8);
    const FeatureResult a = compute_features(c, p, FeatureMethod::Cpu);
    const FeatureResult b = compute_features(holed, p, FeatureMethod::Cpu);
    QCOMPARE(b.non_finite_points, std::size_t(2));
    QCOMPARE(b.nan_histograms, std::size_t(2));
    QCOMPARE(b.size(), holed.size());
    QVERIFY(std::isnan(b.row(5)[0]) && std::isnan(b.row(b.size() - 1)[32]));
    for (std::size_t i = 0; i < c.size(); ++i) {
      const std::size_t j = i < 5 ? i : i + 1;
      for (int h = 0; h < 33; ++h)
        QCOMPARE(b.row(j)[h], a.row(i)[h]);
    }
  }

  // A result computed into the vectors of an earlier one (a sequence's frames, a panel's re-runs)
  // equals a fresh one, whatever the earlier one held: another descriptor, more or fewer points,
  // NaN rows, given normals, none at all; the last call grows the histograms back within their
  // capacity, over rows earlier calls left behind (core/zeroed_vector.h does not clear them).
  void results_into_a_reused_result_equal_fresh_ones() {
    PointCloud c, half;
    if (!load("bunny/bun_zipper.ply", 20, c) || !load("bunny/bun_zipper.ply", 40, half))
      QSKIP("real data bunny/bun_zipper.ply not found");
    PointCloud holed = c;
    holed.points.insert(holed.points.begin() + 5, {NAN, 0, 0});
    holed.width = std::uint32_t(holed.points.size());
    const FeatureParams pfh = pfh_nearest(10, 8);
    FeatureParams fpfh = pfh;
    fpfh.descriptor = Descriptor::Fpfh;
    const std::vector<Point3f> given = compute_features(c, pfh, FeatureMethod::Cpu).normals;
    struct Call {
      const PointCloud* cloud;
      const FeatureParams* params;
      const std::vector<Point3f>* normals;
    };
    const PointCloud empty;
    const std::vector<Call> calls{{&c, &pfh, nullptr},      {&c, &pfh, nullptr},
                                  {&holed, &fpfh, nullptr}, {&c, &pfh, &given},
                                  {&empty, &pfh, nullptr},  {&half, &pfh, nullptr},
                                  {&c, &fpfh, nullptr},     {&c, &pfh, nullptr}};
    std::vector<FeatureMethod> methods{FeatureMethod::Cpu};
    if (gpu_usable()) methods.insert(methods.end(), {FeatureMethod::Gpu, FeatureMethod::GpuPaper});
    for (const FeatureMethod m : methods) {
      FeatureResult reused;
      for (std::size_t k = 0; k < calls.size(); ++k) {
        const Call& call = calls[k];
        compute_features(*call.cloud, *call.params, m, call.normals, reused);
        const FeatureResult fresh = compute_features(*call.cloud, *call.params, m, call.normals);
        const QString what = QString("%1, call %2").arg(method_name(m)).arg(k);
        QVERIFY2(reused.descriptor == fresh.descriptor && reused.bins == fresh.bins &&
                     reused.size() == fresh.size() &&
                     reused.histograms.size() == fresh.histograms.size(),
                 qPrintable(what));
        QVERIFY2(compare_histograms(reused, fresh, 0).rows == 0, qPrintable(what));
        QCOMPARE(reused.non_finite_points, fresh.non_finite_points);
        QCOMPARE(reused.nan_histograms, fresh.nan_histograms);
        QCOMPARE(reused.curvature.size(), fresh.curvature.size());
        QCOMPARE(reused.normals.size(), fresh.normals.size());
        for (std::size_t i = 0; i < fresh.normals.size(); ++i) {
          const Point3f a = reused.normals[i], b = fresh.normals[i];
          QVERIFY2((a.x == b.x || (std::isnan(a.x) && std::isnan(b.x))) &&
                       (a.y == b.y || (std::isnan(a.y) && std::isnan(b.y))) &&
                       (a.z == b.z || (std::isnan(a.z) && std::isnan(b.z))),
                   qPrintable(what + QString(", normal %1").arg(i)));
        }
        QCOMPARE(reused.method, fresh.method);
      }
    }
  }

  // Following a run's progress changes none of its results, and the run counts exactly the
  // searches it said it would make: one a point for the normals, PFH and the paper's neighbour
  // lists, two for FPFH (its points' SPFHs, then their weighting).
  void following_progress_changes_no_result() {
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 6, c)) QSKIP("real data bunny/bun_zipper.ply not found");
    const std::size_t n = c.size();
    c.points.insert(c.points.begin() + 7, {NAN, 0, 0});  // left out: searched by no one
    c.width = std::uint32_t(c.points.size());
    std::size_t total = 0, most = 0, reports = 0;
    const FeatureProgress follow = [&](std::size_t done, std::size_t all) {
      ++reports, total = all, most = std::max(most, done);
      return true;
    };
    // Reports come every 64 searches or sooner: the last is within 64 of the end.
    auto counted = [&](std::size_t expected, const QString& what) {
      QVERIFY2(reports > 0 && total == expected && most <= total && most + 64 > total,
               qPrintable(QString("%1: %2 reports, %3 of %4 searches (expected %5)")
                              .arg(what)
                              .arg(reports)
                              .arg(most)
                              .arg(total)
                              .arg(expected)));
      reports = total = most = 0;
    };
    NormalParams np;
    np.neighbourhood = Neighbourhood::nearest(8);
    const NormalsResult plain_normals = estimate_normals_call(c, np, FeatureMethod::Cpu);
    const NormalsResult followed_normals = estimate_normals_call(c, np, FeatureMethod::Cpu, follow);
    counted(n, "normals");
    QCOMPARE(std::memcmp(plain_normals.normals.data(), followed_normals.normals.data(),
                         (n + 1) * sizeof(Point3f)),
             0);
    std::vector<FeatureMethod> methods{FeatureMethod::Cpu};
    if (gpu_usable()) methods.push_back(FeatureMethod::GpuPaper);
    for (const FeatureMethod m : methods)
      for (const Descriptor d : {Descriptor::Pfh, Descriptor::Fpfh})
        for (const std::vector<Point3f>* given :
             {static_cast<const std::vector<Point3f>*>(nullptr), &plain_normals.normals}) {
          FeatureParams p = pfh_nearest(12, 8);
          p.descriptor = d;
          const FeatureResult plain = compute_features_call(c, p, m, given);
          const FeatureResult followed = compute_features_call(c, p, m, given, follow);
          const QString what = QString("%1 %2, normals %3")
                                   .arg(method_name(m), descriptor_name(d))
                                   .arg(given ? "given" : "estimated");
          counted((given ? 0 : n) + (m == FeatureMethod::Cpu && d == Descriptor::Fpfh ? 2 * n : n),
                  what);
          QVERIFY2(compare_histograms(plain, followed, 0).rows == 0, qPrintable(what));
        }
  }

  // A stop asked for while PCL works ends the run between two searches: here a PFH whose k is
  // above the cloud's size, so that every neighbourhood is the whole cloud and each point costs
  // n^2 / 2 pairs (minutes for the run, a fraction of a second a point). Without the stop it
  // would run to its end and throw nothing.
  void a_cpu_run_stops_between_two_searches() {
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 16, c)) QSKIP("real data bunny/bun_zipper.ply not found");
    const std::vector<Point3f> normals =
        estimate_normals(c, {Neighbourhood::nearest(8)}, FeatureMethod::Cpu).normals;
    FeatureParams p = pfh_nearest(1'000'000'000, 8);
    std::size_t last = 0, total = 0;
    const FeatureProgress stop_soon = [&](std::size_t done, std::size_t all) {
      last = done, total = all;
      return done < 3;
    };
    try {
      compute_features_call(c, p, FeatureMethod::Cpu, &normals, stop_soon);
      QFAIL("expected Cancelled");
    } catch (const Cancelled& e) {
      QCOMPARE(QString(e.what()), QString("feature computation cancelled"));
    }
    // It stopped at the first report from the third search on (the 64th at the latest), with
    // thousands of points left.
    QCOMPARE(total, c.size());
    QVERIFY2(last >= 3 && last <= 64, qPrintable(QString::number(last)));
    // Through the tiling layer, as the GUI calls it: one call, stopped the same way.
    last = 0;
    TileOptions o;
    o.progress = stop_soon;
    QVERIFY_THROWS_EXCEPTION(Cancelled,
                             compute_features_tiled(c, p, FeatureMethod::Cpu, &normals, o));
    QVERIFY2(last >= 3 && last <= 64, qPrintable(QString::number(last)));
  }

  // The histograms' vectors are sized without writing: a fresh one reads zero and its pages are
  // not touched until written (a std::vector's resize writes every byte, so the resident memory
  // grows by the whole vector), values given to resize() and assign() are written, and rows a
  // shrink left behind come back as they were.
  void zeroed_vectors_are_sized_without_writing() {
    const std::size_t n = std::size_t(16) << 20;  // 64 MB: the C library maps it fresh
    const std::size_t before = test::residentBytes();
    ZeroedVector<float> big;
    big.resize(n);
    const std::size_t after = test::residentBytes();
    const std::size_t grew = after - std::min(before, after);
    QVERIFY2(grew < n * sizeof(float) / 2,
             qPrintable(QString("resident grew by %1 bytes").arg(grew)));
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; i += 997)
      nonzero += big[i] != 0.0f;
    QCOMPARE(nonzero, std::size_t(0));
    ZeroedVector<float> small(100);
    QVERIFY(std::all_of(small.begin(), small.end(), [](float v) { return v == 0.0f; }));
    small.resize(200, 7.0f);
    QCOMPARE(small[99], 0.0f);
    QCOMPARE(small[150], 7.0f);
    small.resize(10);
    small.resize(200);  // within the capacity: what the shrink cut off comes back
    QCOMPARE(small[150], 7.0f);
    small.assign(200, 1.0f);
    QVERIFY(std::all_of(small.begin(), small.end(), [](float v) { return v == 1.0f; }));
  }

  void empty_and_tiny_clouds() {
    FeatureParams p;
    p.descriptor = Descriptor::Pfh;
    p.neighbourhood = Neighbourhood::nearest(5);
    const FeatureResult e = compute_features(PointCloud{}, p, FeatureMethod::Cpu);
    QCOMPARE(e.size(), std::size_t(0));
    // One point: its neighbourhood is itself, no pair, so PCL's histogram is all zero; its
    // normal (fewer than 3 neighbours) is NaN.
    const FeatureResult one = compute_features(cloud_of({{1, 2, 3}}), p, FeatureMethod::Cpu);
    QCOMPARE(one.size(), std::size_t(1));
    QVERIFY(std::isnan(one.normals[0].x));
    for (int h = 0; h < 125; ++h)
      QCOMPARE(one.row(0)[h], 0.0f);
  }

  // Duplicate points: zero-distance pairs are PCL's all-zero features (PFH bin 62) and count.
  void duplicate_points_land_in_the_zero_bin() {
    const std::vector<Point3f> pts = {{0, 0, 0}, {0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0.1f}};
    const std::vector<Point3f> nrm(pts.size(), Point3f{0, 0, 1});
    FeatureParams p;
    p.descriptor = Descriptor::Pfh;
    p.neighbourhood = Neighbourhood::nearest(5);
    const FeatureResult r = compute_features(cloud_of(pts), p, FeatureMethod::Cpu, &nrm);
    QVERIFY(r.row(0)[62] >= 10.0f - 1e-4f);  // 1 of 10 pairs
    const auto rep = replica_pfh(pts, nrm, 5);
    for (std::size_t i = 0; i < rep.size(); ++i)
      QCOMPARE(rep[i], r.histograms[i]);
  }

  void histogram_distance_is_zero_to_itself() {
    FeatureResult f;
    f.bins = 3;
    f.histograms = {1, 2, 3, 1, 2, 5, NAN, 0, 0};
    const auto l2 = histogram_distances(f, f.row(0), HistogramDistance::L2);
    QCOMPARE(l2[0], 0.0f);
    QCOMPARE(l2[1], 2.0f);
    QVERIFY(std::isnan(l2[2]));
    const auto chi = histogram_distances(f, f.row(0), HistogramDistance::ChiSquared);
    QCOMPARE(chi[1], 0.5f);  // (3-5)^2 / (3+5)
  }

  void exports_pcd_signatures_and_csv() {
    PointCloud c = cloud_of({{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0}});
    c.origin = {500000, 4000000, 10};
    FeatureParams p;
    p.neighbourhood = Neighbourhood::nearest(4);
    p.normals.neighbourhood = Neighbourhood::nearest(4);
    const FeatureResult f = compute_features(c, p, FeatureMethod::Cpu);
    QTemporaryDir dir;
    const std::string pcd = (dir.path() + "/f.pcd").toStdString();
    write_features_pcd(pcd, f);
    pcl::PointCloud<pcl::FPFHSignature33> back;
    QCOMPARE(pcl::io::loadPCDFile(pcd, back), 0);
    QCOMPARE(back.size(), c.size());
    for (std::size_t i = 0; i < c.size(); ++i)
      for (int h = 0; h < 33; ++h)
        QCOMPARE(back[i].histogram[h], f.row(i)[h]);
    const std::string csv = (dir.path() + "/f.csv").toStdString();
    write_features_csv(csv, c, f);
    std::ifstream in(csv);
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    QVERIFY(header.rfind("index,x,y,z,fpfh0,", 0) == 0);
    QVERIFY(row.rfind("0,500000,4000000,10,", 0) == 0);
    QVERIFY_THROWS_EXCEPTION(IoError, write_features_pcd("/nonexistent/dir/f.pcd", f));
  }

  // ---- GPU ----

  void gpu_histograms_equal_pcl_data() {
    test::add_columns<QString, int, int, int, float>({"file", "step", "descriptor", "k", "radius"});
    for (int d : {0, 1})
      for (int k : {16, 64, 100})
        QTest::addRow("bunny %s k=%d", d ? "fpfh" : "pfh", k)
            << "bunny/bun_zipper.ply" << 1 << d << k << 0.0f;
    QTest::addRow("bunny pfh r=4mm") << "bunny/bun_zipper.ply" << 1 << 0 << 0 << 0.004f;
    QTest::addRow("bunny fpfh r=8mm (over 128 neighbours)")
        << "bunny/bun_zipper.ply" << 2 << 1 << 0 << 0.008f;
    QTest::addRow("kitti pfh k=32") << "kitti/000000.bin" << 4 << 0 << 32 << 0.0f;
    QTest::addRow("kitti fpfh k=32") << "kitti/000000.bin" << 2 << 1 << 32 << 0.0f;
    QTest::addRow("kitti fpfh r=0.5") << "kitti/000000.bin" << 4 << 1 << 0 << 0.5f;
  }
  // Given PCL's normals, every GPU method's histograms equal PCL's: every bin within 1e-3.
  void gpu_histograms_equal_pcl() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, file);
    QFETCH(int, step);
    QFETCH(int, descriptor);
    QFETCH(int, k);
    QFETCH(float, radius);
    PointCloud c;
    if (!load(file, std::size_t(step), c)) QSKIP(qPrintable("real data " + file + " not found"));
    FeatureParams p;
    p.descriptor = descriptor ? Descriptor::Fpfh : Descriptor::Pfh;
    p.neighbourhood = {k, radius};
    p.normals.neighbourhood = Neighbourhood::nearest(16);
    const NormalsResult n = estimate_normals(c, p.normals, FeatureMethod::Cpu);
    const FeatureResult ref = compute_features(c, p, FeatureMethod::Cpu, &n.normals);
    for (FeatureMethod m : {FeatureMethod::GpuPaper, FeatureMethod::Gpu}) {
      const FeatureResult r = compute_features(c, p, m, &n.normals);
      const HistogramDiff d = compare_histograms(r, ref, 1e-3);
      qInfo("%s: %zu points, max bin difference %.3g, %zu rows over 1e-3", method_name(m), c.size(),
            d.max, d.rows);
      QVERIFY2(d.rows == 0, qPrintable(QString("%1: %2 rows differ, first %3, max %4")
                                           .arg(method_name(m))
                                           .arg(d.rows)
                                           .arg(d.first)
                                           .arg(d.max)));
    }
  }

  // FPFH from PCL's normals is PCL's bit for bit. The weighting adds its normalising sums bin by
  // bin in parallel, which is PCL's sequential double sum wherever no addition can round, and
  // takes PCL's order where one can: near-duplicate points (1e-6 m apart) weigh 1e12 beside the
  // 1e4 of their neighbours 1 cm away.
  void gpu_fpfh_is_pcls_bit_for_bit_data() {
    test::add_columns<QString>({"cloud"});
    QTest::newRow("bunny k=64") << "bunny";
    QTest::newRow("plane with near duplicates k=32") << "near-duplicates";
  }
  void gpu_fpfh_is_pcls_bit_for_bit() {
    CUMULUS_REQUIRE_GPU();
    QFETCH(QString, cloud);
    PointCloud c;
    FeatureParams p;
    p.descriptor = Descriptor::Fpfh;
    p.normals.neighbourhood = Neighbourhood::nearest(16);
    if (cloud == "bunny") {
      if (!load("bunny/bun_zipper.ply", 1, c)) QSKIP("real data bunny/bun_zipper.ply not found");
      p.neighbourhood = Neighbourhood::nearest(64);
    } else {
      Random rng(11);
      std::vector<Point3f> pts;
      for (int i = 0; i < 4000; ++i) {
        // Jittered, so that few neighbours lie at exactly equal distances.
        const Point3f q{float(i % 64) * 0.01f + float(rng.normal() * 1e-3),
                        float(i / 64) * 0.01f + float(rng.normal() * 1e-3),
                        float(rng.normal() * 1e-3)};
        pts.push_back(q);
        if (i % 7 == 0) pts.push_back({q.x + 1e-6f, q.y, q.z});
      }
      c = cloud_of(pts);
      p.neighbourhood = Neighbourhood::nearest(32);
    }
    const NormalsResult n = estimate_normals(c, p.normals, FeatureMethod::Cpu);
    const FeatureResult ref = compute_features(c, p, FeatureMethod::Cpu, &n.normals);
    // `gpu` searches on its own and lists neighbours at equal distances by index, FLANN its own
    // way; where that changes a point's list, or a neighbour's set, the sums run in another order
    // and may round otherwise. Such rows are left out for it (gpu-paper takes FLANN's lists).
    const int k = p.neighbourhood.k;
    const KnnResult flann = knn_search(c.points, c.points, k, NnsMethod::Cpu);
    const KnnResult grid = knn_search(c.points, c.points, k, NnsMethod::Gpu);
    const auto list = [k](const KnnResult& r, std::size_t i) {
      return std::vector<int>(r.indices.begin() + std::ptrdiff_t(i) * k,
                              r.indices.begin() + std::ptrdiff_t(i + 1) * k);
    };
    std::vector<char> same_set(c.size()), same_row(c.size());
    for (std::size_t i = 0; i < c.size(); ++i) {
      auto a = list(flann, i), b = list(grid, i);
      same_row[i] = a == b;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      same_set[i] = a == b;
    }
    std::size_t comparable = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool ok = same_row[i];
      for (int j : list(flann, i))
        ok = ok && same_set[std::size_t(j)];
      same_row[i] = ok;
      comparable += ok;
    }
    qInfo("%zu of %zu rows have FLANN's neighbour lists in the grid's search", comparable,
          c.size());
    QVERIFY(comparable > c.size() / 2);
    for (FeatureMethod m : {FeatureMethod::GpuPaper, FeatureMethod::Gpu}) {
      const FeatureResult r = compute_features(c, p, m, &n.normals);
      QCOMPARE(r.histograms.size(), ref.histograms.size());
      std::size_t differ = 0, first = 0;
      for (std::size_t i = 0; i < c.size(); ++i)
        if ((m == FeatureMethod::GpuPaper || same_row[i]) &&
            std::memcmp(r.row(i), ref.row(i), 33 * sizeof(float)) != 0 && differ++ == 0)
          first = i;
      QVERIFY2(differ == 0, qPrintable(QString("%1: %2 of %3 rows differ in some bit, first %4")
                                           .arg(method_name(m))
                                           .arg(differ)
                                           .arg(c.size())
                                           .arg(first)));
    }
  }

  // The paper's method takes PCL's normals and FLANN's neighbours, so end to end it is PCL's.
  void gpu_paper_end_to_end_equals_pcl() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    if (!load("bunny/bun_zipper.ply", 1, c)) QSKIP("real data bunny/bun_zipper.ply not found");
    const FeatureParams p = pfh_nearest(32, 16);
    const HistogramDiff d = compare_histograms(compute_features(c, p, FeatureMethod::GpuPaper),
                                               compute_features(c, p, FeatureMethod::Cpu), 1e-3);
    QCOMPARE(d.rows, std::size_t(0));
  }

  // PCL's float normals are the exact PCA's to well under 0.01 degree where the neighbourhood
  // is well conditioned: the yardstick the GPU's normals are held to below.
  void pcl_normals_match_exact_pca_data() { normals_cases(); }
  void pcl_normals_match_exact_pca() {
    PointCloud c;
    NormalParams p;
    if (!normals_case(c, p)) QSKIP("real data for this case not found");
    const NormalsResult ref = estimate_normals(c, p, FeatureMethod::Cpu);
    const ExactPca exact = exact_pca(c.points, p.neighbourhood);
    std::size_t checked = 0;
    double worst = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Point3f a = ref.normals[i];
      // Neighbours all at one place have no plane: PCL's normal is NaN, Eigen's any axis.
      const bool no_plane = std::isnan(exact.normals[i].x) || !(exact.lambda[i].sum() > 0);
      QCOMPARE(std::isnan(a.x), no_plane);
      if (std::isnan(a.x) || !well_conditioned(exact.lambda[i], a, c.points[i])) continue;
      ++checked;
      worst = std::max(worst, axis_angle_deg(a, exact.normals[i]));
    }
    qInfo("%zu of %zu well conditioned: PCL vs exact PCA worst %.2g deg", checked, c.size(), worst);
    QVERIFY(checked > c.size() / 4);
    QVERIFY(worst < 0.01);
  }

  void gpu_normals_match_pcl_data() { normals_cases(); }
  // Against PCL's NormalEstimation and a double-precision PCA, on well-conditioned
  // neighbourhoods that both searches agree on: every normal within 0.01 degree of PCL's.
  void gpu_normals_match_pcl() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    NormalParams p;
    if (!normals_case(c, p)) QSKIP("real data for this case not found");
    const NormalsResult ref = estimate_normals(c, p, FeatureMethod::Cpu);
    const NormalsResult gpu = estimate_normals(c, p, FeatureMethod::Gpu);
    QCOMPARE(gpu.nan_normals, ref.nan_normals);
    const ExactPca exact = exact_pca(c.points, p.neighbourhood);
    const RadiusResult grid = neighbour_rows(c.points, p.neighbourhood, NnsMethod::Gpu);
    std::size_t checked = 0, over = 0, flips = 0, other_rows = 0;
    double worst_exact = 0, worst_pcl = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Point3f a = ref.normals[i], b = gpu.normals[i];
      QCOMPARE(std::isnan(a.x), std::isnan(b.x));
      if (std::isnan(a.x) || !well_conditioned(exact.lambda[i], a, c.points[i])) continue;
      if (!same_row(exact.rows, grid, i)) {  // a distance tie at the k-th neighbour
        ++other_rows;
        continue;
      }
      ++checked;
      flips += (double(a.x) * b.x + double(a.y) * b.y + double(a.z) * b.z) < 0;
      worst_exact = std::max(worst_exact, axis_angle_deg(b, exact.normals[i]));
      const double deg = axis_angle_deg(a, b);
      worst_pcl = std::max(worst_pcl, deg);
      over += deg >= 0.01;
    }
    qInfo(
        "%zu of %zu normals well conditioned (%zu more with another neighbourhood): gpu vs "
        "exact PCA worst %.2g deg; vs PCL worst %.2g deg",
        checked, c.size(), other_rows, worst_exact, worst_pcl);
    QVERIFY(checked > c.size() / 4);
    QVERIFY(other_rows <= c.size() / 1000);
    QCOMPARE(flips, std::size_t(0));
    QCOMPARE(over, std::size_t(0));
    QVERIFY(worst_exact < 0.001);
  }

  // pcl_normal.h's float replica, given PCL's neighbours in PCL's order, is PCL's
  // NormalEstimation bit for bit: the host half of the pcl_compatible normals.
  void pcl_normal_replica_is_pcl_bit_for_bit_data() { normals_cases(); }
  void pcl_normal_replica_is_pcl_bit_for_bit() {
    PointCloud c;
    NormalParams p;
    if (!normals_case(c, p)) QSKIP("real data for this case not found");
    const NormalsResult ref = estimate_normals(c, p, FeatureMethod::Cpu);
    auto cloud = std::make_shared<pcl::PointCloud<pcl::PointXYZ>>();
    for (const auto& q : c.points)
      cloud->push_back(pcl::PointXYZ(q.x, q.y, q.z));
    pcl::search::KdTree<pcl::PointXYZ> tree;  // sorted, as features.cpp gives PCL
    tree.setInputCloud(cloud);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      pcl::Indices idx;
      std::vector<float> d2;
      if (p.neighbourhood.k > 0)
        tree.nearestKSearch((*cloud)[i], p.neighbourhood.k, idx, d2);
      else
        tree.radiusSearch((*cloud)[i], double(p.neighbourhood.radius), idx, d2);
      const auto cov = pcl_normal::covariance(int(idx.size()), [&](int j, float* o) {
        const auto& q = (*cloud)[std::size_t(idx[std::size_t(j)])];
        o[0] = q.x, o[1] = q.y, o[2] = q.z;
      });
      const float to_vp[3] = {-c.points[i].x, -c.points[i].y, -c.points[i].z};
      float n[3], curvature = 0;
      const bool ok = pcl_normal::normal(cov, to_vp, n, curvature);
      const Point3f r = ref.normals[i];
      if (!ok) {
        differ += !std::isnan(r.x);
        continue;
      }
      differ += !(same_float(r.x, n[0]) && same_float(r.y, n[1]) && same_float(r.z, n[2]) &&
                  same_float(ref.curvature[i], curvature));
    }
    qInfo("%zu of %zu normals differ from PCL's", differ, c.size());
    QCOMPARE(differ, std::size_t(0));
  }

  // The gpu method's pcl_compatible normals are PCL's bit for bit wherever the GPU's search
  // lists a point's neighbours in PCL's order (equal distances, as duplicate LiDAR returns give,
  // may come in another order, and float sums taken in another order differ in the last bits);
  // where no normal differs, the descriptors built on them are PCL's bin for bin.
  void gpu_pcl_compatible_normals_are_pcls_data() { normals_cases(); }
  void gpu_pcl_compatible_normals_are_pcls() {
    CUMULUS_REQUIRE_GPU();
    PointCloud c;
    NormalParams p;
    if (!normals_case(c, p)) QSKIP("real data for this case not found");
    p.pcl_compatible = true;
    const NormalsResult ref = estimate_normals(c, p, FeatureMethod::Cpu);
    const NormalsResult gpu = estimate_normals(c, p, FeatureMethod::Gpu);
    const RadiusResult flann = neighbour_rows(c.points, p.neighbourhood, NnsMethod::Cpu);
    const RadiusResult grid = neighbour_rows(c.points, p.neighbourhood, NnsMethod::Gpu);
    std::size_t differ = 0, reordered = 0;
    for (std::size_t i = 0; i < c.size(); ++i) {
      const Point3f a = ref.normals[i], b = gpu.normals[i];
      if (same_float(a.x, b.x) && same_float(a.y, b.y) && same_float(a.z, b.z) &&
          same_float(ref.curvature[i], gpu.curvature[i]))
        continue;
      ++differ;
      const auto row = [&](const RadiusResult& r) {
        return std::vector<std::int32_t>(r.indices.begin() + r.offsets[i],
                                         r.indices.begin() + r.offsets[i + 1]);
      };
      reordered += row(flann) != row(grid);
    }
    FeatureParams f;
    f.descriptor = Descriptor::Fpfh;
    f.neighbourhood = p.neighbourhood;
    f.normals = p;
    const FeatureResult pcl = compute_features(c, f, FeatureMethod::Cpu);
    const FeatureResult ours = compute_features(c, f, FeatureMethod::Gpu);
    const HistogramDiff d = compare_histograms(ours, pcl, 1e-3);
    qInfo(
        "%zu of %zu normals differ from PCL's, %zu of them where the neighbours came in "
        "another order; %zu FPFH rows differ",
        differ, c.size(), reordered, d.rows);
    QCOMPARE(reordered, differ);
    if (differ == 0) QCOMPARE(d.rows, std::size_t(0));
  }

  // Surfaces whose normals are known: the exact solve (the gpu method's default) against PCL's
  // float one, also in millimetres far from the origin. Measured (H100): the same mean error to
  // six digits on all four; the noise sets it, neither solve adds to it.
  void exact_normals_are_as_near_analytic_surfaces_as_pcls() {
    CUMULUS_REQUIRE_GPU();
    struct Surface {
      const char* name;
      double scale;                  // 1: metres; 1000: the same in millimetres
      std::array<double, 3> offset;  // where it lies
      int shape;                     // 0 plane, 1 sphere, 2 cylinder
    };
    for (const Surface s : {Surface{"plane", 1, {0, 0, 0}, 0}, Surface{"sphere", 1, {0, 0, 0}, 1},
                            Surface{"cylinder", 1, {0, 0, 0}, 2},
                            Surface{"sphere in mm, 20 m away", 1000, {20000, 15000, 300}, 1}}) {
      Random rng(3);
      std::vector<Point3f> pts;
      std::vector<std::array<double, 3>> truth;
      for (int i = 0; i < 20000; ++i) {
        const double u = rng.uniform(), v = rng.uniform(), noise = rng.normal() * 1e-4;
        std::array<double, 3> p, n;
        if (s.shape == 0) {
          p = {u - 0.5, v - 0.5, noise};
          n = {0, 0, 1};
        } else if (s.shape == 1) {
          const double z = 2 * u - 1, a = 2 * M_PI * v, r = std::sqrt(1 - z * z);
          n = {r * std::cos(a), r * std::sin(a), z};
          p = {0.5 * n[0] * (1 + noise), 0.5 * n[1] * (1 + noise), 0.5 * n[2] * (1 + noise)};
        } else {
          const double a = 2 * M_PI * u;
          n = {std::cos(a), std::sin(a), 0};
          p = {0.3 * n[0] + noise * n[0], 0.3 * n[1] + noise * n[1], v - 0.5};
        }
        pts.push_back({float(p[0] * s.scale + s.offset[0]), float(p[1] * s.scale + s.offset[1]),
                       float(p[2] * s.scale + s.offset[2])});
        truth.push_back(n);
      }
      PointCloud c = cloud_of(pts);
      NormalParams p;
      p.neighbourhood = Neighbourhood::nearest(20);
      const NormalsResult pcl = estimate_normals(c, p, FeatureMethod::Cpu);
      const NormalsResult exact = estimate_normals(c, p, FeatureMethod::Gpu);
      double sum_pcl = 0, sum_exact = 0;
      for (std::size_t i = 0; i < pts.size(); ++i) {
        const Point3f t{float(truth[i][0]), float(truth[i][1]), float(truth[i][2])};
        sum_pcl += axis_angle_deg(pcl.normals[i], t);
        sum_exact += axis_angle_deg(exact.normals[i], t);
      }
      const double n = double(pts.size());
      qInfo("%s: mean error against the surface %.6g deg (PCL) and %.6g deg (exact)", s.name,
            sum_pcl / n, sum_exact / n);
      // Noise sets the error on well-sampled surfaces; the solve must not add to it.
      QVERIFY(sum_exact <= sum_pcl * (1 + 1e-3));
    }
  }

  // Degenerate input on the GPU: duplicates, NaNs, a single point, k above the point count.
  void gpu_degenerate_input_equals_pcl() {
    CUMULUS_REQUIRE_GPU();
    std::vector<Point3f> pts = {{0, 0, 0},   {0, 0, 0},    {1, 0, 0},      {0, 1, 0},
                                {NAN, 0, 0}, {1, 1, 0.1f}, {0.5f, 0.5f, 0}};
    for (int d : {0, 1})
      for (int k : {1, 2, 3, 20}) {
        FeatureParams p;
        p.descriptor = d ? Descriptor::Fpfh : Descriptor::Pfh;
        p.neighbourhood = Neighbourhood::nearest(k);
        p.normals.neighbourhood = Neighbourhood::nearest(4);
        const PointCloud c = cloud_of(pts);
        const NormalsResult n = estimate_normals(c, p.normals, FeatureMethod::Cpu);
        const FeatureResult ref = compute_features(c, p, FeatureMethod::Cpu, &n.normals);
        for (FeatureMethod m : {FeatureMethod::GpuPaper, FeatureMethod::Gpu}) {
          const FeatureResult r = compute_features(c, p, m, &n.normals);
          QCOMPARE(r.nan_histograms, std::size_t(1));
          QCOMPARE(compare_histograms(r, ref, 1e-3).rows, std::size_t(0));
        }
      }
    const FeatureResult one =
        compute_features(cloud_of({{1, 2, 3}}), FeatureParams{}, FeatureMethod::Gpu);
    QCOMPARE(one.size(), std::size_t(1));
    QCOMPARE(one.row(0)[0], 0.0f);
  }
};

QTEST_GUILESS_MAIN(TestFeatures)
#include "test_features.moc"
