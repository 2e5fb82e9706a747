#include "registration_window.h"

#include "job_runner.h"
#include "panel_jobs.h"
#include "tool_layout.h"

#include <QAction>
#include <QComboBox>
#include <QFormLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStatusBar>
#include <QTimer>
#include <QUndoStack>

#include "core/device.h"
#include "document.h"
#include "icp_panel.h"
#include "io/io.h"
#include "save_file.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

// With `global`, the global alignment's pose is ICP's start (and 1.5 keypoint voxels its
// distance); without, ICP starts from the identity. Either way the perturbation moves the
// source first.
// PCL's loops report each iteration and stop between two when the job should (a CPU run of
// 100,000 iterations over a large pair would otherwise hold the window for an hour); the GPU's
// run on the device in milliseconds. The global alignment's CPU stages report and stop the same
// way (PCL's 50,000 hypotheses over fine keypoints take minutes). Its stages are reported as
// 1 + GlobalStage, ICP's iterations as 0.
constexpr int kIcpStage = 0;
IcpJob run_icp_job(IcpJob job, IcpParams params, const std::vector<IcpMethod>& methods,
                   std::optional<GlobalParams> global, GlobalMethod global_method,
                   const JobControl& control) {
  const PointCloud moved = transformed(*job.source, job.perturbation);
  if (global) {
    global->refine = false;
    const GlobalProgress stages = [&control](GlobalStage stage, std::size_t done,
                                             std::size_t total) {
      return control.progress(done, total, 1 + int(stage));
    };
    job.global = register_global(moved, *job.target, *global, global_method, stages);
    if (!job.global->found) return job;
    params.initial = job.global->coarse;
    params.max_correspondence_distance = global->inlier_distance * job.global->voxel;
  }
  const IcpProgress progress = [&control](int done, int max) {
    return control.progress(std::size_t(done), std::size_t(max), kIcpStage);
  };
  for (auto m : methods)
    job.results.push_back(icp(moved, *job.target, params, m, progress));
  return job;
}

// Moving a dataset's cloud by an alignment, and back. The dataset is found by its cloud, so
// rows that move meanwhile do not matter; a dataset closed meanwhile is left alone.
class ApplyAlignment : public QUndoCommand {
 public:
  ApplyAlignment(DocumentModel* document, std::shared_ptr<const PointCloud> before,
                 std::shared_ptr<const PointCloud> after)
      : QUndoCommand(QObject::tr("Apply alignment")),
        document_(document),
        before_(std::move(before)),
        after_(std::move(after)) {}
  void redo() override { swap(before_, after_); }
  void undo() override { swap(after_, before_); }

 private:
  void swap(const std::shared_ptr<const PointCloud>& from,
            const std::shared_ptr<const PointCloud>& to) {
    document_->replaceCloud(document_->findCloud(from.get()), to);
  }
  DocumentModel* document_;
  std::shared_ptr<const PointCloud> before_, after_;
};

}  // namespace

