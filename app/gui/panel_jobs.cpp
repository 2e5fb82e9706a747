#include "panel_jobs.h"

#include <QTimer>

#include <algorithm>
#include <cmath>

#include "algorithm_panel.h"
#include "job_runner.h"

namespace cumulus::app {

PanelJobs::PanelJobs(ui::AlgorithmPanel* panel, JobRunner* runner, int pause_ms,
                     std::function<void()> run, QObject* parent)
    : QObject(parent),
      panel_(panel),
      runner_(runner),
      pause_(new QTimer(this)),
      run_(run),
      max_pause_ms_(pause_ms) {
  pause_->setSingleShot(true);
  pause_->setInterval(pause_ms);
  connect(pause_, &QTimer::timeout, this, run);
  connect(panel_, &ui::AlgorithmPanel::parametersChanged, this, &PanelJobs::rerunSoon);
  connect(panel_, &ui::AlgorithmPanel::runRequested, this, run);
  connect(panel_, &ui::AlgorithmPanel::cancelRequested, this, &PanelJobs::cancel);
  // The pause follows the job's own time on its worker: counting the UI's handling of the
  // result too (the colours, the panel's tables) had made a 4 ms GPU job wait 30 ms, and a
  // result that waited for a frame to end made the next pause longer, and so the next wait.
  connect(runner_, &JobRunner::arrived, this, &PanelJobs::jobDelivered);
  connect(runner_, &JobRunner::finished, this, [this](bool delivered) {
    if (runner_->busy()) return;
    panel_->setBusy(false);
    if (!delivered) emit dropped();
  });
}

void PanelJobs::started() {
  pause_->stop();
  waited_ms_ = since_change_.isValid() ? double(since_change_.nsecsElapsed()) * 1e-6 : 0.0;
  since_change_.invalidate();
  since_start_.start();
}

namespace {
std::size_t g_live_open_limit = 10'000'000;
}  // namespace

std::size_t live_open_limit() {
  return g_live_open_limit;
}

void set_live_open_limit(std::size_t points) {
  g_live_open_limit = points;
}

void PanelJobs::rerunSoon() {
  if (!panel_->live()) return;
  since_change_.start();
  pause_->start();
}

double PanelJobs::sinceStartMs() const {
  return since_start_.isValid() ? double(since_start_.nsecsElapsed()) * 1e-6 : 0.0;
}

int PanelJobs::pauseMs() const {
  return pause_->interval();
}

void PanelJobs::jobDelivered(double ms) {
  pause_->setInterval(std::clamp(int(std::lround(2 * ms)), 0, max_pause_ms_));
}

void PanelJobs::runNowIfLive() {
  if (panel_->live()) run_();
}

void PanelJobs::holdRerun() {
  pause_->stop();
  since_change_.invalidate();
}

void PanelJobs::cancel() {
  runner_->cancel();
  panel_->setError(tr("Cancelled."));
}

}  // namespace cumulus::app
