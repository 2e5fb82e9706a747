#include "cluster_controller.h"

#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QMessageBox>
#include <QTimer>

#include "cluster_panel.h"
#include "colormap.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "io/io.h"
#include "run_history.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

struct ClusterOutcome {
  std::shared_ptr<const PointCloud> cloud;
  std::shared_ptr<const ClusterResult> result;
  std::vector<ClusterSummary> summary;
};

// The CPU method (points searched) and a cloud beyond one GPU call (slabs) report progress and
// stop when the job is superseded or cancelled. With the ground removed first, the points off
// the level plane are clustered and the labels mapped back (ground points: -1).
ClusterOutcome cluster_job(std::shared_ptr<const PointCloud> cloud, const ClusterParams& params,
                           ClusterMethod method, bool remove_ground, const JobControl& control) {
  std::shared_ptr<ClusterResult> result;
  if (!remove_ground) {
    result = std::make_shared<ClusterResult>(
        euclidean_cluster(*cloud, params, method, control.callback()));
  } else {
    GroundPlaneParams level;
    level.axis = {0, 0, 1};
    const GroundResult ground = segment_ground_plane(
        *cloud, level, is_gpu_method(method) ? GroundMethod::Gpu : GroundMethod::Cpu);
    const std::vector<std::int32_t> rest = off_ground(*cloud, ground.ground);
    ClusterResult r =
        euclidean_cluster(gather_points(*cloud, rest), params, method, control.callback());
    decltype(r.labels) labels(cloud->size(), -1);
    for (std::size_t i = 0; i < rest.size(); ++i)
      labels[std::size_t(rest[i])] = r.labels[i];
    r.labels = std::move(labels);
    r.non_finite = cloud->count_non_finite();
    r.stages.insert(r.stages.begin(), {"ground plane", ground.total_ms});
    r.total_ms += ground.total_ms;
    result = std::make_shared<ClusterResult>(std::move(r));
  }
  auto summary = summarize_clusters(*cloud, *result);
  return {std::move(cloud), std::move(result), std::move(summary)};
}

}  // namespace

ClusterController::ClusterController(const Workbench& bench, ui::ClusterPanel* panel,
                                     QObject* parent)
    : QObject(parent), bench_(bench), panel_(panel), runner_(new JobRunner(this)) {
  jobs_ = new PanelJobs(
      panel_, runner_, 250, [this] { run(); }, this);
  // The size histogram follows once results have stopped coming for a moment: its frame (4-8
  // ms of VTK's text layout on the UI thread) would otherwise hold up the next change's run and
  // frame while a parameter is being dragged.
  chart_later_ = new QTimer(this);
  chart_later_->setSingleShot(true);
  chart_later_->setInterval(200);
  connect(chart_later_, &QTimer::timeout, panel_, &ui::ClusterPanel::showPendingSizes);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::ClusterPanel::clusterSelected, this, &ClusterController::selectCluster);
  connect(panel_, &ui::ClusterPanel::exportLabelsRequested, this, &ClusterController::exportLabels);
  connect(panel_, &ui::ClusterPanel::exportFilesRequested, this, &ClusterController::exportFiles);
  connect(panel_, &ui::ClusterPanel::exportCsvRequested, this, &ClusterController::exportCsv);
  // A result's frame: drawn by the 3D view, then on screen once the window has composed and
  // swapped it, where the measured way from the change to the screen ends.
  connect(bench_.cloud_view, &ui::VtkCloudView::rendered, this, [this] {
    if (!since_result_.isValid() || result_drawn_) return;
    latency_.drawn = double(since_result_.nsecsElapsed()) * 1e-6;
    latency_.frame = bench_.cloud_view->currentFrameMs();
    latency_.points_drawn = bench_.cloud_view->drawnPoints();
    result_drawn_ = true;
  });
  connect(bench_.cloud_view, &QOpenGLWidget::frameSwapped, this, [this] {
    if (!since_result_.isValid() || !result_drawn_) return;
    latency_.redraw = double(since_result_.nsecsElapsed()) * 1e-6;
    since_result_.invalidate();
    result_drawn_ = false;
    bench_.status->showMessage(
        tr("Clustered: %1 ms from the change to the view (live pause %2, run %3 of which the "
           "algorithm %4, redraw %5)")
            .arg(latency_.total(), 0, 'f', 1)
            .arg(latency_.wait, 0, 'f', 1)
            .arg(latency_.run, 0, 'f', 1)
            .arg(latency_.algorithm, 0, 'f', 2)
            .arg(latency_.redraw, 0, 'f', 1),
        10000);
    emit resultShown();
  });
  connect(runner_, &JobRunner::progress, this, [this](qint64 done, qint64 total) {
    bench_.status->showMessage(tr("Clustering in slabs: %1 of %2 done").arg(done).arg(total), 3000);
  });
}