RegistrationWindow::RegistrationWindow(DocumentModel* document, QWidget* parent)
    : QMainWindow(parent), document_(document) {
  setWindowTitle(tr("Registration — Cumulus"));
  auto* inputs = new QFormLayout;
  source_ = new QComboBox(this);
  target_ = new QComboBox(this);
  inputs->addRow(tr("Source (moves)"), source_);
  inputs->addRow(tr("Target (fixed)"), target_);
  panel_ = new ui::IcpPanel(this);
  view_ = lay_out_tool(this, inputs, panel_, 1);
  statusBar()->showMessage(
      tr("Grey: target. Red: source before. Orange: the global alignment's pose. Green: source "
         "after ICP. Lines: keypoint pairs (green: inliers)."));
  resize(1280, 800);

  undo_ = new QUndoStack(this);
  connect(undo_, &QUndoStack::canUndoChanged, panel_, &ui::IcpPanel::setUndoAvailable);
  QAction* undo_action = undo_->createUndoAction(this, tr("Undo"));
  undo_action->setShortcut(QKeySequence::Undo);
  addAction(undo_action);
  connect(panel_, &ui::IcpPanel::applyRequested, this, [this] {
    QString error;
    if (!applyToSource(&error)) panel_->setError(error);
  });
  connect(panel_, &ui::IcpPanel::undoRequested, this, &RegistrationWindow::undoApply);
  connect(panel_, &ui::IcpPanel::pairsToggled, this, [this] {
    const auto after = alignedSource();
    showClouds(after.get());
  });
  runner_ = new JobRunner(this);
  connect(runner_, &JobRunner::progress, this, [this](qint64 done, qint64 most, int stage) {
    QString message = tr("ICP: iteration %1 of at most %2").arg(done).arg(most);
    if (stage != kIcpStage) switch (GlobalStage(stage - 1)) {
        case GlobalStage::Features:
          message = tr("Global alignment: keypoint features, %1 % done").arg(done / 10);
          break;
        case GlobalStage::Matching:
          message =
              tr("Global alignment: pairing descriptors, %1 of %2 keypoints").arg(done).arg(most);
          break;
        case GlobalStage::Hypotheses:
          message = tr("Global alignment: hypothesis %1 of at most %2").arg(done).arg(most);
          break;
        case GlobalStage::Refinement:
          message = tr("Global alignment: ICP iteration %1 of at most %2").arg(done).arg(most);
          break;
      }
    statusBar()->showMessage(message, 3000);
  });
  // The clouds before the edit are shown until the re-run delivers.
  connect(panel_, &ui::IcpPanel::parametersChanged, this, [this] { showClouds(nullptr); });
  jobs_ = new PanelJobs(
      panel_, runner_, 250, [this] { run(); }, this);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::IcpPanel::timeAllRequested, this, &RegistrationWindow::timeAll);
  connect(panel_, &ui::IcpPanel::exportTransformRequested, this, [this] {
    save_with_dialog(this,
                     {tr("Export transform"), "transform.txt", tr("Text (*.txt);;JSON (*.json)")},
                     [this](const QString& path) {
                       QString error;
                       if (!exportTransform(path, &error)) throw Error(error.toStdString());
                       return true;
                     });
  });
  connect(panel_, &ui::IcpPanel::exportCloudRequested, this, [this] {
    const auto cloud = alignedSource();
    if (!cloud) return;
    save_with_dialog(
        this,
        {tr("Export aligned cloud"), "aligned.pcd",
         tr("Point clouds (*.pcd *.ply *.las *.bin *.xyz)")},
        [this, cloud](const QString& path) { return save_cloud_asking(this, path, *cloud); });
  });
  auto refill = [this] { refillCombos(); };
  connect(document_, &QAbstractItemModel::rowsInserted, this, refill);
  connect(document_, &QAbstractItemModel::rowsRemoved, this, refill);
  connect(source_, &QComboBox::currentIndexChanged, this, [this] {
    if (auto s = cloudAt(source_)) {
      const Bounds b = s->local_bounds();
      const double size =
          b.valid ? std::max({b.max.x - b.min.x, b.max.y - b.min.y, b.max.z - b.min.z}) : 1.0;
      panel_->setProperty("sourceSize", size);
    }
    emit panel_->parametersChanged();
  });
  connect(target_, &QComboBox::currentIndexChanged, panel_, &ui::IcpPanel::parametersChanged);
  refillCombos();
}

void RegistrationWindow::refillCombos() {
  for (QComboBox* box : {source_, target_})
    list_clouds(box, *document_);
  if (target_->currentIndex() == source_->currentIndex() && target_->count() > 1)
    target_->setCurrentIndex(source_->currentIndex() == 0 ? 1 : 0);
  showClouds(nullptr);
}

void RegistrationWindow::setPair(int source_row, int target_row) {
  source_->setCurrentIndex(source_->findData(source_row));
  target_->setCurrentIndex(target_->findData(target_row));
}

std::shared_ptr<const PointCloud> RegistrationWindow::cloudAt(QComboBox* box) const {
  const QVariant row = box->currentData();
  if (!row.isValid() || row.toInt() >= document_->count()) return nullptr;
  return document_->at(row.toInt()).cloud;
}

void RegistrationWindow::start(bool all_methods) {
  jobs_->started();
  const auto source = cloudAt(source_), target = cloudAt(target_);
  if (!source || !target) {
    panel_->setError(tr("Open two point clouds and choose a source and a target."));
    return;
  }
  IcpJob job;
  job.source = source;
  job.target = target;
  job.perturbation = panel_->perturbation();
  job.all_methods = all_methods;
  std::vector<IcpMethod> methods{panel_->method()};
  if (all_methods) {
    methods.clear();
    for (auto m : cumulus::all_methods<IcpMethod>())
      if (!is_gpu_method(m) || query_device().available) methods.push_back(m);
  }
  panel_->setBusy(true);
  runner_->start(
      [job, params = panel_->params(), methods, global = panel_->globalParams(),
       global_method = panel_->globalMethod()](const JobControl& control) {
        return run_icp_job(job, params, methods, global, global_method, control);
      },
      [this](IcpJob done) { onResult(std::move(done)); },
      [this](const QString& error) {
        panel_->setError(error);
        emit finished(false);
      });
}

bool RegistrationWindow::busy() const {
  return runner_->busy();
}

void RegistrationWindow::onResult(IcpJob job) {
  last_global_ = job.global;
  if (job.global && !job.global->found) {
    last_.reset();
    showClouds(nullptr);
    panel_->setError(tr("No alignment found: %1").arg(QString::fromStdString(job.global->reason)));
    emit finished(false);
    return;
  }
  if (!job.results.empty()) {
    last_ = job.results.front();
    for (const auto& r : job.results)
      if (r.method == method_name(panel_->method())) last_ = r;
    last_perturbation_ = job.perturbation;
    last_source_ = job.source;
    panel_->setResult(*last_, job.perturbation, last_global_ ? &*last_global_ : nullptr);
    if (job.all_methods) panel_->setTimings(job.results);
    const auto after = alignedSource();
    showClouds(after.get());
  }
  emit finished(true);
}

