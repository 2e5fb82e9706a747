#include "feature_panel.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "histogram_chart.h"
#include "method_combo.h"
#include "nns/nns.h"
#include "run_controls.h"
#include "stage_table.h"

namespace cumulus::ui {

FeaturePanel::FeaturePanel(QWidget* parent) : QWidget(parent) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  auto* form = new QFormLayout;
  descriptor_ = new QComboBox(this);
  descriptor_->addItem(tr("FPFH (33 bins)"), int(Descriptor::Fpfh));
  descriptor_->addItem(tr("PFH (125 bins)"), int(Descriptor::Pfh));
  form->addRow(tr("Descriptor"), descriptor_);
  method_ = new QComboBox(this);
  ui::fill_method_combo(method_, method_table(FeatureMethod{}));
  form->addRow(tr("Method"), method_);

  auto* nb = new QHBoxLayout;
  mode_ = new QComboBox(this);
  mode_->addItem(tr("k nearest"));
  mode_->addItem(tr("radius"));
  k_ = new QSpinBox(this);
  k_->setRange(1, kMaxKnnK);
  k_->setValue(32);
  radius_ = new QDoubleSpinBox(this);
  radius_->setDecimals(4);
  radius_->setRange(1e-4, 1e3);
  radius_->setSingleStep(0.005);
  radius_->setValue(0.01);
  radius_->setSuffix(" m");
  nb->addWidget(mode_);
  nb->addWidget(k_, 1);
  nb->addWidget(radius_, 1);
  form->addRow(tr("Neighbourhood"), nb);
  normals_k_ = new QSpinBox(this);
  normals_k_->setRange(0, kMaxKnnK);
  normals_k_->setSpecialValueText(tr("same as the histograms"));
  normals_k_->setPrefix(tr("k = "));
  normals_k_->setToolTip(tr("Neighbours of each normal's PCA (0: the histograms' neighbourhood)."));
  form->addRow(tr("Normals"), normals_k_);
  distance_ = new QComboBox(this);
  distance_->addItem(tr("L2"), int(HistogramDistance::L2));
  distance_->addItem(tr("chi-squared"), int(HistogramDistance::ChiSquared));
  distance_->setToolTip(tr("Colours every point by the distance of its histogram to A's."));
  form->addRow(tr("Colour by distance"), distance_);
  auto* pick_row = new QHBoxLayout;
  slot_ = new QButtonGroup(this);
  auto* a = new QRadioButton(tr("A (reference)"), this);
  auto* b = new QRadioButton(tr("B (overlay)"), this);
  a->setChecked(true);
  slot_->addButton(a, 0);
  slot_->addButton(b, 1);
  auto* clear = new QPushButton(tr("Clear"), this);
  pick_row->addWidget(a);
  pick_row->addWidget(b);
  pick_row->addWidget(clear);
  form->addRow(tr("Next pick sets"), pick_row);
  lay->addLayout(form);

