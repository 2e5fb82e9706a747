#include "pipeline_controller.h"

#include <QDateTime>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QJsonDocument>

#include "colormap.h"
#include "io/atomic_file.h"
#include "objects/objects_export.h"
#include "pipeline_panel.h"
#include "run_history.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr Rgb8 kGround{150, 150, 150};
constexpr Rgb8 kLeftOver{70, 70, 90};  // off the ground but in no object

// The boxes' corners in the cloud's local coordinates, as the view draws them.
std::vector<ui::BoxCorners> local_boxes(const PipelineResult& r, const PointCloud& cloud) {
  std::vector<ui::BoxCorners> boxes;
  for (const auto& o : r.objects) {
    ui::BoxCorners b = o.box.corners();
    for (auto& c : b)
      for (std::size_t k = 0; k < 3; ++k)
        c[k] -= cloud.origin[k];
    boxes.push_back(b);
  }
  return boxes;
}

}  // namespace

bool PipelineController::looksLikeLidarScan(const PointCloud& cloud, const QString& path) {
  return cloud.find_extra("ring") != nullptr || QFileInfo(path).suffix().toLower() == "bin";
}

PipelineController::PipelineController(const Workbench& bench, ui::PipelinePanel* panel,
                                       QObject* parent)
    : QObject(parent), bench_(bench), panel_(panel), runner_(new JobRunner(this)) {
  jobs_ = new PanelJobs(
      panel_, runner_, 250, [this] { run(); }, this);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::PipelinePanel::objectSelected, this, &PipelineController::selectObject);
  connect(panel_, &ui::PipelinePanel::exportCsvRequested, this, [this] { exportObjects(false); });
  connect(panel_, &ui::PipelinePanel::exportJsonRequested, this, [this] { exportObjects(true); });
  connect(panel_, &ui::PipelinePanel::savePresetRequested, this, &PipelineController::savePreset);
  connect(panel_, &ui::PipelinePanel::loadPresetRequested, this, &PipelineController::loadPreset);
  connect(runner_, &JobRunner::progress, this, [this](qint64 done, qint64 total) {
    if (total > 0)
      bench_.status->showMessage(
          tr("Objects: %1 % done").arg(std::min<qint64>(100, done * 100 / total)), 3000);
  });
}

void PipelineController::run() {
  jobs_->started();
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).isCloud()) {
    panel_->setError(tr("Select a point cloud to find its objects."));
    return;
  }
  panel_->setBusy(true);
  auto cloud = bench_.document->at(row).cloud;
  runner_->start(
      [cloud, params = panel_->params(), method = panel_->method()](const JobControl& control) {
        // A slow chain (PCL's on a large scan) gives way to the next request between its
        // stages and within its clustering (PCL's outlier filters keep their searches private).
        return std::make_shared<const PipelineResult>(
            run_pipeline(*cloud, params, method_name(method), nullptr, control.callback()));
      },
      [this, cloud](std::shared_ptr<const PipelineResult> r) {
        RunHistory::instance().add(
            {QDateTime::currentDateTime(),
             "objects",
             QString::fromUtf8(method_name(panel_->method())),
             tr("%L1 objects").arg(qulonglong(r->objects.size())),
             bench_.document->findCloud(cloud.get()) >= 0
                 ? bench_.document->at(bench_.document->findCloud(cloud.get())).name
                 : QString(),
             cloud->size(),
             r->total_ms,
             {},
             QString()});
        if (bench_.document->findCloud(cloud.get()) == bench_.current_row()) show(cloud, r);
        emit finished(true);
      },
      [this](const QString& error) {
        panel_->setError(error);
        bench_.status->showMessage(error, 8000);
        emit finished(false);
      });
}

void PipelineController::show(std::shared_ptr<const PointCloud> source,
                              std::shared_ptr<const PipelineResult> r) {
  source_ = std::move(source);
  result_ = std::move(r);
  panel_->setResult(*result_);
  // Only the panel in front draws in the view; a hidden one draws when it comes to the front.
  if (panel_->inFront()) draw();
}

