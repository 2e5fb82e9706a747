#pragma once
// The clustering panel: edits parameters and shows results. It starts nothing itself; the main
// window runs the jobs and hands results back (model/view: the panel is a view + editor).

#include <memory>

#include "algorithm_panel.h"
#include "cluster/cluster.h"
#include "cluster/cluster_export.h"

class QCheckBox;
class QPushButton;
class QSpinBox;
class QTableView;

namespace cumulus::ui {

class ClusterTableModel;
class SizeHistogram;

class ClusterPanel : public MethodPanel<ClusterMethod> {
  Q_OBJECT

 public:
  explicit ClusterPanel(QWidget* parent = nullptr);

  ClusterParams params() const;
  void setParams(const ClusterParams& p);
  // Whether the level ground plane is removed before clustering (its points get no cluster).
  bool removeGround() const;
  void setRemoveGround(bool on);

  // With `chart_later`, the size histogram keeps its plot until showPendingSizes(): the 3D
  // view's frames come first (a chart's frame costs 4-8 ms of VTK's text layout on the UI
  // thread, with any OpenGL).
  void setResult(std::shared_ptr<const ClusterResult> result, std::vector<ClusterSummary> summary,
                 bool chart_later = false);
  void showPendingSizes();
  void clearResult();
  void selectCluster(int id);  // -1: none
  int selectedCluster() const;
  const SizeHistogram* histogram() const { return histogram_; }

 signals:
  void clusterSelected(int id);
  void exportLabelsRequested();
  void exportFilesRequested();
  void exportCsvRequested();

 private:
  void enableExports(bool enabled);

  QDoubleSpinBox* tolerance_ = nullptr;
  QSpinBox* min_ = nullptr;
  QSpinBox* max_ = nullptr;
  QCheckBox* ground_ = nullptr;
  class StageTable* stages_ = nullptr;
  QTableView* clusters_ = nullptr;
  ClusterTableModel* cluster_rows_ = nullptr;
  SizeHistogram* histogram_ = nullptr;
  QPushButton* exports_[3] = {};                        // labels, per cluster, CSV
  std::shared_ptr<const ClusterResult> pending_sizes_;  // the result the histogram waits for
};

}  // namespace cumulus::ui
