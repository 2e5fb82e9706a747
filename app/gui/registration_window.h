#pragma once
// Registration of two open clouds: choose source and target, perturb the source, align it off
// the UI thread (ICP from the perturbed pose, or a global alignment then ICP) and show target
// (grey), source before (red), the global alignment's pose (orange) and after ICP (green) in
// one view, with the keypoint pairs as lines. Applying the alignment moves the source dataset;
// undo puts it back.
#include <QMainWindow>

#include <memory>
#include <optional>

#include "registration/global.h"
#include "registration/icp.h"

class QComboBox;
class QUndoStack;

namespace cumulus::ui {
class IcpPanel;
class VtkCloudView;
}  // namespace cumulus::ui

namespace cumulus::app {

class DocumentModel;

struct IcpJob {
  std::shared_ptr<const PointCloud> source, target;
  Eigen::Matrix4d perturbation = Eigen::Matrix4d::Identity();
  std::vector<IcpResult> results;  // one, or every method for "time all"
  bool all_methods = false;
  std::optional<GlobalResult> global;  // when the run started with a global alignment
};

class RegistrationWindow : public QMainWindow {
  Q_OBJECT
 public:
  RegistrationWindow(DocumentModel* document, QWidget* parent = nullptr);
  ui::IcpPanel* panel() const { return panel_; }
  ui::VtkCloudView* view() const { return view_; }
  // Selects source and target by document row.
  void setPair(int source_row, int target_row);
  void run() { start(false); }
  void timeAll() { start(true); }
  bool busy() const;
  const IcpResult* lastResult() const { return last_ ? &*last_ : nullptr; }
  const GlobalResult* lastGlobal() const { return last_global_ ? &*last_global_ : nullptr; }
  // Moves the source dataset by the last alignment (false, saying why, when there is none);
  // undoApply() puts the dataset's previous cloud back.
  bool applyToSource(QString* error = nullptr);
  bool undoApply();
  QUndoStack* undoStack() const { return undo_; }
  // The source moved by the perturbation and then by ICP's transform, in world coordinates.
  std::shared_ptr<PointCloud> alignedSource() const;
  bool exportTransform(const QString& path, QString* error = nullptr) const;
  std::shared_ptr<const PointCloud> sourceCloud() const { return cloudAt(source_); }
  std::shared_ptr<const PointCloud> targetCloud() const { return cloudAt(target_); }

 signals:
  void finished(bool ok);

 private:
  void refillCombos();
  void start(bool all_methods);
  void onResult(IcpJob job);
  void showClouds(const PointCloud* after);
  std::shared_ptr<const PointCloud> cloudAt(QComboBox* box) const;

  DocumentModel* document_;
  ui::IcpPanel* panel_ = nullptr;
  ui::VtkCloudView* view_ = nullptr;
  QComboBox* source_ = nullptr;
  QComboBox* target_ = nullptr;
  class PanelJobs* jobs_ = nullptr;
  class JobRunner* runner_ = nullptr;
  std::optional<IcpResult> last_;
  std::optional<GlobalResult> last_global_;
  QUndoStack* undo_ = nullptr;
  Eigen::Matrix4d last_perturbation_ = Eigen::Matrix4d::Identity();
  std::shared_ptr<const PointCloud> last_source_;
};

}  // namespace cumulus::app
