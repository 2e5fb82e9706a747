#pragma once
// ICP registration of two open clouds: choose source and target, perturb the source, align it
// off the UI thread and show target (grey), source before (red) and after (green) in one view.
#include <QMainWindow>

#include <memory>

#include "registration/icp.h"

class QComboBox;

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
  Eigen::Matrix4d last_perturbation_ = Eigen::Matrix4d::Identity();
  std::shared_ptr<const PointCloud> last_source_;
};

}  // namespace cumulus::app