std::shared_ptr<PointCloud> RegistrationWindow::alignedSource() const {
  if (!last_ || !last_source_) return nullptr;
  return std::make_shared<PointCloud>(
      transformed(*last_source_, Eigen::Matrix4d(last_->transform * last_perturbation_)));
}

bool RegistrationWindow::applyToSource(QString* error) {
  const auto source = cloudAt(source_);
  const auto after = alignedSource();
  if (!after || !source || source != last_source_) {
    if (error) *error = tr("Align the pair first (the source has changed since the last run).");
    return false;
  }
  undo_->push(new ApplyAlignment(document_, source, after));
  // The source is now where the alignment put it: what is left to undo is nothing.
  panel_->setPerturbation(0, 0, 0, 0, 0, 0);
  last_.reset();
  last_global_.reset();
  showClouds(nullptr);
  return true;
}

bool RegistrationWindow::undoApply() {
  if (!undo_->canUndo()) return false;
  undo_->undo();
  last_.reset();
  last_global_.reset();
  showClouds(nullptr);
  return true;
}

bool RegistrationWindow::exportTransform(const QString& path, QString* error) const {
  if (!last_) {
    if (error) *error = tr("Nothing aligned yet.");
    return false;
  }
  QByteArray bytes;
  if (path.endsWith(".json", Qt::CaseInsensitive)) {
    QJsonArray rows;
    for (int r = 0; r < 4; ++r) {
      QJsonArray row;
      for (int c = 0; c < 4; ++c)
        row.append(last_->transform(r, c));
      rows.append(row);
    }
    QJsonArray mse;
    for (const auto& h : last_->history)
      mse.append(h.mse);
    bytes = QJsonDocument(QJsonObject{{"method", QString::fromStdString(last_->method)},
                                      {"transform", rows},
                                      {"fitness", last_->fitness},
                                      {"iterations", last_->iterations},
                                      {"converged", last_->converged},
                                      {"stop_reason", stop_name(last_->stop)},
                                      {"mse_per_iteration", mse},
                                      {"total_ms", last_->total_ms}})
                .toJson();
  } else {
    bytes = QByteArray::fromStdString(format_matrix(last_->transform));
  }
  try {
    write_file(path, bytes);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

void RegistrationWindow::showClouds(const PointCloud* after) {
  const auto source = cloudAt(source_), target = cloudAt(target_);
  if (!source || !target) {
    view_->clearCloud();
    return;
  }
  // One composite cloud in the target's frame: target, source perturbed, source aligned.
  auto scene = std::make_shared<PointCloud>();
  scene->origin = target->origin;
  std::vector<Rgb8> colors;
  auto append = [&](const PointCloud& c, Rgb8 color) {
    const double dx = c.origin[0] - scene->origin[0], dy = c.origin[1] - scene->origin[1],
                 dz = c.origin[2] - scene->origin[2];
    for (const auto& p : c.points) {
      scene->points.push_back({float(p.x + dx), float(p.y + dy), float(p.z + dz)});
      colors.push_back(color);
    }
  };
  append(*target, {170, 170, 170});
  append(transformed(*source, panel_->perturbation()), {220, 60, 50});
  const GlobalResult* g = after && last_global_ ? &*last_global_ : nullptr;
  if (g)
    append(transformed(*source, Eigen::Matrix4d(g->coarse * last_perturbation_)), {240, 150, 30});
  if (after) append(*after, {40, 180, 70});
  scene->width = std::uint32_t(scene->points.size());
  const bool first = !view_->cloud();
  view_->setCloud(scene, first);
  view_->setColors(colors);
  if (!g || !panel_->showPairs()) return;
  // The pairs between the keypoints as they were matched: the perturbed source's and the
  // target's, in the scene's frame.
  const auto local = [&](const PointCloud& c, std::int32_t i) {
    const Point3f& p = c.points[std::size_t(i)];
    return std::array<double, 3>{c.origin[0] - scene->origin[0] + p.x,
                                 c.origin[1] - scene->origin[1] + p.y,
                                 c.origin[2] - scene->origin[2] + p.z};
  };
  std::vector<ui::LineSegment> lines;
  for (std::size_t k = 0; k < g->matches.size(); ++k) {
    const bool in = k < g->inlier.size() && g->inlier[k];
    lines.push_back({local(g->source_keypoints, g->matches.source[k]),
                     local(g->target_keypoints, g->matches.target[k]),
                     in ? Rgb8{40, 200, 80} : Rgb8{210, 70, 60}});
  }
  view_->setSegments(lines);
}

}  // namespace cumulus::app
