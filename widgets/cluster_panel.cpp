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
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

#include "cluster_table.h"
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
  cluster_rows_ = new ClusterTableModel(this);
  clusters_ = new QTableView(this);
  clusters_->setObjectName("clusters");
  clusters_->setModel(cluster_rows_);
  clusters_->horizontalHeader()->setStretchLastSection(true);
  clusters_->verticalHeader()->hide();
  clusters_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  clusters_->setSelectionBehavior(QAbstractItemView::SelectRows);
  clusters_->setSelectionMode(QAbstractItemView::SingleSelection);
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
  connect(clusters_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
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
                             std::vector<ClusterSummary> summary, bool chart_later) {
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
  pending_sizes_ = r;
  if (!chart_later) showPendingSizes();
  stages_->setStages(r->stages);
  // The list shows the largest clusters; thousands of singletons would only slow it down.
  clusters_->clearSelection();
  cluster_rows_->setSummary(std::move(summary), 2000);
  enableExports(true);
  setBusy(false);
}

void ClusterPanel::showPendingSizes() {
  if (!pending_sizes_) return;
  histogram_->setSizes(pending_sizes_->sizes);
  pending_sizes_.reset();
}

void ClusterPanel::clearResult() {
  Filling guard(this);
  cluster_rows_->clear();
  stages_->setStages({});
  pending_sizes_.reset();
  histogram_->setSizes({});
  setStatus(tr("No result yet."));
  enableExports(false);
}

void ClusterPanel::selectCluster(int id) {
  Filling guard(this);
  clusters_->clearSelection();
  if (id >= 0 && id < cluster_rows_->rowCount()) {
    clusters_->selectRow(id);
    clusters_->scrollTo(cluster_rows_->index(id, 0));
  }
}

int ClusterPanel::selectedCluster() const {
  const auto rows = clusters_->selectionModel()->selectedRows();
  return rows.isEmpty() ? -1 : rows.first().row();
}

}  // namespace cumulus::ui
