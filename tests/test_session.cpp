// Sessions: saving and reopening gives the same datasets, parameters, methods, colouring, camera
// and results; a session travels with its data; missing files are listed and bad sessions
// refused without touching what is open. Under a real X server (Xvfb).
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "cluster_panel.h"
#include "generate/generate.h"
#include "gui_support.h"
#include "io/io.h"
#include "main_window.h"
#include "odometry_controller.h"
#include "pipeline_panel.h"
#include "segment_panel.h"
#include "sequence_player.h"
#include "session.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

namespace {

// The street scene and an object, copied into `dir` (a session saved there names them relatively).
QStringList copy_data(const QString& dir) {
  QStringList out;
  for (const char* name : {"street_scene.pcd", "object_target.ply"}) {
    const QString to = dir + "/" + name;
    QFile::copy(sample(name), to);
    out << to;
  }
  return out;
}

int row_named(const app::MainWindow& w, const QString& name) {
  for (int r = 0; r < w.document()->count(); ++r)
    if (w.document()->at(r).name == name) return r;
  return -1;
}

}  // namespace

class TestSession : public QObject {
  Q_OBJECT

 private slots:
  void savingAndReopeningGivesTheSameWorkspace() {
    QTemporaryDir dir;
    const QStringList files = copy_data(dir.path());
    const QString session = dir.path() + "/work.cumulus";
    ui::VtkCloudView::CameraState camera;
    std::vector<std::size_t> sizes;
    {
      app::MainWindow w;
      w.setProperty("scripted", true);
      w.show();
      QVERIFY(QTest::qWaitForWindowExposed(&w));
      setLive(w.clusterPanel(), false);
      QVERIFY(w.openFilesNow(files).isEmpty());
      w.clusterPanel()->setParams({0.7f, 10, 100000});
      SegmentParams sp;
      sp.epsilon = 0.25f;
      sp.median = 3;
      w.segmentPanel()->setParams(sp);
      app::OdometrySettings os;
      os.method = IcpMethod::Cpu;
      os.params.metric = IcpMetric::Gicp;
      os.params.scan_ground = ScanGround::Remove;
      os.params.map_scans = 6;
      os.params.voxel = 0.4f;
      w.odometry()->setSettings(os);
      w.setCurrentRow(row_named(w, "street_scene.pcd"));
      QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
      w.runClustering();
      QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 60000);
      sizes = w.document()->at(w.currentRow()).clusters->sizes;
      camera = w.cloudView()->cameraState();
      camera.position = {12.5, -40.25, 30};
      camera.view_angle = 25;
      w.cloudView()->setCameraState(camera);
      QString err;
      QVERIFY2(w.saveSession(session, &err), qPrintable(err));
      QVERIFY(w.recentSessions().contains(session));
    }
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QSignalSpy opened(&w, &app::MainWindow::sessionOpened);
    QSignalSpy clustered(&w, &app::MainWindow::clusteringFinished);
    QVERIFY(w.openSession(session));
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 30000);
    QVERIFY(opened.at(0).at(0).toStringList().isEmpty());
    QCOMPARE(w.document()->count(), 2);
    QCOMPARE(w.document()->at(w.currentRow()).name, QString("street_scene.pcd"));
    QCOMPARE(w.clusterPanel()->params().tolerance, 0.7f);
    QCOMPARE(w.clusterPanel()->params().min_size, std::size_t(10));
    QCOMPARE(w.clusterPanel()->params().max_size, std::size_t(100000));
    QCOMPARE(w.segmentPanel()->params().epsilon, 0.25f);
    QCOMPARE(w.segmentPanel()->params().median, 3);
    QCOMPARE(app::describe(w.odometry()->settings()),
             QString("cpu, GICP, ground removed, local map of 6 scans"));
    QCOMPARE(w.odometry()->settings().params.voxel, 0.4f);
    const auto got = w.cloudView()->cameraState();
    QCOMPARE(got.position, camera.position);
    QCOMPARE(got.focal_point, camera.focal_point);
    QCOMPARE(got.view_angle, 25.0);
    // The clustering the session had is recomputed, with the same result.
    QTRY_COMPARE_WITH_TIMEOUT(clustered.count(), 1, 60000);
    QCOMPARE(w.document()->at(w.currentRow()).clusters->sizes, sizes);
  }

  void aSessionTravelsWithItsDataAndListsWhatIsMissing() {
    QTemporaryDir first, second;
    const QStringList files = copy_data(first.path());
    {
      app::MainWindow w;
      w.setProperty("scripted", true);
      setLive(w.clusterPanel(), false);
      QVERIFY(w.openFilesNow(files).isEmpty());
      QVERIFY(w.saveSession(first.path() + "/s.cumulus"));
    }
    // Moved elsewhere with its data, minus one file.
    QVERIFY(QFile::copy(first.path() + "/s.cumulus", second.path() + "/s.cumulus"));
    QVERIFY(QFile::copy(files[0], second.path() + "/street_scene.pcd"));
    QVERIFY(QFile::remove(files[1]));
    app::MainWindow w;
    w.setProperty("scripted", true);
    setLive(w.clusterPanel(), false);
    QSignalSpy opened(&w, &app::MainWindow::sessionOpened);
    QSignalSpy errors(&w, &app::MainWindow::errorReported);
    QVERIFY(w.openSession(second.path() + "/s.cumulus"));
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 30000);
    QCOMPARE(w.document()->count(), 1);
    QCOMPARE(QFileInfo(w.document()->at(0).path).absolutePath(),
             QFileInfo(second.path()).absoluteFilePath());
    const QStringList missing = opened.at(0).at(0).toStringList();
    QCOMPARE(missing.size(), 1);
    QVERIFY(missing[0].endsWith("object_target.ply"));
    QVERIFY(errors.count() >= 1);
  }

  void badSessionsAreRefusedAndNothingOpenIsTouched_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("says");
    QTest::newRow("not JSON") << QByteArray("{ not json") << "not a session";
    QTest::newRow("no version") << QByteArray("{\"datasets\": []}") << "not a Cumulus session";
    QTest::newRow("newer") << QByteArray("{\"cumulus_session\": 99}") << "newer Cumulus";
    QTest::newRow("bad tolerance")
        << QByteArray("{\"cumulus_session\": 1, \"panels\": {\"cluster\": {\"tolerance\": -1}}}")
        << "'tolerance'";
    QTest::newRow("bad odometry metric")
        << QByteArray("{\"cumulus_session\": 1, \"odometry\": {\"metric\": \"icp\"}}")
        << "'metric' must be point-to-point, point-to-plane or gicp, not icp";
    QTest::newRow("bad odometry map")
        << QByteArray("{\"cumulus_session\": 1, \"odometry\": {\"map_scans\": 0}}")
        << "'map_scans'";
    QTest::newRow("bad kind")
        << QByteArray(
               "{\"cumulus_session\": 1, \"datasets\": [{\"kind\": \"mesh\", \"path\": \"a\"}]}")
        << "'kind'";
  }
  void badSessionsAreRefusedAndNothingOpenIsTouched() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, says);
    QTemporaryDir dir;
    const QString path = dir.path() + "/bad.cumulus";
    writeBytes(path, bytes);
    app::MainWindow w;
    w.setProperty("scripted", true);
    setLive(w.clusterPanel(), false);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    QSignalSpy errors(&w, &app::MainWindow::errorReported);
    QVERIFY(!w.openSession(path));
    QCOMPARE(errors.count(), 1);
    const QString e = errors.at(0).at(0).toString();
    QVERIFY2(e.contains("bad.cumulus") && e.contains(says), qPrintable(e));
    QCOMPARE(w.document()->count(), 1);
  }

  void aSequenceComesBackAtItsFrame() {
    QTemporaryDir dir;
    StreetDriveParams d;
    d.scene.beams = 8;
    d.scene.azimuth_steps = 400;
    d.frames = 4;
    QDir().mkpath(dir.path() + "/drive");
    for (int k = 0; k < d.frames; ++k)
      save_kitti_bin(
          QString("%1/drive/%2.bin").arg(dir.path()).arg(k, 6, 10, QChar('0')).toStdString(),
          generate_street_frame(d, k, nullptr));
    const QString path = dir.path() + "/seq.cumulus";
    {
      app::MainWindow w;
      w.setProperty("scripted", true);
      w.pipelinePanel()->setLive(false);
      QVERIFY(w.openSequence(dir.path() + "/drive").isEmpty());
      w.player()->seek(2);
      QTRY_COMPARE_WITH_TIMEOUT(w.player()->frame(), std::size_t(2), 10000);
      QVERIFY(w.saveSession(path));
    }
    app::MainWindow w;
    w.setProperty("scripted", true);
    QSignalSpy opened(&w, &app::MainWindow::sessionOpened);
    QVERIFY(w.openSession(path));
    QTRY_COMPARE_WITH_TIMEOUT(opened.count(), 1, 30000);
    QVERIFY(w.document()->at(0).sequence);
    QTRY_COMPARE_WITH_TIMEOUT(w.player()->frame(), std::size_t(2), 10000);
  }

  void derivedDatasetsAreLeftOutWithAWord() {
    QTemporaryDir dir;
    app::MainWindow w;
    w.setProperty("scripted", true);
    setLive(w.clusterPanel(), false);
    QVERIFY(w.openFilesNow({sample("object_target.ply")}).isEmpty());
    app::Dataset derived = w.document()->at(0);
    derived.path.clear();
    derived.name = "filtered";
    w.document()->add(derived);
    const QString path = dir.path() + "/d.cumulus";
    QVERIFY(w.saveSession(path));
    const app::Session s = app::read_session(path);
    QCOMPARE(s.datasets.size(), std::size_t(1));
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestSession>(argc, argv);
}
#include "test_session.moc"
