#pragma once
// The Objects panel: the pipeline from a raw scan to objects (crop box, voxel grid, outlier
// removal, ground removal, clustering, boxes), each stage on or off with its parameters, one
// method for all stages; per-stage times and the objects found. Its controller runs the jobs;
// presets are JSON files whose keys are `cumulus-cli pipeline`'s options.
#include <QJsonObject>

#include <array>

#include "algorithm_panel.h"
#include "objects/pipeline.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {

class StageTable;

class PipelinePanel : public MethodPanel<PipelineMethod> {
  Q_OBJECT

 public:
  explicit PipelinePanel(QWidget* parent = nullptr);

  PipelineParams params() const;
  void setParams(const PipelineParams& p);

  // The panel's settings as a preset (the keys of cumulus-cli pipeline --preset), and back.
  // fromPreset throws cumulus::Error naming an unknown key (with the valid ones) or a bad value.
  QJsonObject preset() const;
  void setPreset(const QJsonObject& preset);

  void setResult(const PipelineResult& r);
  void clearResult();
  void selectObject(int row);  // -1: none
  int selectedObject() const;

 signals:
  void objectSelected(int row);  // index into the result's objects, -1 for none
  void exportCsvRequested();
  void exportJsonRequested();
  void savePresetRequested();
  void loadPresetRequested();

 private:
  void enableStageRows();

  QCheckBox *crop_on_ = nullptr, *voxel_on_ = nullptr, *sor_on_ = nullptr, *ror_on_ = nullptr;
  std::array<QDoubleSpinBox*, 6> crop_{};
  QDoubleSpinBox *leaf_ = nullptr, *sor_std_ = nullptr, *ror_radius_ = nullptr;
  QSpinBox *sor_k_ = nullptr, *ror_min_ = nullptr;
  QComboBox* ground_ = nullptr;
  QDoubleSpinBox* ground_threshold_ = nullptr;
  QDoubleSpinBox* tolerance_ = nullptr;
  QSpinBox *min_ = nullptr, *max_ = nullptr;
  StageTable* stages_ = nullptr;
  QTableWidget* objects_ = nullptr;
  QPushButton* exports_[2] = {};
  // What the widgets do not show (negatives, minimum points per voxel, the RANSAC axis, the
  // range image's geometry), kept from the last setParams.
  PipelineParams base_;
};

}  // namespace cumulus::ui