void ClusterController::run() {
  jobs_->started();
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).isCloud()) {
    panel_->setError(tr("Select a point cloud to cluster."));
    return;
  }
  panel_->setBusy(true);
  runner_->start(
      [cloud = bench_.document->at(row).cloud, params = panel_->params(), method = panel_->method(),
       ground = panel_->removeGround()](const JobControl& control) {
        return cluster_job(cloud, params, method, ground, control);
      },
      [this](ClusterOutcome o) { onResult(o.cloud, o.result, std::move(o.summary)); },
      [this](const QString& error) {
        panel_->setError(error);
        bench_.status->showMessage(error, 8000);
        emit finished(false);
      });
}

void ClusterController::datasetShown(int row) {
  if (runner_->busy()) return;  // its result, or its error, will speak
  if (row < 0 || !bench_.document->at(row).isCloud()) {
    panel_->setStatus(tr("Open a point cloud to cluster it."));
    return;
  }
  const auto points = qulonglong(bench_.document->at(row).cloud->size());
  const bool large = points > live_open_limit();
  panel_->setStatus(
      panel_->live() && !large
          ? tr("Clusters %L1 points whenever a parameter changes (Live).").arg(points)
      : large ? tr("Press Run to cluster %L1 points (Live does not start by itself on clouds "
                   "over %L2 points).")
                    .arg(points)
                    .arg(qulonglong(live_open_limit()))
              : tr("Press Run to cluster %L1 points.").arg(points));
  if (large)
    jobs_->holdRerun();
  else if (panel_->inFront())
    jobs_->rerunSoon();
}

void ClusterController::frameChanged() {
  if (panel_->inFront()) jobs_->runNowIfLive();
}

void ClusterController::cancel() {
  jobs_->cancel();  // a job in slabs stops early
}

void ClusterController::onResult(std::shared_ptr<const PointCloud> cloud,
                                 std::shared_ptr<const ClusterResult> r,
                                 std::vector<ClusterSummary> summary) {
  latency_ = {jobs_->waitedMs(), jobs_->sinceStartMs(), r->total_ms};
  // The redraw counts from here: the result's handling (history, document, the panel's tables)
  // is on the way to the screen as much as the frame is.
  since_result_.start();
  result_drawn_ = false;
  DocumentModel* doc = bench_.document;
  const int row = doc->findCloud(cloud.get());
  const ClusterParams p = panel_->params();
  RunHistory::instance().add(
      {QDateTime::currentDateTime(), "cluster", QString::fromStdString(r->method),
       QString("tolerance %1 m, size %2..%3")
           .arg(p.tolerance)
           .arg(qulonglong(p.min_size))
           .arg(qulonglong(p.max_size)),
       row >= 0 ? doc->at(row).name : QString(), cloud->size(), r->total_ms, r->stages, QString()});
  if (row >= 0) {
    doc->setClusters(row, r);
    if (row == bench_.current_row()) {
      selected_ = -1;
      bench_.cloud_view->setBox(nullptr);
      panel_->setResult(r, std::move(summary), true);
      chart_later_->start();
      emit clusterColoursWanted();
      bench_.cloud_view->update();  // a frame even where the colours were already on show
    }
  }
  latency_.handling = double(since_result_.nsecsElapsed()) * 1e-6;
  if (row < 0 || row != bench_.current_row()) since_result_.invalidate();  // no frame to wait for
  emit finished(true);
}

void ClusterController::applyColours() {
  const int row = bench_.current_row();
  const DocumentModel* doc = bench_.document;
  if (row < 0 || !doc->at(row).isCloud() || !doc->at(row).clusters) return;
  const auto& labels = doc->at(row).clusters->labels;
  // Clusters colour the dataset's own points: bring them back if another panel's output (the
  // filtered cloud, the objects) is on show.
  if (bench_.cloud_view->cloud() != doc->at(row).cloud)
    bench_.cloud_view->setCloud(doc->at(row).cloud, false);
  std::vector<Rgb8> colours(labels.size());
  const ui::LabelPalette palette(labels);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    Rgb8 c = palette(labels[i]);
    if (selected_ >= 0 && labels[i] != selected_)  // dim the others
      c = {std::uint8_t(40 + c.r / 5), std::uint8_t(40 + c.g / 5), std::uint8_t(40 + c.b / 5)};
    colours[i] = c;
  }
  bench_.cloud_view->setColors(colours);
}

