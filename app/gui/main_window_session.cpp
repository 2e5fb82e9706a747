// The main window's sessions: File > Open Session, Save Session As, Recent Sessions. A session
// restores the datasets (in the background, as File > Open does), the panels' parameters,
// methods and Live boxes, the colouring, the camera and the window's layout, then recomputes the
// current dataset's results.
#include <QAction>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>

#include "cluster_panel.h"
#include "core/method_table.h"
#include "dataset_loader.h"
#include "filter_panel.h"
#include "io/io.h"
#include "main_window.h"
#include "odometry_controller.h"
#include "pipeline_panel.h"
#include "segment_panel.h"
#include "sequence_player.h"
#include "session.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr int kMaxRecentSessions = 10;
const char* kSessionFilter = "Cumulus session (*.cumulus)";

template <class Method>
QString method_of(const ui::MethodPanel<Method>& panel) {
  return QString::fromUtf8(method_name(panel.method()));
}

template <class Method>
void apply_panel(ui::MethodPanel<Method>& panel, const PanelSettings& s) {
  if (const auto m = parse_method<Method>(s.method.toStdString())) panel.setMethod(*m);
  panel.setLive(s.live);
}

}  // namespace

void MainWindow::buildSessionActions(QMenu* file) {
  file->addAction(tr("Open Sess&ion…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), exportDirectory(),
                                                      tr(kSessionFilter));
    if (!path.isEmpty()) openSession(path);
  });
  recent_sessions_menu_ = file->addMenu(tr("Recent Sessio&ns"));
  file->addAction(tr("Save Session &As…"), this, [this] {
    saveDialog({tr("Save session"), exportDirectory() + "/session.cumulus", tr(kSessionFilter)},
               [this](const QString& path) {
                 QString error;
                 if (!saveSession(path, &error)) throw Error(error.toStdString());
                 return true;
               });
  });
  rebuildRecentSessions();
}

bool MainWindow::saveSession(const QString& path, QString* error) {
  Session s;
  for (int row = 0; row < document_->count(); ++row) {
    const Dataset& d = document_->at(row);
    SessionDataset sd;
    if (d.sequence) {
      sd.kind = SessionDataset::Kind::Sequence;
      sd.path = QFileInfo(d.sequence->spec).absoluteFilePath();
      sd.frame = d.frame;
    } else if (d.path.isEmpty()) {
      s.left_out << d.name;
      continue;
    } else {
      sd.kind = d.isCloud() ? SessionDataset::Kind::Cloud : SessionDataset::Kind::Depth;
      sd.path = QFileInfo(d.path).absoluteFilePath();
      if (d.depth) sd.depth_scale = d.depth->source_scale;
    }
    sd.clustered = d.clusters != nullptr;
    sd.segmented = d.segments != nullptr;
    if (row == currentRow()) s.current = int(s.datasets.size());
    s.datasets.push_back(sd);
  }
  s.cluster_panel = {method_of(*cluster_panel_), cluster_panel_->live()};
  s.cluster = cluster_panel_->params();
  s.cluster_remove_ground = cluster_panel_->removeGround();
  s.segment_panel = {method_of(*segment_panel_), segment_panel_->live()};
  s.segment = segment_panel_->params();
  s.filter_panel = {method_of(*filter_panel_), filter_panel_->live()};
  s.filter = filter_panel_->settings();
  s.pipeline_panel = {method_of(*pipeline_panel_), pipeline_panel_->live()};
  s.pipeline = pipeline_panel_->preset();
  s.odometry = odometry_->settings();
  s.camera = cloud_view_->cameraState();
  s.color_mode = color_combo_->currentData().toInt();
  s.point_size = point_size_->value();
  s.axes = axes_action_->isChecked();
  s.window_state = saveState(kWindowStateVersion);
  s.geometry = saveGeometry();
  if (!writeOrExplain([&] { write_session(path, s); }, error)) return false;
  addRecentSession(path);
  if (!s.left_out.isEmpty())
    statusBar()->showMessage(
        tr("Saved the session without %1: they have no file (save them as datasets to keep them)")
            .arg(s.left_out.join(", ")),
        10000);
  return true;
}

