// LAS: files written here byte by byte from the specification (not by our writer) are read
// right; every point format round-trips; records, extra bytes and colours are kept; bad files
// and clouds LAS cannot hold get clear errors.
#include <QTemporaryDir>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "io/io.h"
#include "test_support.h"

using namespace cumulus;

namespace {

// A LAS file assembled from the specification's byte offsets.
struct LasBytes {
  QByteArray b;
  template <class T>
  void put(int at, T v) {
    if (b.size() < at + int(sizeof v)) b.resize(at + int(sizeof v), '\0');
    std::memcpy(b.data() + at, &v, sizeof v);
  }
  void text(int at, const char* s) { b.replace(at, int(std::strlen(s)), s); }
};

// LAS `minor` header with `points` records of `format`, `record` bytes each, after `vlrs`.
LasBytes header(int minor, int format, int record, std::uint64_t points, const QByteArray& vlrs,
                int vlr_count) {
  LasBytes h;
  const int size = minor >= 4 ? 375 : minor == 3 ? 235 : 227;
  h.b = QByteArray(size, '\0');
  h.text(0, "LASF");
  h.put<std::uint8_t>(24, 1);
  h.put<std::uint8_t>(25, std::uint8_t(minor));
  h.text(26, "hand made");
  h.put<std::uint16_t>(94, std::uint16_t(size));
  h.put<std::uint32_t>(96, std::uint32_t(size + vlrs.size()));
  h.put<std::uint32_t>(100, std::uint32_t(vlr_count));
  h.put<std::uint8_t>(104, std::uint8_t(format));
  h.put<std::uint16_t>(105, std::uint16_t(record));
  h.put<std::uint32_t>(107, format <= 5 ? std::uint32_t(points) : 0);
  const double scale[3] = {0.01, 0.01, 0.001}, offset[3] = {500000, 4000000, 0};
  for (int a = 0; a < 3; ++a) {
    h.put<double>(131 + 8 * a, scale[a]);
    h.put<double>(155 + 8 * a, offset[a]);
  }
  if (minor >= 4) h.put<std::uint64_t>(247, points);
  h.b += vlrs;
  return h;
}

QByteArray vlr(const char* user, std::uint16_t id, const QByteArray& data) {
  LasBytes v;
  v.b = QByteArray(54, '\0');
  v.text(2, user);
  v.put<std::uint16_t>(18, id);
  v.put<std::uint16_t>(20, std::uint16_t(data.size()));
  v.text(22, "test record");
  return v.b + data;
}

QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
  const QString p = dir.path() + "/" + name;
  test::writeBytes(p, bytes);
  return p;
}

// Three UTM points in point format 1 (LAS 1.2) with a GeoTIFF key record.
QByteArray format1_file() {
  const QByteArray keys =
      vlr("LASF_Projection", 34735, QByteArray("\x01\x00\x01\x00\x00\x00\x01\x00", 8));
  LasBytes f = header(2, 1, 28, 3, keys, 1);
  const int base = f.b.size();
  for (int i = 0; i < 3; ++i) {
    const int at = base + 28 * i;
    f.put<std::int32_t>(at, 12345 + i);       // x = 500123.45 + 0.01 i
    f.put<std::int32_t>(at + 4, -67890 - i);  // y = 3999321.10 - 0.01 i
    f.put<std::int32_t>(at + 8, 1500 * i);    // z = 1.5 i
    f.put<std::uint16_t>(at + 12, std::uint16_t(1000 + i));
    f.put<std::uint8_t>(at + 14,
                        std::uint8_t((i + 1) | (3 << 3) | (1 << 6)));  // return i+1 of 3, scan dir
    f.put<std::uint8_t>(at + 15, std::uint8_t(2 | (i == 2 ? 0x80 : 0)));  // ground; last withheld
    f.put<std::int8_t>(at + 16, std::int8_t(-5 + i));
    f.put<std::uint8_t>(at + 17, 7);
    f.put<std::uint16_t>(at + 18, 3);
    f.put<double>(at + 20, 123456789.123456 + i);
  }
  return f.b;
}

const ExtraField& field(const PointCloud& c, const char* name) {
  const ExtraField* f = c.find_extra(name);
  if (!f) throw std::runtime_error(std::string("no field ") + name);
  return *f;
}

double world(const PointCloud& c, std::size_t i, int axis) {
  return c.origin[std::size_t(axis)] + double((&c.points[i].x)[axis]);
}

