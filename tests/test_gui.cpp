// The GUI under a real X server (Xvfb): the 3D view draws, the window opens and keeps data on
// errors, scripted screenshots work, and the running GUI maps no Qt 5 library.
#include <algorithm>
#include <numeric>
#include <vector>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QProcess>
#include <QSignalSpy>
#include <QStatusBar>
#include <QSurfaceFormat>
#include <QThread>

#include <QDockWidget>
#include <QDoubleSpinBox>

#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QPushButton>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QTableWidget>

#include "cluster/cluster.h"
#include "cluster_controller.h"
#include "cluster_panel.h"
#include "colormap.h"
#include "compare_window.h"
#include "core/device.h"
#include "core/error.h"
#include "depth_view.h"
#include "feature_panel.h"
#include "features/features.h"
#include "features_window.h"
#include "filter/filter.h"
#include "filter_controller.h"
#include "filter_panel.h"
#include "generate/generate.h"
#include "ground/ground.h"
#include "gui_support.h"
#include "histogram_chart.h"
#include "history_window.h"
#include "icp_panel.h"
#include "io/io.h"
#include "job_runner.h"
#include "main_window.h"
#include "nns/nns.h"
#include "panel_jobs.h"
#include "registration/icp.h"
#include "registration_window.h"
#include "run_history.h"
#include "segment/segment.h"
#include "segment_panel.h"
#include "size_histogram.h"
#include "test_support.h"
#include "timing_chart.h"
#include "vtk_cloud_view.h"

using namespace cumulus;

using namespace cumulus::test;

// The GUI program: this build's, or $CUMULUS_GUI_BINARY's where the tests run away from the
// build (the GPU machine, scripts/gpu-check.sh gui).
QString gui_binary() {
  return qEnvironmentVariable("CUMULUS_GUI_BINARY", QStringLiteral(CUMULUS_GUI_BINARY));
}

// Shows labelled_plane(label) in label colours at `size`; whether the window was exposed.
bool show_labelled(ui::VtkCloudView& view, QSize size, float point_size, int label) {
  view.resize(size);
  view.setColorMode(ui::ColorMode::Label);
  view.setPointSize(point_size);
  view.setCloud(labelled_plane(label));
  view.show();
  return QTest::qWaitForWindowExposed(&view);
}

// Waits, in an event loop as the application's own (QSignalSpy::wait runs one), until `spy` has
// counted `n` signals. The latency tests wait so: QTRY_* polls in rounds with 10 ms sleeps
// between them, and a timer or a paint that falls due during a sleep waits it out, which the
// measured way from a change to the screen would then count.
bool wait_for_count(QSignalSpy& spy, int n, int timeout_ms) {
  QDeadlineTimer deadline(timeout_ms);
  while (spy.count() < n)
    if (deadline.hasExpired() || !spy.wait(int(std::max<qint64>(deadline.remainingTime(), 1))))
      return spy.count() >= n;
  return true;
}

// The clusters the panel's size histogram counts.
std::size_t histogram_total(const ui::ClusterPanel& panel) {
  const auto& bins = panel.histogram()->bins();
  return std::size_t(std::accumulate(bins.begin(), bins.end(), 0));
}

class TestGui : public QObject {
  Q_OBJECT

 private slots:
  void init() { QSettings().clear(); }

  // New colours show in the very next frame (a small cloud's go up with it), with no empty
  // frame while they are on their way: a live re-colouring neither flickers nor reaches the
  // screen a frame late.
  void newColoursShowInTheNextFrame() {
    ui::VtkCloudView view;
    QVERIFY(show_labelled(view, {400, 300}, 6, 3));
    const int hits = wait_for_pixels(view, ui::label_color(3), 2001);
    QVERIFY2(hits > 2000, qPrintable(QString::number(hits)));
    const Rgb8 red{230, 20, 20};
    view.setColors(std::vector<Rgb8>(view.cloud()->size(), red));
    const QImage next = view.grabFramebuffer();  // the first frame after the change
    QVERIFY2(count_near(next, red) > hits / 2, qPrintable(QString::number(count_near(next, red))));
    QCOMPARE(count_near(next, ui::label_color(3)), 0);
    QCOMPARE(view.drawnPoints(), view.cloud()->size());
  }

