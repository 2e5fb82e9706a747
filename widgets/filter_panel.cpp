#include "filter_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>

namespace cumulus::ui {

FilterPanel::FilterPanel(QWidget* parent) : MethodPanel(parent) {
  crop_on_ = new QCheckBox(tr("Crop box (world coordinates, bounds included)"), this);
  negative_ = new QCheckBox(tr("Keep what lies outside"), this);
  auto* box = new QGridLayout;
  box->addWidget(new QLabel(tr("min"), this), 1, 0);
  box->addWidget(new QLabel(tr("max"), this), 2, 0);
  for (int k = 0; k < 6; ++k) {
    if (k < 3) box->addWidget(new QLabel(QString("xyz"[k]), this), 0, k + 1, Qt::AlignCenter);
    corner_[std::size_t(k)] =
        doubleSpin({.decimals = 2, .low = -1e7, .high = 1e7, .step = 1, .suffix = tr(" m")});
    box->addWidget(corner_[std::size_t(k)], 1 + k / 3, 1 + k % 3);
  }
  voxel_on_ = new QCheckBox(tr("Voxel grid: one point per voxel, the centroid"), this);
  SpinSettings leaf{3, 0.001, 100, 0.05, 0.1, tr(" m")};
  leaf.tip =
      tr("Voxel edge; too small a leaf for the cloud is refused with the smallest that fits");
  leaf_ = doubleSpin(leaf);
  min_points_ = new QSpinBox(this);
  min_points_->setRange(0, 1000000);
  min_points_->setToolTip(tr("Voxels holding fewer points are dropped"));
  watch(min_points_);
  statistical_on_ = new QCheckBox(tr("Statistical outliers: mean distance to the k nearest"), this);
  mean_k_ = new QSpinBox(this);
  mean_k_->setRange(1, kMaxOutlierMeanK);
  mean_k_->setValue(50);
  mean_k_->setToolTip(tr("Neighbours whose mean distance scores a point (PCL's tutorial: 50)"));
  watch(mean_k_);
  SpinSettings stddev{2, -10, 10, 0.1, 1.0, {}};
  stddev.tip = tr("Points scoring above the mean score plus this many standard deviations go");
  stddev_ = doubleSpin(stddev);
  radius_on_ = new QCheckBox(tr("Radius outliers: too few neighbours within the radius"), this);
  SpinSettings radius{3, 0.001, 1000, 0.05, 0.5, tr(" m")};
  radius.tip = tr("Neighbours count at this distance or closer");
  radius_ = doubleSpin(radius);
  min_neighbors_ = new QSpinBox(this);
  min_neighbors_->setRange(0, 1000000);
  min_neighbors_->setValue(2);
  min_neighbors_->setToolTip(tr("Points with fewer neighbours (besides themselves) go"));
  watch(min_neighbors_);
  keep_outliers_ = new QCheckBox(tr("Keep the outliers instead"), this);
  ground_on_ = new QCheckBox(tr("Remove the ground plane (RANSAC)"), this);
  SpinSettings ground{3, 0.001, 10, 0.05, 0.2, tr(" m")};
  ground.tip = tr("Points closer than this to the plane are ground");
  ground_threshold_ = doubleSpin(ground);
  level_ = new QCheckBox(tr("Level planes only (within 15° of z)"), this);
  level_->setToolTip(tr("For a level LiDAR: a wall or a facade is never taken for the ground"));
  for (QCheckBox* c : {crop_on_, negative_, voxel_on_, statistical_on_, radius_on_, keep_outliers_,
                       ground_on_, level_})
    connect(c, &QCheckBox::toggled, this, [this] {
      if (!filling()) emit parametersChanged();
    });
  form()->addRow(crop_on_);
  form()->addRow(box);
  form()->addRow(negative_);
  form()->addRow(voxel_on_);
  form()->addRow(tr("Leaf"), leaf_);
  form()->addRow(tr("Min points"), min_points_);
  form()->addRow(statistical_on_);
  form()->addRow(tr("Neighbours"), mean_k_);
  form()->addRow(tr("Std. deviations"), stddev_);
  form()->addRow(radius_on_);
  form()->addRow(tr("Radius"), radius_);
  form()->addRow(tr("Min neighbours"), min_neighbors_);
  form()->addRow(keep_outliers_);
  form()->addRow(ground_on_);
  form()->addRow(tr("Distance"), ground_threshold_);
  form()->addRow(level_);
  addRunRow(tr("Run"), {}, tr("Filtering…"), false,
            tr("Open a point cloud, switch a filter on and run it."));
  auto* row = new QHBoxLayout;
  add_ = addButton(row, tr("Add as Dataset"),
                   tr("Adds the filtered cloud to the datasets, for clustering or export"),
                   &FilterPanel::addAsDatasetRequested);
  row->addStretch(1);
  column()->addLayout(row);
  column()->addStretch(1);
  Filling guard(this);
  voxel_on_->setChecked(true);
  clearResult();
}

FilterSettings FilterPanel::settings() const {
  FilterSettings s;
  if (crop_on_->isChecked()) {
    CropBoxParams c;
    for (std::size_t k = 0; k < 3; ++k) {
      c.min[k] = corner_[k]->value();
      c.max[k] = corner_[k + 3]->value();
    }
    c.negative = negative_->isChecked();
    s.crop = c;
  }
  if (voxel_on_->isChecked()) {
    const auto leaf = float(leaf_->value());
    s.voxel = VoxelGridParams{{leaf, leaf, leaf}, std::size_t(min_points_->value())};
  }
  const bool outliers = keep_outliers_->isChecked();
  if (statistical_on_->isChecked())
    s.statistical = StatisticalOutlierParams{mean_k_->value(), stddev_->value(), outliers};
  if (radius_on_->isChecked())
    s.radius = RadiusOutlierParams{radius_->value(), min_neighbors_->value(), outliers};
  if (ground_on_->isChecked()) {
    GroundPlaneParams g;
    g.threshold = ground_threshold_->value();
    if (level_->isChecked()) g.axis = {0, 0, 1};
    s.ground = g;
  }
  return s;
}

void FilterPanel::setSettings(const FilterSettings& s) {
  Filling guard(this);
  crop_on_->setChecked(s.crop.has_value());
  if (s.crop) {
    for (std::size_t k = 0; k < 3; ++k) {
      corner_[k]->setValue(s.crop->min[k]);
      corner_[k + 3]->setValue(s.crop->max[k]);
    }
    negative_->setChecked(s.crop->negative);
  }
  voxel_on_->setChecked(s.voxel.has_value());
  if (s.voxel) {
    leaf_->setValue(double(s.voxel->leaf[0]));
    min_points_->setValue(int(s.voxel->min_points_per_voxel));
  }
  statistical_on_->setChecked(s.statistical.has_value());
  if (s.statistical) {
    mean_k_->setValue(s.statistical->mean_k);
    stddev_->setValue(s.statistical->stddev_mul);
    keep_outliers_->setChecked(s.statistical->negative);
  }
  radius_on_->setChecked(s.radius.has_value());
  if (s.radius) {
    radius_->setValue(s.radius->radius);
    min_neighbors_->setValue(s.radius->min_neighbors);
    keep_outliers_->setChecked(s.radius->negative);
  }
  ground_on_->setChecked(s.ground.has_value());
  if (s.ground) {
    ground_threshold_->setValue(s.ground->threshold);
    level_->setChecked(s.ground->axis.has_value());
  }
}

void FilterPanel::setCloudBounds(const std::array<double, 3>& min,
                                 const std::array<double, 3>& max) {
  Filling guard(this);
  for (std::size_t k = 0; k < 3; ++k) {
    // Outward to the spin boxes' two decimals, so that the whole cloud stays inside.
    corner_[k]->setValue(std::floor(min[k] * 100) / 100);
    corner_[k + 3]->setValue(std::ceil(max[k] * 100) / 100);
  }
}

void FilterPanel::setResult(std::size_t points_in, const StageCounts& stages, double total_ms,
                            const QString& method) {
  const QLocale l;
  const std::size_t out = stages.empty() ? points_in : stages.back().second;
  QString text = tr("<b>%1</b> of %2 points kept")
                     .arg(l.toString(qulonglong(out)), l.toString(qulonglong(points_in)));
  for (const auto& [stage, count] : stages)
    text += tr("<br>%1: %2").arg(stage, l.toString(qulonglong(count)));
  text += tr("<br>%1 ms with %2").arg(total_ms, 0, 'f', 3).arg(method);
  setStatus(text);
  add_->setEnabled(out > 0);
}

void FilterPanel::clearResult() {
  add_->setEnabled(false);
}

}  // namespace cumulus::ui
