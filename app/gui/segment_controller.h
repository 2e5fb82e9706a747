#pragma once
// RDP segmentation in the main window: runs the segment panel's parameters on the current depth
// image off the UI thread (live re-runs supersede each other), times every method side by side,
// and exports the segments.
#include <QObject>

#include "job_runner.h"
#include "panel_jobs.h"
#include "workbench.h"

namespace cumulus::ui {
class SegmentPanel;
}

namespace cumulus::app {

class SegmentController : public QObject {
  Q_OBJECT

 public:
  SegmentController(const Workbench& bench, ui::SegmentPanel* panel, QObject* parent);

  void run();
  // Runs every segmentation method on the current image and shows their times side by side.
  void timeAllMethods();
  bool busy() const { return runner_->busy(); }

 signals:
  void finished(bool ok);
  void timingFinished();

 private:
  void exportSegments(bool json);

  Workbench bench_;
  ui::SegmentPanel* panel_;
  JobRunner* runner_;
  JobRunner* timing_;
  PanelJobs* jobs_;
};

}  // namespace cumulus::app
