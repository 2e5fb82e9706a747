// The Objects panel (issue 32): opening a LiDAR scan brings it to the front and finds the scan's
// objects with the ground removed (one click turns that off), the view shows the ground grey
// and the objects boxed, an object selected is highlighted, objects export as CSV and JSON, and
// presets round-trip between the panel and cumulus-cli pipeline.
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStatusBar>

#include <sstream>

#include "commands.h"
#include "core/error.h"
#include "gui_support.h"
#include "io/io.h"
#include "main_window.h"
#include "objects/pipeline.h"
#include "pipeline_controller.h"
#include "pipeline_panel.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

namespace {

QString read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// Shows `w` with the sample street open (a LiDAR scan: the Objects panel in front runs the CPU
// chain on it) and waits until the chain has run and nothing more is under way.
void open_street(app::MainWindow& w, const QSignalSpy& done) {
  w.setProperty("scripted", true);
  w.show();
  w.pipelinePanel()->setMethod(PipelineMethod::Cpu);
  QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
  QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 1 && !w.pipeline()->busy(), 60000);
}

}  // namespace

class TestObjectsPanel : public QObject {
  Q_OBJECT

 private slots:
  void openingAScanFindsItsObjects() {
    app::MainWindow w;
    QSignalSpy done(w.pipeline(), &app::PipelineController::finished);
    open_street(w, done);
    QVERIFY(w.pipelinePanel()->inFront());
    QVERIFY(done.last().at(0).toBool());
    const auto r = w.pipeline()->result();
    QVERIFY(r);
    // The panel's chain is the CLI's LiDAR chain, the library's own result.
    const PipelineResult direct = run_pipeline(*w.document()->at(0).cloud, lidar_chain(), "cpu");
    QCOMPARE(r->objects.size(), direct.objects.size());
    QCOMPARE(r->ground_points, direct.ground_points);
    QVERIFY(r->objects.size() > 20);
    QCOMPARE(w.cloudView()->cloud().get(), w.pipeline()->shown().get());
    QCOMPARE(int(w.cloudView()->objectBoxCount()), int(r->objects.size()));
    // One click turns the ground removal off: everything off the filters is clustered.
    QComboBox* ground = nullptr;
    for (auto* box : w.pipelinePanel()->findChildren<QComboBox*>())
      if (box->findData("range-rdp") >= 0) ground = box;
    QVERIFY(ground);
    QTRY_VERIFY_WITH_TIMEOUT(!w.pipeline()->busy(), 60000);
    int runs = int(done.count());
    ground->setCurrentIndex(ground->findData("none"));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > runs && !w.pipeline()->busy(), 60000);
    QCOMPARE(w.pipeline()->result()->ground_points, std::size_t(0));
    QVERIFY(!w.pipeline()->result()->ground_plane);
    // The range image's ground on the same scan.
    runs = int(done.count());
    ground->setCurrentIndex(ground->findData("range-rdp"));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > runs && !w.pipeline()->busy(), 60000);
    QCOMPARE(w.pipeline()->result()->stages[1].name, std::string("range ground"));
    QVERIFY(w.pipeline()->result()->ground_points > 0);
    // Selecting an object says what it is.
    w.pipelinePanel()->selectObject(0);
    w.pipeline()->selectObject(0);
    QVERIFY(w.statusBar()->currentMessage().startsWith("Object "));
  }

  void objectsExportAsCsvAndJson() {
    app::MainWindow w;
    QSignalSpy done(w.pipeline(), &app::PipelineController::finished);
    open_street(w, done);
    const auto r = w.pipeline()->result();
    QTemporaryDir dir;
    const QString csv = dir.path() + "/objects.csv", json = dir.path() + "/objects.json";
    {
      ModalScript script({choose_file(csv)});
      emit w.pipelinePanel()->exportCsvRequested();
      QCOMPARE(script.answered(), std::size_t(1));
    }
    {
      ModalScript script({choose_file(json)});
      emit w.pipelinePanel()->exportJsonRequested();
      QCOMPARE(script.answered(), std::size_t(1));
    }
    QCOMPARE(read_all(csv).trimmed().split('\n').size(), int(r->objects.size()) + 1);
    QJsonParseError parse{};
    const QJsonDocument doc = QJsonDocument::fromJson(read_all(json).toUtf8(), &parse);
    QCOMPARE(parse.error, QJsonParseError::NoError);
    QCOMPARE(doc.array().size(), int(r->objects.size()));
    QCOMPARE(doc.array().at(0).toObject().value("box_corners").toArray().size(), 8);
  }

  // A slow chain (PCL's clustering of the whole street at 10 m) shows its share done and gives
  // way to the next request between two of its searches.
  void aSlowChainGivesWayToTheNext() {
    app::MainWindow w;
    QSignalSpy done(w.pipeline(), &app::PipelineController::finished);
    open_street(w, done);
    PipelineParams slow = lidar_chain();
    slow.voxel.reset();
    slow.cluster->tolerance = 10;
    w.pipelinePanel()->setParams(slow);
    w.pipeline()->run();
    // The status bar says how far: with the ground and the clustering as the chain's two stages,
    // past one half is within the clustering, a share only its searches report.
    const auto share = [&w] {
      static const QRegularExpression done_share("^Objects: (\\d+) % done");
      const auto m = done_share.match(w.statusBar()->currentMessage());
      return m.hasMatch() ? m.captured(1).toInt() : -1;
    };
    QTRY_VERIFY_WITH_TIMEOUT(share() > 50, 60000);
    QVERIFY(w.pipeline()->busy());
    const auto runs = done.count();
    w.pipelinePanel()->setParams(lidar_chain());
    QElapsedTimer clock;
    clock.start();
    w.pipeline()->run();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > runs && !w.pipeline()->busy(), 60000);
    QVERIFY2(clock.elapsed() < 20000, qPrintable(QString("%1 ms").arg(clock.elapsed())));
    QVERIFY(done.last().at(0).toBool());
    const PipelineResult direct = run_pipeline(*w.document()->at(0).cloud, lidar_chain(), "cpu");
    QCOMPARE(w.pipeline()->result()->objects.size(), direct.objects.size());
    QCOMPARE(w.pipeline()->result()->stages[0].name, std::string("voxel grid"));
  }

  // A preset saved by the panel loads back into it and runs in the CLI with the same objects.
  void presetsRoundTripWithTheCli() {
    ui::PipelinePanel panel;
    PipelineParams p = lidar_chain();
    p.statistical = StatisticalOutlierParams{10, 2.0, false};
    p.cluster->tolerance = 0.6f;
    panel.setParams(p);
    panel.setMethod(PipelineMethod::Cpu);
    const QJsonObject preset = panel.preset();
    ui::PipelinePanel other;
    other.setPreset(preset);
    QCOMPARE(other.preset(), preset);
    QCOMPARE(other.params().statistical->mean_k, 10);
    QCOMPARE(other.params().cluster->tolerance, 0.6f);
    QTemporaryDir dir;
    const QString path = dir.path() + "/preset.json";
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QJsonDocument(preset).toJson());
    f.close();
    std::ostringstream out, err;
    QCOMPARE(cli::cli_main({"pipeline", sample("street_scene.pcd").toStdString(), "--preset",
                            path.toStdString(), "--json"},
                           out, err),
             0);
    const QJsonObject j = QJsonDocument::fromJson(QByteArray::fromStdString(out.str())).object();
    const PipelineResult direct =
        run_pipeline(load_cloud(sample("street_scene.pcd").toStdString()), other.params(), "cpu");
    QCOMPARE(j.value("objects").toArray().size(), int(direct.objects.size()));
    // Unknown settings are refused with the valid ones.
    QJsonObject bad = preset;
    bad["voxels"] = 0.2;
    try {
      other.setPreset(bad);
      QFAIL("an unknown key was accepted");
    } catch (const Error& e) {
      QVERIFY(QString(e.what()).contains("voxels") && QString(e.what()).contains("tolerance"));
    }
    bad = preset;
    bad["ground"] = "magic";
    QVERIFY_THROWS_EXCEPTION(Error, other.setPreset(bad));
    QCOMPARE(other.preset(), preset);  // a refused preset changes nothing
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestObjectsPanel>(argc, argv);
}
#include "test_objects_panel.moc"
