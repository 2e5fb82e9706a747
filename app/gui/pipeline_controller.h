#pragma once
// The Objects panel in the main window: runs the pipeline (filters, ground removal, clustering,
// boxes) on the current cloud off the UI thread (live re-runs supersede each other), shows what
// the filters left coloured by outcome (ground grey, objects in their colours, the rest dim)
// with the objects' boxes, and exports the objects and presets.
#include <QObject>

#include <memory>

#include "job_runner.h"
#include "objects/pipeline.h"
#include "panel_jobs.h"
#include "workbench.h"

namespace cumulus::ui {
class PipelinePanel;
}

namespace cumulus::app {

class PipelineController : public QObject {
  Q_OBJECT

 public:
  PipelineController(const Workbench& bench, ui::PipelinePanel* panel, QObject* parent);

  void run();
  bool busy() const { return runner_->busy(); }
  // The last result shown, or null.
  std::shared_ptr<const PipelineResult> result() const { return result_; }
  // What the view shows of it: the filtered cloud with per-point colours.
  std::shared_ptr<const PointCloud> shown() const { return shown_; }
  // Another dataset is current: the old result goes, and a live panel runs on the new one.
  void datasetShown(int row);
  // The panel came to the front: a live panel runs on the current cloud if it has no result.
  void panelShown();
  // The sequence moved on a frame: a live panel in front runs on it now (its last result stays
  // on show until the new one arrives).
  void frameChanged();
  void selectObject(int index);

  // A LiDAR scan (a `ring` field, or a KITTI .bin file): what the main window opens the Objects
  // panel for, so that clustering starts with the ground removed.
  static bool looksLikeLidarScan(const PointCloud& cloud, const QString& path);

 signals:
  void finished(bool ok);

 private:
  void show(std::shared_ptr<const PointCloud> source, std::shared_ptr<const PipelineResult> r);
  void draw();  // the result in the view
  void exportObjects(bool json);
  void savePreset();
  void loadPreset();

  Workbench bench_;
  ui::PipelinePanel* panel_;
  JobRunner* runner_;
  PanelJobs* jobs_;
  std::shared_ptr<const PointCloud> source_, shown_;
  std::shared_ptr<const PipelineResult> result_;
};

}  // namespace cumulus::app
