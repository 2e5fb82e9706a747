// Loaders on real files, writer round trips, and malformed files for every loader.
#include <QDirIterator>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "io/io.h"
#include "test_support.h"

using namespace cumulus;

namespace {

bool finite(const Point3f& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
}

std::size_t count_finite(const PointCloud& c) {
  return c.size() - c.count_non_finite();
}

// First point of a binary PCD read straight from its bytes, independently of PCL.
std::array<float, 3> first_binary_pcd_point(const QString& path) {
  const QByteArray bytes = test::readAll(path);
  const int at = bytes.indexOf("DATA binary\n");
  std::array<float, 3> p{};
  if (at >= 0) std::memcpy(p.data(), bytes.constData() + at + 12, 12);
  return p;
}

PointCloud rich_cloud(int n = 50) {
  PointCloud c;
  for (int i = 0; i < n; ++i) {
    c.points.push_back({0.5f * i, -0.25f * i, 1.0f + 0.125f * i});
    c.intensity.push_back(float(i) / 50);
    c.rgb.push_back({std::uint8_t(i), std::uint8_t(2 * i), std::uint8_t(255 - i)});
    c.normals.push_back({0, 0, 1});
    c.labels.push_back(i % 3 == 0 ? -1 : i % 7);
  }
  ExtraField ring{"ring", 1, {}};
  for (int i = 0; i < n; ++i)
    ring.values.push_back(float(i % 64));
  c.extra.push_back(ring);
  c.width = std::uint32_t(n);
  return c;
}

void expect_same(const PointCloud& a, const PointCloud& b, double tol = 0) {
  QCOMPARE(b.size(), a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    QVERIFY(std::abs((a.origin[0] + a.points[i].x) - (b.origin[0] + b.points[i].x)) <= tol);
    QVERIFY(std::abs((a.origin[1] + a.points[i].y) - (b.origin[1] + b.points[i].y)) <= tol);
    QVERIFY(std::abs((a.origin[2] + a.points[i].z) - (b.origin[2] + b.points[i].z)) <= tol);
  }
  QCOMPARE(b.intensity, a.intensity);
  QCOMPARE(b.rgb.size(), a.rgb.size());
  for (std::size_t i = 0; i < a.rgb.size(); ++i)
    QVERIFY(a.rgb[i] == b.rgb[i]);
  QCOMPARE(b.labels, a.labels);
  QCOMPARE(b.normals.size(), a.normals.size());
  QCOMPARE(b.extra.size(), a.extra.size());
  for (std::size_t e = 0; e < a.extra.size(); ++e) {
    QCOMPARE(QString::fromStdString(b.extra[e].name), QString::fromStdString(a.extra[e].name));
    QCOMPARE(b.extra[e].values, a.extra[e].values);
  }
}

// Expects `fn` to throw IoError whose message names `path`.
template <typename Fn>
void expect_io_error(const QString& path, Fn fn) {
  try {
    fn();
    QFAIL(qPrintable("no error for " + path));
  } catch (const IoError& e) {
    QVERIFY2(QString::fromStdString(e.what()).contains(path), e.what());
    QVERIFY(!e.problem().empty());
  }
}

}  // namespace

class TestIo : public QObject {
  Q_OBJECT

 private slots:
  void kittiBinMatchesFile() {
    CUMULUS_REQUIRE_DATA(path, "kitti/000000.bin");
    const PointCloud c = load_kitti_bin(path.toStdString());
    QCOMPARE(c.size(), std::size_t(124668));
    QCOMPARE(c.points.front().x, 52.89794f);
    QCOMPARE(c.points.front().y, 0.022989739f);
    QCOMPARE(c.points.front().z, 1.9979945f);
    QCOMPARE(c.intensity.front(), 0.08f);
    QCOMPARE(c.points.back().x, 4.0923753f);
    QCOMPARE(c.points.back().z, -1.8955611f);
    QCOMPARE(c.width, 124668u);
    QCOMPARE(c.height, 1u);
  }

  void asciiPcdMatchesFile() {
    CUMULUS_REQUIRE_DATA(path, "cupcl/sample.pcd");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(c.size(), std::size_t(119978));
    QCOMPARE(c.points.front().x, 62.7612f);
    QCOMPARE(c.points.front().y, 8.7600002f);
    QCOMPARE(c.points.front().z, 2.3940001f);
  }

