// The GUI under a real X server (Xvfb): the 3D view draws, the window opens and keeps data on
// errors, scripted screenshots work, and the running GUI maps no Qt 5 library.
#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QSignalSpy>
#include <QSurfaceFormat>

#include <QDoubleSpinBox>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTableWidget>

#include "cluster_panel.h"
#include "colormap.h"
#include "compare_window.h"
#include "cumulus/cluster.h"
#include "cumulus/device.h"
#include "cumulus/error.h"
#include "cumulus/features.h"
#include "cumulus/generate.h"
#include "cumulus/icp.h"
#include "cumulus/nns.h"
#include "cumulus/segment.h"
#include "depth_view.h"
#include "feature_panel.h"
#include "features_window.h"
#include "histogram_chart.h"
#include "history_window.h"
#include "icp_panel.h"
#include "main_window.h"
#include "registration_window.h"
#include "run_history.h"
#include "segment_compare_window.h"
#include "segment_panel.h"
#include "test_support.h"
#include "timing_chart.h"
#include "vtk_cloud_view.h"

using namespace cumulus;

namespace {

void wait_ms(int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
}

int count_near(const QImage& img, Rgb8 c, int tol = 40) {
  int n = 0;
  const QImage rgb = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); ++y)
    for (int x = 0; x < rgb.width(); ++x) {
      const QRgb p = rgb.pixel(x, y);
      if (std::abs(qRed(p) - c.r) <= tol && std::abs(qGreen(p) - c.g) <= tol &&
          std::abs(qBlue(p) - c.b) <= tol)
        ++n;
    }
  return n;
}

std::shared_ptr<PointCloud> labelled_plane(int label) {
  auto c = std::make_shared<PointCloud>();
  for (int i = 0; i < 100; ++i)
    for (int j = 0; j < 100; ++j) {
      c->points.push_back({i * 0.01f, j * 0.01f, 0.0f});
      c->labels.push_back(label);
    }
  c->width = std::uint32_t(c->points.size());
  return c;
}

QString sample(const char* name) {
  return test::sampleDir() + "/" + name;
}

}  // namespace

class TestGui : public QObject {
  Q_OBJECT

 private slots:
  void init() { QSettings().clear(); }

  void cloudViewDrawsLabelColours() {
    ui::VtkCloudView view;
    view.resize(400, 300);
    view.setColorMode(ui::ColorMode::Label);
    view.setPointSize(6);
    view.setCloud(labelled_plane(3));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    wait_ms(300);
    const QImage img = view.grabFramebuffer();
    QCOMPARE(img.size(), QSize(400, 300) * view.devicePixelRatio());
    const int hits = count_near(img, ui::label_color(3));
    QVERIFY2(hits > 2000, qPrintable(QString("only %1 pixels in the label colour").arg(hits)));
    // Switching the colouring changes what is drawn.
    view.setColorMode(ui::ColorMode::Height);
    wait_ms(200);
    QVERIFY(count_near(view.grabFramebuffer(), ui::label_color(3), 10) < hits / 4);
  }

  void offscreenRenderAtChosenResolution() {
    ui::VtkCloudView view;
    view.resize(300, 200);
    view.setColorMode(ui::ColorMode::Label);
    view.setPointSize(5);
    view.setCloud(labelled_plane(5));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const QImage img = view.renderImage(1024, 640);
    QCOMPARE(img.size(), QSize(1024, 640));
    QVERIFY(count_near(img, ui::label_color(5)) > 5000);
    QVERIFY(view.renderImage(0, 10).isNull());
  }

  void pickingFindsThePointUnderTheCursor() {
    ui::VtkCloudView view;
    view.resize(400, 400);
    view.setPointSize(4);
    view.setCloud(labelled_plane(1));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    wait_ms(200);
    const auto index = view.pickAt(QPoint(200, 200));
    QVERIFY(index.has_value());
    const auto p = view.cloud()->points[std::size_t(*index)];
    QVERIFY(std::abs(p.x - 0.495f) < 0.15f && std::abs(p.y - 0.495f) < 0.15f);
    QVERIFY(!view.pickAt(QPoint(2, 2)).has_value());
  }

