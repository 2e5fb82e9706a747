#pragma once
// The clustering panel: edits parameters and shows results. It starts nothing itself; the main
// window runs the jobs and hands results back (model/view: the panel is a view + editor).
#include <QWidget>

#include <memory>

#include "cluster/cluster.h"
#include "cluster/cluster_export.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {

class SizeHistogram;

class ClusterPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ClusterPanel(QWidget* parent = nullptr);

  ClusterMethod method() const;
  ClusterParams params() const;
  bool live() const;
  void setMethod(ClusterMethod m);
  void setParams(const ClusterParams& p);
  // GPU methods are offered only when usable; `reason` explains otherwise.
  void setGpuAvailable(bool available, const QString& reason);

  void setBusy(bool busy);
  void setResult(std::shared_ptr<const ClusterResult> result, std::vector<ClusterSummary> summary);
  void clearResult();
  void setError(const QString& message);
  void selectCluster(int id);  // -1: none
  int selectedCluster() const;

 signals:
  void parametersChanged();  // any edit; the owner debounces and re-runs when live()
  void runRequested();
  void cancelRequested();
  void clusterSelected(int id);
  void exportLabelsRequested();
  void exportFilesRequested();
  void exportCsvRequested();

 private:
  QComboBox* method_ = nullptr;
  QDoubleSpinBox* tolerance_ = nullptr;
  QSpinBox* min_ = nullptr;
  QSpinBox* max_ = nullptr;
  class RunControls* controls_ = nullptr;
  QLabel* status_ = nullptr;
  class StageTable* stages_ = nullptr;
  QTableWidget* clusters_ = nullptr;
  SizeHistogram* histogram_ = nullptr;
  QPushButton* export_labels_ = nullptr;
  QPushButton* export_files_ = nullptr;
  QPushButton* export_csv_ = nullptr;
  bool filling_ = false;
};

}  // namespace cumulus::ui