bool MainWindow::openSession(const QString& path) {
  std::shared_ptr<Session> s;
  try {
    s = std::make_shared<Session>(read_session(path));
  } catch (const std::exception& e) {
    reportError(QString::fromUtf8(e.what()));
    return false;
  }
  if (document_->count() > 0 && isVisible() && !property("scripted").toBool() &&
      QMessageBox::question(this, tr("Open session"),
                            tr("Opening the session closes the %n open dataset(s).", nullptr,
                               document_->count())) != QMessageBox::Yes)
    return false;
  cancelLoading();
  while (document_->count() > 0)
    document_->remove(document_->count() - 1);
  showDataset(-1);
  // Parameters before data, so that a Live panel's first run uses them.
  restoreGeometry(s->geometry);
  restoreState(s->window_state, kWindowStateVersion);
  apply_panel(*cluster_panel_, s->cluster_panel);
  cluster_panel_->setParams(s->cluster);
  cluster_panel_->setRemoveGround(s->cluster_remove_ground);
  apply_panel(*segment_panel_, s->segment_panel);
  segment_panel_->setParams(s->segment);
  apply_panel(*filter_panel_, s->filter_panel);
  filter_panel_->setSettings(s->filter);
  apply_panel(*pipeline_panel_, s->pipeline_panel);
  odometry_->setSettings(s->odometry);  // checked as the session was read
  try {
    if (!s->pipeline.isEmpty()) pipeline_panel_->setPreset(s->pipeline);
  } catch (const std::exception& e) {
    reportError(tr("The session's pipeline settings were not applied: %1").arg(e.what()));
  }
  if (const int i = color_combo_->findData(s->color_mode); i >= 0) color_combo_->setCurrentIndex(i);
  point_size_->setValue(s->point_size);
  axes_action_->setChecked(s->axes);

  session_missing_.clear();
  pending_session_ = s;
  for (const auto& d : s->datasets) {
    if (d.kind == SessionDataset::Kind::Sequence) {
      if (const QString error = openSequence(d.path); !error.isEmpty()) {
        session_missing_ << d.path;
      } else {
        player_->seek(int(d.frame));
      }
      continue;
    }
    if (!QFileInfo(d.path).isFile()) {
      session_missing_ << d.path;
      continue;
    }
    openFiles({d.path}, d.kind == SessionDataset::Kind::Depth ? d.depth_scale : 0);
  }
  disconnect(session_loaded_);
  if (loading())
    session_loaded_ = connect(this, &MainWindow::loadingFinished, this, &MainWindow::finishSession);
  else
    finishSession();
  addRecentSession(path);
  return true;
}

void MainWindow::finishSession() {
  disconnect(session_loaded_);
  const std::shared_ptr<Session> s = std::move(pending_session_);
  if (!s) return;
  if (s->current >= 0 && s->current < int(s->datasets.size())) {
    const SessionDataset& d = s->datasets[std::size_t(s->current)];
    int row = document_->findPath(d.path);
    for (int r = 0; row < 0 && r < document_->count(); ++r)
      if (document_->at(r).sequence &&
          QFileInfo(document_->at(r).sequence->spec).absoluteFilePath() == d.path)
        row = r;
    if (row >= 0) {
      setCurrentRow(row);
      // A Live panel in front re-runs by itself when the data arrives; the others' results
      // are recomputed here.
      if (d.clustered && !cluster_panel_->live() && !clusteringBusy()) runClustering();
      if (d.segmented && !segment_panel_->live() && !segmentationBusy()) runSegmentation();
    }
  }
  if (s->camera) cloud_view_->setCameraState(*s->camera);
  if (!session_missing_.isEmpty())
    reportError(
        tr("The session names files that are not there: %1").arg(session_missing_.join(", ")));
  emit sessionOpened(session_missing_);
}

void MainWindow::addRecentSession(const QString& path) {
  QStringList list = recentSessions();
  list.removeAll(QFileInfo(path).absoluteFilePath());
  list.prepend(QFileInfo(path).absoluteFilePath());
  QSettings().setValue("recentSessions", list.mid(0, kMaxRecentSessions));
  rebuildRecentSessions();
}

QStringList MainWindow::recentSessions() const {
  return QSettings().value("recentSessions").toStringList();
}

void MainWindow::rebuildRecentSessions() {
  recent_sessions_menu_->clear();
  for (const auto& path : recentSessions())
    recent_sessions_menu_
        ->addAction(QFileInfo(path).fileName(), this, [this, path] { openSession(path); })
        ->setToolTip(path);
  recent_sessions_menu_->setEnabled(!recent_sessions_menu_->isEmpty());
}

}  // namespace cumulus::app
