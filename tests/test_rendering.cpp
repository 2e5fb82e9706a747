// The main views rendered at a fixed size under Xvfb and compared with baseline PNGs in
// tests/baselines (as F3D tests its renderings): coloured clusters, aligned scans, the charts
// (feature and cluster-size histograms, method timings, ICP convergence, odometry drift; VTK's
// chart classes), segment polylines over a depth image, and a column's polyline.
// A comparison passes when at most 0.5 % of the pixels differ by more than 40 in a channel. A
// failing one writes the actual image and the difference (changed pixels red over a faded
// baseline) to $CUMULUS_RENDER_OUT (default: the test's working folder) and names them.
// CUMULUS_UPDATE_BASELINES=1 writes the baselines instead, to be reviewed and committed.
#include <QDir>
#include <QImage>
#include <QSignalSpy>

#include "cluster/cluster.h"
#include "cluster_panel.h"
#include "depth_view.h"
#include "generate/generate.h"
#include "gui_support.h"
#include "histogram_chart.h"
#include "icp_error_chart.h"
#include "icp_panel.h"
#include "io/io.h"
#include "line_chart.h"
#include "main_window.h"
#include "registration_window.h"
#include "segment/segment.h"
#include "segment_panel.h"
#include "size_histogram.h"
#include "test_support.h"
#include "timing_chart.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

namespace {

constexpr int kChannelTolerance = 40;
constexpr double kPixelTolerance = 0.005;

QString baseline_dir() {
  return QStringLiteral(CUMULUS_SOURCE_DIR) + "/tests/baselines";
}

// Compares `actual` with baselines/NAME.png; on a difference, writes NAME.actual.png and
// NAME.diff.png and fails naming them.
void compare_with_baseline(const QImage& rendered, const QString& name) {
  QVERIFY2(!rendered.isNull(), qPrintable(name + ": nothing was rendered"));
  const QImage actual = rendered.convertToFormat(QImage::Format_RGB32);
  const QString baseline_path = baseline_dir() + "/" + name + ".png";
  if (qEnvironmentVariableIntValue("CUMULUS_UPDATE_BASELINES") == 1) {
    QDir().mkpath(baseline_dir());
    QVERIFY(actual.save(baseline_path));
    qInfo("wrote the baseline %s", qPrintable(baseline_path));
    return;
  }
  const QImage expected = QImage(baseline_path).convertToFormat(QImage::Format_RGB32);
  QVERIFY2(!expected.isNull(),
           qPrintable("no baseline " + baseline_path + " (CUMULUS_UPDATE_BASELINES=1 writes it)"));
  QCOMPARE(actual.size(), expected.size());
  QImage diff(actual.size(), QImage::Format_RGB32);
  std::size_t differing = 0;
  for (int y = 0; y < actual.height(); ++y)
    for (int x = 0; x < actual.width(); ++x) {
      const QRgb a = actual.pixel(x, y), e = expected.pixel(x, y);
      const int d = std::max({std::abs(qRed(a) - qRed(e)), std::abs(qGreen(a) - qGreen(e)),
                              std::abs(qBlue(a) - qBlue(e))});
      const bool off = d > kChannelTolerance;
      differing += off;
      diff.setPixel(
          x, y,
          off ? qRgb(255, 0, 0) : qRgb(128 + qGray(e) / 2, 128 + qGray(e) / 2, 128 + qGray(e) / 2));
    }
  const double share = double(differing) / double(actual.width() * actual.height());
  if (share <= kPixelTolerance) return;
  const QString out = qEnvironmentVariable("CUMULUS_RENDER_OUT", QDir::currentPath());
  QDir().mkpath(out);
  actual.save(out + "/" + name + ".actual.png");
  diff.save(out + "/" + name + ".diff.png");
  QFAIL(qPrintable(QString("%1 differs from its baseline in %2 % of its pixels (allowed %3 %); "
                           "see %4/%1.actual.png and %4/%1.diff.png")
                       .arg(name)
                       .arg(100 * share, 0, 'f', 2)
                       .arg(100 * kPixelTolerance)
                       .arg(out)));
}

// A view of a fixed size, shown, with `cloud` in it.
void show_cloud(ui::VtkCloudView& view, std::shared_ptr<const PointCloud> cloud) {
  view.resize(480, 320);
  view.setAxesVisible(false);
  view.setPointSize(2);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  view.setCloud(std::move(cloud));
}

}  // namespace

class TestRendering : public QObject {
  Q_OBJECT

 private slots:
  void colouredClusters() {
    auto cloud = std::make_shared<PointCloud>(load_cloud(sample("street_scene.pcd").toStdString()));
    ClusterParams p;
    p.tolerance = 0.5f;
    p.min_size = 20;
    const auto labels = euclidean_cluster(*cloud, p, ClusterMethod::Cpu).labels;
    cloud->labels.assign(labels.begin(), labels.end());
    ui::VtkCloudView view;
    show_cloud(view, cloud);
    view.setColorMode(ui::ColorMode::Label);
    compare_with_baseline(view.renderImage(480, 320), "clusters");
  }