  void cloudViewDrawsLabelColours() {
    ui::VtkCloudView view;
    QVERIFY(show_labelled(view, {400, 300}, 6, 3));
    wait_ms(300);
    QCOMPARE(view.grabFramebuffer().size(), QSize(400, 300) * view.devicePixelRatio());
    const int hits = wait_for_pixels(view, ui::label_color(3), 2001);
    QVERIFY2(hits > 2000, qPrintable(QString("only %1 pixels in the label colour").arg(hits)));
    // Switching the colouring changes what is drawn.
    view.setColorMode(ui::ColorMode::Height);
    wait_ms(200);
    QVERIFY(count_near(view.grabFramebuffer(), ui::label_color(3), 10) < hits / 4);
  }

  void offscreenRenderAtChosenResolution() {
    ui::VtkCloudView view;
    QVERIFY(show_labelled(view, {300, 200}, 5, 5));
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

  // A cloud the view cannot prepare (here a preparer that fails, as the index does past 2^32
  // points or out of memory) stays open as a dataset, and the status bar says why it is not drawn.
  void aCloudTheViewCannotShowStaysOpenWithItsReason() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    w.cloudView()->setPreparer(
        [](std::shared_ptr<const PointCloud>, ui::ColorMode) -> std::shared_ptr<ui::CloudDrawData> {
          throw std::bad_alloc();
        });
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    QCOMPARE(w.document()->count(), 1);
    QVERIFY(w.cloudView()->cloud() != nullptr);
    QTRY_VERIFY2(w.statusBar()->currentMessage().contains("cannot show this cloud: std::bad_alloc"),
                 qPrintable(w.statusBar()->currentMessage()));
    QCOMPARE(w.cloudView()->drawnPoints(), std::size_t(0));
  }

  // LAS opens like any cloud, saves back as LAS, and a LAZ or a cut LAS file is refused with
  // its reason while what is open stays.
  void windowOpensAndSavesLas() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QTemporaryDir dir;
    const QString las = dir.path() + "/street.las";
    save_cloud(las.toStdString(), load_cloud(sample("street_scene.pcd").toStdString()));
    QVERIFY(w.openFilesNow({las}).isEmpty());
    QCOMPARE(w.document()->count(), 1);
    QCOMPARE(w.cloudView()->cloud()->size(), std::size_t(120607));
    QVERIFY(w.cloudView()->cloud()->find_extra("semantic") != nullptr);
    const QString laz = dir.path() + "/scan.laz", cut = dir.path() + "/cut.las";
    test::writeBytes(laz, test::readAll(las));
    test::writeBytes(cut, test::readAll(las).left(5000));
    const QStringList e = w.openFilesNow({laz, cut});
    QCOMPARE(e.size(), 2);
    QVERIFY(e[0].contains("LASzip"));
    QVERIFY(e[1].contains("truncated"));
    QCOMPARE(w.document()->count(), 1);
    QString err;
    QVERIFY2(w.saveCurrentDataset(dir.path() + "/copy.las", &err), qPrintable(err));
    QCOMPARE(load_cloud((dir.path() + "/copy.las").toStdString()).size(), std::size_t(120607));
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

