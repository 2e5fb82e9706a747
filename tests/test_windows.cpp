// The tool windows under a real X server (Xvfb): registration, features and the two compare
// windows run their methods off the UI thread, judge them against the reference and export.
#include <QApplication>
#include <QElapsedTimer>
#include <QProcess>
#include <QSignalSpy>
#include <QSurfaceFormat>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStatusBar>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTableView>
#include <QTableWidget>

#include <Eigen/LU>

#include "cluster/cluster.h"
#include "cluster_panel.h"
#include "colormap.h"
#include "compare_window.h"
#include "core/device.h"
#include "core/error.h"
#include "depth_view.h"
#include "feature_panel.h"
#include "features/features.h"
#include "features_window.h"
#include "generate/generate.h"
#include "gui_support.h"
#include "histogram_chart.h"
#include "history_window.h"
#include "icp_panel.h"
#include "main_window.h"
#include "nns/nns.h"
#include "registration/global.h"
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

// Runs every checked method of a compare window once; whether all of them finished.
[[nodiscard]] bool run_once(app::CompareWindow* cmp) {
  cmp->setRepeats(1);
  cmp->show();
  QSignalSpy done(cmp, &app::CompareWindow::finished);
  cmp->run();
  return QTest::qWaitFor([&] { return done.count() == 1; }, 120000) && done.at(0).at(0).toBool();
}

// The registration window on the sample pair (source, then target), PCL's ICP chosen; null
// when the pair does not open.
app::RegistrationWindow* open_sample_pair(app::MainWindow& w) {
  w.setProperty("scripted", true);
  w.show();
  setLive(w.clusterPanel(), false);
  if (!w.openFilesNow({sample("object_source.ply"), sample("object_target.ply")}).isEmpty())
    return nullptr;
  w.setCurrentRow(1);
  auto* reg = w.openRegistration();
  reg->show();
  reg->panel()->setMethod(IcpMethod::Cpu);
  return reg;
}

FeatureParams feature_params(Descriptor d, Neighbourhood histograms, Neighbourhood normals) {
  FeatureParams p;
  p.descriptor = d;
  p.neighbourhood = histograms;
  p.normals.neighbourhood = normals;
  return p;
}

// The features window on the sample object, PCL's method and `params` chosen; null when it does
// not open.
app::FeaturesWindow* open_sample_features(app::MainWindow& w, const FeatureParams& params) {
  w.setProperty("scripted", true);
  w.show();
  setLive(w.clusterPanel(), false);
  if (!w.openFilesNow({sample("object_target.ply")}).isEmpty()) return nullptr;
  w.setCurrentRow(0);
  auto* fw = w.openFeatures();
  fw->show();
  fw->panel()->setMethod(FeatureMethod::Cpu);
  fw->panel()->setParams(params);
  return fw;
}

class TestWindows : public QObject {
  Q_OBJECT

 private slots:
  void init() { QSettings().clear(); }

  // Every panel starts on its table's default method for this machine and offers GPU methods
  // only where a GPU is usable; a GPU method chosen when none is falls back to the table's
  // default without a GPU.
  void panelsStartOnThisMachinesDefaultMethod() {
    const bool gpu = query_device().available;
    ui::ClusterPanel cluster;
    ui::SegmentPanel segment;
    ui::IcpPanel icp;
    ui::FeaturePanel features;
    QCOMPARE(cluster.method(), default_method<ClusterMethod>());
    QCOMPARE(segment.method(), default_method<SegmentMethod>());
    QCOMPARE(icp.method(), default_method<IcpMethod>());
    QCOMPARE(features.method(), default_method<FeatureMethod>());
    auto* box = cluster.findChild<QComboBox*>();
    auto* model = qobject_cast<QStandardItemModel*>(box->model());
    QVERIFY(model);
    for (int i = 0; i < box->count(); ++i)
      if (is_gpu_method(ClusterMethod(box->itemData(i).toInt())))
        QCOMPARE(model->item(i)->isEnabled(), gpu);
    segment.setMethod(SegmentMethod::Gpu);
    segment.setGpuAvailable(false, "none in this test");
    QCOMPARE(segment.method(), SegmentMethod::CpuMt);
    icp.setMethod(IcpMethod::Gpu);
    icp.setGpuAvailable(false, "none in this test");
    QCOMPARE(icp.method(), IcpMethod::Cpu);
  }

