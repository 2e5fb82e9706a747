// Sequences in the GUI (issue 23): a folder of frames opens as one dataset with the timeline;
// stepping, seeking, playing (real time, skipping what the live panel cannot keep up with) and
// looping move the frame; the Objects panel in front follows every frame; frames are read
// ahead within a memory budget; a frame that cannot be read is reported and playback goes on;
// odometry draws the sensor's path, exports its poses and builds a map.
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStatusBar>

#include "cluster_panel.h"
#include "core/error.h"
#include "generate/generate.h"
#include "gui_support.h"
#include "io/io.h"
#include "line_chart.h"
#include "main_window.h"
#include "odometry_controller.h"
#include "pipeline_controller.h"
#include "pipeline_panel.h"
#include "sequence/trajectory.h"
#include "sequence_player.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

namespace {

// A small drive: `frames` frames of 8 beams in DIR, as KITTI lays one out.
void write_drive(const QString& dir, int frames) {
  StreetDriveParams d;
  d.scene.beams = 8;
  d.scene.azimuth_steps = 400;
  d.frames = frames;
  QFile times(dir + "/times.txt");
  QVERIFY(times.open(QIODevice::WriteOnly));
  for (int k = 0; k < frames; ++k) {
    save_kitti_bin(QString("%1/%2.bin").arg(dir).arg(k, 6, 10, QChar('0')).toStdString(),
                   generate_street_frame(d, k, nullptr));
    times.write(QByteArray::number(0.1 * k) + "\n");
  }
}

}  // namespace

class TestSequencePlayer : public QObject {
  Q_OBJECT