  void depthViewShowsImageAndValue() {
    auto img = std::make_shared<DepthImage>();
    img->width = 50;
    img->height = 20;
    for (int i = 0; i < 1000; ++i)
      img->depth.push_back(i % 50 < 5 ? 0.0f : 1.0f + i * 0.01f);
    ui::DepthView view;
    view.resize(500, 200);
    view.setImage(img);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    int col = -1, row = -1;
    QVERIFY(view.imagePixelAt(QPointF(view.width() / 2.0 - 35, view.height() / 2.0), &col, &row));
    QVERIFY(col >= 0 && row >= 0);
    const double before = view.zoom();
    view.setZoom(before * 2, QPointF(100, 100));
    QCOMPARE(view.zoom(), before * 2);
  }

  void windowOpensFilesAndKeepsThemOnErrors() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    QCOMPARE(w.document()->count(), 1);
    QTemporaryDir dir;
    const QString bad = dir.path() + "/broken.pcd";
    test::writeBytes(bad, "VERSION 0.7\nFIELDS x y z\nPOINTS 9\nDATA binary\n\x01\x02");
    QSignalSpy errors(&w, &app::MainWindow::errorReported);
    const QStringList e = w.openFilesNow({bad, dir.path() + "/nope.ply"});
    QCOMPARE(e.size(), 2);
    QCOMPARE(errors.count(), 2);
    QVERIFY(e[0].contains("broken.pcd"));
    QCOMPARE(w.document()->count(), 1);
    QCOMPARE(w.currentRow(), 0);
    QVERIFY(w.cloudView()->cloud() != nullptr);
    QVERIFY(w.recentFiles().contains(QFileInfo(sample("street_scene.pcd")).absoluteFilePath()));
  }

  void backgroundLoadDoesNotBlock() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QSignalSpy opened(&w, &app::MainWindow::datasetOpened);
    w.openFiles({sample("object_target.ply"), sample("street_range.png")}, 1.0 / 500);
    QVERIFY(w.loading());
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 2, 20000);
    QCOMPARE(w.document()->count(), 2);
    // The depth image shows in the depth view.
    for (int r = 0; r < w.document()->count(); ++r)
      if (!w.document()->at(r).isCloud()) w.setCurrentRow(r);
    QVERIFY(w.depthView()->image() != nullptr);
    QCOMPARE(w.depthView()->image()->height, 64u);
  }

  void cancelDropsPendingLoads() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QSignalSpy finished(&w, &app::MainWindow::loadingFinished);
    w.openFiles({sample("street_scene.pcd")});
    w.cancelLoading();
    QVERIFY(!w.loading());
    QCOMPARE(finished.count(), 1);
    wait_ms(1500);
    QCOMPARE(w.document()->count(), 0);
  }

  void exportsViewAndWindowImages() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    wait_ms(300);
    QTemporaryDir dir;
    QString err;
    QVERIFY2(w.exportViewImage(dir.path() + "/view.png", 800, 500, &err), qPrintable(err));
    QCOMPARE(QImage(dir.path() + "/view.png").size(), QSize(800, 500));
    QVERIFY(w.saveWindowScreenshot(dir.path() + "/window.png", &err));
    QVERIFY(!QImage(dir.path() + "/window.png").isNull());
    QVERIFY(!w.exportViewImage("/nonexistent-dir/x.png", 800, 500, &err));
    QVERIFY(err.contains("/nonexistent-dir/x.png"));
    QVERIFY(w.saveCurrentDataset(dir.path() + "/copy.ply", &err));
    QVERIFY(QFileInfo(dir.path() + "/copy.ply").size() > 1000);
  }

  void screenshotCommandWritesTheView() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/shot.png";
    QProcess p;
    p.start(QStringLiteral(CUMULUS_GUI_BINARY),
            {"--screenshot", out, "--size", "640x400", sample("street_scene.pcd")});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QImage img(out);
    QCOMPARE(img.size(), QSize(640, 400));
    // A height-coloured street: many pixels far from the grey background.
    int coloured = 0;
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width(); ++x) {
        const QRgb c = img.pixel(x, y);
        coloured +=
            std::max({qRed(c), qGreen(c), qBlue(c)}) - std::min({qRed(c), qGreen(c), qBlue(c)}) >
            80;
      }
    QVERIFY2(coloured > 1000, qPrintable(QString::number(coloured)));
    QProcess bad;
    bad.start(QStringLiteral(CUMULUS_GUI_BINARY),
              {"--screenshot", out, dir.path() + "/missing.pcd"});
    QVERIFY(bad.waitForFinished(60000));
    QVERIFY(bad.exitCode() != 0);
    QVERIFY(bad.readAllStandardError().contains("missing.pcd"));
  }

  void clusteringPanelRunsLiveOffTheUiThread() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Cpu);
    panel->setParams({0.5f, 20, 1000000});
    QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
    w.runClustering();
    QVERIFY(w.clusteringBusy());  // the UI thread is free while PCL runs
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    QVERIFY(done.at(0).at(0).toBool());
    const auto result = w.document()->at(0).clusters;
    QVERIFY(result);
    const ClusterResult direct =
        euclidean_cluster(*w.document()->at(0).cloud, {0.5f, 20, 1000000}, ClusterMethod::Cpu);
    QCOMPARE(result->sizes, direct.sizes);
    QVERIFY(result->labels == direct.labels);
    // Editing a value re-runs by itself (debounced).
    auto* tolerance = panel->findChild<QDoubleSpinBox*>();
    QVERIFY(tolerance);
    tolerance->setValue(0.9);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 60000);
    QVERIFY(w.document()->at(0).clusters->sizes != result->sizes);
    // Selecting a cluster draws its box; the coloured view shows the cluster colours.
    emit panel->clusterSelected(0);
    QVERIFY(w.cloudView()->boxVisible());
    emit panel->clusterSelected(-1);
    QVERIFY(!w.cloudView()->boxVisible());
  }

  void registrationAlignsThePairOffTheUiThread() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("object_source.ply"), sample("object_target.ply")}).isEmpty());
    w.setCurrentRow(1);
    auto* reg = w.openRegistration();
    reg->show();
    auto* panel = reg->panel();
    panel->setMethod(IcpMethod::Cpu);
    // Undo most of the known pose by hand (25 degrees about z); ICP does the rest.
    panel->setPerturbation(0, 0, 22, 0.045, -0.025, 0.02);
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    reg->run();
    QVERIFY(reg->busy());  // the UI thread is free while PCL runs
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 1 && !reg->busy(), 60000);
    QVERIFY(done.last().at(0).toBool());
    const IcpResult* r = reg->lastResult();
    QVERIFY(r);
    QCOMPARE(r->method, std::string("cpu"));
    // The same as calling the backend directly on the perturbed source.
    const PointCloud moved = transformed(*w.document()->at(0).cloud, panel->perturbation());
    const IcpResult direct =
        icp(moved, *w.document()->at(1).cloud, panel->params(), IcpMethod::Cpu);
    QCOMPARE(r->iterations, direct.iterations);
    QVERIFY((r->transform - direct.transform).cwiseAbs().maxCoeff() < 1e-12);
    // Target, source before and source after, each in its own colour.
    const std::size_t ns = w.document()->at(0).cloud->size(),
                      nt = w.document()->at(1).cloud->size();
    QCOMPARE(reg->view()->cloud()->size(), nt + 2 * ns);
    // Exports: JSON with the transform and the error curve; the aligned cloud.
    QTemporaryDir dir;
    QVERIFY(reg->exportTransform(dir.path() + "/t.json"));
    const QJsonObject o = QJsonDocument::fromJson(test::readAll(dir.path() + "/t.json")).object();
    QCOMPARE(o["iterations"].toInt(), r->iterations);
    QCOMPARE(o["mse_per_iteration"].toArray().size(), r->iterations);
    QVERIFY(reg->exportTransform(dir.path() + "/t.txt"));
    QCOMPARE(parse_matrix(test::readAll(dir.path() + "/t.txt").toStdString())(0, 3),
             r->transform(0, 3));
    QCOMPARE(reg->alignedSource()->size(), ns);
    // "Time all methods" runs every usable method and lists them.
    reg->timeAll();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 2 && !reg->busy(), 60000);
    auto* table = panel->findChild<QTableWidget*>();
    QVERIFY(table);
    QCOMPARE(table->rowCount(), query_device().available ? 4 : 1);
    // A bad parameter is an error message, and nothing is lost.
    panel->setMethod(IcpMethod::Gpu);
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 3 && !reg->busy(), 60000);
    QCOMPARE(done.last().at(0).toBool(), query_device().available);
    QCOMPARE(w.document()->count(), 2);
  }

  void featuresWindowPicksColoursAndExports() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    w.setCurrentRow(0);
    auto* fw = w.openFeatures();
    fw->show();
    auto* panel = fw->panel();
    panel->setMethod(FeatureMethod::Cpu);
    FeatureParams p;
    p.descriptor = Descriptor::Fpfh;
    p.neighbourhood = Neighbourhood::nearest(16);
    p.normals.neighbourhood = p.neighbourhood;
    panel->setParams(p);
    const auto cloud = w.document()->at(0).cloud;
    // Before any features: the neighbourhood is shown, the chart is empty.
    fw->pickPoint(100, 0);
    QCOMPARE(fw->neighbourhood().size(), std::size_t(16));
    QVERIFY(panel->chart()->first().empty());
    QCOMPARE(panel->pickSlot(), 1);  // the next click compares
    QSignalSpy done(fw, &app::FeaturesWindow::finished);
    fw->run();
    QVERIFY(fw->busy());  // PCL runs off the UI thread
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 1 && !fw->busy(), 60000);
    QVERIFY(done.last().at(0).toBool());
    const FeatureResult* r = fw->lastResult();
    QVERIFY(r);
    // The same histograms as the backend called directly.
    const FeatureResult direct = compute_features(*cloud, p, FeatureMethod::Cpu);
    QCOMPARE(r->histograms.size(), direct.histograms.size());
    QVERIFY(std::memcmp(r->histograms.data(), direct.histograms.data(),
                        direct.histograms.size() * sizeof(float)) == 0);
    // A's histogram is charted, grouped as FPFH's three sub-histograms; A is at distance 0.
    const std::vector<float> a(direct.row(100), direct.row(100) + 33);
    QCOMPARE(panel->chart()->first(), a);
    QVERIFY(panel->chart()->second().empty());
    QCOMPARE(ui::HistogramChart::groups(33).size(), std::size_t(3));
    QCOMPARE(fw->distances().size(), cloud->size());
    QCOMPARE(fw->distances()[100], 0.0f);
    // The highlighted neighbourhood is FLANN's (as a set; nearest first).
    const KnnResult knn = knn_search(cloud->points, {cloud->points[100]}, 16, NnsMethod::Cpu);
    std::vector<std::int32_t> expect(knn.indices.begin(), knn.indices.end()),
        got = fw->neighbourhood();
    std::sort(expect.begin(), expect.end());
    std::sort(got.begin(), got.end());
    QCOMPARE(got, expect);
    QCOMPARE(fw->neighbourhood().front(), 100);
    // B is overlaid; its distance to A is what histogram_distances gives.
    fw->pickPoint(2000, panel->pickSlot());
    QCOMPARE(fw->picked(1), qint64(2000));
    QCOMPARE(panel->chart()->second(), std::vector<float>(direct.row(2000), direct.row(2000) + 33));
    const auto l2 = histogram_distances(direct, direct.row(100), HistogramDistance::L2);
    QCOMPARE(fw->distances()[2000], l2[2000]);
    panel->setDistance(HistogramDistance::ChiSquared);
    const auto chi = histogram_distances(direct, direct.row(100), HistogramDistance::ChiSquared);
    QCOMPARE(fw->distances()[2000], chi[2000]);
    // Exports: PCD with an FPFHSignature33 field, CSV with a row per point.
    QTemporaryDir dir;
    QVERIFY(fw->exportFeatures(dir.path() + "/f.pcd"));
    QVERIFY(test::readAll(dir.path() + "/f.pcd").contains("fpfh"));
    QVERIFY(fw->exportFeatures(dir.path() + "/f.csv"));
    QCOMPARE(test::readAll(dir.path() + "/f.csv").count('\n'), qsizetype(cloud->size() + 1));
    QString error;
    QVERIFY(!fw->exportFeatures(dir.path() + "/missing/f.csv", &error));
    QVERIFY(!error.isEmpty());
    // Time all: every usable method, side by side.
    fw->timeAll();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 2 && !fw->busy(), 120000);
    auto* table = panel->findChild<QTableWidget*>("timings");
    QVERIFY(table);
    QCOMPARE(table->rowCount(), query_device().available ? 3 : 1);
    QCOMPARE(table->item(0, 0)->text(), QString("cpu"));
    // A missing GPU is a message; the last result stays.
    panel->setMethod(FeatureMethod::Gpu);
    fw->run();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 3 && !fw->busy(), 60000);
    QCOMPARE(done.last().at(0).toBool(), query_device().available);
    QVERIFY(fw->lastResult());
    // Clearing the picks restores the ordinary colouring.
    fw->pickPoint(-1, 0);
    fw->pickPoint(-1, 1);
    QVERIFY(fw->distances().empty());
    QCOMPARE(w.document()->count(), 1);
  }

  void clusteringErrorsKeepTheData() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
    w.clusterPanel()->setParams({0.01f, 1, 100});
    if (!query_device().available) {
      // GPU methods are disabled in the panel; ask the engine directly for the message.
      QVERIFY_THROWS_EXCEPTION(
          GpuError, euclidean_cluster(*w.document()->at(0).cloud, {}, ClusterMethod::Gpu));
      QCOMPARE(w.clusterPanel()->method(), ClusterMethod::Cpu);
    }
    w.runClustering();
    w.cancelClustering();
    QTRY_VERIFY_WITH_TIMEOUT(!w.clusteringBusy(), 60000);
    QCOMPARE(done.count(), 1);
    QVERIFY(!done.at(0).at(0).toBool());  // cancelled: result dropped
    QVERIFY(!w.document()->at(0).clusters);
    QCOMPARE(w.document()->count(), 1);
  }

  // Tools > Release GPU Memory runs off the UI thread and says what it did (or why not).
  void releasingGpuMemoryReportsFreeMemory() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QSignalSpy released(&w, &app::MainWindow::gpuMemoryReleased);
    w.releaseGpuMemory();
    QTRY_COMPARE_WITH_TIMEOUT(released.count(), 1, 30000);
    const QString message = released.at(0).at(0).toString();
    QVERIFY2(message.contains(query_device().available ? "free device memory" : "No GPU"),
             qPrintable(message));
  }

  void compareModeTimesJudgesAndRecords() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    w.clusterPanel()->setParams({0.01f, 5, 1000000});
    const std::size_t before = app::RunHistory::instance().records().size();
    std::unique_ptr<app::CompareWindow> cmp(w.openCompare());
    QVERIFY(cmp);
    cmp->setMethods(query_device().available
                        ? std::vector<ClusterMethod>{ClusterMethod::Cpu, ClusterMethod::Gpu,
                                                     ClusterMethod::GpuEdgeRs}
                        : std::vector<ClusterMethod>{ClusterMethod::Cpu});
    cmp->setRepeats(2);
    cmp->show();
    QSignalSpy finished(cmp.get(), &app::CompareWindow::finished);
    cmp->run();
    QVERIFY(cmp->busy());
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 120000);
    QVERIFY(finished.at(0).at(0).toBool());
    const auto& outcomes = cmp->outcomes();
    QVERIFY(!outcomes.empty());
    QCOMPARE(outcomes.front().totals.size(), std::size_t(2));
    for (const auto& a : cmp->agreements())
      QVERIFY(a.identical || a.summary.empty());
    QCOMPARE(cmp->chart()->bars().size(), outcomes.size());
    QCOMPARE(cmp->table()->rowCount(), int(outcomes.size()));
    QCOMPARE(cmp->table()->item(0, 4)->text(), QString("reference"));
    QCOMPARE(app::RunHistory::instance().records().size(), before + 2 * outcomes.size());
    // The history exports with the machine and the runs.
    QTemporaryDir dir;
    app::RunHistory::instance().writeCsv(dir.path() + "/h.csv");
    app::RunHistory::instance().writeJson(dir.path() + "/h.json");
    QVERIFY(test::readAll(dir.path() + "/h.csv").startsWith("time,host,algorithm,method"));
    const QJsonObject j = QJsonDocument::fromJson(test::readAll(dir.path() + "/h.json")).object();
    QVERIFY(j["runs"].toArray().size() >= int(2 * outcomes.size()));
    QVERIFY(!j["host"].toString().isEmpty());
    app::HistoryWindow history;
    QCOMPARE(history.table()->rowCount(), int(app::RunHistory::instance().records().size()));
    // Cancelling stops between runs and keeps what finished.
    cmp->setRepeats(50);
    cmp->run();
    cmp->cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, 120000);
    QVERIFY(!finished.at(1).at(0).toBool());
  }

  void segmentationPanelRunsLiveAndInspects() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_range.png")}, 1.0 / 500).isEmpty());
    QSignalSpy done(&w, &app::MainWindow::segmentationFinished);
    w.segmentPanel()->setMethod(SegmentMethod::CpuMt);
    w.runSegmentation();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30000);
    QVERIFY(done.at(0).at(0).toBool());
    const auto first = w.document()->at(0).segments;
    QVERIFY(first && !first->rows.empty());
    const SegmentResult direct =
        segment_columns(*w.document()->at(0).depth, w.segmentPanel()->params(), SegmentMethod::Cpu);
    QVERIFY(direct.rows == first->rows && direct.offsets == first->offsets);
    // A smaller epsilon re-runs by itself and cuts more.
    auto* eps = w.segmentPanel()->findChild<QDoubleSpinBox*>();
    QVERIFY(eps);
    eps->setValue(0.02);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 30000);
    QVERIFY(w.document()->at(0).segments->rows.size() > first->rows.size());
    // CPU and GPU timings side by side.
    QSignalSpy timed(&w, &app::MainWindow::segmentTimingFinished);
    w.timeAllSegmentMethods();
    QTRY_COMPARE_WITH_TIMEOUT(timed.count(), 1, 30000);
    auto* times = w.segmentPanel()->methodTimes();
    QCOMPARE(times->rowCount(), 3);
    QCOMPARE(times->item(0, 2)->text(), QString("reference"));
    QCOMPARE(times->item(1, 2)->text(), QString("identical cut rows"));
    QVERIFY(times->item(2, 2)->text() ==
            (query_device().available ? "identical cut rows" : "no GPU"));
    // Clicking a column shows it in the inspector.
    emit w.depthView()->columnClicked(100);
    QCOMPARE(w.segmentPanel()->columnPlot()->column(), 100);
    QTemporaryDir dir;
    save_segments((dir.path() + "/s.json").toStdString(), *w.document()->at(0).depth,
                  *w.document()->at(0).segments, SegmentFormat::Json);
    const QJsonObject j = QJsonDocument::fromJson(test::readAll(dir.path() + "/s.json")).object();
    QVERIFY(j["segments"].toArray().size() > 100);
    QVERIFY(j["segments"].toArray().at(0).toObject().contains("start_depth"));
  }

  void segmentCompareListsDifferingColumns() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QVERIFY(w.openFilesNow({sample("street_range.png")}, 1.0 / 500).isEmpty());
    std::unique_ptr<app::SegmentCompareWindow> cmp(w.openSegmentCompare());
    QVERIFY(cmp);
    cmp->setRepeats(2);
    cmp->show();
    QSignalSpy finished(cmp.get(), &app::SegmentCompareWindow::finished);
    cmp->run();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY(finished.at(0).at(0).toBool());
    const std::size_t methods = query_device().available ? 3 : 2;
    QCOMPARE(cmp->outcomes().size(), methods);
    QCOMPARE(cmp->table()->item(0, 4)->text(), QString("reference"));
    for (std::size_t k = 1; k < methods; ++k)
      QVERIFY(cmp->agreements()[k].identical);
    QCOMPARE(cmp->chart()->bars().size(), methods);
  }

  void runningGuiMapsNoQt5() {
    QProcess p;
    p.start(QStringLiteral(CUMULUS_GUI_BINARY),
            {"--quit-after", "8000", sample("street_scene.pcd")});
    QVERIFY(p.waitForStarted(10000));
    wait_ms(3000);  // let it load the cloud and render
    QFile maps(QStringLiteral("/proc/%1/maps").arg(p.processId()));
    QVERIFY(maps.open(QIODevice::ReadOnly));
    const QByteArray text = maps.readAll();
    QVERIFY(p.state() == QProcess::Running);
    QVERIFY(text.contains("libQt6Widgets"));
    QVERIFY(text.contains("libvtkRenderingOpenGL2"));
    QVERIFY2(!text.contains("libQt5"), "a Qt 5 library is mapped into the GUI process");
    p.kill();
    p.waitForFinished(5000);
  }
};

int main(int argc, char** argv) {
  QSurfaceFormat fmt;
  fmt.setRenderableType(QSurfaceFormat::OpenGL);
  fmt.setVersion(3, 2);
  fmt.setProfile(QSurfaceFormat::CoreProfile);
  fmt.setDepthBufferSize(24);
  fmt.setAlphaBufferSize(8);
  fmt.setSamples(0);
  QSurfaceFormat::setDefaultFormat(fmt);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("CumulusTest");
  QApplication::setApplicationName("CumulusTest");
  TestGui t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_gui.moc"