  // An unlimited maximum cluster size reads "no limit", not 2147483647, and round-trips.
  void clusterMaxSizeSaysNoLimit() {
    ui::ClusterPanel cluster;
    auto spins = cluster.findChildren<QSpinBox*>();
    auto it = std::find_if(spins.begin(), spins.end(),
                           [](QSpinBox* b) { return b->toolTip().contains("more points"); });
    QVERIFY(it != spins.end());
    QCOMPARE((*it)->text(), QString("no limit"));
    QCOMPARE(cluster.params().max_size, ClusterParams{}.max_size);
    cluster.setParams({0.5f, 1, 100});
    QCOMPARE((*it)->text(), QString("100"));
    QCOMPARE(cluster.params().max_size, std::size_t(100));
    cluster.setParams(ClusterParams{});
    QCOMPARE((*it)->text(), QString("no limit"));
  }

  // The cluster list shows a result's largest clusters (at most 2,000 rows) with their colour,
  // size and centroid; picking a row reports its cluster, selecting one from outside does not;
  // the size histogram can wait for its turn and then shows the result's sizes.
  void clusterListShowsTheLargestClustersAndPicksThem() {
    ui::ClusterPanel cluster;
    auto result = std::make_shared<ClusterResult>();
    std::vector<ClusterSummary> summary;
    for (int c = 0; c < 2500; ++c) {
      result->sizes.push_back(std::size_t(3000 - c));
      ClusterSummary s;
      s.id = c;
      s.size = result->sizes.back();
      s.centroid[0] = c;
      s.centroid[1] = -0.5;
      s.centroid[2] = 1.234;
      summary.push_back(s);
    }
    cluster.setResult(result, summary, true);
    auto* table = cluster.findChild<QTableView*>("clusters");
    QVERIFY(table);
    const QAbstractItemModel* m = table->model();
    QCOMPARE(m->rowCount(), 2000);
    QCOMPARE(m->columnCount(), 3);
    QCOMPARE(m->headerData(1, Qt::Horizontal).toString(), QString("Points"));
    QCOMPARE(m->data(m->index(7, 0)).toString(), QString("7"));
    QCOMPARE(m->data(m->index(7, 1)).toString(), QString("2993"));
    QCOMPARE(m->data(m->index(7, 2)).toString(), QString("7.00, -0.50, 1.23"));
    const Rgb8 c = ui::label_color(7);
    QCOMPARE(m->data(m->index(7, 0), Qt::DecorationRole).value<QColor>(), QColor(c.r, c.g, c.b));
    QVERIFY(!m->data(m->index(2000, 0)).isValid());
    // The histogram kept its (empty) plot until asked.
    QVERIFY(cluster.histogram()->bins().empty());
    cluster.showPendingSizes();
    QCOMPARE(int(cluster.histogram()->bins().size()), 12);  // 501..3000 points: bins 8 to 11
    QCOMPARE(cluster.histogram()->bins()[11], 3000 - 2048 + 1);
    QSignalSpy picked(&cluster, &ui::ClusterPanel::clusterSelected);
    table->selectRow(5);
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.at(0).at(0).toInt(), 5);
    QCOMPARE(cluster.selectedCluster(), 5);
    cluster.selectCluster(9);
    QCOMPARE(picked.count(), 1);
    QCOMPARE(cluster.selectedCluster(), 9);
    cluster.selectCluster(-1);
    QCOMPARE(cluster.selectedCluster(), -1);
    // A new result empties the selection; clearing empties the list and the histogram.
    table->selectRow(3);
    cluster.setResult(result, {summary.begin(), summary.begin() + 4});
    QCOMPARE(m->rowCount(), 4);
    QCOMPARE(cluster.selectedCluster(), -1);
    cluster.clearResult();
    QCOMPARE(m->rowCount(), 0);
    QVERIFY(cluster.histogram()->bins().empty());
  }

  // A user's edit is reported once; the panel filling itself in is not reported.
  void panelsReportEditsOnce() {
    ui::ClusterPanel cluster;
    QSignalSpy cluster_edits(&cluster, &ui::AlgorithmPanel::parametersChanged);
    cluster.setParams({0.3f, 2, 100});
    QCOMPARE(cluster_edits.count(), 0);
    cluster.findChild<QDoubleSpinBox*>()->setValue(0.7);
    QCOMPARE(cluster_edits.count(), 1);
    QCOMPARE(cluster.params().tolerance, 0.7f);
    // The epsilon slider and box follow each other without a second report.
    ui::SegmentPanel segment;
    QSignalSpy segment_edits(&segment, &ui::AlgorithmPanel::parametersChanged);
    segment.setEpsilon(0.05);
    QCOMPARE(segment_edits.count(), 0);
    segment.findChild<QSlider*>()->setValue(200);  // 10^(-3 + 2) = 0.1 m
    QCOMPARE(segment_edits.count(), 1);
    QCOMPARE(segment.params().epsilon, 0.1f);
    segment.findChild<QDoubleSpinBox*>()->setValue(0.01);
    QCOMPARE(segment_edits.count(), 2);
    QCOMPARE(segment.findChild<QSlider*>()->value(), 100);
  }

  // Every metric from the panel; point to plane on the target's estimated normals.
  void registrationAlignsThePairOffTheUiThread_data() {
    QTest::addColumn<int>("metric");
    QTest::newRow("point to point") << int(IcpMetric::PointToPoint);
    QTest::newRow("point to plane") << int(IcpMetric::PointToPlane);
    QTest::newRow("gicp") << int(IcpMetric::Gicp);
  }
  void registrationAlignsThePairOffTheUiThread() {
    app::MainWindow w;
    auto* reg = open_sample_pair(w);
    QVERIFY(reg);
    auto* panel = reg->panel();
    // Undo most of the known pose by hand (25 degrees about z); ICP does the rest.
    panel->setPerturbation(0, 0, 22, 0.045, -0.025, 0.02);
    QFETCH(int, metric);
    auto* metrics = panel->findChild<QComboBox*>("metric");
    QVERIFY(metrics);
    metrics->setCurrentIndex(metrics->findData(metric));
    QCOMPARE(int(panel->params().metric), metric);
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    reg->run();
    QVERIFY(reg->busy());  // the UI thread is free while PCL runs
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 1 && !reg->busy(), 60000);
    QVERIFY(done.last().at(0).toBool());
    const IcpResult* r = reg->lastResult();
    QVERIFY(r);
    QCOMPARE(r->method, std::string("cpu"));
    QCOMPARE(int(r->metric), metric);
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

  // PCL's ICP told never to converge (all three tests off, 100,000 iterations of 21,568
  // searches each over the sample pair: about an hour here) gives way as soon as new parameters
  // come: it stops after its iteration in progress, and the new run's result arrives.
  void aSlowCpuIcpGivesWayToTheNext() {
    app::MainWindow w;
    auto* reg = open_sample_pair(w);
    QVERIFY(reg);
    auto* panel = reg->panel();
    auto* iterations = panel->findChild<QSpinBox*>("maxIterations");
    auto* transformation = panel->findChild<QDoubleSpinBox*>("transformationEpsilon");
    auto* fitness = panel->findChild<QDoubleSpinBox*>("fitnessEpsilon");
    auto* absolute = panel->findChild<QDoubleSpinBox*>("absoluteMse");
    QVERIFY(iterations && transformation && fitness && absolute);
    QCOMPARE(panel->params().criteria.absolute_mse, 1e-12);  // PCL's default
    iterations->setValue(100000);
    transformation->setValue(0);
    fitness->setValue(-1);
    absolute->setValue(0);
    const IcpCriteria endless = panel->params().criteria;
    QVERIFY(endless.max_iterations == 100000 && endless.transformation_epsilon == 0 &&
            endless.fitness_epsilon < 0 && endless.absolute_mse == 0);
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(reg->statusBar()->currentMessage().contains("of at most 100000"),
                             30000);
    iterations->setValue(5);
    reg->run();
    // The endless run's outcome is dropped unseen (the new run is already under way when it
    // ends); what arrives is the new run's.
    QTRY_VERIFY_WITH_TIMEOUT(!reg->busy() && reg->lastResult(), 60000);
    QVERIFY(done.count() >= 1 && done.last().at(0).toBool());
    QCOMPARE(reg->lastResult()->iterations, 5);
    QCOMPARE(stop_name(reg->lastResult()->stop), stop_name(IcpStop::Iterations));
  }

  // PCL's prerejective on the bunny scans (50,000 iterations, each surviving hypothesis checked
  // against every keypoint: 277 s on one core here) shows its progress and stops when the
  // next run is asked for.
  void aSlowGlobalAlignmentGivesWayToTheNext() {
    const QString source = test::sharedDataFile("bunny/bun045.ply");
    const QString target = test::sharedDataFile("bunny/bun000.ply");
    if (source.isEmpty() || target.isEmpty())
      QSKIP(
          "real data bunny/bun045.ply and bun000.ply not found (expected under ../shared/data "
          "or $CUMULUS_DATA)");
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    setLive(w.clusterPanel(), false);
    QVERIFY(w.openFilesNow({source, target}).isEmpty());
    w.setCurrentRow(1);
    auto* reg = w.openRegistration();
    reg->show();
    auto* panel = reg->panel();
    panel->setMethod(IcpMethod::Cpu);
    panel->setGlobal(true, GlobalMethod::Cpu);
    QCOMPARE(panel->globalParams()->pcl_iterations, 50000);
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    QElapsedTimer clock;
    clock.start();
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(reg->statusBar()->currentMessage().contains("hypothesis"), 60000);
    QVERIFY(reg->statusBar()->currentMessage().contains("of at most 50000"));
    panel->setGlobal(false, GlobalMethod::Cpu);
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(!reg->busy() && reg->lastResult(), 60000);
    QVERIFY(done.count() >= 1 && done.last().at(0).toBool());
    QVERIFY(!reg->lastGlobal());  // the new run's: ICP from the perturbed pose only
    qInfo("the new run's result came %.1f s after the slow run started", 1e-3 * clock.elapsed());
  }

  // No guess: the global alignment finds the pose from a half-turned source, draws its pairs,
  // and applying it moves the source dataset, which undo puts back.
  void registrationAlignsGloballyAppliesAndUndoes() {
    app::MainWindow w;
    auto* reg = open_sample_pair(w);
    QVERIFY(reg);
    auto* panel = reg->panel();
    panel->setGlobal(true, GlobalMethod::CpuMutual);
    panel->setPerturbation(20, -30, 150, 0.1, -0.05, 0.03);
    QVERIFY(panel->globalParams().has_value());
    QSignalSpy done(reg, &app::RegistrationWindow::finished);
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 1 && !reg->busy(), 60000);
    QVERIFY(done.last().at(0).toBool());
    const GlobalResult* g = reg->lastGlobal();
    QVERIFY(g && g->found);
    const IcpResult* r = reg->lastResult();
    QVERIFY(r);
    const Eigen::Matrix4d truth = read_matrix_file(sample("object_pose.txt").toStdString());
    const Eigen::Matrix4d error = truth.inverse() * r->transform * panel->perturbation();
    QVERIFY2(rotation_angle_deg(error) < 1 && translation_norm(error) < 0.002,
             qPrintable(QString::fromStdString(format_matrix(error))));
    // Target, source before, the global pose and after ICP; a line a pair.
    const std::size_t ns = w.document()->at(0).cloud->size(),
                      nt = w.document()->at(1).cloud->size();
    QCOMPARE(reg->view()->cloud()->size(), nt + 3 * ns);
    QCOMPARE(reg->view()->segmentCount(), g->matches.size());
    QVERIFY(panel->findChild<QCheckBox*>() != nullptr);
    // Apply moves the dataset; undo puts the same cloud back.
    const auto original = w.document()->at(0).cloud;
    const auto aligned = reg->alignedSource();
    QVERIFY(reg->applyToSource());
    QVERIFY(w.document()->at(0).cloud != original);
    QCOMPARE(w.document()->at(0).cloud->points[7].x, aligned->points[7].x);
    QVERIFY(panel->findChild<QPushButton*>("undoApply")->isEnabled());
    QVERIFY(reg->undoApply());
    QCOMPARE(w.document()->at(0).cloud, original);
    QVERIFY(!reg->undoApply());  // nothing left to undo
    // A voxel too coarse for keypoints: no alignment, said so, nothing lost.
    panel->findChild<QDoubleSpinBox*>("keypointVoxel")->setValue(5.0);
    reg->run();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() >= 2 && !reg->busy(), 60000);
    QVERIFY(!done.last().at(0).toBool());
    QVERIFY(reg->lastGlobal() && !reg->lastGlobal()->found);
    QVERIFY(!reg->lastResult());
    QCOMPARE(w.document()->count(), 2);
  }

  void featurePanelOffersPclNormals() {
    ui::FeaturePanel panel;
    QVERIFY(!panel.params().normals.pcl_compatible);
    QSignalSpy edits(&panel, &ui::AlgorithmPanel::parametersChanged);
    auto* box = panel.findChild<QCheckBox*>("pclNormals");
    QVERIFY(box);
    box->setChecked(true);
    QCOMPARE(edits.count(), 1);
    QVERIFY(panel.params().normals.pcl_compatible);
    FeatureParams p = panel.params();
    p.normals.pcl_compatible = false;
    panel.setParams(p);
    QVERIFY(!box->isChecked());
  }

  void icpPanelOffersRobustKernels() {
    ui::IcpPanel panel;
    QCOMPARE(panel.params().kernel, RobustKernel::None);
    QSignalSpy edits(&panel, &ui::AlgorithmPanel::parametersChanged);
    auto* kernel = panel.findChild<QComboBox*>("kernel");
    QVERIFY(kernel);
    kernel->setCurrentIndex(kernel->findData(int(RobustKernel::Tukey)));
    QCOMPARE(edits.count(), 1);
    QCOMPARE(panel.params().kernel, RobustKernel::Tukey);
    QVERIFY(panel.params().kernel_scale > 0);
    validate(panel.params());  // what the panel gives always passes the backend's checks
  }

  void featuresWindowPicksColoursAndExports() {
    app::MainWindow w;
    const FeatureParams p =
        feature_params(Descriptor::Fpfh, Neighbourhood::nearest(16), Neighbourhood::nearest(16));
    auto* fw = open_sample_features(w, p);
    QVERIFY(fw);
    auto* panel = fw->panel();
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
    const KnnResult knn =
        knn_search(cloud->points, std::span(cloud->points).subspan(100, 1), 16, NnsMethod::Cpu);
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

  // A CPU run far too slow to wait for (PFH over about 1,900 neighbours for each of 27,651
  // points: 1.8 million pairs a point, 5 * 10^10 in all) gives way as soon as new parameters
  // come: it stops between two of PCL's searches, and the new parameters' result arrives.
  void aSlowCpuFeatureRunGivesWayToTheNext() {
    const FeatureParams slow =
        feature_params(Descriptor::Pfh, Neighbourhood::within(0.05f), Neighbourhood::nearest(8));
    app::MainWindow w;
    auto* fw = open_sample_features(w, slow);
    QVERIFY(fw);
    QCOMPARE(fw->panel()->params().neighbourhood.radius, 0.05f);
    QSignalSpy done(fw, &app::FeaturesWindow::finished);
    fw->run();
    // Under way: PCL's searches are being counted and shown.
    QTRY_VERIFY_WITH_TIMEOUT(fw->statusBar()->currentMessage().contains("% done"), 30000);
    QVERIFY(fw->busy());
    FeatureParams quick = slow;
    quick.neighbourhood = Neighbourhood::nearest(8);
    fw->panel()->setParams(quick);
    fw->run();
    QTRY_VERIFY_WITH_TIMEOUT(!fw->busy() && fw->lastResult(), 60000);
    QVERIFY(done.count() >= 1 && done.last().at(0).toBool());
    const FeatureResult* r = fw->lastResult();
    const FeatureResult direct =
        compute_features(*w.document()->at(0).cloud, quick, FeatureMethod::Cpu);
    QCOMPARE(r->bins, 125);
    QCOMPARE(r->histograms.size(), direct.histograms.size());
    QVERIFY(std::memcmp(r->histograms.data(), direct.histograms.data(),
                        direct.histograms.size() * sizeof(float)) == 0);
  }

  void compareModeTimesJudgesAndRecords() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    setLive(w.clusterPanel(), false);
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
      QVERIFY(a.identical || a.summary.isEmpty());
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

  // Cancel ends the run in progress, not only the runs after it: PCL's clustering of the sample
  // street at 10 m (each search finds a large part of the street) stops at its next search.
  void compareCancelStopsTheRunInProgress() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    w.show();
    setLive(w.clusterPanel(), false);
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    w.clusterPanel()->setParams({10.0f, 1, 1000000});
    std::unique_ptr<app::CompareWindow> cmp(w.openCompare());
    QVERIFY(cmp);
    cmp->setMethods(std::vector<ClusterMethod>{ClusterMethod::Cpu});
    cmp->setRepeats(1);
    cmp->show();
    QSignalSpy finished(cmp.get(), &app::CompareWindow::finished);
    cmp->run();
    QTest::qWait(3000);  // well into the run
    QVERIFY(cmp->busy() && finished.isEmpty());
    QElapsedTimer clock;
    clock.start();
    cmp->cancel();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, 60000);
    QVERIFY2(clock.elapsed() < 10000, qPrintable(QString("%1 ms").arg(clock.elapsed())));
    QVERIFY(!finished.at(0).at(0).toBool());
    QVERIFY(cmp->outcomes().empty());
  }

  void segmentCompareListsDifferingColumns() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QVERIFY(w.openFilesNow({sample("street_range.png")}, 1.0 / 500).isEmpty());
    std::unique_ptr<app::CompareWindow> cmp(w.openSegmentCompare());
    QVERIFY(cmp);
    cmp->setRepeats(2);
    cmp->show();
    QSignalSpy finished(cmp.get(), &app::CompareWindow::finished);
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

  // The same window compares ICP methods on the registration window's pair and features methods
  // on the features window's cloud: every usable method runs, the reference leads the table.
  void compareWindowCoversRegistrationAndFeatures() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QVERIFY(w.openFilesNow({sample("object_source.ply"), sample("object_target.ply")}).isEmpty());
    const bool gpu = query_device().available;
    std::unique_ptr<app::CompareWindow> icp(w.openIcpCompare());
    QVERIFY(icp);
    QVERIFY(run_once(icp.get()));
    QCOMPARE(icp->outcomes().size(), std::size_t(gpu ? 2 : 1));
    QCOMPARE(icp->table()->item(0, 0)->text(), QString("cpu"));
    QCOMPARE(icp->table()->item(0, 4)->text(), QString("reference"));
    for (const auto& a : icp->agreements())
      QVERIFY2(a.identical, qPrintable(a.summary));
    w.setCurrentRow(1);
    std::unique_ptr<app::CompareWindow> features(w.openFeaturesCompare());
    QVERIFY(features);
    QVERIFY(run_once(features.get()));
    QCOMPARE(features->outcomes().size(), std::size_t(gpu ? 2 : 1));
    QCOMPARE(features->table()->item(0, 4)->text(), QString("reference"));
    QCOMPARE(features->chart()->bars().size(), features->outcomes().size());
  }

  // The Objects panel's chain in the same window: every method, a verdict per stage, each half
  // showing its method's filtered points.
  void compareWindowCoversThePipeline() {
    app::MainWindow w;
    w.setProperty("scripted", true);
    QVERIFY(w.openFilesNow({sample("street_scene.pcd")}).isEmpty());
    std::unique_ptr<app::CompareWindow> cmp(w.openPipelineCompare());
    QVERIFY(cmp);
    QVERIFY(cmp->windowTitle().contains("pipeline"));
    QVERIFY(run_once(cmp.get()));
    const bool gpu = query_device().available;
    QCOMPARE(cmp->outcomes().size(), std::size_t(gpu ? 2 : 1));
    QCOMPARE(cmp->table()->item(0, 0)->text(), QString("cpu"));
    QCOMPARE(cmp->table()->item(0, 4)->text(), QString("reference"));
    // The filters are deterministic and agree; the RANSAC plane is random and may miss issue
    // 32's bounds, which the verdict then names alone (on the H200 the street's GPU plane has
    // 16,872 inliers against PCL's 16,873: docs/benchmarks.md).
    for (const auto& a : cmp->agreements())
      QVERIFY2(a.identical || a.summary.isEmpty() ||
                   (a.summary.startsWith("DIFFERENT: ground plane ") && !a.summary.contains(";")),
               qPrintable(a.summary));
    QCOMPARE(cmp->chart()->bars().size(), cmp->outcomes().size());
  }
};

int main(int argc, char** argv) {
  return run_gui_tests<TestWindows>(argc, argv);
}
#include "test_windows.moc"