void ClusterController::selectCluster(int id) {
  const int row = bench_.current_row();
  selected_ = id;
  if (row < 0 || !bench_.document->at(row).isCloud() || !bench_.document->at(row).clusters) return;
  const auto& d = bench_.document->at(row);
  emit clusterColoursWanted();
  if (id < 0 || std::size_t(id) >= d.clusters->sizes.size()) {
    bench_.cloud_view->setBox(nullptr);
    return;
  }
  double b[6] = {1e300, -1e300, 1e300, -1e300, 1e300, -1e300};
  for (std::size_t i = 0; i < d.cloud->size(); ++i) {
    if (d.clusters->labels[i] != id) continue;
    const auto& p = d.cloud->points[i];
    b[0] = std::min(b[0], double(p.x)), b[1] = std::max(b[1], double(p.x));
    b[2] = std::min(b[2], double(p.y)), b[3] = std::max(b[3], double(p.y));
    b[4] = std::min(b[4], double(p.z)), b[5] = std::max(b[5], double(p.z));
  }
  bench_.cloud_view->setBox(b);
  bench_.status->showMessage(tr("Cluster %1: %L2 points, %3 x %4 x %5 m")
                                 .arg(id)
                                 .arg(qulonglong(d.clusters->sizes[std::size_t(id)]))
                                 .arg(b[1] - b[0], 0, 'f', 2)
                                 .arg(b[3] - b[2], 0, 'f', 2)
                                 .arg(b[5] - b[4], 0, 'f', 2));
}

void ClusterController::exportLabels() {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).clusters) return;
  const Dataset& d = bench_.document->at(row);
  const PointCloud labelled = with_labels(*d.cloud, *d.clusters);
  bench_.save(
      {tr("Save cloud with cluster labels"), bench_.export_dir() + "/clusters.pcd",
       tr("PCD (*.pcd);;PLY (*.ply);;LAS (*.las);;Text (*.xyz *.csv)")},
      [&](const QString& path) { return save_cloud_asking(bench_.window, path, labelled); });
}

void ClusterController::exportFiles() {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).clusters) return;
  const auto cloud = bench_.document->at(row).cloud;
  const auto clusters = bench_.document->at(row).clusters;
  QString start = bench_.export_dir();
  for (;;) {
    const QString dir = QFileDialog::getExistingDirectory(
        bench_.window, tr("Folder for one file per cluster"), start);
    if (dir.isEmpty()) return;
    start = dir;
    const QStringList existing = QDir(dir).entryList({"cluster_*.pcd"}, QDir::Files);
    if (!existing.isEmpty() &&
        QMessageBox::question(bench_.window, tr("Save one file per cluster"),
                              tr("%1 already holds %L2 cluster files. Replace them?")
                                  .arg(dir)
                                  .arg(existing.size())) != QMessageBox::Yes)
      continue;
    try {
      save_cluster_files(dir.toStdString(), *cloud, *clusters, "pcd");
      bench_.wrote(dir);
      bench_.status->showMessage(
          tr("Wrote %L1 cluster files to %2").arg(qulonglong(clusters->sizes.size())).arg(dir),
          5000);
      return;
    } catch (const std::exception& e) {
      // Files written before the failure are whole; the one that failed kept its old bytes.
      if (QMessageBox::warning(bench_.window, tr("Save one file per cluster"),
                               QString::fromUtf8(e.what()) + tr("\n\nChoose another folder?"),
                               QMessageBox::Yes | QMessageBox::Cancel) != QMessageBox::Yes)
        return;
    }
  }
}

void ClusterController::exportCsv() {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).clusters) return;
  const Dataset& d = bench_.document->at(row);
  const auto cloud = d.cloud;
  const auto clusters = d.clusters;
  bench_.save(
      {tr("Save cluster summary"), bench_.export_dir() + "/clusters.csv", tr("CSV (*.csv)")},
      [&](const QString& path) {
        save_cluster_csv(path.toStdString(), *cloud, *clusters);
        return true;
      });
}

}  // namespace cumulus::app