void PipelineController::draw() {
  auto shown = std::make_shared<PointCloud>(result_->filtered);
  std::vector<Rgb8> colours(shown->size(), kLeftOver);
  for (const auto i : result_->ground)
    colours[std::size_t(i)] = kGround;
  const ui::LabelPalette palette(result_->labels);
  for (std::size_t j = 0; j < result_->kept.size() && j < result_->labels.size(); ++j)
    if (result_->labels[j] >= 0)
      colours[std::size_t(result_->kept[j])] = palette(result_->labels[j]);
  shown_ = shown;
  bench_.cloud_view->setCloud(shown_, false);
  bench_.cloud_view->setColors(colours);
  bench_.cloud_view->setObjectBoxes(local_boxes(*result_, *shown_), panel_->selectedObject());
}

void PipelineController::datasetShown(int row) {
  result_.reset();
  shown_.reset();
  panel_->clearResult();
  if (row < 0 || !bench_.document->at(row).isCloud()) return;
  if (bench_.document->at(row).cloud->size() > live_open_limit()) {
    jobs_->holdRerun();
    if (panel_->inFront())
      panel_->setStatus(tr("Press Run to find the objects of %L1 points (Live does not start by "
                           "itself on clouds over %L2 points).")
                            .arg(qulonglong(bench_.document->at(row).cloud->size()))
                            .arg(qulonglong(live_open_limit())));
  } else if (panel_->inFront()) {
    jobs_->rerunSoon();
  }
}

void PipelineController::frameChanged() {
  if (panel_->inFront()) jobs_->runNowIfLive();
}

void PipelineController::panelShown() {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).isCloud()) return;
  if (result_ && bench_.document->at(row).cloud == source_)
    draw();
  else if (!runner_->busy() && bench_.document->at(row).cloud->size() <= live_open_limit())
    jobs_->rerunSoon();
}

void PipelineController::selectObject(int index) {
  if (!result_ || !shown_ || bench_.cloud_view->cloud() != shown_) return;
  bench_.cloud_view->setObjectBoxes(local_boxes(*result_, *shown_), index);
  if (index < 0 || std::size_t(index) >= result_->objects.size()) return;
  const DetectedObject& o = result_->objects[std::size_t(index)];
  bench_.status->showMessage(tr("Object %1: %L2 points, %3 x %4 x %5 m, centre (%6, %7, %8)")
                                 .arg(o.id)
                                 .arg(qulonglong(o.points))
                                 .arg(o.box.size[0], 0, 'f', 2)
                                 .arg(o.box.size[1], 0, 'f', 2)
                                 .arg(o.box.size[2], 0, 'f', 2)
                                 .arg(o.box.centre[0], 0, 'f', 2)
                                 .arg(o.box.centre[1], 0, 'f', 2)
                                 .arg(o.box.centre[2], 0, 'f', 2));
}

void PipelineController::exportObjects(bool json) {
  if (!result_) return;
  const auto r = result_;
  bench_.save({json ? tr("Save objects as JSON") : tr("Save objects as CSV"),
               bench_.last_dir() + (json ? "/objects.json" : "/objects.csv"),
               json ? tr("JSON (*.json)") : tr("CSV (*.csv)")},
              [&](const QString& path) {
                if (json)
                  save_objects_json(path.toStdString(), r->objects);
                else
                  save_objects_csv(path.toStdString(), r->objects);
                return true;
              });
}

void PipelineController::savePreset() {
  const QByteArray bytes = QJsonDocument(panel_->preset()).toJson();
  bench_.save({tr("Save pipeline preset"), bench_.export_dir() + "/pipeline.json",
               tr("Pipeline preset (*.json)")},
              [&](const QString& path) {
                AtomicFile f(path.toStdString());
                f.write(bytes.constData(), std::size_t(bytes.size()));
                f.commit();
                return true;
              });
}

void PipelineController::loadPreset() {
  const QString path = QFileDialog::getOpenFileName(
      bench_.window, tr("Open pipeline preset"), bench_.last_dir(), tr("Pipeline preset (*.json)"));
  if (path.isEmpty()) return;
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    bench_.report_error(tr("Cannot read %1: %2").arg(path, f.errorString()));
    return;
  }
  QJsonParseError parse{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parse);
  if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
    bench_.report_error(tr("%1 is not a JSON object: %2").arg(path, parse.errorString()));
    return;
  }
  try {
    panel_->setPreset(doc.object());
    bench_.status->showMessage(tr("Loaded the preset %1").arg(path), 5000);
  } catch (const std::exception& e) {
    bench_.report_error(tr("%1: %2").arg(path, QString::fromUtf8(e.what())));
  }
}

}  // namespace cumulus::app