  void binaryPcdMatchesFile() {
    CUMULUS_REQUIRE_DATA(path, "lidar-pair/251370668.pcd");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(c.size(), std::size_t(69088));
    QVERIFY(c.has_intensity());
    const auto p = first_binary_pcd_point(path);
    QCOMPARE(c.points.front().x, p[0]);
    QCOMPARE(c.points.front().y, p[1]);
    QCOMPARE(c.points.front().z, p[2]);
  }

  void compressedPcdLoads() {
    CUMULUS_REQUIRE_DATA(milk, "pcl/milk.pcd");
    CUMULUS_REQUIRE_DATA(car, "pcl/car6.pcd");
    QCOMPARE(load_cloud(milk.toStdString()).size(), std::size_t(13704));
    QCOMPARE(load_cloud(car.toStdString()).size(), std::size_t(10031));
  }

  void organizedPcdKeepsShapeAndNaNs() {
    CUMULUS_REQUIRE_DATA(path, "pcl/table_scene_mug_stereo_textured.pcd");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(c.width, 640u);
    QCOMPARE(c.height, 480u);
    QVERIFY(c.organized());
    QVERIFY(c.has_rgb());
    QVERIFY(c.count_non_finite() > 0);
    QVERIFY(count_finite(c) > 100000);
  }

  void pcdExtraFieldsKept() {
    CUMULUS_REQUIRE_DATA(path, "pcl/bun0.pcd");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(c.size(), std::size_t(397));
    QVERIFY(c.has_normals());
    QVERIFY(c.find_extra("curvature") != nullptr);
  }

  void asciiPlyMatchesFile() {
    CUMULUS_REQUIRE_DATA(path, "bunny/bun_zipper.ply");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(c.size(), std::size_t(35947));
    QCOMPARE(c.points.front().x, -0.0378297f);
    QCOMPARE(c.points.front().y, 0.12794f);
    QCOMPARE(c.points.front().z, 0.00447467f);
    QVERIFY(c.has_intensity());
    QCOMPARE(c.intensity.front(), 0.5f);
    QVERIFY(c.find_extra("confidence") != nullptr);
  }

  void rangeGridPlyKeepsScanPoints() {
    CUMULUS_REQUIRE_DATA(path, "bunny/bun000.ply");
    const PointCloud c = load_cloud(path.toStdString());
    QCOMPARE(count_finite(c), std::size_t(40256));
  }

  void depthPngAndTiff() {
    CUMULUS_REQUIRE_DATA(png, "depth/scan00197.png");
    CUMULUS_REQUIRE_DATA(tiff, "depth/kinect_depth_mm.tiff");
    const DepthImage r = load_depth_image(png.toStdString(), 1.0 / 500);
    QCOMPARE(r.width, 870u);
    QCOMPARE(r.height, 64u);
    QVERIFY(r.count_valid() > 10000);
    const auto [lo, hi] = r.valid_range();
    QVERIFY(lo > 0 && hi < 131.1f);  // 65535 / 500 m
    const DepthImage k = load_depth_image(tiff.toStdString(), 0.001);
    QCOMPARE(k.width, 640u);
    QCOMPARE(k.height, 480u);
    QVERIFY(k.count_valid() > 100000);
    QVERIFY(k.valid_range().first > 0.3f && k.valid_range().second < 10.0f);
  }

  void writerRoundTrips_data() {
    QTest::addColumn<QString>("name");
    for (const char* n :
         {"a.pcd", "b_ascii.pcd", "c_compressed.pcd", "d.ply", "e_ascii.ply", "f.xyz", "g.csv"})
      QTest::newRow(n) << QString(n);
  }

  void writerRoundTrips() {
    QFETCH(QString, name);
    QTemporaryDir dir;
    const std::string path = (dir.path() + "/" + name).toStdString();
    const PointCloud c = rich_cloud();
    SaveOptions o;
    o.pcd = name.contains("ascii")        ? PcdEncoding::Ascii
            : name.contains("compressed") ? PcdEncoding::BinaryCompressed
                                          : PcdEncoding::Binary;
    o.ply_binary = !name.contains("ascii");
    save_cloud(path, c, o);
    expect_same(c, load_cloud(path), name.endsWith(".xyz") || name.endsWith(".csv") ? 1e-6 : 0);
  }

  void kittiBinRoundTrip() {
    QTemporaryDir dir;
    const std::string path = (dir.path() + "/x.bin").toStdString();
    PointCloud c = rich_cloud();
    save_kitti_bin(path, c);
    const PointCloud back = load_kitti_bin(path);
    QCOMPARE(back.size(), c.size());
    QCOMPARE(back.intensity, c.intensity);
    QCOMPARE(back.points[7].y, c.points[7].y);
  }

