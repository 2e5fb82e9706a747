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
  for (QCheckBox* c : {crop_on_, negative_, voxel_on_})
    connect(c, &QCheckBox::toggled, this, [this] {
      if (!filling()) emit parametersChanged();
    });
  form()->addRow(crop_on_);
  form()->addRow(box);
  form()->addRow(negative_);
  form()->addRow(voxel_on_);
  form()->addRow(tr("Leaf"), leaf_);
  form()->addRow(tr("Min points"), min_points_);
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

void FilterPanel::setResult(std::size_t points_in, std::size_t after_crop, std::size_t after_voxel,
                            double total_ms, const QString& method) {
  const QLocale l;
  QString text = tr("<b>%1</b> of %2 points kept")
                     .arg(l.toString(qulonglong(after_voxel)), l.toString(qulonglong(points_in)));
  if (crop_on_->isChecked()) text += tr("<br>crop box: %1").arg(l.toString(qulonglong(after_crop)));
  if (voxel_on_->isChecked())
    text += tr("<br>voxel grid: %1").arg(l.toString(qulonglong(after_voxel)));
  text += tr("<br>%1 ms with %2").arg(total_ms, 0, 'f', 3).arg(method);
  setStatus(text);
  add_->setEnabled(after_voxel > 0);
}

void FilterPanel::clearResult() {
  add_->setEnabled(false);
}

}  // namespace cumulus::ui