template <class Fn>
QString io_error(Fn fn) {
  try {
    fn();
  } catch (const IoError& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

// A cloud with every standard field of `format` set to values that format can hold.
PointCloud cloud_for_format(int format) {
  PointCloud c;
  const int n = 50;
  c.metadata = {{"las.version", "1.4"},
                {"las.point_format", std::to_string(format)},
                {"las.scale", "0.001 0.001 0.001"},
                {"las.offset", "1000 2000 0"}};
  const bool extended = format >= 6;
  const bool gps = format == 1 || format >= 3, rgb = format == 2 || format == 3 || format == 5 ||
                                                     format == 7 || format == 8 || format == 10;
  const bool nir = format == 8 || format == 10, wave = format == 4 || format == 5 || format >= 9;
  std::vector<std::pair<const char*, std::function<double(int)>>> f = {
      {"return_number", [](int i) { return 1 + i % 3; }},
      {"number_of_returns", [](int) { return 3; }},
      {"scan_direction", [](int i) { return i % 2; }},
      {"edge_of_flight_line", [](int i) { return (i / 2) % 2; }},
      {"classification", [extended](int i) { return extended ? 100 + i : i % 32; }},
      {"synthetic", [](int i) { return i % 3 == 0; }},
      {"key_point", [](int i) { return i % 5 == 0; }},
      {"withheld", [](int i) { return i % 7 == 0; }},
      {"scan_angle", [extended](int i) { return extended ? (i - 25) * 0.006 * 100 : i - 25; }},
      {"user_data", [](int i) { return 200 + i % 50; }},
      {"point_source_id", [](int i) { return 60000 + i; }}};
  if (extended) {
    f.push_back({"overlap", [](int i) { return i % 4 == 1; }});
    f.push_back({"scanner_channel", [](int i) { return i % 4; }});
  }
  if (gps) f.push_back({"gps_time", [](int i) { return 1.3e9 + i * 1e-6; }});
  if (nir) f.push_back({"nir", [](int i) { return 40000 + i; }});
  if (wave) {
    f.push_back({"wave_descriptor", [](int i) { return 1 + i % 2; }});
    f.push_back({"wave_offset", [](int i) { return 1e10 + i; }});
    f.push_back({"wave_size", [](int) { return 256; }});
    f.push_back({"wave_location", [](int i) { return 0.5f * float(i); }});
    f.push_back({"wave_xt", [](int) { return 0.25; }});
    f.push_back({"wave_yt", [](int) { return -0.25; }});
    f.push_back({"wave_zt", [](int) { return 0.125; }});
  }
  for (int i = 0; i < n; ++i) {
    c.points.push_back({0.001f * float(i), 1.0f + 0.002f * float(i), -0.5f + 0.003f * float(i)});
    c.intensity.push_back(float(i * 1000));
    if (rgb) c.rgb.push_back({std::uint8_t(i), std::uint8_t(2 * i), std::uint8_t(255 - i)});
  }
  c.origin = {1000, 2000, 0};
  for (const auto& [name, value] : f) {
    ExtraField e{name, 1, {}};
    for (int i = 0; i < n; ++i)
      e.values.push_back(value(i));
    c.extra.push_back(e);
  }
  c.width = std::uint32_t(n);
  return c;
}

}  // namespace

class TestLas : public QObject {
  Q_OBJECT

 private slots:
  void handWrittenFormat1IsReadExactly() {
    QTemporaryDir dir;
    const PointCloud c = load_cloud(write(dir, "utm.las", format1_file()).toStdString());
    QCOMPARE(c.size(), std::size_t(3));
    for (std::size_t i = 0; i < 3; ++i) {
      QVERIFY(std::abs(world(c, i, 0) - (500123.45 + 0.01 * double(i))) < 1e-5);
      QVERIFY(std::abs(world(c, i, 1) - (3999321.10 - 0.01 * double(i))) < 1e-5);
      QVERIFY(std::abs(world(c, i, 2) - 1.5 * double(i)) < 1e-6);
      QCOMPARE(c.intensity[i], float(1000 + i));
      QCOMPARE(field(c, "return_number").values[i], double(i + 1));
      QCOMPARE(field(c, "number_of_returns").values[i], 3.0);
      QCOMPARE(field(c, "classification").values[i], 2.0);
      QCOMPARE(field(c, "withheld").values[i], i == 2 ? 1.0 : 0.0);
      QCOMPARE(field(c, "scan_angle").values[i], -5.0 + double(i));
      QCOMPARE(field(c, "user_data").values[i], 7.0);
      QCOMPARE(field(c, "point_source_id").values[i], 3.0);
      QCOMPARE(field(c, "gps_time").values[i], 123456789.123456 + double(i));  // exact
    }
    // Flags that are zero at every point are not kept (LAS writes them as zero).
    QVERIFY(c.find_extra("synthetic") == nullptr);
    QVERIFY(c.find_extra("edge_of_flight_line") == nullptr);
    QCOMPARE(QString::fromStdString(*c.find_metadata("las.version")), QString("1.2"));
    QCOMPARE(QString::fromStdString(*c.find_metadata("las.point_format")), QString("1"));
    const std::string* keys = c.find_metadata("las.vlr.0");
    QVERIFY(keys && keys->size() == 54 + 8);
    QCOMPARE(QByteArray(keys->data() + 2, 15), QByteArray("LASF_Projection"));
  }

  void readBackIsIdenticalBytes() {
    // A file we did not write goes back with the same records, scale and points: only our
    // software name and the creation date differ.
    QTemporaryDir dir;
    const QString in = write(dir, "in.las", format1_file());
    const QString out = dir.path() + "/out.las";
    save_cloud(out.toStdString(), load_cloud(in.toStdString()));
    QByteArray a = test::readAll(in), b = test::readAll(out);
    QCOMPARE(b.size(), a.size());
    for (QByteArray* x : {&a, &b}) {
      x->replace(58, 32, QByteArray(32, '\0'));   // generating software
      x->replace(90, 4, QByteArray(4, '\0'));     // creation day and year
      x->replace(179, 48, QByteArray(48, '\0'));  // bounds: the hand-made header left them 0
      x->replace(111, 20, QByteArray(20, '\0'));  // points by return: likewise
    }
    QCOMPARE(b, a);
    double max_x = 0;
    std::memcpy(&max_x, test::readAll(out).constData() + 179, 8);
    QVERIFY(std::abs(max_x - 500123.47) < 1e-6);
  }

  void everyPointFormatRoundTrips_data() {
    QTest::addColumn<int>("format");
    for (int f = 0; f <= 10; ++f)
      QTest::newRow(qPrintable(QString("format %1").arg(f))) << f;
  }
  void everyPointFormatRoundTrips() {
    QFETCH(int, format);
    QTemporaryDir dir;
    const PointCloud c = cloud_for_format(format);
    const QString p = dir.path() + "/f.las";
    save_cloud(p.toStdString(), c);
    const QByteArray bytes = test::readAll(p);
    QCOMPARE(int(std::uint8_t(bytes[104])), format);
    const PointCloud r = load_cloud(p.toStdString());
    QCOMPARE(r.size(), c.size());
    for (std::size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a)
        QVERIFY(std::abs(world(r, i, a) - world(c, i, a)) < 1e-4);  // float32 at 1 km
    QCOMPARE(r.intensity, c.intensity);
    QCOMPARE(r.rgb, c.rgb);
    for (const auto& e : c.extra) {
      const ExtraField* got = r.find_extra(e.name);
      QVERIFY2(got, e.name.c_str());
      for (std::size_t i = 0; i < c.size(); ++i)
        QVERIFY2(
            std::abs(got->values[i] - e.values[i]) <= 1e-9 * std::max(1.0, std::abs(e.values[i])),
            qPrintable(QString("%1 at %2: %3 for %4")
                           .arg(e.name.c_str())
                           .arg(i)
                           .arg(got->values[i])
                           .arg(e.values[i])));
    }
    QCOMPARE(r.extra.size(),
             c.extra.size());  // nothing added: every field went to its standard place
  }

  void headerCountsAndBoundsAreRight() {
    QTemporaryDir dir;
    const PointCloud c = cloud_for_format(6);
    const QString p = dir.path() + "/h.las";
    save_cloud(p.toStdString(), c);
    const QByteArray b = test::readAll(p);
    const auto u64 = [&](int at) {
      std::uint64_t v;
      std::memcpy(&v, b.constData() + at, 8);
      return v;
    };
    const auto f64 = [&](int at) {
      double v;
      std::memcpy(&v, b.constData() + at, 8);
      return v;
    };
    QCOMPARE(u64(247), std::uint64_t(50));
    QCOMPARE(u64(255), std::uint64_t(17));  // first returns: i % 3 == 0
    QCOMPARE(u64(263), std::uint64_t(17));
    QCOMPARE(u64(271), std::uint64_t(16));
    QCOMPARE(f64(187), 1000.0);  // min x
    QVERIFY(std::abs(f64(179) - 1000.049) < 1e-9);
    QCOMPARE(f64(219), -0.5);  // min z
    QVERIFY(std::abs(f64(211) - (-0.5 + 0.147)) < 1e-9);
  }

  void realScanRoundTrips() {
    CUMULUS_REQUIRE_DATA(kitti, "kitti/000000.bin");
    QTemporaryDir dir;
    const PointCloud c = load_cloud(kitti.toStdString());
    const QString p = dir.path() + "/k.las", q = dir.path() + "/k2.las";
    save_cloud(p.toStdString(), c);
    const PointCloud r = load_cloud(p.toStdString());
    QCOMPARE(r.size(), c.size());
    double moved = 0;
    for (std::size_t i = 0; i < c.size(); ++i)
      for (int a = 0; a < 3; ++a)
        moved = std::max(moved, std::abs(world(r, i, a) - world(c, i, a)));
    QVERIFY(moved <= 0.0005 + 1e-5);     // the 1 mm grid, and float32 on the way back
    QCOMPARE(r.intensity, c.intensity);  // reflectances in [0, 1] kept exactly (extra bytes)
    save_cloud(q.toStdString(), r);
    QByteArray a = test::readAll(p), b = test::readAll(q);
    a.replace(90, 4, QByteArray(4, '\0'));
    b.replace(90, 4, QByteArray(4, '\0'));
    QVERIFY(a == b);  // LAS -> LAS changes nothing
  }

  void recordsAndExtraBytesAreKept() {
    // LAS 1.4 format 6 with a WKT record, a scaled extra-bytes field and an EVLR.
    QByteArray desc(192, '\0');
    desc[2] = 3;       // unsigned short
    desc[3] = 8 | 16;  // scale and offset given
    std::memcpy(desc.data() + 4, "range", 5);
    const double scale = 0.1, offset = 5;
    std::memcpy(desc.data() + 112, &scale, 8);
    std::memcpy(desc.data() + 136, &offset, 8);
    const QByteArray wkt("PROJCS[\"WGS 84 / UTM zone 32N\"]");
    const QByteArray vlrs = vlr("LASF_Projection", 2112, wkt) + vlr("LASF_Spec", 4, desc);
    LasBytes f = header(4, 6, 32, 2, vlrs, 2);
    const int base = f.b.size();
    for (int i = 0; i < 2; ++i) {
      f.put<std::int32_t>(base + 32 * i, i);
      f.put<std::uint8_t>(base + 32 * i + 14, 0x11);  // first of one
      f.put<std::uint16_t>(base + 32 * i + 30, std::uint16_t(100 + i));
    }
    const int evlr_at = f.b.size();
    f.put<std::uint64_t>(235, std::uint64_t(evlr_at));
    f.put<std::uint32_t>(243, 1);
    LasBytes e;
    e.b = QByteArray(60, '\0');
    e.text(2, "someone");
    e.put<std::uint16_t>(18, 7);
    e.put<std::uint64_t>(20, 5);
    f.b += e.b + QByteArray("hello");
    QTemporaryDir dir;
    const QString in = write(dir, "crs.las", f.b);
    const PointCloud c = load_cloud(in.toStdString());
    QCOMPARE(field(c, "range").values, (std::vector<double>{100 * 0.1 + 5, 101 * 0.1 + 5}));
    const QString out = dir.path() + "/out.las";
    save_cloud(out.toStdString(), c);
    const PointCloud r = load_cloud(out.toStdString());
    QCOMPARE(field(r, "range").values, field(c, "range").values);
    QCOMPARE(r.metadata.size(), c.metadata.size());
    // The WKT record and the EVLR as they were (the extra-bytes record is written anew).
    for (const char* key : {"las.vlr.0", "las.evlr.0"})
      QVERIFY2(r.find_metadata(key) && *r.find_metadata(key) == *c.find_metadata(key), key);
    const QByteArray bytes = test::readAll(out);
    QVERIFY(bytes.contains(wkt));
    // Another format has no place for the records: the writers' warning says so.
    const auto lost = save_loss((dir.path() + "/c.pcd").toStdString(), c).dropped_fields;
    QVERIFY(std::find_if(lost.begin(), lost.end(), [](const std::string& f) {
              return f.find("coordinate reference system") != std::string::npos;
            }) != lost.end());
    QVERIFY(save_loss(out.toStdString(), c).dropped_fields.empty());
    QVERIFY(bytes.endsWith("hello"));
    QCOMPARE(int(std::uint8_t(bytes[6])) & 16, 16);  // WKT flag, as format 6 requires
  }

  void otherFieldsBecomeExtraBytes() {
    PointCloud c = cloud_for_format(6);
    c.metadata.clear();
    c.extra.push_back({"ring", 1, std::vector<double>(c.size(), 17.0)});
    ExtraField pair{"pair", 2, {}};
    for (std::size_t i = 0; i < c.size(); ++i)
      pair.values.insert(pair.values.end(), {double(i), 1e10 + double(i)});
    c.extra.push_back(pair);
    c.normals.assign(c.size(), {0, 0.6f, 0.8f});
    for (std::size_t i = 0; i < c.size(); ++i)
      c.labels.push_back(i % 4 == 0 ? -1 : std::int32_t(i));
    QTemporaryDir dir;
    const QString p = dir.path() + "/x.las";
    save_cloud(p.toStdString(), c);
    const PointCloud r = load_cloud(p.toStdString());
    QCOMPARE(r.labels, c.labels);
    QCOMPARE(r.normals.size(), c.size());
    QCOMPARE(r.normals[3].z, 0.8f);
    QCOMPARE(field(r, "ring").values, field(c, "ring").values);
    QCOMPARE(field(r, "pair_1").values[7], 1e10 + 7);  // float64 where float32 would round
    QCOMPARE(QString::fromStdString(*r.find_metadata("las.version")), QString("1.4"));
  }

  void labelsAsClassificationOrUserData() {
    PointCloud c = cloud_for_format(1);
    for (std::size_t i = 0; i < c.size(); ++i)
      c.labels.push_back(i % 5 == 0 ? -1 : std::int32_t(i % 7));
    QTemporaryDir dir;
    const QString p = dir.path() + "/c.las";
    SaveOptions o;
    o.las_labels = LasLabels::Classification;
    save_cloud(p.toStdString(), c, o);
    PointCloud r = load_cloud(p.toStdString());
    QVERIFY(int(std::uint8_t(test::readAll(p)[104])) >= 6);  // classes above 31 need format 6+
    for (std::size_t i = 0; i < c.size(); ++i)
      QCOMPARE(field(r, "classification").values[i], c.labels[i] < 0 ? 1.0 : 64.0 + c.labels[i]);
    o.las_labels = LasLabels::UserData;
    save_cloud(p.toStdString(), c, o);
    r = load_cloud(p.toStdString());
    for (std::size_t i = 0; i < c.size(); ++i)
      QCOMPARE(field(r, "user_data").values[i], double(c.labels[i] + 1));
    c.labels[3] = 500;
    const QByteArray before = test::readAll(p);
    QVERIFY(io_error([&] { save_cloud(p.toStdString(), c, o); }).contains("user data"));
    QCOMPARE(test::readAll(p), before);  // refused: the old file stays
  }

  void coloursKeepTheirSixteenBits() {
    PointCloud c = cloud_for_format(7);
    QTemporaryDir dir;
    const QString p = dir.path() + "/rgb.las";
    save_cloud(p.toStdString(), c);
    PointCloud r = load_cloud(p.toStdString());
    QCOMPARE(r.rgb, c.rgb);
    QVERIFY(r.find_extra("red") == nullptr);  // 8-bit colours scaled by 257: nothing more to keep
    ExtraField red{"red", 1, {}}, green{"green", 1, {}}, blue{"blue", 1, {}};
    for (std::size_t i = 0; i < c.size(); ++i) {
      red.values.push_back(1000 + double(i));
      green.values.push_back(65535);
      blue.values.push_back(3);
    }
    c.extra.insert(c.extra.end(), {red, green, blue});
    save_cloud(p.toStdString(), c);
    r = load_cloud(p.toStdString());
    QCOMPARE(field(r, "red").values, red.values);
    QCOMPARE(r.rgb[0].r, std::uint8_t(1000 >> 8));
    QCOMPARE(r.rgb[0].g, std::uint8_t(255));
  }

  void badFilesGiveClearErrors_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("says");
    const QByteArray good = format1_file();
    const auto with = [&](int at, QByteArray v) {
      QByteArray b = good;
      b.replace(at, v.size(), v);
      return b;
    };
    const auto u32 = [](std::uint32_t v) {
      return QByteArray(reinterpret_cast<const char*>(&v), 4);
    };
    const auto f64 = [](double v) { return QByteArray(reinterpret_cast<const char*>(&v), 8); };
    QTest::newRow("not LAS") << QByteArray("LASX and more bytes") << "not a LAS file";
    QTest::newRow("truncated header") << good.left(100) << "truncated LAS header";
    QTest::newRow("truncated points") << good.left(good.size() - 10) << "truncated";
    QTest::newRow("count beyond file") << with(107, u32(1000)) << "room for 3";
    QTest::newRow("unknown format")
        << with(104, QByteArray(1, char(11))) << "unknown point format 11";
    QTest::newRow("laz") << with(104, QByteArray(1, char(0x81))) << "LASzip";
    QTest::newRow("zero scale") << with(131, f64(0)) << "x scale factor is 0";
    QTest::newRow("nan offset") << with(163, f64(std::nan(""))) << "y offset nan";
    QTest::newRow("data offset past end") << with(96, u32(100000)) << "outside the file";
    QTest::newRow("vlr past points")
        << with(227 + 20, QByteArray("\xff\x00", 2)) << "variable-length record 0";
    QTest::newRow("short records")
        << with(105, QByteArray("\x10\x00", 2)) << "shorter than point format 1";
    QTest::newRow("version 2") << with(24, QByteArray(1, char(2))) << "version 2.2";
    QTest::newRow("no points") << with(107, u32(0)) << "no points";
  }
  void badFilesGiveClearErrors() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, says);
    QTemporaryDir dir;
    const QString p = write(dir, "bad.las", bytes);
    const QString e = io_error([&] { load_cloud(p.toStdString()); });
    QVERIFY2(e.contains(p) && e.contains(says), qPrintable(e));
  }

  void lazAndE57SayHowToConvert() {
    QTemporaryDir dir;
    const QString laz = write(dir, "scan.laz", format1_file()),
                  e57 = write(dir, "scan.e57", "ASTM-E57");
    QVERIFY(is_cloud_path(laz.toStdString()));
    QVERIFY(
        io_error([&] { load_cloud(laz.toStdString()); }).contains("laszip -i in.laz -o out.las"));
    QVERIFY(io_error([&] { load_cloud(e57.toStdString()); }).contains("libE57Format"));
    QVERIFY(io_error([&] {
              save_cloud((dir.path() + "/o.laz").toStdString(), cloud_for_format(0));
            }).contains("LASzip"));
  }

  void writeRefusesWhatLasCannotHold() {
    QTemporaryDir dir;
    const QString p = dir.path() + "/r.las";
    PointCloud c = cloud_for_format(6);
    c.points[4].y = std::nanf("");
    QVERIFY(io_error([&] { save_cloud(p.toStdString(), c); }).contains("finite coordinates"));
    c = cloud_for_format(6);
    c.extra[0].values[2] = 20;  // return number 20 > 15
    QVERIFY(io_error([&] { save_cloud(p.toStdString(), c); }).contains("'return_number' holds 20"));
    QVERIFY(!QFile::exists(p));
    QVERIFY(io_error([&] { save_cloud(p.toStdString(), PointCloud{}); }).contains("empty"));
  }

  void movingPointsOffTheFilesGridAsks() {
    // A file on a 1 cm grid, its points moved by 3 mm: writing it back would round them again.
    QTemporaryDir dir;
    PointCloud c = load_cloud(write(dir, "g.las", format1_file()).toStdString());
    for (auto& q : c.points)
      q.x += 0.003f;
    const QString p = dir.path() + "/moved.las";
    const SaveLoss loss = save_loss(p.toStdString(), c);
    QVERIFY(loss.max_rounding_m > 0.0025 && loss.max_rounding_m < 0.0035);
    try {
      save_cloud(p.toStdString(), c);
      QFAIL("no refusal");
    } catch (const PrecisionLossError& e) {
      QVERIFY(QString(e.what()).contains("grid of its scale"));
    }
    SaveOptions o;
    o.allow_precision_loss = true;
    save_cloud(p.toStdString(), c, o);
    QVERIFY(save_loss(p.toStdString(), load_cloud(p.toStdString())).max_rounding_m < 1e-6);
  }
};

QTEST_GUILESS_MAIN(TestLas)
#include "test_las.moc"