  void organizedCloudRoundTrip() {
    QTemporaryDir dir;
    PointCloud c;
    c.width = 4;
    c.height = 3;
    for (int i = 0; i < 12; ++i)
      c.points.push_back(i % 5 == 0 ? Point3f{NAN, NAN, NAN} : Point3f{float(i), 1, 2});
    const std::string path = (dir.path() + "/o.pcd").toStdString();
    save_pcd(path, c, PcdEncoding::BinaryCompressed);
    const PointCloud back = load_cloud(path);
    QCOMPARE(back.width, 4u);
    QCOMPARE(back.height, 3u);
    QCOMPARE(back.count_non_finite(), std::size_t(3));
    QVERIFY(!finite(back.points[5]));
    QCOMPARE(back.points[6].x, 6.0f);
  }

  void utmCoordinatesKeepMillimetres() {
    QTemporaryDir dir;
    const QString txt = dir.path() + "/utm.xyz";
    test::writeBytes(
        txt, "x y z\n500123.4567 5400321.1234 251.0005\n500124.4567 5400322.1239 252.0010\n");
    const PointCloud c = load_cloud(txt.toStdString());
    QVERIFY(c.origin[0] != 0 && c.origin[1] != 0);
    QVERIFY(std::abs(c.origin[0] + c.points[0].x - 500123.4567) < 1e-4);
    QVERIFY(std::abs(c.origin[1] + c.points[1].y - 5400322.1239) < 1e-4);
    for (const char* ext : {".pcd", ".ply"}) {
      const std::string out = (dir.path() + "/utm" + ext).toStdString();
      save_cloud(out, c);
      const PointCloud back = load_cloud(out);
      QVERIFY(std::abs(back.origin[1] + back.points[1].y - 5400322.1239) < 1e-4);
      QVERIFY(std::abs(back.origin[2] + back.points[0].z - 251.0005) < 1e-4);
    }
  }

  void xyzColumnsByHeaderAndCount() {
    QTemporaryDir dir;
    const QString a = dir.path() + "/a.txt", b = dir.path() + "/b.csv";
    test::writeBytes(a, "# comment\n1 2 3 10 20 30\n4 5 6 40 50 60\n");
    const PointCloud ca = load_cloud(a.toStdString());
    QCOMPARE(ca.size(), std::size_t(2));
    QVERIFY(ca.has_rgb());
    QCOMPARE(int(ca.rgb[1].g), 50);
    test::writeBytes(b, "x,y,z,label,temperature\n1,2,3,7,20.5\n4,5,6,8,21.5\n");
    const PointCloud cb = load_cloud(b.toStdString());
    QCOMPARE(cb.labels, (std::vector<std::int32_t>{7, 8}));
    QVERIFY(cb.find_extra("temperature") != nullptr);
  }

  void depthPngRoundTrip() {
    QTemporaryDir dir;
    DepthImage img;
    img.width = 5;
    img.height = 3;
    img.depth = {0, 1.0f, 2.5f, NAN, 10.0f, 0.002f, 3, 3, 3, 3, 130, 0, 0, 0, 4};
    const std::string path = (dir.path() + "/d.png").toStdString();
    save_depth_png(path, img, 1.0 / 500);
    const DepthImage back = load_depth_image(path, 1.0 / 500);
    QCOMPARE(back.width, 5u);
    QCOMPARE(back.height, 3u);
    QCOMPARE(back.depth[0], 0.0f);
    QCOMPARE(back.depth[3], 0.0f);  // NaN is written as invalid
    QVERIFY(std::abs(back.depth[2] - 2.5f) < 1e-6f);
    QVERIFY(std::abs(back.depth[10] - 130.0f) < 1e-4f);
    QCOMPARE(back.count_valid(), std::size_t(10));
  }

