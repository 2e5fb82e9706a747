#pragma once
// Compare mode: one action runs the CPU reference and GPU methods on the same cloud and
// parameters, then shows stage timings, speed-ups, an agreement verdict with the differing
// clusters highlighted, and the reference and a chosen method side by side with one camera.
#include <QWidget>

#include <memory>

#include "cluster/cluster.h"
#include "cluster/cluster_compare.h"
#include "compare_runs.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {
class VtkCloudView;
class TimingChart;
}  // namespace cumulus::ui

namespace cumulus::app {

using MethodOutcome = Outcome<ClusterMethod, ClusterResult>;

class CompareWindow : public QWidget {
  Q_OBJECT

 public:
  CompareWindow(std::shared_ptr<const PointCloud> cloud, QString input_name, ClusterParams params,
                QWidget* parent = nullptr);
  ~CompareWindow() override;

  void setMethods(const std::vector<ClusterMethod>& methods);
  void setRepeats(int repeats);
  void run();
  void cancel();
  bool busy() const { return runner_->busy(); }
  const std::vector<MethodOutcome>& outcomes() const { return outcomes_; }
  // Agreement of each outcome with the reference (the first one that ran, `cpu` when chosen).
  const std::vector<ClusterAgreement>& agreements() const { return agreements_; }
  ui::TimingChart* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }

 signals:
  void finished(bool completed);

 private:
  void onFinished(std::vector<MethodOutcome> outcomes, bool completed);
  void showRight();
  std::vector<ClusterMethod> checkedMethods() const;

  std::shared_ptr<const PointCloud> cloud_;
  QString input_;
  ClusterParams params_;
  QListWidget* methods_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* verdict_ = nullptr;
  ui::VtkCloudView* left_ = nullptr;
  ui::VtkCloudView* right_ = nullptr;
  QComboBox* right_method_ = nullptr;
  QCheckBox* differences_ = nullptr;
  ui::TimingChart* chart_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::unique_ptr<CompareRunner<ClusterMethod, ClusterResult>> runner_;
  std::vector<MethodOutcome> outcomes_;
  std::vector<ClusterAgreement> agreements_;
  int ref_index_ = -1;
};

}  // namespace cumulus::app