  controls_ = new RunControls(tr("Compute"), tr("Computing…"), this);
  auto* time_all = new QPushButton(tr("Time all methods"), controls_);
  controls_->row()->addWidget(time_all);
  lay->addWidget(controls_);
  summary_ = new QLabel(tr("Choose a cloud and compute its features."), this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(summary_);
  picks_ = new QLabel(this);
  picks_->setWordWrap(true);
  picks_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(picks_);
  chart_ = new HistogramChart(this);
  lay->addWidget(chart_, 1);
  stages_ = new StageTable(130, this);
  lay->addWidget(stages_);
  timings_ = new QTableWidget(0, 4, this);
  timings_->setObjectName("timings");
  timings_->setHorizontalHeaderLabels({tr("method"), tr("ms"), tr("stages"), tr("vs cpu")});
  timings_->horizontalHeader()->setStretchLastSection(true);
  timings_->verticalHeader()->hide();
  timings_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  timings_->setMaximumHeight(130);
  lay->addWidget(timings_);
  auto* exports = new QHBoxLayout;
  auto* pcd = new QPushButton(tr("Export PCD…"), this);
  auto* csv = new QPushButton(tr("Export CSV…"), this);
  exports->addWidget(pcd);
  exports->addWidget(csv);
  lay->addLayout(exports);
  updateNeighbourhoodWidgets();

  auto changed = [this] { emit parametersChanged(); };
  connect(descriptor_, &QComboBox::currentIndexChanged, this, changed);
  connect(method_, &QComboBox::currentIndexChanged, this, changed);
  connect(mode_, &QComboBox::currentIndexChanged, this, [this] {
    updateNeighbourhoodWidgets();
    emit parametersChanged();
  });
  connect(k_, &QSpinBox::valueChanged, this, changed);
  connect(radius_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(normals_k_, &QSpinBox::valueChanged, this, changed);
  connect(distance_, &QComboBox::currentIndexChanged, this, &FeaturePanel::distanceChanged);
  connect(clear, &QPushButton::clicked, this, &FeaturePanel::clearPicksRequested);
  connect(controls_, &RunControls::runRequested, this, &FeaturePanel::runRequested);
  connect(controls_, &RunControls::cancelRequested, this, &FeaturePanel::cancelRequested);
  connect(time_all, &QPushButton::clicked, this, &FeaturePanel::timeAllRequested);
  connect(pcd, &QPushButton::clicked, this, &FeaturePanel::exportPcdRequested);
  connect(csv, &QPushButton::clicked, this, &FeaturePanel::exportCsvRequested);
}

void FeaturePanel::updateNeighbourhoodWidgets() {
  k_->setVisible(mode_->currentIndex() == 0);
  radius_->setVisible(mode_->currentIndex() == 1);
}

FeatureMethod FeaturePanel::method() const {
  return FeatureMethod(method_->currentData().toInt());
}

void FeaturePanel::setMethod(FeatureMethod m) {
  method_->setCurrentIndex(method_->findData(int(m)));
}

FeatureParams FeaturePanel::params() const {
  FeatureParams p;
  p.descriptor = Descriptor(descriptor_->currentData().toInt());
  p.neighbourhood = mode_->currentIndex() == 0 ? Neighbourhood::nearest(k_->value())
                                               : Neighbourhood::within(float(radius_->value()));
  p.normals.neighbourhood =
      normals_k_->value() > 0 ? Neighbourhood::nearest(normals_k_->value()) : p.neighbourhood;
  return p;
}

void FeaturePanel::setParams(const FeatureParams& p) {
  const QSignalBlocker b1(descriptor_), b2(mode_), b3(k_), b4(radius_), b5(normals_k_);
  descriptor_->setCurrentIndex(descriptor_->findData(int(p.descriptor)));
  mode_->setCurrentIndex(p.neighbourhood.k > 0 ? 0 : 1);
  if (p.neighbourhood.k > 0) k_->setValue(p.neighbourhood.k);
  if (p.neighbourhood.radius > 0) radius_->setValue(double(p.neighbourhood.radius));
  const Neighbourhood& n = p.normals.neighbourhood;
  const bool same = n.k == p.neighbourhood.k && n.radius == p.neighbourhood.radius;
  normals_k_->setValue(same || n.k <= 0 ? 0 : n.k);
  updateNeighbourhoodWidgets();
  emit parametersChanged();
}

HistogramDistance FeaturePanel::distance() const {
  return HistogramDistance(distance_->currentData().toInt());
}

void FeaturePanel::setDistance(HistogramDistance d) {
  distance_->setCurrentIndex(distance_->findData(int(d)));
}

int FeaturePanel::pickSlot() const {
  return slot_->checkedId();
}

void FeaturePanel::setPickSlot(int slot) {
  slot_->button(slot == 1 ? 1 : 0)->setChecked(true);
}

bool FeaturePanel::live() const {
  return controls_->live();
}

void FeaturePanel::setGpuAvailable(bool available, const QString& reason) {
  for (int i = 0; i < method_->count(); ++i)
    if (FeatureMethod(method_->itemData(i).toInt()) != FeatureMethod::Cpu && !available)
      method_->setItemData(i, tr("No GPU: %1").arg(reason), Qt::ToolTipRole);
}

void FeaturePanel::setBusy(bool busy) {
  controls_->setBusy(busy);
}

void FeaturePanel::setResult(const FeatureResult& r, std::size_t points) {
  // An all-zero row had no pair to bin: the point has no neighbour besides itself.
  std::size_t lonely = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const float* row = r.row(i);
    lonely += std::all_of(row, row + r.bins, [](float v) { return v == 0.0f; });
  }
  summary_->setText(
      tr("<b>%1</b> %2: %3 points, %4 bins each, in %5 ms. %6 non-finite points left out (NaN "
         "rows); %7 points without a neighbour (all-zero rows).")
          .arg(QString::fromStdString(r.method), descriptor_name(r.descriptor))
          .arg(qulonglong(points))
          .arg(r.bins)
          .arg(r.total_ms, 0, 'f', 2)
          .arg(qulonglong(r.non_finite_points))
          .arg(qulonglong(lonely)));
  stages_->setStages(r.stages);
}

void FeaturePanel::setError(const QString& message) {
  summary_->setText(message);
}

void FeaturePanel::setPicks(std::vector<float> a, std::vector<float> b, const QString& text) {
  picks_->setText(text);
  chart_->setHistograms(std::move(a), std::move(b));
}

void FeaturePanel::setTimings(const std::vector<FeatureResult>& results) {
  timings_->setRowCount(int(results.size()));
  const FeatureResult* cpu = nullptr;
  for (const auto& r : results)
    if (r.method == "cpu") cpu = &r;
  for (int i = 0; i < int(results.size()); ++i) {
    const FeatureResult& r = results[std::size_t(i)];
    QString agree = tr("reference");
    if (cpu && &r != cpu) {
      // Rows with a bin more than 1e-3 from PCL's (the tolerance).
      const HistogramDiff d = compare_histograms(*cpu, r);
      agree =
          d.rows == 0
              ? tr("same (%1x faster)").arg(cpu->total_ms / std::max(r.total_ms, 1e-9), 0, 'f', 0)
              : tr("%1 rows differ (worst bin %2; own normals)")
                    .arg(qulonglong(d.rows))
                    .arg(d.max, 0, 'g', 3);
    }
    QStringList stages;
    for (const auto& [name, ms] : r.stages)
      stages << QString("%1 %2").arg(QString::fromStdString(name)).arg(ms, 0, 'f', 2);
    const QString cells[4] = {QString::fromStdString(r.method), QString::number(r.total_ms, 'f', 2),
                              stages.join(", "), agree};
    for (int c = 0; c < 4; ++c)
      timings_->setItem(i, c, new QTableWidgetItem(cells[c]));
  }
}

}  // namespace cumulus::ui