 private slots:
  void stepsSeeksAndPlaysThroughASequence() {
    QTemporaryDir dir;
    write_drive(dir.path(), 6);
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    w.pipelinePanel()->setMethod(PipelineMethod::Cpu);
    QVERIFY(w.openSequence(dir.path()).isEmpty());
    wait_ms(200);
    // the docks' tabs settle
    app::SequencePlayer* p = w.player();
    QCOMPARE(p->row(), 0);
    QCOMPARE(p->frameCount(), std::size_t(6));
    QCOMPARE(p->frame(), std::size_t(0));
    QVERIFY(w.document()->at(0).sequence);
    QCOMPARE(w.document()->at(0).sequence->times.size(), std::size_t(6));
    // A sequence is a LiDAR drive: the Objects panel is in front and runs on the frame.
    QVERIFY(w.pipelinePanel()->inFront());
    QVERIFY(!w.clusterPanel()->inFront());  // tabbed behind: it does not run on frames
    QTRY_VERIFY_WITH_TIMEOUT(w.pipeline()->result() && !w.pipeline()->busy(), 30000);
    QSignalSpy shown(p, &app::SequencePlayer::frameShown);
    p->step(1);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(1), 10000);
    const auto frame1 = load_cloud(dir.path().toStdString() + "/000001.bin");
    QCOMPARE(w.document()->at(0).cloud->size(), frame1.size());
    QTRY_VERIFY_WITH_TIMEOUT(!w.pipeline()->busy() && w.pipeline()->result() &&
                                 w.pipeline()->result()->filtered.size() <= frame1.size() &&
                                 w.cloudView()->cloud() == w.pipeline()->shown(),
                             30000);
    p->seek(4);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(4), 10000);
    p->step(-1);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(3), 10000);
    // Playing runs to the last frame and stops there; what the panel could not keep up with
    // was skipped, never queued.
    p->setRate(50);
    p->play();
    QVERIFY(p->playing());
    QTRY_VERIFY_WITH_TIMEOUT(!p->playing(), 20000);
    QCOMPARE(p->frame(), std::size_t(5));
    qInfo("played frames 3 to 5 at 50 fps: %zu skipped", p->skipped());
    // Looping comes back round.
    p->setLoop(true);
    p->setRate(20);
    p->play();
    QTRY_VERIFY_WITH_TIMEOUT(p->frame() < 3, 20000);
    p->pause();
    QVERIFY(!p->playing());
    QVERIFY(shown.count() >= 5);
  }

  void readsAheadWithinItsBudgetAndReportsBadFrames() {
    QTemporaryDir dir;
    write_drive(dir.path(), 12);
    {
      QFile bad(dir.path() + "/000007.bin");  // not a whole number of points
      QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
      bad.write("broken");
    }
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    w.findChild<QDockWidget*>("filters")->raise();  // no live panel: frames come at once
    QVERIFY(w.openSequence(dir.path()).isEmpty());
    app::SequencePlayer* p = w.player();
    // The frame and 8 ahead, but for the broken one.
    QTRY_VERIFY_WITH_TIMEOUT(p->cachedFrames() >= 8, 10000);
    const std::size_t one = p->cachedBytes() / p->cachedFrames();
    p->setBudget(3 * one);
    p->step(1);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(1), 10000);
    QVERIFY2(p->cachedFrames() <= 4, qPrintable(QString::number(p->cachedFrames())));
    QSignalSpy failed(p, &app::SequencePlayer::failed);
    p->seek(7);
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
    QVERIFY(failed.at(0).at(0).toString().contains("000007.bin"));
    QCOMPARE(p->frame(), std::size_t(1));  // still on show
    p->seek(8);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(8), 10000);
    // Playing over the broken frame passes it by without saying so again.
    p->seek(5);
    QTRY_COMPARE_WITH_TIMEOUT(p->frame(), std::size_t(5), 10000);
    p->setRate(20);
    p->play();
    QTRY_VERIFY_WITH_TIMEOUT(!p->playing(), 20000);
    QCOMPARE(p->frame(), std::size_t(11));
    QCOMPARE(failed.count(), 1);
    // What cannot be a sequence says why.
    QVERIFY(w.openSequence(dir.path() + "/nothing*.bin").contains("nothing"));
    QCOMPARE(w.document()->count(), 1);
  }

  // Sequence > Run Odometry: the trajectory in the view from the frame on show, its errors
  // against poses.txt, the poses exported, the map added as a dataset.
  void odometryDrawsTheTrajectoryAndMakesAMap() {
    QTemporaryDir dir;
    StreetDriveParams d;
    d.scene.beams = 32;
    d.frames = 10;
    Trajectory truth;
    for (int k = 0; k < d.frames; ++k) {
      std::array<double, 16> m{};
      save_kitti_bin(QString("%1/%2.bin").arg(dir.path()).arg(k, 6, 10, QChar('0')).toStdString(),
                     generate_street_frame(d, k, &m));
      truth.push_back(Eigen::Map<const Eigen::Matrix<double, 4, 4, Eigen::RowMajor>>(m.data()));
    }
    save_kitti_poses(dir.path().toStdString() + "/poses.txt", truth);
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    w.findChild<QDockWidget*>("filters")->raise();
    QVERIFY(w.openSequence(dir.path()).isEmpty());
    QSignalSpy done(w.odometry(), &app::OdometryController::finished);
    QVERIFY(w.odometry()->run());
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 120000);
    QVERIFY(done.at(0).at(0).toBool());
    QCOMPARE(w.odometry()->poses().size(), std::size_t(10));
    // The run used the settings, the CLI's defaults to start with, and says so.
    QVERIFY2(w.statusBar()->currentMessage().contains("point to plane, ground kept"),
             qPrintable(w.statusBar()->currentMessage()));
    QVERIFY(w.odometry()->errors());
    qInfo("ATE %.3f m, drift %.2f %%", w.odometry()->errors()->ate_rmse,
          w.odometry()->errors()->drift_percent);
    QVERIFY(w.odometry()->errors()->ate_rmse < 0.3);
    // The drift plot: one point a frame along the ground truth's path, shown after the run.
    QTRY_VERIFY(w.driftWindow()->isVisible());
    QCOMPARE(w.driftChart()->pointCount(), std::size_t(10));
    QVERIFY(w.driftWindow()->windowTitle().contains("ATE"));
    w.driftWindow()->grab();  // lays the chart out
    QVERIFY(w.driftChart()->xTicks().size() >= 2);
    QVERIFY(w.driftChart()->yTicks().size() >= 2);
    QCOMPARE(w.cloudView()->pathPointCount(), std::size_t(10));
    w.player()->step(1);
    QTRY_COMPARE_WITH_TIMEOUT(w.player()->frame(), std::size_t(1), 10000);
    QCOMPARE(w.cloudView()->pathPointCount(), std::size_t(10));
    const QString out = dir.path() + "/estimate.txt";
    {
      ModalScript script({choose_file(out)});
      w.odometry()->exportPoses();
      QCOMPARE(script.answered(), std::size_t(1));
    }
    QCOMPARE(read_kitti_poses(out.toStdString()).size(), std::size_t(10));
    QSignalSpy added(w.odometry(), &app::OdometryController::mapAdded);
    QVERIFY(w.odometry()->addMap(0.2));
    QTRY_COMPARE_WITH_TIMEOUT(added.count(), 1, 60000);
    const int map = added.at(0).at(0).toInt();
    QVERIFY(w.document()->at(map).cloud->size() > 1000);
    QCOMPARE(w.currentRow(), map);
    QCOMPARE(w.cloudView()->pathPointCount(), std::size_t(0));  // not the sequence on show
  }

  // Sequence > Odometry Settings: the dialog edits what the next run uses; values the odometry
  // refuses change nothing and say why.
  void odometrySettingsAreEditedAndRefusedWhenBad() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    {
      ModalScript script({[](QWidget* dialog) {
        auto pick = [&](const char* name, int data) {
          auto* box = dialog->findChild<QComboBox*>(name);
          QVERIFY2(box, name);
          box->setCurrentIndex(box->findData(data));
        };
        pick("odometryMethod", int(IcpMethod::Cpu));
        pick("odometryMetric", int(IcpMetric::PointToPoint));
        pick("odometryGround", int(ScanGround::Keep));
        pick("odometryTarget", int(OdometryTarget::Scan));
        dialog->findChild<QSpinBox*>("odometryMapScans")->setValue(4);
        dialog->findChild<QDoubleSpinBox*>("odometryVoxel")->setValue(0.5);
        QMetaObject::invokeMethod(qobject_cast<QDialog*>(dialog), "accept", Qt::QueuedConnection);
      }});
      menu_action(w, "Odometry Settings")->trigger();
      QCOMPARE(script.answered(), std::size_t(1));
    }
    const app::OdometrySettings& s = w.odometry()->settings();
    QCOMPARE(s.method, IcpMethod::Cpu);
    QCOMPARE(s.params.metric, IcpMetric::PointToPoint);
    QCOMPARE(s.params.scan_ground, ScanGround::Keep);
    QCOMPARE(s.params.target, OdometryTarget::Scan);
    QCOMPARE(s.params.map_scans, 4);
    QCOMPARE(s.params.voxel, 0.5f);
    QCOMPARE(app::describe(s), QString("cpu, point to point, ground kept, last scan"));
    app::OdometrySettings bad = s;
    bad.params.normals_k = 1;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, w.odometry()->setSettings(bad));
    QCOMPARE(w.odometry()->settings().params.normals_k, s.params.normals_k);
    // Cancelled: nothing changes.
    {
      ModalScript script({[](QWidget* dialog) {
        dialog->findChild<QComboBox*>("odometryMetric")->setCurrentIndex(2);
        QMetaObject::invokeMethod(qobject_cast<QDialog*>(dialog), "reject", Qt::QueuedConnection);
      }});
      QVERIFY(!w.odometry()->editSettings(&w));
      QCOMPARE(script.answered(), std::size_t(1));
    }
    QCOMPARE(w.odometry()->settings().params.metric, IcpMetric::PointToPoint);
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestSequencePlayer>(argc, argv);
}
#include "test_sequence_player.moc"
