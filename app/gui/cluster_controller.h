#pragma once
// Clustering in the main window: runs the cluster panel's parameters on the current cloud off the
// UI thread (live re-runs supersede each other), puts the result in the document, colours and
// boxes clusters in the 3D view, and exports.
#include <QElapsedTimer>
#include <QObject>

#include "cluster/cluster_export.h"
#include "job_runner.h"
#include "panel_jobs.h"
#include "workbench.h"

class QTimer;

namespace cumulus::ui {
class ClusterPanel;
}

namespace cumulus::app {

class ClusterController : public QObject {
  Q_OBJECT

 public:
  ClusterController(const Workbench& bench, ui::ClusterPanel* panel, QObject* parent);

  // Starts clustering the current cloud with the panel's parameters (a running job is
  // superseded: its result is dropped and the new one starts when it ends).
  void run();
  void cancel();
  // The sequence moved on a frame: a live panel in front clusters it now.
  void frameChanged();
  // Another dataset is shown: the panel says what it can do with it, and a live panel in
  // front clusters a cloud (after the usual pause), without waiting for Run.
  void datasetShown(int row);
  bool busy() const { return runner_->busy(); }
  // Colours the current cloud by cluster (the selected one bright, the others dimmed).
  void applyColours();
  void selectCluster(int id);
  // Forgets the selection (another dataset is shown).
  void clearSelection() { selected_ = -1; }

  // The last result's way to the screen, in ms: the live pause after the parameter change
  // (0 when Run started it), the job's wall time from its start to its result on the UI thread
  // (the algorithm's own total among it), and the redraw from there to the frame on screen (the
  // window composed and swapped). Of the redraw: the result's handling on the UI thread (the
  // panel's tables, the colours), when the 3D view had drawn its frame (`drawn`) and that
  // frame's own time (`frame`); from `drawn` on, the window's other paints, its composition and
  // swap.
  struct Latency {
    double wait = 0, run = 0, algorithm = 0, redraw = 0;
    double handling = 0, drawn = 0, frame = 0;
    std::size_t points_drawn = 0;  // by that frame (fewer than the cloud's: a level of detail)
    double total() const { return wait + run + redraw; }
  };
  const Latency& lastLatency() const { return latency_; }
  int livePauseMs() const { return jobs_->pauseMs(); }

 signals:
  void finished(bool ok);
  // The view should switch to cluster colours (the colour box's "Clusters" entry).
  void clusterColoursWanted();
  // The last result is on screen; lastLatency() says how long its way took.
  void resultShown();

 private:
  void onResult(std::shared_ptr<const PointCloud> cloud, std::shared_ptr<const ClusterResult> r,
                std::vector<ClusterSummary> summary);
  void exportLabels();
  void exportFiles();
  void exportCsv();

  Workbench bench_;
  ui::ClusterPanel* panel_;
  JobRunner* runner_;
  PanelJobs* jobs_;
  int selected_ = -1;
  Latency latency_;
  QElapsedTimer since_result_;     // valid from a result's arrival until its frame is on screen
  bool result_drawn_ = false;      // the 3D view drew that frame; the window's swap comes next
  QTimer* chart_later_ = nullptr;  // plots the panel's size histogram once results pause
};

}  // namespace cumulus::app
