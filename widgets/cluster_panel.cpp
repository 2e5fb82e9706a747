#include "cluster_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "colormap.h"
#include "size_histogram.h"
#include "stage_table.h"

namespace cumulus::ui {

ClusterPanel::ClusterPanel(QWidget* parent) : MethodPanel(parent) {
  tolerance_ = doubleSpin({.decimals = 3,
                           .low = 0.001,
                           .high = 1000,
                           .step = 0.05,
                           .value = 0.5,
                           .suffix = tr(" m"),
                           .tip = tr("Points closer than this (strictly) belong to the same "
                                     "cluster")});
  min_ = new QSpinBox(this);
  max_ = new QSpinBox(this);
  min_->setRange(1, std::numeric_limits<int>::max());
  // 0, the bottom of the range, stands for no limit and says so (not 2147483647).
  max_->setRange(0, std::numeric_limits<int>::max());
  max_->setSpecialValueText(tr("no limit"));
  min_->setValue(1);
  max_->setValue(0);
  min_->setToolTip(tr("Clusters with fewer points are dropped whole (label -1)"));
  max_->setToolTip(tr("Clusters with more points are dropped whole (label -1); 0: no limit"));
  watch(min_, max_);
  form()->addRow(tr("Tolerance"), tolerance_);
  form()->addRow(tr("Min size"), min_);
  form()->addRow(tr("Max size"), max_);
  ground_ = new QCheckBox(tr("Remove the ground plane first"), this);
  ground_->setToolTip(
      tr("A level plane by RANSAC (0.2 m, like PCL's SACSegmentation) is taken "
         "out before clustering, so objects on the road are not merged into "
         "one ground cluster; its points get no cluster"));
  connect(ground_, &QCheckBox::toggled, this, [this] {
    if (!filling()) emit parametersChanged();
  });
  form()->addRow(ground_);
  addRunRow(tr("Run"), {}, tr("Clustering…"), false, tr("Open a point cloud to cluster it."));
  histogram_ = new SizeHistogram(this);
  column()->addWidget(histogram_);
  stages_ = new StageTable(150, this);
  column()->addWidget(stages_);
  clusters_ = row_picker_table({tr("Cluster"), tr("Points"), tr("Centroid")}, this);
  column()->addWidget(clusters_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Export:"), this));
  exports_[0] = addButton(row, tr("Labels…"), tr("Save the cloud with a label field (PCD/PLY)"),
                          &ClusterPanel::exportLabelsRequested);
  exports_[1] = addButton(row, tr("Per cluster…"), tr("Save one file per cluster into a folder"),
                          &ClusterPanel::exportFilesRequested);
  exports_[2] =
      addButton(row, tr("CSV…"), tr("Save id, size, centroid and bounding box of each cluster"),
                &ClusterPanel::exportCsvRequested);
  column()->addLayout(row);
  enableExports(false);
  connect(clusters_, &QTableWidget::itemSelectionChanged, this, [this] {
    if (!filling()) emit clusterSelected(selectedCluster());
  });
}

void ClusterPanel::enableExports(bool enabled) {
  for (auto* b : exports_)
    b->setEnabled(enabled);
}

bool ClusterPanel::removeGround() const {
  return ground_->isChecked();
}

void ClusterPanel::setRemoveGround(bool on) {
  Filling guard(this);
  ground_->setChecked(on);
}

ClusterParams ClusterPanel::params() const {
  ClusterParams p;
  p.tolerance = float(tolerance_->value());
  p.min_size = std::size_t(min_->value());
  if (max_->value() > 0) p.max_size = std::size_t(max_->value());
  return p;
}

void ClusterPanel::setParams(const ClusterParams& p) {
  Filling guard(this);
  tolerance_->setValue(p.tolerance);
  min_->setValue(
      int(std::min<std::size_t>(p.min_size, std::size_t(std::numeric_limits<int>::max()))));
  max_->setValue(p.max_size >= std::size_t(std::numeric_limits<int>::max()) ? 0 : int(p.max_size));
}

void ClusterPanel::setResult(std::shared_ptr<const ClusterResult> r,
                             std::vector<ClusterSummary> summary) {
  Filling guard(this);
  std::size_t kept_points = 0;
  for (auto s : r->sizes)
    kept_points += s;
  setStatus(tr("<b>%L1 clusters</b> (%L2 points) with %3 in %4 ms%5%6")
                .arg(qulonglong(r->sizes.size()))
                .arg(qulonglong(kept_points))
                .arg(QString::fromStdString(r->method))
                .arg(r->total_ms, 0, 'f', r->total_ms < 10 ? 3 : 1)
                .arg(r->dropped_clusters
                         ? tr("; %L1 dropped by size").arg(qulonglong(r->dropped_clusters))
                         : QString())
                .arg(r->non_finite
                         ? tr("; %L1 non-finite points skipped").arg(qulonglong(r->non_finite))
                         : QString()));
  histogram_->setSizes(r->sizes);
  stages_->setStages(r->stages);
  // The list shows the largest clusters; thousands of singletons would only slow it down.
  const int rows = int(std::min<std::size_t>(summary.size(), 2000));
  clusters_->clearSelection();
  clusters_->setRowCount(rows);
  for (int i = 0; i < rows; ++i) {
    const auto& s = summary[std::size_t(i)];
    auto* id = new QTableWidgetItem(QString::number(s.id));
    const Rgb8 c = label_color(s.id);
    id->setData(Qt::DecorationRole, QColor(c.r, c.g, c.b));
    clusters_->setItem(i, 0, id);
    auto* size = new QTableWidgetItem(QString::number(qulonglong(s.size)));
    size->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    clusters_->setItem(i, 1, size);
    clusters_->setItem(i, 2,
                       new QTableWidgetItem(QString("%1, %2, %3")
                                                .arg(s.centroid[0], 0, 'f', 2)
                                                .arg(s.centroid[1], 0, 'f', 2)
                                                .arg(s.centroid[2], 0, 'f', 2)));
  }
  enableExports(true);
  setBusy(false);
}

void ClusterPanel::clearResult() {
  Filling guard(this);
  clusters_->setRowCount(0);
  stages_->setStages({});
  histogram_->setSizes({});
  setStatus(tr("No result yet."));
  enableExports(false);
}

void ClusterPanel::selectCluster(int id) {
  Filling guard(this);
  clusters_->clearSelection();
  if (id >= 0 && id < clusters_->rowCount()) {
    clusters_->selectRow(id);
    clusters_->scrollToItem(clusters_->item(id, 0));
  }
}

int ClusterPanel::selectedCluster() const {
  const auto rows = clusters_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.first().row();
}

}  // namespace cumulus::ui
