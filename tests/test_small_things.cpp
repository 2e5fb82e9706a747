// The small things a user tripped over in the main window (issue 30): the status bar's GPU
// label, the cluster-size histogram's labels, where save dialogs start, and the first camera
// of a tall cloud. Under a real X server (Xvfb).
#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>

#include <cmath>
#include <random>

#include "cluster_panel.h"
#include "core/device.h"
#include "gui_support.h"
#include "io/io.h"
#include "line_chart.h"
#include "main_window.h"
#include "size_histogram.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

namespace {

// A cloud of `n` points filling the box [0, sx] x [0, sy] x [0, sz].
std::shared_ptr<PointCloud> box_cloud(float sx, float sy, float sz, int n = 20000) {
  auto c = std::make_shared<PointCloud>();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  for (int i = 0; i < n; ++i)
    c->points.push_back({sx * u(rng), sy * u(rng), sz * u(rng)});
  c->width = std::uint32_t(n);
  return c;
}

}  // namespace

class TestSmallThings : public QObject {
  Q_OBJECT

 private slots:
  void statusBarGpuLabelIsShortAndFramed() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QLabel* device = nullptr;
    for (auto* l : w.statusBar()->findChildren<QLabel*>())
      if (l->text().contains("GPU")) device = l;
    QVERIFY(device);
    // Short, so a message beside it does not read as one sentence with it; framed apart.
    QVERIFY2(device->text().size() <= 40, qPrintable(device->text()));
    QCOMPARE(device->frameShape(), QFrame::Panel);
    const DeviceInfo dev = query_device();
    if (!dev.available) QVERIFY(device->toolTip().contains(QString::fromStdString(dev.reason)));
  }

  void clusterHistogramLabelsNeitherOverlapNorLeaveTheWidget_data() {
    QTest::addColumn<int>("width");
    QTest::newRow("narrow") << 160;
    QTest::newRow("panel") << 260;
    QTest::newRow("wide") << 600;
  }
  void clusterHistogramLabelsNeitherOverlapNorLeaveTheWidget() {
    QFETCH(int, width);
    ui::SizeHistogram h;
    h.resize(width, 120);
    // Thousands of tiny clusters and a few large ones: wide counts over narrow bars.
    std::vector<std::size_t> sizes(12345, 1);
    for (std::size_t s = 2; s < 200000; s *= 3)
      sizes.insert(sizes.end(), 150, s);
    h.setSizes(sizes);
    const auto layout = h.layout();
    QVERIFY(!layout.labels.empty());
    const QRectF inside = QRectF(h.rect()).adjusted(-0.01, -0.01, 0.01, 0.01);
    for (std::size_t i = 0; i < layout.labels.size(); ++i) {
      QVERIFY2(inside.contains(layout.labels[i].box), qPrintable(layout.labels[i].text));
      for (std::size_t j = i + 1; j < layout.labels.size(); ++j)
        QVERIFY2(!layout.labels[i].box.intersects(layout.labels[j].box),
                 qPrintable(layout.labels[i].text + " / " + layout.labels[j].text));
    }
    for (const auto& bar : layout.bars)
      QVERIFY(bar.height() == 0 || inside.contains(bar));
    QVERIFY(h.toolTip().contains("12,345") || h.toolTip().contains("12345"));
  }

  // The drift plot's ticks: round steps (1, 2 or 5 times a power of ten) covering the range, and
  // no more along x than their labels leave room for.
  void lineChartTicksAreRoundAndFitTheirLabels_data() {
    QTest::addColumn<int>("width");
    QTest::newRow("narrow") << 240;
    QTest::newRow("wide") << 900;
  }
  void lineChartTicksAreRoundAndFitTheirLabels() {
    QFETCH(int, width);
    for (const auto& [lo, hi] :
         {std::pair{0.0, 7.3}, std::pair{0.0, 0.042}, std::pair{12.0, 1234.5}}) {
      const auto t = ui::LineChart::niceTicks(lo, hi, 5);
      QVERIFY(t.size() >= 2 && t.size() <= 11);
      const double step = t[1] - t[0], power = std::pow(10.0, std::floor(std::log10(step)));
      const double m = step / power;
      QVERIFY2(std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 5) < 1e-9,
               qPrintable(QString::number(step)));
      QVERIFY(t.front() >= lo - 1e-12 && t.front() - lo < step);
      QVERIFY(t.back() <= hi + 1e-9 && hi - t.back() < step);
    }
    ui::LineChart c;
    c.resize(width, 260);
    std::vector<double> x, y;
    for (int k = 0; k < 200; ++k)
      x.push_back(k * 1.37), y.push_back(0.5 + 0.4 * std::sin(k * 0.1));
    c.setSeries(x, y);
    c.setReference(1.0);
    c.grab();
    QVERIFY(c.xTicks().size() >= 2);
    const QFontMetrics fm(c.font());
    const double label = fm.horizontalAdvance(QString::number(x.back(), 'g', 4));
    QVERIFY2(double(c.xTicks().size()) * label < width,
             qPrintable(QString("%1 ticks").arg(c.xTicks().size())));
    QVERIFY(c.yTicks().back() >= 0.9);  // up to the reference line's neighbourhood
  }

  void saveDialogsStartWhereTheLastFileWasWritten() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QTemporaryDir exports;
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    QString err;
    QVERIFY2(w.saveCurrentDataset(exports.path() + "/copy.ply", &err), qPrintable(err));
    QCOMPARE(w.exportDirectory(), QFileInfo(exports.path()).absoluteFilePath());
    // Opening data from elsewhere moves the open dialog's folder, not the export folder.
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    QCOMPARE(w.exportDirectory(), QFileInfo(exports.path()).absoluteFilePath());
  }

  void tallAndWideCloudsFitTheFirstView_data() {
    QTest::addColumn<float>("sx");
    QTest::addColumn<float>("sy");
    QTest::addColumn<float>("sz");
    QTest::newRow("lamp post 1 x 1 x 30 m") << 1.0f << 1.0f << 30.0f;
    QTest::newRow("street 150 x 60 x 4 m") << 150.0f << 60.0f << 4.0f;
    QTest::newRow("cube") << 2.0f << 2.0f << 2.0f;
  }
  void tallAndWideCloudsFitTheFirstView() {
    QFETCH(float, sx);
    QFETCH(float, sy);
    QFETCH(float, sz);
    ui::VtkCloudView view;
    view.resize(800, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setCloud(box_cloud(sx, sy, sz));
    const double extent = view.boundsExtentInView();
    // All of it in view, and not lost in the middle of it.
    QVERIFY2(extent > 0.6 && extent <= 1.0, qPrintable(QString::number(extent)));
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestSmallThings>(argc, argv);
}
#include "test_small_things.moc"
