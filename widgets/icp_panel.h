#pragma once
// Parameters of an ICP run (perturbation of the source, method, PCL's criteria) and the display
// of its result: transform, fitness, stop reason, the error curve and timings of every method.
// The panel edits and shows; the registration window runs the jobs.
#include <QWidget>

#include <memory>

#include "algorithm_panel.h"
#include "icp_error_chart.h"
#include "registration/global.h"
#include "registration/icp.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {

class IcpPanel : public MethodPanel<IcpMethod> {
  Q_OBJECT
 public:
  explicit IcpPanel(QWidget* parent = nullptr);

  IcpParams params() const;
  const IcpErrorChart* errorChart() const { return chart_; }
  // Set when the run starts with a global alignment (no guess needed) rather than from the
  // perturbed pose; its refinement is the ICP above, its distance 1.5 keypoint voxels.
  std::optional<GlobalParams> globalParams() const;
  GlobalMethod globalMethod() const;
  void setGlobal(bool on, GlobalMethod method = default_method<GlobalMethod>());
  bool showPairs() const;
  // The perturbation applied to the source before ICP (what ICP has to undo).
  Eigen::Matrix4d perturbation() const;
  void setPerturbation(double rx, double ry, double rz, double tx, double ty, double tz);

  void setResult(const IcpResult& result, const Eigen::Matrix4d& perturbation,
                 const GlobalResult* global = nullptr);
  // The undo button's state: enabled when an applied alignment can be taken back.
  void setUndoAvailable(bool on);
  // Rows of the "time all methods" table: method, total ms, iterations, stop, agreement.
  void setTimings(const std::vector<IcpResult>& results);
  QString transformText() const;

 signals:
  void exportTransformRequested();
  void exportCloudRequested();
  void applyRequested();  // move the source dataset by the alignment
  void undoRequested();   // take the last applied alignment back
  void pairsToggled(bool shown);

 private:
  QDoubleSpinBox* angle_[3] = {};
  QDoubleSpinBox* shift_[3] = {};
  QDoubleSpinBox* max_distance_ = nullptr;
  QSpinBox* iterations_ = nullptr;
  QComboBox* metric_ = nullptr;
  QComboBox* kernel_ = nullptr;
  QDoubleSpinBox* kernel_scale_ = nullptr;
  QComboBox* start_ = nullptr;
  QComboBox* global_method_ = nullptr;
  QDoubleSpinBox* voxel_ = nullptr;
  QCheckBox* pairs_ = nullptr;
  QPushButton* undo_ = nullptr;
  QSpinBox* normals_k_ = nullptr;
  // criteria
  QDoubleSpinBox *transformation_epsilon_ = nullptr, *fitness_epsilon_ = nullptr,
                 *absolute_mse_ = nullptr;
  QPlainTextEdit* transform_ = nullptr;
  IcpErrorChart* chart_ = nullptr;
  QTableWidget* timings_ = nullptr;
};

}  // namespace cumulus::ui
