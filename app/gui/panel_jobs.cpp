#include "panel_jobs.h"

#include <QTimer>

#include "algorithm_panel.h"
#include "job_runner.h"

namespace cumulus::app {

PanelJobs::PanelJobs(ui::AlgorithmPanel* panel, JobRunner* runner, int pause_ms,
                     std::function<void()> run, QObject* parent)
    : QObject(parent), panel_(panel), runner_(runner), pause_(new QTimer(this)), run_(run) {
  pause_->setSingleShot(true);
  pause_->setInterval(pause_ms);
  connect(pause_, &QTimer::timeout, this, run);
  connect(panel_, &ui::AlgorithmPanel::parametersChanged, this, &PanelJobs::rerunSoon);
  connect(panel_, &ui::AlgorithmPanel::runRequested, this, run);
  connect(panel_, &ui::AlgorithmPanel::cancelRequested, this, &PanelJobs::cancel);
  connect(runner_, &JobRunner::finished, this, [this](bool delivered) {
    if (runner_->busy()) return;
    panel_->setBusy(false);
    if (!delivered) emit dropped();
  });
}

void PanelJobs::started() {
  pause_->stop();
}

void PanelJobs::rerunSoon() {
  if (panel_->live()) pause_->start();
}

void PanelJobs::runNowIfLive() {
  if (panel_->live()) run_();
}

void PanelJobs::cancel() {
  runner_->cancel();
  panel_->setError(tr("Cancelled."));
}

}  // namespace cumulus::app
