// The Cumulus desktop application.
#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QIcon>
#include <QSurfaceFormat>
#include <QTimer>

#include <csignal>
#include <cstdio>

#include "bench_view.h"
#include "cluster_panel.h"
#include "compare_window.h"
#include "core/depth_image.h"
#include "core/error.h"
#include "gl_format.h"
#include "main_window.h"
#include "pipeline_controller.h"
#include "save_file.h"
#include "segment_panel.h"
#include "vtk_cloud_view.h"

namespace {

QString whole_path(const QCommandLineParser& p, const QCommandLineOption& window,
                   const QCommandLineOption& view) {
  return p.isSet(window) ? p.value(window) : p.value(view);
}

bool parse_size(const QString& text, int* w, int* h) {
  const auto parts = text.toLower().split('x');
  if (parts.size() != 2) return false;
  bool ok1 = false, ok2 = false;
  *w = parts[0].toInt(&ok1);
  *h = parts[1].toInt(&ok2);
  return ok1 && ok2 && *w >= 16 && *h >= 16 && *w <= 16384 && *h <= 16384;
}

}  // namespace

int main(int argc, char** argv) {
  // Past a file size limit a write fails with EFBIG and the export reports it, instead of the
  // signal ending the application with everything open.
  std::signal(SIGXFSZ, SIG_IGN);
  cumulus::ui::set_default_gl_format();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("Cumulus");
  QApplication::setApplicationName("Cumulus");
  QApplication::setApplicationVersion(CUMULUS_VERSION);
  QApplication::setWindowIcon(QIcon(":/cumulus.svg"));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Cumulus: point clouds and depth images, GPU algorithms beside their CPU references.");
  parser.addHelpOption();
  parser.addVersionOption();
  QCommandLineOption shot("screenshot", "Open FILES, render the 3D view to OUT.png and exit.",
                          "OUT.png");
  QCommandLineOption shot_window("screenshot-window",
                                 "Like --screenshot, but writes the whole window.", "OUT.png");
  QCommandLineOption size("size", "Image size for --screenshot (default 1280x800).", "WxH",
                          "1280x800");
  QCommandLineOption scale(
      "depth-scale",
      "Metres per unit of 16-bit depth images: kitti, tum, mm, velodyne or a number "
      "(default: the last one chosen, else mm).",
      "S");
  QCommandLineOption cluster(
      "cluster", "Cluster the opened cloud with tolerance T (metres) and colour it by cluster.",
      "T");
  QCommandLineOption segment(
      "segment", "Segment the opened depth image's columns with epsilon E (metres).", "E");
  QCommandLineOption compare(
      "compare",
      "Open the compare window for the first cloud and run it (with --screenshot-window, "
      "the compare window is what gets written).");
  QCommandLineOption compare_what(
      "compare-algorithm",
      "With --compare: cluster (default for a cloud), segment (default for a depth image), icp "
      "(the first cloud onto the second), features or pipeline (the Objects panel's chain).",
      "NAME");
  QCommandLineOption objects(
      "objects",
      "Find the opened cloud's objects (the Objects panel: ground grey, objects boxed) first.");
  QCommandLineOption bench_view(
      "bench-view",
      "Measure the 3D view with a generated x, y, z cloud of N points: frames/s while dragged and "
      "at rest, points drawn, the longest UI stall and memory a point (JSON), then exit.",
      "N");
  QCommandLineOption quit_after("quit-after", "Quit after MS milliseconds (scripted checks).",
                                "MS");
  parser.addOptions({shot, shot_window, size, scale, cluster, objects, compare, compare_what,
                     segment, bench_view, quit_after});
  parser.addPositionalArgument(
      "files",
      "Clouds (.pcd .ply .bin .xyz .txt .csv .las), depth images (.png .tif) or a session "
      "(.cumulus).",
      "[FILES...]");
  parser.process(app);

  if (parser.isSet(bench_view)) {
    bool ok = false;
    const qulonglong n = parser.value(bench_view).toULongLong(&ok);
    int w = 0, h = 0;
    if (!ok || n == 0 || n > 2000000000ull || !parse_size(parser.value(size), &w, &h)) {
      std::fprintf(stderr, "cumulus: --bench-view expects 1 to 2e9 points and --size WxH\n");
      return 2;
    }
    return cumulus::app::run_view_bench(std::size_t(n), w, h);
  }

  double depth_scale = 0;
  if (parser.isSet(scale)) {
    try {
      depth_scale = cumulus::parse_depth_scale(parser.value(scale).toStdString());
    } catch (const cumulus::Error& e) {
      std::fprintf(stderr, "cumulus: %s\n", e.what());
      return 2;
    }
  }
  QStringList files = parser.positionalArguments();
  if (files.isEmpty()) {
    const QString sample = cumulus::app::sampleScenePath();
    if (!sample.isEmpty()) files << sample;
  }

  cumulus::app::MainWindow window;
  if (parser.isSet(shot) || parser.isSet(shot_window)) {
    int w = 0, h = 0;
    if (!parse_size(parser.value(size), &w, &h)) {
      std::fprintf(stderr, "cumulus: --size expects WxH between 16 and 16384, got '%s'\n",
                   qPrintable(parser.value(size)));
      return 2;
    }
    window.setProperty("scripted", true);
    window.show();
    const QStringList errors = window.openFilesNow(files, depth_scale);
    for (const auto& e : errors)
      std::fprintf(stderr, "cumulus: %s\n", qPrintable(e));
    if (window.document()->count() == 0) {
      std::fprintf(stderr, "cumulus: nothing to render\n");
      return 1;
    }
    if (parser.isSet(cluster)) {
      cumulus::ClusterParams p = window.clusterPanel()->params();
      p.tolerance = parser.value(cluster).toFloat();
      window.clusterPanel()->setParams(p);
      bool finished = false, ok = false;
      QObject::connect(&window, &cumulus::app::MainWindow::clusteringFinished, [&](bool good) {
        finished = true;
        ok = good;
      });
      window.runClustering();
      while (!finished)
        app.processEvents(QEventLoop::AllEvents, 50);
      if (!ok) {
        std::fprintf(stderr, "cumulus: clustering failed\n");
        return 1;
      }
    }
    if (parser.isSet(objects)) {
      bool finished = false, ok = false;
      QObject::connect(window.pipeline(), &cumulus::app::PipelineController::finished,
                       [&](bool good) { finished = true, ok = good; });
      if (auto* dock = window.findChild<QDockWidget*>("objects")) dock->raise();
      window.pipeline()->run();
      while (!finished || window.pipeline()->busy())
        app.processEvents(QEventLoop::AllEvents, 50);
      if (!ok && !window.pipeline()->result()) {
        std::fprintf(stderr, "cumulus: finding the objects failed\n");
        return 1;
      }
    }
    // Let the window map and paint once so the view has its final layout and camera.
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 300)
      app.processEvents(QEventLoop::AllEvents, 50);
    QString err;
    const bool whole = parser.isSet(shot_window);
    const QString out = whole ? parser.value(shot_window) : parser.value(shot);
    if (parser.isSet(segment)) {
      window.segmentPanel()->setEpsilon(parser.value(segment).toDouble());
      bool finished = false;
      QObject::connect(&window, &cumulus::app::MainWindow::segmentationFinished,
                       [&](bool) { finished = true; });
      window.runSegmentation();
      while (!finished)
        app.processEvents(QEventLoop::AllEvents, 50);
    }
    if (parser.isSet(compare)) {
      const QString what = parser.value(compare_what);
      const bool image =
          window.currentRow() >= 0 && !window.document()->at(window.currentRow()).isCloud();
      if (what == "icp") window.setCurrentRow(1);  // the target; the first cloud is the source
      auto* cmp = what == "pipeline"                               ? window.openPipelineCompare()
                  : what == "icp"                                  ? window.openIcpCompare()
                  : what == "features"                             ? window.openFeaturesCompare()
                  : what == "segment" || (what.isEmpty() && image) ? window.openSegmentCompare()
                  : what.isEmpty() || what == "cluster"            ? window.openCompare()
                                                                   : nullptr;
      if (!cmp) {
        std::fprintf(stderr, "cumulus: cannot compare '%s' on these files\n", qPrintable(what));
        return 1;
      }
      cmp->resize(w, h);
      cmp->show();
      bool done = false;
      QObject::connect(cmp, &cumulus::app::CompareWindow::finished, [&](bool) { done = true; });
      cmp->run();
      while (!done)
        app.processEvents(QEventLoop::AllEvents, 50);
      QElapsedTimer settle;
      settle.start();
      while (settle.elapsed() < 800)
        app.processEvents(QEventLoop::AllEvents, 50);
      const QString out = whole_path(parser, shot_window, shot);
      try {
        cumulus::app::write_png(out, cmp->grab().toImage());
      } catch (const std::exception& e) {
        std::fprintf(stderr, "cumulus: %s\n", e.what());
        return 1;
      }
      std::printf("wrote %s\n", qPrintable(out));
      return 0;
    }
    if (whole) {
      window.resize(w, h);
      while (t.elapsed() < 900)
        app.processEvents(QEventLoop::AllEvents, 50);
    }
    if (!(whole ? window.saveWindowScreenshot(out, &err)
                : window.exportViewImage(out, w, h, &err))) {
      std::fprintf(stderr, "cumulus: %s\n", qPrintable(err));
      return 1;
    }
    std::printf("wrote %s (%dx%d)\n", qPrintable(out), w, h);
    return errors.isEmpty() ? 0 : 1;
  }

  window.show();
  if (!files.isEmpty()) window.openFiles(files, depth_scale);
  if (parser.isSet(cluster)) {
    cumulus::ClusterParams p = window.clusterPanel()->params();
    p.tolerance = parser.value(cluster).toFloat();
    window.clusterPanel()->setParams(p);
    QObject::connect(&window, &cumulus::app::MainWindow::loadingFinished, &window,
                     &cumulus::app::MainWindow::runClustering, Qt::SingleShotConnection);
  }
  if (parser.isSet(compare))
    QObject::connect(
        &window, &cumulus::app::MainWindow::loadingFinished, &window,
        [&window] {
          if (auto* cmp = window.openCompare()) {
            cmp->show();
            cmp->run();
          }
        },
        Qt::SingleShotConnection);
  if (parser.isSet(quit_after))
    QTimer::singleShot(parser.value(quit_after).toInt(), &app, &QApplication::quit);
  return app.exec();
}
