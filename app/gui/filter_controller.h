#pragma once
// Filters in the main window: runs the filter panel's crop box and voxel grid on the current
// cloud off the UI thread (live re-runs supersede each other), shows the filtered cloud in the
// 3D view, and adds it to the document on request.
#include <QObject>

#include <memory>

#include "job_runner.h"
#include "panel_jobs.h"
#include "workbench.h"

namespace cumulus::ui {
class FilterPanel;
}

namespace cumulus::app {

class FilterController : public QObject {
  Q_OBJECT

 public:
  FilterController(const Workbench& bench, ui::FilterPanel* panel, QObject* parent);

  void run();
  bool busy() const { return runner_->busy(); }
  // The last filtered cloud shown, or null.
  std::shared_ptr<const PointCloud> filtered() const { return filtered_; }
  // The current dataset changed: the crop box starts as the new cloud's bounds.
  void datasetShown(int row);

 signals:
  void finished(bool ok);

 private:
  void addAsDataset();

  Workbench bench_;
  ui::FilterPanel* panel_;
  JobRunner* runner_;
  PanelJobs* jobs_;
  std::shared_ptr<const PointCloud> source_, filtered_;
};

}  // namespace cumulus::app
