// The main window's sequences: File > Open Sequence, the timeline bar and its player.
#include <QFileDialog>
#include <QMenuBar>
#include <QStatusBar>

#include "cluster_controller.h"
#include "core/error.h"
#include "filter_controller.h"
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

  odometry_ = new OdometryController(
      {document_, cloud_view_, depth_view_, this, statusBar(), [this] { return currentRow(); },
       [this](const QString& m) { reportError(m); }, [this] { return last_dir_; },
       [this] { return exportDirectory(); }, [this](const QString& w) { noteExport(w); }},
      this);
  connect(odometry_, &OdometryController::mapAdded, this, &MainWindow::setCurrentRow);
  auto* menu = menuBar()->addMenu(tr("&Sequence"));
  menu->addAction(tr("Open Se&quence…"), this, &MainWindow::openSequenceDialog);
  menu->addSeparator();
  menu->addAction(tr("Run &Odometry"), odometry_, &OdometryController::run);
  menu->addAction(tr("&Cancel Odometry"), odometry_, &OdometryController::cancel);
  menu->addAction(tr("&Export Poses…"), odometry_, &OdometryController::exportPoses);
  menu->addAction(tr("Add Odometry &Map as Dataset"), this, [this] { odometry_->addMap(0.2); });
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
