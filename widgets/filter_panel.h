#pragma once
// The filters panel: a crop box, a voxel grid, statistical and radius outlier removal and the
// removal of the ground plane, each switched on or off, applied in that order to the current
// cloud. It edits parameters and shows
// what the last run kept; the controller runs the jobs and shows the filtered cloud.
#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "algorithm_panel.h"
#include "filter/filter.h"
#include "ground/ground.h"

class QCheckBox;
class QDoubleSpinBox;
class QPushButton;
class QSpinBox;

namespace cumulus::ui {

struct FilterSettings {
  std::optional<CropBoxParams> crop;
  std::optional<VoxelGridParams> voxel;
  std::optional<StatisticalOutlierParams> statistical;
  std::optional<RadiusOutlierParams> radius;
  std::optional<GroundPlaneParams> ground;  // removed
};

// The points left after each stage that ran, in order.
using StageCounts = std::vector<std::pair<QString, std::size_t>>;

class FilterPanel : public MethodPanel<FilterMethod> {
  Q_OBJECT

 signals:
  void addAsDatasetRequested();

 public:
  explicit FilterPanel(QWidget* parent = nullptr);
  FilterSettings settings() const;
  void setSettings(const FilterSettings& settings);
  // The world bounds of the cloud the panel works on: the crop box starts as the whole cloud.
  void setCloudBounds(const std::array<double, 3>& min, const std::array<double, 3>& max);
  // What the last run kept: points in and out of each stage, and the time.
  void setResult(std::size_t points_in, const StageCounts& stages, double total_ms,
                 const QString& method);
  void clearResult();

 private:
  QCheckBox* crop_on_ = nullptr;
  QCheckBox* negative_ = nullptr;
  std::array<QDoubleSpinBox*, 6> corner_{};  // min x y z, max x y z
  QCheckBox* voxel_on_ = nullptr;
  QDoubleSpinBox* leaf_ = nullptr;
  QSpinBox* min_points_ = nullptr;
  QCheckBox* statistical_on_ = nullptr;
  QSpinBox* mean_k_ = nullptr;
  QDoubleSpinBox* stddev_ = nullptr;
  QCheckBox* radius_on_ = nullptr;
  QDoubleSpinBox* radius_ = nullptr;
  QSpinBox* min_neighbors_ = nullptr;
  QCheckBox* keep_outliers_ = nullptr;
  QCheckBox* ground_on_ = nullptr;
  QDoubleSpinBox* ground_threshold_ = nullptr;
  QCheckBox* level_ = nullptr;
  QPushButton* add_ = nullptr;
};

}  // namespace cumulus::ui
