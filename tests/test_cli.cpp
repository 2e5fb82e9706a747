// cumulus-cli: subcommands in-process, and the real binary end to end.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <Eigen/LU>
#include "bench.h"
#include "commands.h"

#include "cluster/cluster.h"
#include "core/device.h"
#include "core/limits.h"
#include "filter/filter.h"
#include "generate/generate.h"
#include "io/io.h"
#include "registration/icp.h"
#include "test_support.h"

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = cumulus::cli::cli_main(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT

 private slots:
  // docs/methods.md is what `methods --markdown` writes from the method tables, and every
  // command's --help and "unknown method" message list the same names.
  void methodDocsAndHelpComeFromTheMethodTables() {
    const Run r = cli({"methods", "--markdown"});
    QCOMPARE(r.code, 0);
    const QByteArray doc =
        cumulus::test::readAll(QStringLiteral(CUMULUS_SOURCE_DIR "/docs/methods.md"));
    QVERIFY2(QByteArray::fromStdString(r.out) == doc,
             "docs/methods.md is stale: rewrite it with cumulus-cli methods --markdown");
    const Run help = cli({"cluster", "--help"});
    QCOMPARE(help.code, 0);
    for (const auto& row : cumulus::method_table(cumulus::ClusterMethod{}).rows())
      QVERIFY2(help.out.find(row.description) != std::string::npos, row.name);
    const Run bad_cluster = cli({"cluster", "x.pcd", "--method", "nonsense", "--tolerance", "1"});
    QCOMPARE(bad_cluster.code, 2);
    QVERIFY2(bad_cluster.err.find(cumulus::method_table(cumulus::ClusterMethod{}).names()) !=
                 std::string::npos,
             bad_cluster.err.c_str());
    const Run bad_icp = cli({"register", "a.pcd", "b.pcd", "--method", "nonsense"});
    QCOMPARE(bad_icp.code, 2);
    QVERIFY2(
        bad_icp.err.find(cumulus::method_table(cumulus::IcpMethod{}).names()) != std::string::npos,
        bad_icp.err.c_str());
  }

  void infoJsonOnSample() {
    const std::string path = (cumulus::test::sampleDir() + "/street_scene.pcd").toStdString();
    const Run r = cli({"info", path, "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QCOMPARE(j["kind"].toString(), QString("cloud"));
    QCOMPARE(j["format"].toString(), QString("pcd"));
    QVERIFY(j["points"].toDouble() > 100000);
    QVERIFY(j["fields"].toArray().contains(QString("ring")));
    QCOMPARE(j["nan_count"].toDouble(), 0.0);
    QCOMPARE(j["bounds_min"].toArray().size(), 3);
  }

  void infoOnDepthImage() {
    const std::string path = (cumulus::test::sampleDir() + "/street_range.png").toStdString();
    const Run r = cli({"info", path, "--scale", "velodyne", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QCOMPARE(j["kind"].toString(), QString("depth-image"));
    QCOMPARE(j["height"].toInt(), 64);
    QVERIFY(j["depth_max"].toDouble() <= 80.5);
  }

  void errorsAreOneLineAndNonZero() {
    QTemporaryDir dir;
    const QString bad = dir.path() + "/bad.pcd";
    cumulus::test::writeBytes(bad, "not a pcd");
    Run r = cli({"info", bad.toStdString()});
    QCOMPARE(r.code, 1);
    QVERIFY(QString::fromStdString(r.err).contains(bad));
    QCOMPARE(QString::fromStdString(r.err).count('\n'), 1);
    QCOMPARE(cli({"info"}).code, 2);
    QCOMPARE(cli({"info", "x.pcd", "--bogus"}).code, 2);
    QCOMPARE(cli({"frobnicate"}).code, 2);
    QCOMPARE(cli({}).code, 2);
  }

  // Parameters held as float: a number beyond a float's range is refused by name before any
  // cast (which C++ leaves undefined), whichever option and command takes it.
  void numbersBeyondAFloatAreUsageErrors() {
    const std::string street = cumulus::test::sampleDir().toStdString() + "/street_scene.pcd";
    const std::string range = cumulus::test::sampleDir().toStdString() + "/street_range.png";
    const std::vector<std::vector<std::string>> calls{
        {"cluster", street, "--tolerance", "1e300"},
        {"pipeline", street, "--tolerance", "-1e39"},
        {"filter", street, "--voxel", "1e39"},
        {"filter", street, "--voxel", "0.1,1e39,0.1"},
        {"segment", range, "--epsilon", "1e40"},
        {"ground", street, "--epsilon", "5e38", "--algorithm", "range-rdp"},
        {"sequence", street, "--voxel", "1e39", "--task", "odometry"},
    };
    for (const auto& call : calls) {
      const Run r = cli(call);
      QCOMPARE(r.code, 2);
      QVERIFY2(r.err.find(call[2] + " takes numbers up to about 3.4e38") != std::string::npos,
               r.err.c_str());
    }
    // The largest float itself is a number the option takes; the command's own checks decide.
    QCOMPARE(cli({"cluster", street, "--tolerance", "3.4e38", "--min", "1"}).code, 0);
  }

  void helpForEveryCommand() {
    for (const auto& c : cumulus::cli::commands()) {
      const Run r = cli({c.name, "--help"});
      QCOMPARE(r.code, 0);
      QVERIFY(r.out.find(std::string("cumulus-cli ") + c.name) != std::string::npos);
    }
    QCOMPARE(cli({"--help"}).code, 0);
  }

  void versionNamesTheProgramAndItsVersion() {
    const Run r = cli({"--version"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.rfind("cumulus-cli " CUMULUS_VERSION_FOR_TESTS " (", 0) == 0, r.out.c_str());
  }

  void convertCloudAndRangeImage() {
    QTemporaryDir dir;
    const std::string src = (cumulus::test::sampleDir() + "/street_scene.pcd").toStdString();
    const std::string ply = (dir.path() + "/s.ply").toStdString(),
                      png = (dir.path() + "/r.png").toStdString();
    const std::string back = (dir.path() + "/back.pcd").toStdString();
    QCOMPARE(cli({"convert", src, ply}).code, 0);
    QCOMPARE(
        cli({"convert", src, png, "--width", "1900", "--height", "64", "--scale", "velodyne"}).code,
        0);
    QCOMPARE(cli({"convert", png, back, "--lidar", "--scale", "velodyne"}).code, 0);
    const Run info = cli({"info", back, "--json"});
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(info.out)).object();
    QVERIFY(j["organized"].toBool());
    QCOMPARE(j["height"].toDouble(), 64.0);
    QCOMPARE(cli({"convert", png, back}).code, 2);  // a depth image needs --pinhole or --lidar
  }

  void generateWritesSampleSet() {
    QTemporaryDir dir;
    const Run r = cli({"generate", "pair", "--out", dir.path().toStdString(), "--samples", "2000"});
    QCOMPARE(r.code, 0);
    for (const char* f : {"object_target.ply", "object_source.ply", "object_pose.txt"})
      QVERIFY(QFileInfo::exists(dir.path() + "/" + f));
    QCOMPARE(cli({"generate", "moon", "--out", dir.path().toStdString()}).code, 2);
    // A street with and without its trees (semantic 6).
    const auto vegetation = [&](std::vector<std::string> args) {
      const std::string path = dir.path().toStdString() + "/street.pcd";
      args.insert(args.begin(), {"generate", "street", "--out", path, "--beams", "16"});
      if (cli(args).code != 0) return std::ptrdiff_t(-1);
      const cumulus::PointCloud c = cumulus::load_cloud(path);
      const cumulus::ExtraField* semantic = c.find_extra("semantic");
      return semantic ? std::count(semantic->values.begin(), semantic->values.end(), 6.0f)
                      : std::ptrdiff_t(-1);
    };
    QVERIFY(vegetation({}) > 0);
    QCOMPARE(vegetation({"--no-vegetation"}), std::ptrdiff_t(0));
  }

  void benchAllWritesAReport() {
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString();
    const Run r = cli({"bench", "all", "--out", out, "--sweeps", "size", "--max-points", "8192",
                       "--methods", "cpu", "--repeat", "2", "--warmup", "0"});
    QCOMPARE(r.code, 0);
    const QByteArray report = cumulus::test::readAll(dir.path() + "/report.md");
    QVERIFY(report.contains("# Cumulus performance report"));
    QVERIFY(report.contains("- Machine: "));
    QVERIFY(report.contains("| 8192 | 8192 |"));
    const QList<QByteArray> rows =
        cumulus::test::readAll(dir.path() + "/cluster.csv").trimmed().split('\n');
    QCOMPARE(rows.size(), 3);  // header, 4096, 8192
    QVERIFY(rows[1].startsWith("size,4096,4096,4096,1,cpu,"));
    // The plots come from matplotlib through the real binary.
    if (!QFileInfo::exists(QStringLiteral(CUMULUS_CLI_BINARY)))
      QSKIP("the build's cumulus-cli is not on this machine (a test binary carried elsewhere)");
    QProcess plot;
    plot.start(QStringLiteral(CUMULUS_CLI_BINARY),
               {"bench", "plot", "--csv", dir.path() + "/cluster.csv", "--out", dir.path()});
    QVERIFY(plot.waitForFinished(60000));
    if (QProcess::execute("/usr/bin/python3", {"-c", "import matplotlib"}) != 0) {
      // Without matplotlib (a GPU host), asked to plot, it fails and says what to install.
      QCOMPARE(plot.exitCode(), 1);
      QVERIFY(plot.readAllStandardError().contains("python3-matplotlib"));
    } else {
      QCOMPARE(plot.exitCode(), 0);
      QVERIFY(plot.readAllStandardOutput().contains("wrote"));
      QVERIFY(cumulus::test::readAll(dir.path() + "/cluster_size.png").startsWith("\x89PNG"));
    }
    QCOMPARE(cli({"bench", "fly"}).code, 2);
  }

  // A floor is the bytes at the page-locked bandwidths plus one launch waited for.
  void floorIsTheBytesAtTheBandwidthsPlusOneLaunch() {
    cumulus::DeviceLimits l;
    l.h2d_pinned_gbps = 10;
    l.d2h_pinned_gbps = 20;
    l.launch_sync_us = 10;
    // 1e7 bytes at 10 GB/s: 1 ms; 2e6 at 20 GB/s: 0.1 ms; the launch 0.01 ms.
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6) - 1.11) < 1e-12);
    // An image of a batch of 10 streamed through: the slower direction and a tenth of the launch.
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6, 10) - 1.001) < 1e-12);
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e6, 4e7, 10) - 2.001) < 1e-12);
  }

  // A loop whose steps each wait for the whole GPU adds a step's cheapest measured wait a step.
  void floorOfALoopAddsItsStepsAtTheCheaperWait() {
    cumulus::DeviceLimits l;
    l.h2d_pinned_gbps = 10;
    l.d2h_pinned_gbps = 20;
    l.launch_sync_us = 10;
    l.dependent_step_us = 5;
    l.grid_barrier_us = 2;
    // 50 steps of 2 us beside the 1.11 ms of bytes and launch.
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6, 1, 50) - 1.21) < 1e-12);
    l.grid_barrier_us = 8;
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6, 1, 50) - 1.36) < 1e-12);
    l.grid_barrier_us = 0;  // no cooperative launch: the dependent kernels
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6, 1, 50) - 1.36) < 1e-12);
    QVERIFY(std::abs(cumulus::floor_ms(l, 1e7, 2e6, 1, 0) - 1.11) < 1e-12);
  }

  // The limits report lists every shape of a loop it measured, and says which it could not.
  void limitsReportListsEveryLoopShape() {
    cumulus::DeviceLimits l;
    l.device = "test";
    l.dependent_step_us = 2.5;
    l.loop_steps = {{"dependent", 128, 2112, 2.5},
                    {"dependent, next let in early", 1024, 132, 3.25},
                    {"barrier", 1024, 132, 0}};
    const std::string md = cumulus::cli::limits_markdown(l);
    QVERIFY2(md.find("| dependent | 128 | 2112 | 2.50 |") != std::string::npos, md.c_str());
    QVERIFY2(md.find("| dependent, next let in early | 1024 | 132 | 3.25 |") != std::string::npos,
             md.c_str());
    QVERIFY2(md.find("| barrier | 1024 | 132 | not measured |") != std::string::npos, md.c_str());
    l.loop_steps.clear();
    QVERIFY(cumulus::cli::limits_markdown(l).find("by shape") == std::string::npos);
  }

  // Every bench row's median is the one the GUI's run history shows (timing_stats: the mean of
  // the middle two of an even count), with the least and most of the runs.
  void benchRowsTakeTheMedianOfTheirRuns() {
    cumulus::cli::BenchRow row;
    cumulus::cli::set_times(row, {5, 1, 3, 9});
    QCOMPARE(row.median_ms, 4.0);
    QCOMPARE(row.min_ms, 1.0);
    QCOMPARE(row.max_ms, 9.0);
    cumulus::cli::set_times(row, {2, 7, 3});
    QCOMPARE(row.median_ms, 3.0);
    QCOMPARE(cumulus::cli::median({}), 0.0);
    QCOMPARE(cumulus::cli::fixed_text(1.0 / 3, 4), std::string("0.3333"));
  }

  // Rows with a floor get a table of their distance from it; the CSV keeps the floor and still
  // reads files written before it had one.
  void benchReportsTheDistanceFromTheFloor() {
    using cumulus::cli::BenchRow;
    BenchRow cpu{"real", "kitti", 1, 1000, 0.5, "cpu"};
    cpu.median_ms = 40;
    cpu.agreement = "reference";
    BenchRow gpu{"real", "kitti", 1, 1000, 0.5, "gpu"};
    gpu.median_ms = 0.5;
    gpu.agreement = "identical";
    gpu.floor_ms = 0.05;
    const std::string md = cumulus::cli::bench_markdown({cpu, gpu}, "T", "host", "cmd");
    QVERIFY(md.find("## Distance from the floor") != std::string::npos);
    QVERIFY2(md.find("| real | kitti | gpu | 0.500 | 0.0500 | 10 |") != std::string::npos,
             md.c_str());
    QTemporaryDir dir;
    const std::string csv = (dir.path() + "/b.csv").toStdString();
    cumulus::cli::write_bench_csv(csv, {cpu, gpu});
    const auto back = cumulus::cli::read_bench_csv(csv);
    QCOMPARE(back.size(), std::size_t(2));
    QCOMPARE(back[0].floor_ms, 0.0);
    QCOMPARE(back[1].floor_ms, 0.05);
    QFile old(dir.path() + "/old.csv");
    QVERIFY(old.open(QIODevice::WriteOnly));
    old.write(
        "sweep,case,x,points,tolerance,method,median_ms,min_ms,max_ms,clusters,agreement,"
        "stages_ms\nreal,kitti,1,1000,0.5,gpu,0.5,0.5,0.5,3,identical,upload=0.1\n");
    old.close();
    const auto older = cumulus::cli::read_bench_csv((dir.path() + "/old.csv").toStdString());
    QCOMPARE(older.size(), std::size_t(1));
    QCOMPARE(older[0].floor_ms, 0.0);
  }

  // Two runs side by side: rows timed in both get both medians and the speed-up; rows of one run
  // only, and rows skipped in either, are counted, not listed.
  void benchCompareListsTheRowsOfBothRuns() {
    using cumulus::cli::BenchRow;
    const auto row = [](const char* label, const char* method, double ms) {
      BenchRow r{"real", label, 1, 1000, 0.5, method};
      r.median_ms = ms;
      r.agreement = "identical | all";
      return r;
    };
    QTemporaryDir before, after;
    const auto csv = [](const QTemporaryDir& d, const char* name) {
      return (d.path() + "/" + name).toStdString();
    };
    cumulus::cli::write_bench_csv(csv(before, "cluster.csv"),
                                  {row("kitti", "gpu", 0.5), row("kitti", "cpu", 40),
                                   row("gone", "gpu", 1), row("skipped", "gpu", 2)});
    cumulus::cli::write_bench_csv(csv(after, "cluster.csv"),
                                  {row("kitti", "gpu", 0.25), row("kitti", "cpu", 40),
                                   row("new", "gpu", 1), row("skipped", "gpu", 0)});
    cumulus::cli::write_bench_csv(csv(before, "segment.csv"), {row("rows 375", "gpu", 0.03)});
    cumulus::cli::write_bench_csv(csv(after, "segment.csv"), {row("rows 375", "gpu", 0.024)});
    cumulus::cli::write_bench_csv(csv(after, "icp.csv"), {row("bunny", "gpu", 1)});  // after only
    const std::string out = (after.path() + "/compare.md").toStdString();
    const Run r = cli({"bench", "compare", "--before", before.path().toStdString(), "--after",
                       after.path().toStdString(), "--out", out});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.find("| cluster | real | kitti | gpu | 0.5000 | 0.2500 | 2.00x | identical / "
                        "all |") != std::string::npos,
             r.out.c_str());
    QVERIFY(r.out.find("| cluster | real | kitti | cpu | 40.0 | 40.0 | 1.00x |") !=
            std::string::npos);
    QVERIFY(r.out.find("| segment | real | rows 375 | gpu | 0.0300 | 0.0240 | 1.25x |") !=
            std::string::npos);
    QVERIFY(r.out.find("gone") == std::string::npos && r.out.find("bunny") == std::string::npos);
    QVERIFY2(r.out.find("3 rows timed in both runs; 1 skipped in one of them; 1 only before; 1 "
                        "only after.") != std::string::npos,
             r.out.c_str());
    QCOMPARE(cumulus::test::readAll(QString::fromStdString(out)).toStdString(), r.out);
    // Nothing in common, a missing directory, a missing option: clear errors.
    QTemporaryDir empty;
    QCOMPARE(cli({"bench", "compare", "--before", empty.path().toStdString(), "--after",
                  after.path().toStdString()})
                 .code,
             1);
    const Run missing = cli({"bench", "compare", "--before", "/nonexistent-dir", "--after",
                             after.path().toStdString()});
    QCOMPARE(missing.code, 1);
    QVERIFY(missing.err.find("/nonexistent-dir") != std::string::npos);
    QCOMPARE(cli({"bench", "compare", "--after", after.path().toStdString()}).code, 2);
  }

  void benchLimitsMeasuresOrSaysWhyNot() {
    QTemporaryDir dir;
    const Run r = cli({"bench", "limits", "--out", dir.path().toStdString(), "--json"});
    if (!cumulus::query_device().available) {
      QCOMPARE(r.code, 1);
      QVERIFY2(r.err.find("GPU") != std::string::npos, r.err.c_str());
      return;
    }
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QVERIFY(j["h2d_pinned_gbps"].toDouble() > 0);
    QVERIFY(j["launch_sync_us"].toDouble() > 0);
    QVERIFY(j["dependent_step_us"].toDouble() > 0);
    QVERIFY(j.contains("grid_barrier_us"));
    // Each kind's figure is the cheapest of its shapes.
    double cheapest_step = HUGE_VAL, cheapest_barrier = HUGE_VAL;
    int shapes = 0;
    for (const QJsonValue& v : j["loop_steps"].toArray()) {
      const QJsonObject w = v.toObject();
      QVERIFY(w["blocks"].toInt() > 0 && w["block_threads"].toInt() > 0);
      const double us = w["us"].toDouble();
      if (w["how"].toString() == "barrier")
        cheapest_barrier = std::min(cheapest_barrier, us);
      else
        cheapest_step = std::min(cheapest_step, us);
      ++shapes;
    }
    QVERIFY(shapes >= 6);  // three shapes of dependent kernels, each with and without early entry
    QCOMPARE(j["dependent_step_us"].toDouble(), cheapest_step);
    if (j["grid_barrier_us"].toDouble() > 0)
      QCOMPARE(j["grid_barrier_us"].toDouble(), cheapest_barrier);
    const QByteArray md = cumulus::test::readAll(dir.path() + "/limits.md");
    QVERIFY(md.contains("launch and wait"));
    QVERIFY(md.contains("barrier across one resident grid"));
  }

  void segmentDepthImage() {
    QTemporaryDir dir;
    const std::string png = (cumulus::test::sampleDir() + "/street_range.png").toStdString();
    const Run r = cli({"segment", png, "--scale", "velodyne", "--epsilon", "0.1", "--method", "cpu",
                       "--json", "--out", (dir.path() + "/s.csv").toStdString()});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QCOMPARE(j["width"].toInt(), 1900);
    QVERIFY(j["cut_points"].toDouble() > 1900);
    QVERIFY(j["max_levels"].toDouble() >= 1);
    QVERIFY(cumulus::test::readAll(dir.path() + "/s.csv").startsWith("column,start_row"));
    QCOMPARE(cli({"segment", png, "--epsilon", "-1"}).code, 1);
    QCOMPARE(cli({"segment", png}).code, 2);
    QCOMPARE(cli({"segment", png, "--epsilon", "0.1", "--method", "quantum"}).code, 2);
  }

  // The four filters in their order on the sample street, as the library runs them; an empty
  // stage ends the chain with a message, and bad values are refused.
  void filterChainWithJson() {
    using cumulus::FilterMethod;
    using cumulus::load_cloud;
    using cumulus::PointCloud;
    QTemporaryDir dir;
    const std::string street = (cumulus::test::sampleDir() + "/street_scene.pcd").toStdString();
    const std::string out = (dir.path() + "/kept.pcd").toStdString();
    const Run r = cli({"filter", street, "--voxel", "0.2", "--sor", "8,1", "--ror", "1,2",
                       "--method", "cpu", "--json", "--out", out});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    const QJsonArray stages = j["stages"].toArray();
    QCOMPARE(stages.size(), 3);
    QCOMPARE(stages[1].toObject()["stage"].toString(), QString("statistical outliers"));
    QCOMPARE(stages[2].toObject()["stage"].toString(), QString("radius outliers"));
    const PointCloud voxels =
        cumulus::voxel_grid(load_cloud(street), {{0.2f, 0.2f, 0.2f}, 0}, FilterMethod::Cpu).cloud;
    const PointCloud sor =
        cumulus::remove_statistical_outliers(voxels, {8, 1.0, false}, FilterMethod::Cpu).cloud;
    const PointCloud ror =
        cumulus::remove_radius_outliers(sor, {1.0, 2, false}, FilterMethod::Cpu).cloud;
    QCOMPARE(stages[1].toObject()["points_out"].toDouble(), double(sor.size()));
    QCOMPARE(j["points_out"].toDouble(), double(ror.size()));
    QCOMPARE(load_cloud(out).size(), ror.size());
    // Every point an outlier at a radius of a millimetre: said, and nothing is written.
    const Run none = cli({"filter", street, "--ror", "0.001,2", "--out", out + ".none.pcd"});
    QCOMPARE(none.code, 1);
    QVERIFY2(none.err.find("radius outliers stage kept no point") != std::string::npos,
             none.err.c_str());
    QVERIFY(!QFileInfo::exists(QString::fromStdString(out + ".none.pcd")));
    QCOMPARE(cli({"filter", street, "--sor", "0,1"}).code, 2);
    QCOMPARE(cli({"filter", street, "--sor", "8"}).code, 2);
    QCOMPARE(cli({"filter", street, "--ror", "-1,2"}).code, 1);
    QCOMPARE(cli({"filter", street}).code, 2);
  }

  // --sweeps measures the filters named and no other; a name it does not know is refused.
  void benchFilterMeasuresTheSweepsNamed() {
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString();
    const std::string sample = cumulus::test::sampleDir().toStdString();
    const Run r = cli({"bench", "filter", "--sample", sample, "--out", out, "--sweeps", "ror",
                       "--repeat", "1", "--warmup", "0", "--no-open3d"});
    QCOMPARE(r.code, 0);
    const QList<QByteArray> rows =
        cumulus::test::readAll(dir.path() + "/filter.csv").trimmed().split('\n');
    QVERIFY(rows.size() >= 2);  // the header and the cpu row, a gpu row where there is a GPU
    for (qsizetype i = 1; i < rows.size(); ++i)
      QVERIFY2(rows[i].startsWith("ror,street_scene.pcd,"), rows[i].constData());
    for (const char* sweeps : {"ror,blur", "", ","})
      QCOMPARE(cli({"bench", "filter", "--sample", sample, "--out", out, "--sweeps", sweeps}).code,
               2);
  }

  // --bunny-sizes replaces the paper's four bunny sizes, and the largest of them is the one run
  // point to plane and GICP; sizes it cannot take are refused.
  void benchIcpTakesTheBunnySizesNamed() {
    CUMULUS_REQUIRE_DATA(bunny, "bunny/bun045.ply");
    QTemporaryDir dir;
    const std::string out = dir.path().toStdString();
    const std::string data = cumulus::test::sharedDataDir().toStdString();
    const Run r = cli({"bench", "icp", "--data", data, "--out", out, "--bunny-sizes", "400,900",
                       "--cases", "bunny", "--methods", "cpu", "--pcl-repeat", "1", "--no-open3d"});
    QCOMPARE(r.code, 0);
    const QList<QByteArray> rows =
        cumulus::test::readAll(dir.path() + "/icp.csv").trimmed().split('\n');
    QStringList labels;
    for (qsizetype i = 1; i < rows.size(); ++i) {
      const QList<QByteArray> f = rows[i].split(',');
      if (f[0] != "knn") labels << QString::fromUtf8(f[0] + ":" + f[1]);
    }
    QCOMPARE(labels, QStringList({"bunny:bunny 400", "bunny:bunny 900", "plane:bunny 900 plane",
                                  "gicp:bunny 900 gicp"}));
    for (const char* sizes : {"0", "2", "abc", "400,", ","})
      QCOMPARE(cli({"bench", "icp", "--data", data, "--out", out, "--bunny-sizes", sizes}).code, 2);
  }

  // The ground of the sample street: a level plane 1.73 m below the sensor; the rest written.
  void groundOnSampleStreet() {
    QTemporaryDir dir;
    const std::string street = (cumulus::test::sampleDir() + "/street_scene.pcd").toStdString();
    const std::string rest = (dir.path() + "/rest.pcd").toStdString();
    const std::string ground = (dir.path() + "/ground.pcd").toStdString();
    const Run r = cli({"ground", street, "--axis", "0,0,1", "--method", "cpu", "--json", "--out",
                       rest, "--ground-out", ground});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    const QJsonArray plane = j["plane"].toArray();
    QVERIFY2(plane[2].toDouble() > 0.999 && std::abs(plane[3].toDouble() - 1.73) < 0.05,
             r.out.c_str());
    const double on = j["ground"].toDouble(), off = j["not_ground"].toDouble();
    QCOMPARE(on + off, j["points"].toDouble() - j["non_finite"].toDouble());
    QCOMPARE(double(cumulus::load_cloud(rest).size()), off);
    QCOMPARE(double(cumulus::load_cloud(ground).size()), on);
    QCOMPARE(cli({"ground", street, "--threshold", "-1"}).code, 1);
    QCOMPARE(cli({"ground", street, "--axis", "0,0"}).code, 2);
    QCOMPARE(cli({"ground", street, "--axis", "0,0,0"}).code, 1);
    QCOMPARE(cli({"ground", street, "--method", "magic"}).code, 2);
  }

  // A preset sets the stages, the command line overrides it, --out writes the objects; bad
  // presets are refused with the valid keys.
  void pipelineWithPresetAndJson() {
    QTemporaryDir dir;
    const std::string street = (cumulus::test::sampleDir() + "/street_scene.pcd").toStdString();
    const QString preset = dir.path() + "/p.json";
    QFile f(preset);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"voxel": 0.1, "ground": "ransac-plane", "ground-threshold": 0.2,
                "tolerance": 0.5, "min": 5, "method": "cpu"})");
    f.close();
    const std::string out = (dir.path() + "/objects").toStdString();
    const Run r = cli({"pipeline", street, "--preset", preset.toStdString(), "--min", "10",
                       "--json", "--out", out});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    const QJsonArray stages = j["stages"].toArray();
    QCOMPARE(stages.size(), 4);
    QCOMPARE(stages[0].toObject()["stage"].toString(), QString("voxel grid"));
    QCOMPARE(stages[1].toObject()["stage"].toString(), QString("ground plane"));
    QCOMPARE(j["method"].toString(), QString("cpu"));
    const QJsonArray objects = j["objects"].toArray();
    QCOMPARE(double(objects.size()), stages[2].toObject()["out"].toDouble());
    for (const auto& o : objects)
      QVERIFY(o.toObject()["points"].toDouble() >= 10);  // --min 10 won over the preset's 5
    QCOMPARE(j["ground_plane"].toArray().size(), 4);
    const QString csv = cumulus::test::readAll(QString::fromStdString(out) + "/objects.csv");
    QCOMPARE(csv.count('\n'), objects.size() + 1);
    QVERIFY(QFileInfo::exists(QString::fromStdString(out) + "/objects.pcd"));
    QFile bad(dir.path() + "/bad.json");
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(R"({"voxels": 0.1})");
    bad.close();
    const Run refused =
        cli({"pipeline", street, "--preset", (dir.path() + "/bad.json").toStdString()});
    QCOMPARE(refused.code, 1);
    QVERIFY2(refused.err.find("unknown setting 'voxels'") != std::string::npos &&
                 refused.err.find("tolerance") != std::string::npos,
             refused.err.c_str());
    QCOMPARE(cli({"pipeline", street, "--ground", "magic"}).code, 2);
    QCOMPARE(cli({"pipeline", street, "--method", "quantum"}).code, 2);
    const Run empty = cli({"pipeline", street, "--crop", "1000,1000,0,1001,1001,1"});
    QCOMPARE(empty.code, 1);
    QVERIFY2(empty.err.find("crop box stage left no point") != std::string::npos,
             empty.err.c_str());
  }

  // Frames in natural order from a folder, a pattern and a list; a corrupt frame is named and
  // the rest go on (exit 1), or the run stops there with --strict.
  void sequenceRunsEveryFrameInOrder() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    cumulus::StreetSceneParams sp;
    sp.beams = 8;
    sp.azimuth_steps = 400;
    for (const int frame : {2, 10, 1}) {
      sp.seed = std::uint64_t(frame);
      cumulus::save_kitti_bin(d + "/frame_" + std::to_string(frame) + ".bin",
                              cumulus::generate_street_scene(sp));
    }
    const auto lines = [](const std::string& text) {
      std::vector<QJsonObject> v;
      for (const auto& l : QString::fromStdString(text).split('\n', Qt::SkipEmptyParts))
        v.push_back(QJsonDocument::fromJson(l.toUtf8()).object());
      return v;
    };
    {
      QFile times(dir.path() + "/times.txt");  // as in a KITTI sequence: not a frame
      QVERIFY(times.open(QIODevice::WriteOnly));
      times.write("0.0\n0.1\n0.2\n");
    }
    const Run r = cli({"sequence", d, "--task", "cluster", "--method", "cpu", "--json", "--out",
                       d + "/out", "--readers", "2"});
    QCOMPARE(r.code, 0);
    auto v = lines(r.out);
    QCOMPARE(v.size(), std::size_t(4));
    QVERIFY(v[0]["file"].toString().endsWith("frame_1.bin"));
    QVERIFY(v[1]["file"].toString().endsWith("frame_2.bin"));
    QVERIFY(v[2]["file"].toString().endsWith("frame_10.bin"));
    QVERIFY(v[3]["summary"].toBool());
    QCOMPARE(v[3]["processed"].toDouble(), 3.0);
    QVERIFY(QFileInfo::exists(dir.path() + "/out/frame_10.clusters.csv"));
    // The same clusters as one frame on its own.
    const cumulus::ClusterResult one =
        cumulus::euclidean_cluster(cumulus::load_cloud(d + "/frame_2.bin"),
                                   {0.5f, 1, std::size_t(INT32_MAX)}, cumulus::ClusterMethod::Cpu);
    QCOMPARE(v[1]["clusters"].toDouble(), double(one.sizes.size()));
    QVERIFY(!v[3]["page_locked"].toBool());  // PCL takes the cloud itself
    if (cumulus::query_device().available) {
      // GPU clustering reads the frames from page-locked buffers the readers fill, when asked:
      // the same clusters as each frame on its own.
      const Run g = cli({"sequence", d, "--task", "cluster", "--method", "gpu", "--json", "--out",
                         d + "/gpu", "--readers", "2", "--queue", "1", "--page-locked"});
      QCOMPARE(g.code, 0);
      const auto w = lines(g.out);
      QVERIFY(w[3]["page_locked"].toBool());
      for (const char* f : {"frame_1", "frame_2", "frame_10"})
        QCOMPARE(cumulus::test::readAll(dir.path() + "/gpu/" + f + ".clusters.csv"),
                 cumulus::test::readAll(dir.path() + "/out/" + f + ".clusters.csv"));
      // So does the device-resident pipeline: the objects and ground of the stage-by-stage
      // chain, which uploads each frame from the cloud itself (and takes no page-locked copy).
      const auto objects = [&](const char* method) {
        const Run o = cli({"sequence", d, "--task", "objects", "--method", method, "--json",
                           "--readers", "2", "--queue", "1", "--page-locked"});
        return o.code == 0 ? lines(o.out) : std::vector<QJsonObject>{};
      };
      const auto chain = objects("gpu"), stages = objects("gpu-stages");
      QCOMPARE(chain.size(), std::size_t(4));
      QCOMPARE(stages.size(), chain.size());
      QVERIFY(chain[3]["page_locked"].toBool());
      QVERIFY(!stages[3]["page_locked"].toBool());
      for (std::size_t i = 0; i < 3; ++i)
        for (const char* key : {"file", "objects", "ground_points"})
          QCOMPARE(chain[i][key], stages[i][key]);
    }
    // A pattern, and a list in its own order.
    QCOMPARE(lines(cli({"sequence", d + "/frame_1*.bin", "--task", "cluster", "--method", "cpu",
                        "--json"})
                       .out)
                 .size(),
             std::size_t(3));  // frame_1 and frame_10, and the summary
    {
      // In a folder of its own: .txt in the frames' folder would be read as an XYZ frame.
      QDir(dir.path()).mkdir("lists");
      QFile list(dir.path() + "/lists/list.txt");
      QVERIFY(list.open(QIODevice::WriteOnly));
      list.write("# frames\n../frame_10.bin\n\n../frame_2.bin\n");
    }
    v = lines(
        cli({"sequence", d + "/lists/list.txt", "--task", "objects", "--method", "cpu", "--json"})
            .out);
    QCOMPARE(v.size(), std::size_t(3));
    QVERIFY(v[0]["file"].toString().endsWith("frame_10.bin"));
    QVERIFY(v[0]["objects"].toDouble() >= 1);
    // A corrupt frame between the others.
    {
      QFile bad(dir.path() + "/frame_5.pcd");
      QVERIFY(bad.open(QIODevice::WriteOnly));
      bad.write("not a cloud");
    }
    const Run lenient = cli({"sequence", d, "--task", "cluster", "--method", "cpu", "--json"});
    QCOMPARE(lenient.code, 1);
    v = lines(lenient.out);
    QCOMPARE(v.size(), std::size_t(5));
    QVERIFY(v[2]["file"].toString().endsWith("frame_5.pcd"));
    QVERIFY(!v[2]["error"].toString().isEmpty());
    QVERIFY(v[3]["clusters"].toDouble() >= 1);  // frame_10 after it
    QCOMPARE(v[4]["failed"].toDouble(), 1.0);
    const Run strict =
        cli({"sequence", d, "--task", "cluster", "--method", "cpu", "--json", "--strict"});
    QCOMPARE(strict.code, 1);
    QCOMPARE(lines(strict.out).size(), std::size_t(3));  // frames 1, 2 and the bad one
    QVERIFY2(strict.err.find("frame_5.pcd") != std::string::npos, strict.err.c_str());
    QCOMPARE(cli({"sequence", d, "--task", "dance"}).code, 2);
    QCOMPARE(cli({"sequence", d + "/nothing*.bin", "--task", "cluster"}).code, 1);
  }

  void registerSamplePairWithJson() {
    QTemporaryDir dir;
    const std::string src = (cumulus::test::sampleDir() + "/object_source.ply").toStdString();
    const std::string tgt = (cumulus::test::sampleDir() + "/object_target.ply").toStdString();
    const std::string pose = (cumulus::test::sampleDir() + "/object_pose.txt").toStdString();
    // Start from the true pose: ICP stays near it (the scans are different noisy samples, so its
    // minimum is not exactly the truth).
    const Run r = cli({"register", src, tgt, "--method", "cpu", "--initial", pose, "--max-distance",
                       "0.02", "--json", "--out", (dir.path() + "/aligned.pcd").toStdString(),
                       "--transform-out", (dir.path() + "/t.txt").toStdString()});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QCOMPARE(j["method"].toString(), QString("cpu"));
    QVERIFY(j["converged"].toBool());
    QVERIFY(!j["stop_reason"].toString().isEmpty());
    QCOMPARE(j["error_per_iteration"].toArray().size(), j["iterations"].toInt());
    QCOMPARE(j["transform"].toArray().size(), 4);
    const auto truth = cumulus::read_matrix_file(pose);
    const auto got = cumulus::read_matrix_file((dir.path() + "/t.txt").toStdString());
    QVERIFY2(cumulus::rotation_angle_deg(truth.inverse() * got) < 1.5 &&
                 cumulus::translation_norm(truth.inverse() * got) < 0.005,
             qPrintable(QString::fromStdString(r.out)));
    QVERIFY(QFileInfo::exists(dir.path() + "/aligned.pcd"));
    QVERIFY(j["total_ms"].toDouble() > 0);
    // Bad input: a clear error and exit code 1 (values) or 2 (usage).
    QCOMPARE(cli({"register", src, tgt, "--max-distance", "-1"}).code, 1);
    QCOMPARE(cli({"register", src, tgt, "--initial", "1 2 3"}).code, 1);
    const Run missing = cli({"register", src, tgt, "--initial", "no/such/pose.txt"});
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.err.find("no file 'no/such/pose.txt'") != std::string::npos,
             missing.err.c_str());
    QCOMPARE(cli({"register", src, tgt, "--method", "magic"}).code, 2);
    QCOMPARE(cli({"register", src}).code, 2);
    // A robust kernel: named in the JSON; a kernel needs its scale.
    const Run huber =
        cli({"register", src, tgt, "--method", "cpu", "--initial", pose, "--max-distance", "0.02",
             "--kernel", "huber", "--kernel-scale", "0.005", "--json"});
    QCOMPARE(huber.code, 0);
    QCOMPARE(
        QJsonDocument::fromJson(QByteArray::fromStdString(huber.out)).object()["kernel"].toString(),
        QString("huber"));
    QCOMPARE(cli({"register", src, tgt, "--kernel", "huber"}).code, 2);
    QCOMPARE(cli({"register", src, tgt, "--kernel", "cauchy", "--kernel-scale", "1"}).code, 2);
    // Every stopping test off: PCL runs every iteration it is given, and says so.
    const Run every =
        cli({"register", src, tgt, "--method", "cpu", "--initial", pose, "--max-distance", "0.02",
             "--max-iterations", "12", "--transformation-epsilon", "0", "--fitness-epsilon", "-1",
             "--absolute-mse", "0", "--json"});
    QCOMPARE(every.code, 0);
    const QJsonObject e = QJsonDocument::fromJson(QByteArray::fromStdString(every.out)).object();
    QCOMPARE(e["iterations"].toInt(), 12);
    QCOMPARE(e["stop_reason"].toString(), QString("max-iterations"));
    QCOMPARE(e["absolute_mse"].toDouble(), 0.0);
    QCOMPARE(cli({"register", src, tgt, "--absolute-mse", "-1"}).code, 1);
    // GICP: named in the JSON with its parameters, near the pose; its options need it.
    const Run gicp =
        cli({"register", src, tgt, "--method", "cpu", "--initial", pose, "--max-distance", "0.02",
             "--metric", "gicp", "--gicp-k", "15", "--json"});
    QCOMPARE(gicp.code, 0);
    const QJsonObject g = QJsonDocument::fromJson(QByteArray::fromStdString(gicp.out)).object();
    QCOMPARE(g["metric"].toString(), QString("gicp"));
    QCOMPARE(g["gicp"].toObject()["k"].toInt(), 15);
    QVERIFY(g["converged"].toBool());
    QCOMPARE(cli({"register", src, tgt, "--gicp-k", "15"}).code, 2);
    QCOMPARE(cli({"register", src, tgt, "--metric", "gicp", "--gicp-k", "2"}).code, 1);
  }

  void registerGlobalFindsThePoseWithoutAGuess() {
    QTemporaryDir dir;
    const std::string src = (cumulus::test::sampleDir() + "/object_source.ply").toStdString();
    const std::string tgt = (cumulus::test::sampleDir() + "/object_target.ply").toStdString();
    const std::string pose = (cumulus::test::sampleDir() + "/object_pose.txt").toStdString();
    const std::string pairs = (dir.path() + "/pairs.csv").toStdString();
    const Run r = cli({"register", src, tgt, "--initial", "global", "--global-method", "cpu-mutual",
                       "--method", "cpu", "--json", "--matches-out", pairs});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    const QJsonObject g = j["global"].toObject();
    QVERIFY(g["found"].toBool());
    QCOMPARE(g["method"].toString(), QString("cpu-mutual"));
    QVERIFY(g["inliers"].toInt() >= 3 && g["correspondences"].toInt() >= g["inliers"].toInt());
    QVERIFY(g["overlap"].toDouble() >= 0.25);
    QVERIFY(g["hypotheses"].toInt() >= 100000 && g["candidates"].toInt() >= 1);
    Eigen::Matrix4d got;
    for (int row = 0; row < 4; ++row)
      for (int c = 0; c < 4; ++c)
        got(row, c) = j["transform"].toArray()[row].toArray()[c].toDouble();
    const Eigen::Matrix4d error = cumulus::read_matrix_file(pose).inverse() * got;
    QVERIFY2(cumulus::rotation_angle_deg(error) < 1 && cumulus::translation_norm(error) < 0.002,
             qPrintable(QString::fromStdString(cumulus::format_matrix(got))));
    QVERIFY(QFileInfo(QString::fromStdString(pairs)).size() > 0);
    // A demand no fit meets: exit 3 with the reason, and no ICP after it.
    const Run none = cli({"register", src, tgt, "--initial", "global", "--global-method",
                          "cpu-mutual", "--method", "cpu", "--min-overlap", "1"});
    QCOMPARE(none.code, 3);
    QVERIFY2(none.out.find("no alignment found") != std::string::npos, none.out.c_str());
    QCOMPARE(cli({"register", src, tgt, "--voxel", "0.01"}).code, 2);  // global options alone
    QCOMPARE(cli({"register", src, tgt, "--initial", "global", "--global-method", "x"}).code, 2);
  }

  void featuresOnSampleWithJsonAndExports() {
    QTemporaryDir dir;
    const std::string src = (cumulus::test::sampleDir() + "/object_source.ply").toStdString();
    const std::string pcd = (dir.path() + "/f.pcd").toStdString();
    const std::string csv = (dir.path() + "/f.csv").toStdString();
    const Run r = cli({"features", src, "--descriptor", "pfh", "--method", "cpu", "--k", "12",
                       "--normals-k", "8", "--json", "--out", pcd, "--csv", csv});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QCOMPARE(j["bins"].toInt(), 125);
    QCOMPARE(j["neighbourhood"].toString(), QString("k=12"));
    QCOMPARE(j["normals_neighbourhood"].toString(), QString("k=8"));
    QCOMPARE(j["nan_histograms"].toInt(), 0);
    // PCL's normals are what cpu computes anyway: the flag changes nothing there.
    const Run same = cli({"features", src, "--descriptor", "pfh", "--method", "cpu", "--k", "12",
                          "--normals-k", "8", "--pcl-normals", "--json"});
    QCOMPARE(same.code, 0);
    QVERIFY(j["points"].toInt() > 0);
    QVERIFY(!j["stages_ms"].toArray().isEmpty());
    QVERIFY(QFileInfo(QString::fromStdString(pcd)).size() > 125 * 4);
    QVERIFY(QFileInfo(QString::fromStdString(csv)).size() > 0);
    // Bad input: exit code 1 (values) or 2 (usage).
    QCOMPARE(cli({"features", src, "--k", "0"}).code, 1);
    QCOMPARE(cli({"features", src, "--k", "4", "--radius", "0.1"}).code, 2);
    QCOMPARE(cli({"features", src}).code, 2);
    QCOMPARE(cli({"features", src, "--k", "4", "--descriptor", "shot"}).code, 2);
    QCOMPARE(cli({"features", src, "--k", "4", "--tile-points", "0"}).code, 2);
  }

  // --tile-points works the cloud in tiles: the same descriptors as one call.
  void featuresInTilesWriteTheSameCsv() {
    QTemporaryDir dir;
    const std::string src = (cumulus::test::sampleDir() + "/object_source.ply").toStdString();
    const std::string one = (dir.path() + "/one.csv").toStdString();
    const std::string tiled = (dir.path() + "/tiled.csv").toStdString();
    QCOMPARE(cli({"features", src, "--method", "cpu", "--k", "10", "--out", one}).code, 0);
    const Run r = cli({"features", src, "--method", "cpu", "--k", "10", "--tile-points", "2000",
                       "--out", tiled, "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(r.out)).object();
    QVERIFY(j["stages_ms"].toArray().size() > 2);
    QVERIFY(j["points"].toInt() > 4000);
    const QByteArray a = cumulus::test::readAll(QString::fromStdString(one));
    QVERIFY(!a.isEmpty());
    QCOMPARE(cumulus::test::readAll(QString::fromStdString(tiled)), a);
  }

  void realBinaryEndToEnd() {
    if (!QFileInfo::exists(QStringLiteral(CUMULUS_CLI_BINARY)))
      QSKIP("the build's cumulus-cli is not on this machine (a test binary carried elsewhere)");
    QProcess p;
    p.start(QStringLiteral(CUMULUS_CLI_BINARY),
            {"info", cumulus::test::sampleDir() + "/object_target.ply", "--json"});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitCode(), 0);
    const QJsonObject j = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(j["format"].toString(), QString("ply"));
    QVERIFY(j["points"].toDouble() > 5000);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