  // Save As onto a "full disk" (a 16 KiB file size limit): Qt asks before replacing the old
  // file; the failed write leaves its bytes and no temporary file, says why, and offers another
  // place, where the save then succeeds; the window keeps its dataset throughout.
  void saveToAFullDiskKeepsTheOldFileAndOffersAnotherPlace() {
    app::MainWindow w;
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    QTemporaryDir dir;
    const QString old = dir.path() + "/scan.pcd", other = dir.path() + "/other.pcd";
    const QByteArray old_bytes = "the file that was here\n";
    writeBytes(old, old_bytes);
    QAction* save_as = menu_action(w, "Save Dataset As");
    QVERIFY(save_as);
    QString reason;
    {
      FileSizeLimit limit(16 * 1024);
      ModalScript script({choose_file(old), press("Yes"),
                          [&](QWidget* box) {
                            reason = qobject_cast<QMessageBox*>(box)->informativeText();
                            limit.lift();
                            press(box, "Choose Another Place…");
                          },
                          choose_file(other)});
      save_as->trigger();
      QCOMPARE(script.answered(), std::size_t(4));
    }
    QVERIFY2(reason.contains("File too large") && reason.contains("unchanged"), qPrintable(reason));
    QCOMPARE(readAll(old), old_bytes);
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden),
             (QStringList{"other.pcd", "scan.pcd"}));
    QCOMPARE(w.document()->count(), 1);
    QCOMPARE(load_cloud(other.toStdString()).size(), w.document()->at(0).cloud->size());
  }

  // A cloud in UTM coordinates saved as KITTI .bin: the GUI says how far float32 moves points
  // and writes only when the user says so; choosing another format writes nothing.
  void savingAsALossyFormatAsksFirst() {
    QTemporaryDir dir;
    PointCloud utm;
    utm.origin = {500000.0, 4000000.0, 100.0};
    for (int i = 0; i < 100; ++i)
      utm.points.push_back({float(i % 10) + 0.123f, float(i / 10) + 0.071f, 0.5f});
    utm.width = 100;
    save_cloud((dir.path() + "/utm.pcd").toStdString(), utm);
    app::MainWindow w;
    setLive(w.clusterPanel(), false);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.openFilesNow({dir.path() + "/utm.pcd"}).isEmpty());
    const QString bin = dir.path() + "/utm.bin";
    QString said;
    const auto read_and_press = [&](const QString& button) {
      return [&said, button](QWidget* box) {
        said = qobject_cast<QMessageBox*>(box)->informativeText();
        press(box, button);
      };
    };
    {
      ModalScript script(
          {choose_file(bin), read_and_press("Choose Another Format…"), choose_file("")});
      menu_action(w, "Save Dataset As")->trigger();
      QCOMPARE(script.answered(), std::size_t(3));
    }
    QVERIFY2(said.contains("float32") && said.contains(" m"), qPrintable(said));
    QVERIFY(!QFile::exists(bin));
    {
      ModalScript script({choose_file(bin), read_and_press("Write Anyway")});
      menu_action(w, "Save Dataset As")->trigger();
      QCOMPARE(script.answered(), std::size_t(2));
    }
    QCOMPARE(load_cloud(bin.toStdString()).size(), utm.size());
  }

  void screenshotCommandWritesTheView() {
    QTemporaryDir dir;
    const QString out = dir.path() + "/shot.png";
    QProcess p;
    p.start(gui_binary(), {"--screenshot", out, "--size", "640x400", sample("street_scene.pcd")});
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
    bad.start(gui_binary(), {"--screenshot", out, dir.path() + "/missing.pcd"});
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
    // PCL at 0.9 m on the whole street takes over a minute under the sanitizers on two cores.
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 180000);
    QVERIFY(w.document()->at(0).clusters->sizes != result->sizes);
    // Selecting a cluster draws its box; the coloured view shows the cluster colours.
    emit panel->clusterSelected(0);
    QVERIFY(w.cloudView()->boxVisible());
    emit panel->clusterSelected(-1);
    QVERIFY(!w.cloudView()->boxVisible());
  }

  // A cloud opened while the clustering panel is in front with Live on is clustered without
  // Run, and the panel no longer asks for a cloud; with Live off it says Run will do it.
  void clusteringRunsLiveWhenACloudIsOpened() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Cpu);
    QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    QVERIFY(done.at(0).at(0).toBool());
    QVERIFY(w.document()->at(0).clusters);
    for (auto* l : panel->findChildren<QLabel*>())
      QVERIFY2(!l->text().contains("Open a point cloud"), qPrintable(l->text()));
    setLive(panel, false);
    QVERIFY(!panel->live());
    QVERIFY(w.openFilesNow({sample("object_source.ply")}).isEmpty());
    QTest::qWait(1200);  // longer than the live pause
    QCOMPARE(done.count(), 1);
    bool says_run = false;
    for (auto* l : panel->findChildren<QLabel*>())
      says_run = says_run || l->text().startsWith("Press Run");
    QVERIFY(says_run);
  }

  // Over the live-open limit (10 million points; lowered here) an opened cloud waits for Run
  // even with Live on, and the panel says why; Run then clusters it.
  void liveWaitsForRunOnHugeClouds() {
    app::set_live_open_limit(1000);
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Cpu);
    QVERIFY(panel->live());
    QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
    // A change just before the open leaves a live re-run waiting out its pause (on a GPU machine
    // setMethod is one): the huge cloud must not take it.
    auto* tolerance = panel->findChild<QDoubleSpinBox*>();
    QVERIFY(tolerance);
    tolerance->setValue(tolerance->value() * 2);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());  // 27,651 points
    QTest::qWait(1200);                                                // longer than the live pause
    app::set_live_open_limit(10'000'000);
    QCOMPARE(done.count(), 0);
    bool says_why = false;
    for (auto* l : panel->findChildren<QLabel*>())
      says_why = says_why || (l->text().startsWith("Press Run") &&
                              l->text().contains("does not start by itself"));
    QVERIFY(says_why);
    w.runClustering();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
    QVERIFY(done.at(0).at(0).toBool());
  }

  // A live re-run says in the status bar how long the way from the change to the view took, in
  // its parts; after a fast job the live pause shortens to twice that job's time.
  void liveClusteringShowsItsLatency() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Cpu);
    QSignalSpy shown(w.clusterController(), &app::ClusterController::resultShown);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    QVERIFY(wait_for_count(shown, 1, 60000));
    const auto first = w.clusterController()->lastLatency();
    QVERIFY2(first.wait >= 200, qPrintable(QString::number(first.wait)));  // the first pause
    QVERIFY(first.run > 0 && first.algorithm > 0 && first.algorithm <= first.run);
    QVERIFY(first.redraw > 0);
    QVERIFY2(w.statusBar()->currentMessage().contains("from the change to the view"),
             qPrintable(w.statusBar()->currentMessage()));
    const int pause = w.clusterController()->livePauseMs();
    qInfo(
        "object_target, cpu under Xvfb: run %.1f ms (algorithm %.2f), redraw %.1f ms; live "
        "pause now %d ms",
        first.run, first.algorithm, first.redraw, pause);
    if (first.run < 100) QVERIFY2(pause < 250, qPrintable(QString::number(pause)));
    // The change comes once the first result's size histogram is drawn. The chart follows a
    // result by 200 ms; where the result's own frame took longer (227 ms under AddressSanitizer
    // beside another GUI test), the chart was drawn just after the change, on the UI thread, and
    // held up the re-run's start by its own time (a wait of 247 ms against a pause of 6).
    QTRY_COMPARE(histogram_total(*panel), w.document()->at(0).clusters->sizes.size());
    auto* tolerance = panel->findChild<QDoubleSpinBox*>();
    QVERIFY(tolerance);
    tolerance->setValue(tolerance->value() * 1.5);
    QVERIFY(wait_for_count(shown, 2, 60000));
    const auto second = w.clusterController()->lastLatency();
    qInfo("after a change: pause %.1f, run %.1f (algorithm %.2f), redraw %.1f ms", second.wait,
          second.run, second.algorithm, second.redraw);
    QVERIFY2(second.wait < pause + 200, qPrintable(QString::number(second.wait)));
    QVERIFY(second.run > 0 && second.redraw > 0);
    // The frame the redraw ended at showed the new colours, not an empty view while they were
    // on their way to the GPU's buffers. That is the re-run's frame: the first result can come
    // while the cloud's own points are still on their way (the view's first two frames only
    // warm up, and a frame before the points' copy draws none). Under AddressSanitizer beside
    // another GUI test, at about 80 ms a frame, the check of both frames once failed.
    QVERIFY2(second.points_drawn > 0, qPrintable(QString("first %1, second %2 points drawn")
                                                     .arg(first.points_drawn)
                                                     .arg(second.points_drawn)));
    // The size histogram follows once the results pause.
    QTRY_COMPARE(histogram_total(*panel), w.document()->at(0).clusters->sizes.size());
  }

  // The palette gives every label label_color's colour: those it holds, those past it (labels
  // larger than the point count, as a file may carry) and -1.
  void labelPaletteGivesEachLabelItsColour() {
    const std::vector<std::int32_t> labels = {-1, 0, 5, 3, 2'000'000'000, 5, -1, 1};
    const ui::LabelPalette palette(labels);
    for (const std::int32_t l : {-1, 0, 1, 3, 5, 7, 8, 2'000'000'000}) {
      const Rgb8 a = palette(l), b = ui::label_color(l);
      QVERIFY2(a.r == b.r && a.g == b.g && a.b == b.b, qPrintable(QString::number(l)));
    }
    QVERIFY(ui::LabelPalette(std::vector<std::int32_t>{})(4).r == ui::label_color(4).r);
  }

  // The busy look (Cancel enabled, the busy texts) comes only for a job that runs past
  // kBusyLookMs: a fast live re-run leaves the panel as it was, a slow one shows it until its end.
  void busyLookWaitsForSlowJobs() {
    ui::ClusterPanel panel;
    panel.show();
    auto* cancel = [&] {
      for (auto* b : panel.findChildren<QPushButton*>())
        if (b->text() == "Cancel") return b;
      return static_cast<QPushButton*>(nullptr);
    }();
    QVERIFY(cancel);
    QElapsedTimer clock;
    clock.start();
    panel.setBusy(true);
    wait_ms(10);
    if (clock.elapsed() < ui::AlgorithmPanel::kBusyLookMs)  // (else too slow a machine to tell)
      QVERIFY(!panel.looksBusy() && !cancel->isEnabled());
    panel.setBusy(false);
    wait_ms(2 * ui::AlgorithmPanel::kBusyLookMs);
    QVERIFY(!panel.looksBusy() && !cancel->isEnabled());
    panel.setBusy(true);
    QVERIFY(!panel.looksBusy());
    QTRY_VERIFY(panel.looksBusy());
    QVERIFY(cancel->isEnabled());
    panel.setBusy(false);
    QVERIFY(!panel.looksBusy() && !cancel->isEnabled());
    panel.setBusy(true);
    panel.setError("failed");
    wait_ms(2 * ui::AlgorithmPanel::kBusyLookMs);
    QVERIFY(!panel.looksBusy());
  }

  // The live pause follows a job's own time, not the UI's handling of its result: a job of no
  // time whose result takes 300 ms to handle leaves a short pause, not twice 300 ms (or the
  // longest).
  void livePauseFollowsTheJobNotItsHandling() {
    ui::ClusterPanel panel;
    app::JobRunner runner(nullptr);
    app::PanelJobs jobs(
        &panel, &runner, 1000, [] {}, nullptr);
    bool handled = false;
    jobs.started();
    runner.start([](const app::JobControl&) { return 1; },
                 [&](int) {
                   QThread::msleep(300);
                   handled = true;
                 });
    QTRY_VERIFY(handled);
    QTRY_VERIFY(!runner.busy());
    QVERIFY2(jobs.pauseMs() < 300, qPrintable(QString::number(jobs.pauseMs())));
  }

  // Issue 27's GUI figure: a 125k-point KITTI frame re-clustered on the GPU after each change of
  // the tolerance, from the change to the recoloured frame on screen (the window swapped). It
  // prints every change's parts and their medians (a measurement to read, not a timed test);
  // what it checks is that every change reaches the screen with its colours drawn, that the
  // labels on screen are the CPU reference's, and that the size histogram follows.
  void liveGpuClusteringOfAKittiFrameShowsItsLatency() {
    CUMULUS_REQUIRE_GPU();
    CUMULUS_REQUIRE_DATA(frame, "kitti/000000.bin");
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.resize(1280, 800);
    w.show();
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Gpu);
    QSignalSpy shown(w.clusterController(), &app::ClusterController::resultShown);
    QVERIFY(w.openFilesNow({frame}).isEmpty());
    // A LiDAR scan opens with the Objects tab in front; the clustering tab is the one measured.
    auto* dock = w.findChild<QDockWidget*>("clustering");
    QVERIFY(dock);
    dock->raise();
    QTRY_VERIFY(panel->inFront());
    w.runClustering();
    QVERIFY(wait_for_count(shown, 1, 60000));
    auto* tolerance = panel->findChild<QDoubleSpinBox*>();
    QVERIFY(tolerance);
    // The first changes wait out the pause left by the first job (CUDA's start among it); the
    // pause follows the jobs down, so the later changes show the steady state.
    constexpr int changes = 12;
    std::vector<double> total, wait, run, algorithm, redraw, handling, frames, drawn;
    for (int i = 0; i < changes; ++i) {
      tolerance->setValue(i % 2 == 0 ? 0.55 : 0.5);
      QVERIFY(wait_for_count(shown, i + 2, 60000));
      const auto l = w.clusterController()->lastLatency();
      QVERIFY(l.run > 0 && l.redraw > 0 && l.algorithm <= l.run);
      QVERIFY(l.handling >= 0 && l.handling + l.frame <= l.drawn && l.drawn <= l.redraw);
      QVERIFY(l.points_drawn > 0);  // the frame on screen shows the new colours
      qInfo(
          "change %2d: %.1f ms from the change to the view: pause %.1f, run %.2f (algorithm "
          "%.3f), redraw %.2f (handling %.2f, 3D frame %.2f done at %.2f; %zu points drawn)",
          i + 1, l.total(), l.wait, l.run, l.algorithm, l.redraw, l.handling, l.frame, l.drawn,
          l.points_drawn);
      if (i < changes / 2) continue;
      total.push_back(l.total());
      wait.push_back(l.wait);
      run.push_back(l.run);
      algorithm.push_back(l.algorithm);
      redraw.push_back(l.redraw);
      handling.push_back(l.handling);
      frames.push_back(l.frame);
      drawn.push_back(l.drawn);
    }
    const auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return (v[v.size() / 2] + v[(v.size() - 1) / 2]) / 2;
    };
    // Which OpenGL drew it: the redraw is the GPU's only where this names it.
    auto* view = w.cloudView();
    view->makeCurrent();
    const auto* renderer =
        reinterpret_cast<const char*>(view->context()->functions()->glGetString(GL_RENDERER));
    const QString gl = renderer ? QString::fromLatin1(renderer) : QStringLiteral("unknown");
    view->doneCurrent();
    qInfo(
        "KITTI 000000 (%zu points), gpu, OpenGL %s, medians of the last %d changes: %.1f ms "
        "from the change to the view: pause %.1f, run %.2f (algorithm %.3f), redraw %.2f "
        "(handling %.2f, 3D frame %.2f done at %.2f)",
        w.document()->at(0).cloud->size(), qPrintable(gl), changes / 2, median(total), median(wait),
        median(run), median(algorithm), median(redraw), median(handling), median(frames),
        median(drawn));
    const auto shown_labels = w.document()->at(0).clusters;
    QVERIFY(shown_labels);
    QTRY_COMPARE(histogram_total(*panel), shown_labels->sizes.size());
    const auto reference =
        euclidean_cluster(*w.document()->at(0).cloud, panel->params(), ClusterMethod::Cpu);
    QVERIFY(shown_labels->labels == reference.labels);
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

  void runningGuiMapsNoQt5() {
    QProcess p;
    p.start(gui_binary(), {"--quit-after", "8000", sample("street_scene.pcd")});
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
  return run_gui_tests<TestGui>(argc, argv);
}
#include "test_gui.moc"