  void alignedScans() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    setLive(w.clusterPanel(), false);
    QVERIFY(w.openFilesNow({sample("object_source.ply"), sample("object_target.ply")}).isEmpty());
    app::RegistrationWindow* reg = w.openRegistration();
    QVERIFY(reg);
    reg->resize(900, 600);
    reg->show();
    QVERIFY(QTest::qWaitForWindowExposed(reg));
    reg->panel()->setMethod(IcpMethod::Cpu);
    reg->setPair(0, 1);
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    reg->run();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    reg->view()->setAxesVisible(false);
    // The camera is fitted to the view's shape, which the window's layout sets: give it the
    // image's shape first (no event is processed before the render, so the layout keeps it).
    reg->view()->resize(480, 320);
    reg->view()->resetCamera();
    compare_with_baseline(reg->view()->renderImage(480, 320), "aligned_scans");
  }

  void featureHistogram() {
    ui::HistogramChart chart;
    chart.resize(420, 180);
    std::vector<float> a(33), b(33);
    for (int i = 0; i < 33; ++i) {
      a[std::size_t(i)] = float(20 + 15 * std::sin(i * 0.6));
      b[std::size_t(i)] = float(18 + 12 * std::cos(i * 0.45));
    }
    chart.setHistograms(a, b);
    compare_with_baseline(chart.grab().toImage(), "fpfh_histogram");
  }

  void clusterSizeHistogram() {
    ui::SizeHistogram h;
    h.resize(260, 120);
    std::vector<std::size_t> sizes(300, 1);
    for (std::size_t s = 2; s < 70000; s *= 3)
      sizes.insert(sizes.end(), 40, s);
    h.setSizes(sizes);
    compare_with_baseline(h.grab().toImage(), "cluster_sizes");
  }

  void timingChart() {
    ui::TimingChart chart;
    chart.resize(720, 200);
    const auto bar = [](const char* method, double median, double spread, double speedup,
                        bool agrees, StageTimes stages) {
      ui::TimingBar b;
      b.method = method;
      b.total.median = median;
      b.total.min = median / spread;
      b.total.max = median * spread;
      b.speedup = speedup;
      b.agrees = agrees;
      b.stages = std::move(stages);
      return b;
    };
    chart.setBars(
        {bar("cpu", 1015, 1.02, 0, true, {{"kd-tree", 15}, {"extract", 1000}}),
         bar("gpu", 0.30, 1.1, 3383, true,
             {{"upload", 0.09}, {"grid", 0.04}, {"labelling", 0.08}, {"download", 0.05}}),
         bar("gpu-vertex-es", 37, 1.03, 27, false, {{"graph", 24.5}, {"labelling", 12.2}})});
    compare_with_baseline(chart.grab().toImage(), "timing_chart");
  }

  void icpConvergenceChart() {
    ui::IcpErrorChart chart;
    chart.resize(320, 180);
    std::vector<IcpIteration> history(12);
    for (std::size_t i = 0; i < history.size(); ++i)
      history[i].mse = 0.5 * std::pow(0.45, double(i)) + 1e-5;
    chart.setHistory(history);
    compare_with_baseline(chart.grab().toImage(), "icp_convergence");
  }

  void driftChart() {
    ui::LineChart chart;
    chart.resize(520, 260);
    chart.setLabels("path (m)", "drift (% of the path)");
    chart.setReference(1.0, "1 %");
    std::vector<double> x, y;
    for (int k = 1; k <= 120; ++k)
      x.push_back(k * 1.3), y.push_back(0.4 + 0.3 * std::sin(k * 0.07) + 0.002 * k);
    chart.setSeries(x, y);
    compare_with_baseline(chart.grab().toImage(), "drift_chart");
  }

  void segmentPolylinesAndDepthView() {
    auto image = std::make_shared<DepthImage>(generate_depth_columns(160, 120, 5, 0.01, 0.0));
    SegmentParams p;
    p.epsilon = 0.05f;
    auto result = std::make_shared<SegmentResult>(segment_columns(*image, p, SegmentMethod::Cpu));
    ui::DepthView view;
    view.resize(480, 360);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setImage(image);
    compare_with_baseline(view.grab().toImage(), "depth_view");
    view.setSegments(result);
    view.setMarkedColumns({40, 80, 120});
    compare_with_baseline(view.grab().toImage(), "segment_polylines");
    ui::ColumnPlot plot;
    plot.resize(300, 180);
    plot.setColumn(image, result, 80);
    compare_with_baseline(plot.grab().toImage(), "column_polyline");
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestRendering>(argc, argv);
}
#include "test_rendering.moc"
