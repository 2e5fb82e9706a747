// The main window's sequences: File > Open Sequence, the timeline bar and its player, odometry
// and its drift plot.
#include <QFileDialog>
#include <QMenuBar>
#include <QStatusBar>
#include <QVBoxLayout>

#include "cluster_controller.h"
#include "core/error.h"
#include "filter_controller.h"
#include "line_chart.h"
#include "main_window.h"
#include "odometry_controller.h"
#include "pipeline_controller.h"
#include "sequence_player.h"
#include "timeline_bar.h"

namespace cumulus::app {

void MainWindow::buildTimeline() {
  // The live panels in front re-run on every frame; while one is at work, frames are skipped.
  player_ = new SequencePlayer(
      document_, [this] { return pipeline_->busy() || clustering_->busy() || filters_->busy(); },
      this);
  timeline_ = new ui::TimelineBar(this);
  addToolBar(Qt::BottomToolBarArea, timeline_);
  connect(timeline_, &ui::TimelineBar::playRequested, player_, &SequencePlayer::play);
  connect(timeline_, &ui::TimelineBar::pauseRequested, player_, &SequencePlayer::pause);
  connect(timeline_, &ui::TimelineBar::stepRequested, player_, &SequencePlayer::step);
  connect(timeline_, &ui::TimelineBar::seekRequested, player_, &SequencePlayer::seek);
  connect(timeline_, &ui::TimelineBar::rateChanged, player_, &SequencePlayer::setRate);
  connect(timeline_, &ui::TimelineBar::loopChanged, player_, &SequencePlayer::setLoop);
  connect(player_, &SequencePlayer::stateChanged, this, &MainWindow::updateTimeline);
  connect(player_, &SequencePlayer::failed, this, &MainWindow::reportError);
  connect(document_, &DocumentModel::frameChanged, this, &MainWindow::frameChanged);
  // A cloud moved in place (registration's Apply) is shown as a new frame is: camera kept,
  // live panels re-run.
  connect(document_, &DocumentModel::cloudReplaced, this, &MainWindow::frameChanged);

  odometry_ = new OdometryController(
      {document_, cloud_view_, depth_view_, this, statusBar(), [this] { return currentRow(); },
       [this](const QString& m) { reportError(m); }, [this] { return last_dir_; },
       [this] { return exportDirectory(); }, [this](const QString& w) { noteExport(w); }},
      this);
  connect(odometry_, &OdometryController::mapAdded, this, &MainWindow::setCurrentRow);
  // The drift along the path, when the sequence has its ground truth: a window of its own, shown
  // when a run gives it.
  drift_window_ = new QWidget(this, Qt::Tool);
  drift_window_->setObjectName("drift");
  drift_window_->setWindowTitle(tr("Odometry drift"));
  drift_chart_ = new ui::LineChart(drift_window_);
  drift_chart_->setLabels(tr("path (m)"), tr("drift (% of the path)"));
  drift_chart_->setReference(1.0, tr("1 %"));
  drift_chart_->setEmptyText(tr("Run odometry on a sequence with poses.txt beside its frames"));
  (new QVBoxLayout(drift_window_))->addWidget(drift_chart_);
  drift_window_->resize(560, 300);
  connect(odometry_, &OdometryController::finished, this, [this](bool ok) {
    const auto& e = odometry_->errors();
    if (!ok || !e) {
      drift_chart_->setSeries({}, {});
      return;
    }
    drift_chart_->setSeries(e->distance_by_frame, e->drift_by_frame);
    drift_window_->setWindowTitle(tr("Odometry drift: ATE %1 m, KITTI drift %2 %")
                                      .arg(e->ate_rmse, 0, 'f', 3)
                                      .arg(e->drift_percent, 0, 'f', 2));
    drift_window_->show();
    drift_window_->raise();
  });
  auto* menu = menuBar()->addMenu(tr("&Sequence"));
  menu->addAction(tr("Open Se&quence…"), this, &MainWindow::openSequenceDialog);
  menu->addSeparator();
  menu->addAction(tr("Odometry &Settings…"), this, [this] { odometry_->editSettings(this); });
  menu->addAction(tr("Run &Odometry"), odometry_, &OdometryController::run);
  menu->addAction(tr("&Cancel Odometry"), odometry_, &OdometryController::cancel);
  menu->addAction(tr("&Export Poses…"), odometry_, &OdometryController::exportPoses);
  menu->addAction(tr("Add Odometry &Map as Dataset"), this, [this] { odometry_->addMap(0.2); });
  menu->addAction(tr("&Drift Plot"), this, [this] {
    drift_window_->show();
    drift_window_->raise();
  });
}

void MainWindow::openSequenceDialog() {
  const QString dir = QFileDialog::getExistingDirectory(
      this, tr("Open a sequence: the folder of its frames"), last_dir_);
  if (dir.isEmpty()) return;
  if (const QString error = openSequence(dir); !error.isEmpty()) reportError(error);
}

QString MainWindow::openSequence(const QString& spec) {
  try {
    const int row = player_->open(spec);
    last_dir_ = spec;
    setCurrentRow(row);
    statusBar()->showMessage(
        tr("Opened the sequence %1: %L2 frames").arg(spec).arg(qulonglong(player_->frameCount())),
        5000);
    emit datasetOpened(row);
    return {};
  } catch (const std::exception& e) {
    return tr("Cannot open the sequence %1: %2").arg(spec, QString::fromUtf8(e.what()));
  }
}

void MainWindow::frameChanged(int row) {
  if (row != currentRow()) return;
  keep_camera_ = true;
  showDataset(row);
  keep_camera_ = false;
  pipeline_->frameChanged();
  clustering_->frameChanged();
  odometry_->frameShown(row);
}

void MainWindow::updateTimeline() {
  const int row = player_->row();
  const SequenceInfo* s = row >= 0 ? document_->at(row).sequence.get() : nullptr;
  const std::size_t f = player_->frame();
  timeline_->setState(int(f), int(player_->frameCount()), player_->playing(),
                      s && f < s->times.size() ? s->times[f] : -1.0, player_->skipped(),
                      player_->rate(), player_->loop());
}

}  // namespace cumulus::app
