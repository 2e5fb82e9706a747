// From a raw scan to objects in the GUI: the Filters panel's stages (voxel grid, crop box,
// outlier removal, ground removal) run live and give a dataset; clustering can take the ground
// plane out first, so a street's cars are not one ground cluster.
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStatusBar>

#include "cluster/cluster.h"
#include "cluster_panel.h"
#include "filter/filter.h"
#include "filter_controller.h"
#include "filter_panel.h"
#include "ground/ground.h"
#include "gui_support.h"
#include "io/io.h"
#include "main_window.h"
#include "test_support.h"
#include "vtk_cloud_view.h"

using namespace cumulus;
using namespace cumulus::test;

class TestScanToObjects : public QObject {
  Q_OBJECT

 private slots:
  // The filters panel on the sample street: the voxel grid's result (PCL's) is shown in the
  // view, an edit of the leaf re-runs by itself, the crop box, the outlier filters and the
  // ground plane's removal join in, and the filtered cloud becomes a dataset on request.
  void filtersPanelRunsLiveAndAddsADataset() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    w.findChild<QDockWidget*>("filters")->raise();  // a scan opens with the Objects panel
    const auto source = w.document()->at(0).cloud;
    QSignalSpy done(w.filters(), &app::FilterController::finished);
    w.filterPanel()->setMethod(FilterMethod::Cpu);
    w.filters()->run();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 30000);
    QVERIFY(done.at(0).at(0).toBool());
    const FilterResult direct = voxel_grid(*source, {}, FilterMethod::Cpu);
    QCOMPARE(w.filters()->filtered()->size(), direct.cloud.size());
    QCOMPARE(w.cloudView()->cloud().get(), w.filters()->filtered().get());
    QDoubleSpinBox* leaf = nullptr;
    for (auto* s : w.filterPanel()->findChildren<QDoubleSpinBox*>())
      if (s->toolTip().startsWith("Voxel edge")) leaf = s;
    QVERIFY(leaf);
    leaf->setValue(0.5);
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 2, 30000);
    QVERIFY(w.filters()->filtered()->size() < direct.cloud.size());
    ui::FilterSettings s = w.filterPanel()->settings();
    CropBoxParams box{{source->origin[0] - 10, source->origin[1] - 10, source->origin[2] - 5},
                      {source->origin[0] + 10, source->origin[1] + 10, source->origin[2] + 5}};
    s.crop = box;
    w.filterPanel()->setSettings(s);
    w.filters()->run();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 3, 30000);
    const FilterResult cropped = crop_box(*source, box, FilterMethod::Cpu);
    const FilterResult voxels = voxel_grid(cropped.cloud, *s.voxel, FilterMethod::Cpu);
    QCOMPARE(w.filters()->filtered()->size(), voxels.cloud.size());
    // The outlier filters follow the voxel grid.
    s.statistical = StatisticalOutlierParams{8, 1.0, false};
    s.radius = RadiusOutlierParams{1.0, 2, false};
    w.filterPanel()->setSettings(s);
    QCOMPARE(w.filterPanel()->settings().statistical->mean_k, 8);
    QCOMPARE(w.filterPanel()->settings().radius->radius, 1.0);
    w.filters()->run();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 4, 30000);
    QVERIFY(done.at(3).at(0).toBool());
    const FilterResult sor =
        remove_statistical_outliers(voxels.cloud, *s.statistical, FilterMethod::Cpu);
    const FilterResult ror = remove_radius_outliers(sor.cloud, *s.radius, FilterMethod::Cpu);
    QVERIFY(ror.cloud.size() < voxels.cloud.size());
    QCOMPARE(w.filters()->filtered()->size(), ror.cloud.size());
    // And the ground plane's removal last: what is left is what lies off PCL's plane.
    GroundPlaneParams level;
    level.axis = {0, 0, 1};
    s.ground = level;
    w.filterPanel()->setSettings(s);
    QVERIFY(w.filterPanel()->settings().ground->axis.has_value());
    w.filters()->run();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 5, 30000);
    QVERIFY(done.at(4).at(0).toBool());
    const GroundResult ground = segment_ground_plane(ror.cloud, level, GroundMethod::Cpu);
    QVERIFY(!ground.ground.empty());
    QCOMPARE(w.filters()->filtered()->size(), off_ground(ror.cloud, ground.ground).size());
    emit w.filterPanel()->addAsDatasetRequested();
    QCOMPARE(w.document()->count(), 2);
    QCOMPARE(w.document()->at(1).cloud->size(), w.filters()->filtered()->size());
    QVERIFY(w.document()->at(1).name.contains("filtered"));
    QCOMPARE(w.document()->at(0).cloud->size(), source->size());  // the input is untouched
  }

  // Cancel pressed while PCL's statistical filter runs (which cannot stop within) ends the
  // chain before its next stage: the radius filter at 5 m with no cap on the neighbours, which
  // would list every point's neighbours (more than 100 s here), never starts, and nothing is
  // shown.
  void filtersPanelStopsBetweenStages() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    w.findChild<QDockWidget*>("filters")->raise();
    QSignalSpy done(w.filters(), &app::FilterController::finished);
    w.filterPanel()->setMethod(FilterMethod::Cpu);
    ui::FilterSettings s = w.filterPanel()->settings();
    s.voxel.reset();
    s.statistical = StatisticalOutlierParams{kMaxOutlierMeanK, 1.0, false};
    s.radius = RadiusOutlierParams{5.0, 1000000, false};
    w.filterPanel()->setSettings(s);
    w.filters()->run();
    QTRY_VERIFY_WITH_TIMEOUT(w.statusBar()->currentMessage().startsWith(
                                 "Filtering: statistical outliers (stage 1 of 2)"),
                             30000);
    QVERIFY(w.filters()->busy());
    QElapsedTimer clock;
    clock.start();
    emit w.filterPanel()->cancelRequested();
    QTRY_VERIFY_WITH_TIMEOUT(!w.filters()->busy(), 90000);
    QVERIFY2(clock.elapsed() < 60000, qPrintable(QString("%1 ms").arg(clock.elapsed())));
    QCOMPARE(done.count(), 1);
    QVERIFY(!done.at(0).at(0).toBool());
    QVERIFY(!w.filters()->filtered());
  }

  // With the ground removed first, the street's road is no cluster: its points are unlabelled
  // and the clusters are those of the points off the level plane.
  void clusteringCanRemoveTheGroundFirst() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    auto* panel = w.clusterPanel();
    panel->setMethod(ClusterMethod::Cpu);
    panel->setParams({0.5f, 10, 1000000});
    QVERIFY(!panel->removeGround());  // off until asked for
    panel->setRemoveGround(true);
    QSignalSpy done(&w, &app::MainWindow::clusteringFinished);
    w.runClustering();
    QTRY_COMPARE_WITH_TIMEOUT(done.count(), 1, 180000);
    QVERIFY(done.at(0).at(0).toBool());
    const PointCloud& street = *w.document()->at(0).cloud;
    GroundPlaneParams level;
    level.axis = {0, 0, 1};
    const GroundResult ground = segment_ground_plane(street, level, GroundMethod::Cpu);
    const auto rest = off_ground(street, ground.ground);
    const ClusterResult direct =
        euclidean_cluster(gather_points(street, rest), {0.5f, 10, 1000000}, ClusterMethod::Cpu);
    const auto result = w.document()->at(0).clusters;
    QCOMPARE(result->sizes, direct.sizes);
    for (const auto i : ground.ground)
      QCOMPARE(result->labels[std::size_t(i)], -1);
    for (std::size_t i = 0; i < rest.size(); ++i)
      QCOMPARE(result->labels[std::size_t(rest[i])], direct.labels[i]);
    // The road (with everything touching it) was one cluster; now the largest, a facade, holds
    // under half as many points as the road, and the cars stand apart.
    QVERIFY(result->sizes.front() < ground.ground.size() / 2);
    QVERIFY(result->sizes.size() > 20);
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestScanToObjects>(argc, argv);
}
#include "test_scan_to_objects.moc"
