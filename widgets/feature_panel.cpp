#include "feature_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
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
#include "nns/nns.h"
#include "stage_table.h"

namespace cumulus::ui {

FeaturePanel::FeaturePanel(QWidget* parent) : MethodPanel(parent) {
  column()->setContentsMargins(0, 0, 0, 0);
  auto* form = this->form();
  descriptor_ = new QComboBox(this);
  descriptor_->addItem(tr("FPFH (33 bins)"), int(Descriptor::Fpfh));
  descriptor_->addItem(tr("PFH (125 bins)"), int(Descriptor::Pfh));
  form->insertRow(0, tr("Descriptor"), descriptor_);

  auto* nb = new QHBoxLayout;
  mode_ = new QComboBox(this);
  mode_->addItem(tr("k nearest"));
  mode_->addItem(tr("radius"));
  k_ = new QSpinBox(this);
  k_->setRange(1, kMaxKnnK);
  k_->setValue(32);
  radius_ = doubleSpin(
      {.decimals = 4, .low = 1e-4, .high = 1e3, .step = 0.005, .value = 0.01, .suffix = " m"});
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
  pcl_normals_ = new QCheckBox(tr("PCL-compatible normals (gpu)"), this);
  pcl_normals_->setObjectName("pclNormals");
  pcl_normals_->setToolTip(
      tr("The gpu method's normals are exact by default: as near the true surface as PCL's float "
         "ones, but other in their last bits, which moves some histogram bins. Checked, they are "
         "PCL's bit for bit (PCL's float solve on the host), and so are the histograms."));
  form->addRow(QString(), pcl_normals_);
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
  addRunRow(tr("Compute"), tr("Computing…"), {}, true,
            tr("Choose a cloud and compute its features."));
  auto* lay = column();
  picks_ = new QLabel(this);
  picks_->setWordWrap(true);
  picks_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(picks_);
  chart_ = new HistogramChart(this);
  lay->addWidget(chart_, 1);
  stages_ = new StageTable(130, this);
  lay->addWidget(stages_);
  timings_ = read_only_table({tr("method"), tr("ms"), tr("stages"), tr("vs cpu")}, 130, this);
  timings_->setObjectName("timings");
  lay->addWidget(timings_);
  auto* exports = new QHBoxLayout;
  addButton(exports, tr("Export PCD…"), {}, &FeaturePanel::exportPcdRequested);
  addButton(exports, tr("Export CSV…"), {}, &FeaturePanel::exportCsvRequested);
  lay->addLayout(exports);
  updateNeighbourhoodWidgets();

  watch(descriptor_, mode_, k_, normals_k_);
  connect(pcl_normals_, &QCheckBox::toggled, this, [this] { emit parametersChanged(); });
  connect(mode_, &QComboBox::currentIndexChanged, this, &FeaturePanel::updateNeighbourhoodWidgets);
  connect(distance_, &QComboBox::currentIndexChanged, this, &FeaturePanel::distanceChanged);
  connect(clear, &QPushButton::clicked, this, &FeaturePanel::clearPicksRequested);
}

void FeaturePanel::updateNeighbourhoodWidgets() {
  k_->setVisible(mode_->currentIndex() == 0);
  radius_->setVisible(mode_->currentIndex() == 1);
}

FeatureParams FeaturePanel::params() const {
  FeatureParams p;
  p.descriptor = Descriptor(descriptor_->currentData().toInt());
  p.neighbourhood = mode_->currentIndex() == 0 ? Neighbourhood::nearest(k_->value())
                                               : Neighbourhood::within(float(radius_->value()));
  p.normals.neighbourhood =
      normals_k_->value() > 0 ? Neighbourhood::nearest(normals_k_->value()) : p.neighbourhood;
  p.normals.pcl_compatible = pcl_normals_->isChecked();
  return p;
}

void FeaturePanel::setParams(const FeatureParams& p) {
  const QSignalBlocker b1(descriptor_), b2(mode_), b3(k_), b4(radius_), b5(normals_k_),
      b6(pcl_normals_);
  pcl_normals_->setChecked(p.normals.pcl_compatible);
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

void FeaturePanel::setResult(const FeatureResult& r, std::size_t points) {
  // An all-zero row had no pair to bin: the point has no neighbour besides itself.
  std::size_t lonely = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const float* row = r.row(i);
    lonely += std::all_of(row, row + r.bins, [](float v) { return v == 0.0f; });
  }
  setStatus(
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

void FeaturePanel::setPicks(std::vector<float> a, std::vector<float> b, const QString& text) {
  picks_->setText(text);
  chart_->setHistograms(std::move(a), std::move(b));
}

void FeaturePanel::setTimings(const std::vector<FeatureResult>& results) {
  fill_method_times(
      timings_, results,
      [](const FeatureResult& r) {
        QStringList stages;
        for (const auto& [name, ms] : r.stages)
          stages << QString("%1 %2").arg(QString::fromStdString(name)).arg(ms, 0, 'f', 2);
        return QStringList{QString::fromStdString(r.method), QString::number(r.total_ms, 'f', 2),
                           stages.join(", ")};
      },
      [this](const FeatureResult& cpu, const FeatureResult& r) {
        // Rows with a bin more than 1e-3 from PCL's (the tolerance).
        const HistogramDiff d = compare_histograms(cpu, r);
        return d.rows == 0 ? QString()
                           : tr("%1 rows differ (worst bin %2; own normals)")
                                 .arg(qulonglong(d.rows))
                                 .arg(d.max, 0, 'g', 3);
      });
}

}  // namespace cumulus::ui
