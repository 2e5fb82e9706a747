// The small things a user tripped over in the main window (issue 30): the status bar's GPU
// label, the cluster-size histogram's labels, where save dialogs start, and the first camera
// of a tall cloud. Under a real X server (Xvfb).
#include <QLabel>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QWheelEvent>

#include <cmath>
#include <memory>
#include <random>

#include "cluster_panel.h"
#include "core/device.h"
#include "gui_support.h"
#include "histogram_chart.h"
#include "icp_error_chart.h"
#include "io/io.h"
#include "line_chart.h"
#include "main_window.h"
#include "size_histogram.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkTooltipItem.h>

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

  // Every chart's tick labels (VTK's chart classes place them; category and decade labels are
  // thinned by us) stay inside the widget and never overlap, narrow or wide.
  void chartTickLabelsNeitherOverlapNorLeaveTheWidget_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<int>("width");
    for (const char* chart : {"cluster sizes", "drift", "icp convergence", "feature histogram"})
      for (const int width : {160, 260, 600})
        QTest::newRow(qPrintable(QString("%1, %2 px").arg(chart).arg(width))) << chart << width;
  }
  void chartTickLabelsNeitherOverlapNorLeaveTheWidget() {
    QFETCH(QString, chart);
    QFETCH(int, width);
    std::unique_ptr<ui::ChartView> c;
    if (chart == "cluster sizes") {
      auto h = std::make_unique<ui::SizeHistogram>();
      // Thousands of tiny clusters and a few large ones: many bins, wide labels.
      std::vector<std::size_t> sizes(12345, 1);
      for (std::size_t s = 2; s < 200000; s *= 3)
        sizes.insert(sizes.end(), 150, s);
      h->setSizes(sizes);
      QVERIFY(h->summary().contains("12,345") || h->summary().contains("12345"));
      c = std::move(h);
    } else if (chart == "drift") {
      auto l = std::make_unique<ui::LineChart>();
      std::vector<double> x, y;
      for (int k = 0; k < 200; ++k)
        x.push_back(k * 1.37), y.push_back(0.5 + 0.4 * std::sin(k * 0.1));
      l->setSeries(x, y);
      l->setReference(1.0, "1 %");
      c = std::move(l);
    } else if (chart == "icp convergence") {
      auto e = std::make_unique<ui::IcpErrorChart>();
      std::vector<IcpIteration> history(40);
      for (std::size_t i = 0; i < history.size(); ++i)
        history[i].mse = std::pow(0.6, double(i));  // nine decades
      e->setHistory(history);
      c = std::move(e);
    } else {
      auto f = std::make_unique<ui::HistogramChart>();
      std::vector<float> a(125, 1.0f), b(125, 2.0f);
      f->setHistograms(a, b);
      c = std::move(f);
    }
    c->resize(width, 140);
    c->grab();
    const auto labels = c->tickLabels();
    QVERIFY(labels.size() >= 3);
    const QRectF inside = QRectF(c->rect()).adjusted(-0.5, -0.5, 0.5, 0.5);
    for (std::size_t i = 0; i < labels.size(); ++i) {
      QVERIFY2(inside.contains(labels[i].box),
               qPrintable(labels[i].text + QString(" at %1,%2 %3x%4")
                                               .arg(labels[i].box.x())
                                               .arg(labels[i].box.y())
                                               .arg(labels[i].box.width())
                                               .arg(labels[i].box.height())));
      for (std::size_t j = i + 1; j < labels.size(); ++j)
        QVERIFY2(!labels[i].box.intersects(labels[j].box),
                 qPrintable(labels[i].text + " / " + labels[j].text));
    }
  }

  // The charts are VTK's with their interaction: hovering a bar shows its value in a tooltip,
  // the wheel zooms the axes, a double click goes back to the whole chart.
  void chartsShowTooltipsAndZoom() {
    ui::SizeHistogram h;
    h.resize(400, 200);
    h.show();
    QVERIFY(QTest::qWaitForWindowExposed(&h));
    std::vector<std::size_t> sizes(50, 1);
    sizes.insert(sizes.end(), 20, 5);
    h.setSizes(sizes);
    h.grab();
    // The middle of the first bar (bin 0, 50 clusters): half way up in the plot area.
    vtkAxis* x = h.axis(vtkAxis::BOTTOM);
    vtkAxis* y = h.axis(vtkAxis::LEFT);
    const double dpr = h.devicePixelRatioF();
    const double px =
        x->GetPosition1().GetX() + (0 - x->GetMinimum()) / (x->GetMaximum() - x->GetMinimum()) *
                                       (x->GetPosition2().GetX() - x->GetPosition1().GetX());
    const double py =
        y->GetPosition1().GetY() + (25 - y->GetMinimum()) / (y->GetMaximum() - y->GetMinimum()) *
                                       (y->GetPosition2().GetY() - y->GetPosition1().GetY());
    const QPoint at(int(px / dpr), int(h.height() - py / dpr));
    QVERIFY(!h.chart()->GetTooltip()->GetVisible());
    // Sent to the widget itself, as the wheel below: the test programs share one X server and
    // run side by side, and a pointer moved there can hover another program's window lying over
    // this one (CI saw the tooltip stay hidden once with other GUI tests running).
    QMouseEvent move(QEvent::MouseMove, QPointF(at), h.mapToGlobal(QPointF(at)), Qt::NoButton,
                     Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&h, &move);
    QTRY_VERIFY(h.chart()->GetTooltip()->GetVisible());
    const QString tip = QString::fromStdString(h.chart()->GetTooltip()->GetText());
    QVERIFY2(tip.contains("1-1 points") && tip.contains("50"), qPrintable(tip));
    // One wheel step forward narrows the x axis' range around the mouse.
    const double before = x->GetMaximum() - x->GetMinimum();
    QWheelEvent wheel(QPointF(at), h.mapToGlobal(QPointF(at)), QPoint(), QPoint(0, 120),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(&h, &wheel);
    h.grab();
    QVERIFY2(x->GetMaximum() - x->GetMinimum() < before,
             qPrintable(QString("%1 -> %2").arg(before).arg(x->GetMaximum() - x->GetMinimum())));
    // A double click shows the whole chart again.
    QTest::mouseDClick(&h, Qt::LeftButton, {}, at);
    h.grab();
    QCOMPARE(x->GetMaximum() - x->GetMinimum(), before);
  }

  // The drift plot's ticks are VTK's: round steps (1, 2, 2.5 or 5 times a power of ten).
  void lineChartTicksAreRound() {
    ui::LineChart c;
    c.resize(520, 260);
    std::vector<double> x, y;
    for (int k = 0; k < 200; ++k)
      x.push_back(k * 1.37), y.push_back(0.5 + 0.4 * std::sin(k * 0.1));
    c.setSeries(x, y);
    c.setReference(1.0);
    c.grab();
    for (const auto& t : {c.xTicks(), c.yTicks()}) {
      QVERIFY(t.size() >= 3);
      const double step = t[1] - t[0], power = std::pow(10.0, std::floor(std::log10(step)));
      const double m = step / power;
      QVERIFY2(std::abs(m - 1) < 1e-9 || std::abs(m - 2) < 1e-9 || std::abs(m - 2.5) < 1e-9 ||
                   std::abs(m - 5) < 1e-9,
               qPrintable(QString::number(step)));
    }
    QVERIFY(c.yTicks().back() >= 1.0 - 1e-9);  // the reference line is in sight
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
