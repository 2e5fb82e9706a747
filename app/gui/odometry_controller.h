#pragma once
// Odometry in the main window: Sequence > Run Odometry registers every frame of the current
// sequence in the background (progress, cancel), then draws the trajectory in the view, seen
// from the frame on show; with ground truth beside the frames (poses.txt, KITTI format) the
// status says its errors. The poses export as KITTI or TUM files, and the scans, moved by
// their poses and thinned, become a map dataset. Sequence > Odometry Settings sets the
// registration method and the odometry's parameters, as `sequence --task odometry` takes them.
#include <QObject>

#include <memory>
#include <optional>

#include "job_runner.h"
#include "odometry_settings.h"
#include "sequence/trajectory.h"
#include "workbench.h"

namespace cumulus::app {

class OdometryController : public QObject {
  Q_OBJECT

 public:
  OdometryController(const Workbench& bench, QObject* parent);

  const OdometrySettings& settings() const { return settings_; }
  // Validates first: InvalidArgument names a bad parameter and changes nothing.
  void setSettings(const OdometrySettings& s);
  // The settings dialog; true when it was accepted.
  bool editSettings(QWidget* parent);

  // Starts on the current dataset (a sequence); false with a message when it is none.
  bool run();
  void cancel();
  bool busy() const { return runner_->busy(); }
  // The trajectory of the sequence at `row`, if computed (empty otherwise).
  const Trajectory& poses() const { return poses_; }
  int row() const { return row_; }
  // Errors against the ground truth, when there was one.
  const std::optional<TrajectoryErrors>& errors() const { return errors_; }
  // Redraws the path as seen from the frame on show (the view shows frames in their sensor's
  // frame); hides it for any other dataset.
  void frameShown(int row);
  void exportPoses();
  // The scans moved into the first frame's and thinned by a voxel grid (leaf metres), built in
  // the background and added as a dataset (mapAdded); false with a message without poses.
  bool addMap(double leaf);

 signals:
  void finished(bool ok);
  void mapAdded(int row);

 private:
  Workbench bench_;
  JobRunner* runner_;
  OdometrySettings settings_;
  int row_ = -1;
  const void* sequence_ = nullptr;  // the SequenceInfo the poses belong to
  Trajectory poses_;
  std::optional<TrajectoryErrors> errors_;
};

}  // namespace cumulus::app