  void depthScaleParsing() {
    QCOMPARE(parse_depth_scale("kitti"), 1.0 / 256);
    QCOMPARE(parse_depth_scale("1/500"), 1.0 / 500);
    QCOMPARE(parse_depth_scale("0.001"), 0.001);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_depth_scale("-1"));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_depth_scale("fast"));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_depth_scale("1/0"));
  }

  // ---- malformed input: every loader, a clear error naming the file ------------------------

  void missingAndEmptyFiles_data() {
    QTest::addColumn<QString>("ext");
    for (const char* e : {".pcd", ".ply", ".bin", ".xyz", ".png", ".tif"})
      QTest::newRow(e) << QString(e);
  }

  void missingAndEmptyFiles() {
    QFETCH(QString, ext);
    QTemporaryDir dir;
    const QString missing = dir.path() + "/missing" + ext, empty = dir.path() + "/empty" + ext;
    test::writeBytes(empty, {});
    for (const QString& p : {missing, empty}) {
      if (ext == ".png" || ext == ".tif")
        expect_io_error(p, [&] { load_depth_image(p.toStdString(), 0.001); });
      else
        expect_io_error(p, [&] { load_cloud(p.toStdString()); });
    }
    expect_io_error(dir.path(), [&] { load_pcd(dir.path().toStdString()); });
  }

  void garbageFiles_data() {
    QTest::addColumn<QString>("ext");
    for (const char* e : {".pcd", ".ply", ".bin", ".xyz", ".png", ".tif"})
      QTest::newRow(e) << QString(e);
  }

  void garbageFiles() {
    QFETCH(QString, ext);
    QTemporaryDir dir;
    const QString p = dir.path() + "/garbage" + ext;
    QByteArray junk;
    for (int i = 0; i < 1001; ++i)
      junk.append(char((i * 7919) % 251));  // 1001: not a multiple of 16
    test::writeBytes(p, junk);
    if (ext == ".png" || ext == ".tif")
      expect_io_error(p, [&] { load_depth_image(p.toStdString(), 0.001); });
    else
      expect_io_error(p, [&] { load_cloud(p.toStdString()); });
  }

  void truncatedFiles_data() {
    QTest::addColumn<QString>("name");
    for (const char* n : {"t.pcd", "t_ascii.pcd", "t_compressed.pcd", "t.ply", "t.bin", "t.png"})
      QTest::newRow(n) << QString(n);
  }

  void truncatedFiles() {
    QFETCH(QString, name);
    QTemporaryDir dir;
    const QString full = dir.path() + "/full_" + name, cut = dir.path() + "/" + name;
    if (name.endsWith(".png")) {
      DepthImage img;
      img.width = 64;
      img.height = 64;
      for (int i = 0; i < 64 * 64; ++i)
        img.depth.push_back(1.0f + float((i * 37) % 1000) / 100);
      save_depth_png(full.toStdString(), img, 0.001);
    } else {
      // Large enough that the cut falls in the point data, not in PCL's page padding.
      PointCloud c = rich_cloud(5000);
      SaveOptions o;
      o.pcd = name.contains("ascii")        ? PcdEncoding::Ascii
              : name.contains("compressed") ? PcdEncoding::BinaryCompressed
                                            : PcdEncoding::Binary;
      save_cloud(full.toStdString(), c, o);
    }
    const QByteArray bytes = test::readAll(full);
    test::writeBytes(cut, bytes.left(bytes.size() * 2 / 3 + 1));
    if (name.endsWith(".png"))
      expect_io_error(cut, [&] { load_depth_image(cut.toStdString(), 0.001); });
    else
      expect_io_error(cut, [&] { load_cloud(cut.toStdString()); });
  }

  void pcdHeaderClaimsMorePoints() {
    QTemporaryDir dir;
    const QString p = dir.path() + "/lie.pcd";
    test::writeBytes(
        p,
        "VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nCOUNT 1 1 1\nWIDTH 1000\nHEIGHT 1\n"
        "VIEWPOINT 0 0 0 1 0 0 0\nPOINTS 1000\nDATA ascii\n1 2 3\n4 5 6\n");
    expect_io_error(p, [&] { load_cloud(p.toStdString()); });
  }

  void plyHeaderIsCheckedAgainstTheData_data() {
    test::add_columns<QByteArray, QString>({"bytes", "why"});
    const QByteArray head = "ply\nformat ascii 1.0\n";
    const QByteArray xyz = "property float x\nproperty float y\nproperty float z\nend_header\n";
    QTest::newRow("negative count") << head + "element vertex -2\n" + xyz + "1 2 3\n"
                                    << "bad element count '-2'";
    QTest::newRow("more vertices than data") << head + "element vertex 1000\n" + xyz + "1 2 3\n"
                                             << "data is truncated";
    QTest::newRow("huge count") << head + "element vertex 99999999999999\n" + xyz + "1 2 3\n"
                                << "impossible number of elements";
    QTest::newRow("unknown type") << head + "element vertex 1\nproperty float7 x\nend_header\n1\n"
                                  << "unknown property type 'float7'";
    QTest::newRow("no end_header") << head + "element vertex 1\nproperty float x\n"
                                   << "no end_header";
    QTest::newRow("no format") << QByteArray("ply\nelement vertex 1\n") + xyz + "1 2 3\n"
                               << "no format line";
    QTest::newRow("binary data short")
        << QByteArray("ply\nformat binary_little_endian 1.0\nelement vertex 2\n") + xyz +
               QByteArray(20, '\0')
        << "need at least 24 bytes, the file holds 20";
  }

  // PCL's reader trusts the counts (a negative one once asked for 51 GB): the header is checked
  // first, and the message says what is wrong.
  void plyHeaderIsCheckedAgainstTheData() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, why);
    QTemporaryDir dir;
    const QString p = dir.path() + "/lie.ply";
    test::writeBytes(p, bytes);
    try {
      load_cloud(p.toStdString());
      QFAIL("no error");
    } catch (const IoError& e) {
      QVERIFY2(QString::fromStdString(e.what()).contains(why), e.what());
    }
  }

  void plyWithoutFinalNewlineLoads() {
    QTemporaryDir dir;
    const QString p = dir.path() + "/ok.ply";
    test::writeBytes(p,
                     "ply\nformat ascii 1.0\ncomment made by hand\nelement vertex 2\n"
                     "property float x\nproperty float y\nproperty float z\nend_header\n"
                     "1 2 3\n4 5 6");
    const PointCloud c = load_cloud(p.toStdString());
    QCOMPARE(c.size(), std::size_t(2));
    QCOMPARE(c.points[1].z, 6.0f);
  }

  void xyzBadNumbersAndColumns() {
    QTemporaryDir dir;
    const QString a = dir.path() + "/a.xyz", b = dir.path() + "/b.xyz", c = dir.path() + "/c.xyz";
    test::writeBytes(a, "1 2 3\n4 five 6\n");
    test::writeBytes(b, "1 2 3\n4 5 6 7\n");
    test::writeBytes(c, "# only a comment\n\n");
    for (const QString& p : {a, b, c})
      expect_io_error(p, [&] { load_cloud(p.toStdString()); });
  }

  void depthImageWrongPixelType() {
    QTemporaryDir dir;
    // A valid 2x2 8-bit RGB PNG: readable, but not a depth image.
    static const char kRgbPng[] =
        "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00"
        "\x00\x02\x08\x02\x00\x00\x00\xfd\xd4\x9a\x73\x00\x00\x00\x10\x49\x44\x41\x54\x78\x9c\x63"
        "\xf8\xcf\xc0\x00\x44\x0c\x10\x0a\x00\x1f\xee\x03\xfd\x8b\x5f\x14\xd4\x00\x00\x00\x00\x49"
        "\x45\x4e\x44\xae\x42\x60\x82";
    const QString p = dir.path() + "/colour.png";
    test::writeBytes(p, QByteArray(kRgbPng, sizeof kRgbPng - 1));
    expect_io_error(p, [&] { load_depth_image(p.toStdString(), 0.001); });
  }

  // The fuzzers' seeds load; every input a fuzzer ever crashed on (scripts/fuzz.sh keeps them
  // in fuzz/regressions) now loads or gives a clear error. Under CUMULUS_SANITIZE this also
  // checks them for memory errors and undefined behaviour.
  void fuzzSeedsLoadAndFindingsFailCleanly() {
    const QString root = QStringLiteral(CUMULUS_FUZZ_DIR);
    int seeds = 0, findings = 0, corpus = 0;
    QDirIterator it(root, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
      const QString path = it.next();
      const bool seed = path.contains("/seeds/");
      // The fuzzers' minimized corpus: inputs they ran without a crash, which must stay so.
      const bool kept = path.contains("/corpus/");
      if (!seed && !kept && !path.contains("/regressions/")) continue;
      const std::string p = path.toStdString();
      auto load = [&] {
        if (is_depth_image_path(p))
          (void)load_depth_image(p, 0.001);
        else
          (void)load_cloud(p);
      };
      if (seed) {
        ++seeds;
        try {
          load();
        } catch (const std::exception& e) {
          QFAIL(qPrintable(path + ": " + e.what()));
        }
      } else {
        ++(kept ? corpus : findings);
        try {
          load();
        } catch (const Error&) {
        }
      }
    }
    qInfo("%d seeds, %d fuzz findings, %d corpus inputs", seeds, findings, corpus);
    QVERIFY(seeds >= 6);
  }

  void unsupportedExtension() {
    QTemporaryDir dir;
    const QString p = dir.path() + "/scan.dxf";
    test::writeBytes(p, "0\nSECTION");
    expect_io_error(p, [&] { load_cloud(p.toStdString()); });
  }
};

QTEST_GUILESS_MAIN(TestIo)
#include "test_io.moc"
