#include "segment_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QSlider>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "colormap.h"
#include "method_combo.h"
#include "run_controls.h"
#include "stage_table.h"

namespace cumulus::ui {

void ColumnPlot::setColumn(std::shared_ptr<const DepthImage> image,
                           std::shared_ptr<const SegmentResult> result, int column) {
  image_ = std::move(image);
  result_ = std::move(result);
  column_ = column;
  update();
}

void ColumnPlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (!image_ || column_ < 0 || column_ >= int(image_->width)) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, tr("Click a column of the depth image"));
    return;
  }
  const auto [lo, hi] = image_->valid_range();
  const QRectF area(40, 18, width() - 50, height() - 36);
  const double h = image_->height, span = hi > lo ? hi - lo : 1.0;
  auto X = [&](double row) { return area.left() + row / std::max(1.0, h - 1) * area.width(); };
  auto Y = [&](double d) { return area.bottom() - (d - lo) / span * area.height(); };
  p.setPen(Qt::darkGray);
  p.drawRect(area);
  p.drawText(QRectF(0, 0, width(), 16), Qt::AlignHCenter,
             tr("column %1: depth (m) by row").arg(column_));
  p.drawText(QRectF(0, area.top() - 6, 38, 12), Qt::AlignRight, QString::number(hi, 'f', 1));
  p.drawText(QRectF(0, area.bottom() - 6, 38, 12), Qt::AlignRight, QString::number(lo, 'f', 1));
  p.setPen(QColor(120, 120, 120));
  for (std::uint32_t r = 0; r < image_->height; ++r) {
    const float d = image_->at(r, std::uint32_t(column_));
    if (DepthImage::is_valid(d)) p.drawPoint(QPointF(X(r), Y(d)));
  }
  if (!result_ || std::uint32_t(column_) >= result_->width) return;
  const auto c = std::uint32_t(column_);
  for (std::uint32_t k = result_->offsets[c]; k + 1 < result_->offsets[c + 1]; ++k) {
    const std::uint32_t a = result_->rows[k], b = result_->rows[k + 1];
    bool joined = true;
    for (std::uint32_t y = a; y <= b && joined; ++y)
      joined = DepthImage::is_valid(image_->at(y, c));
    if (!joined) continue;
    const Rgb8 col = label_color(int(k - result_->offsets[c]));
    p.setPen(QPen(QColor(col.r, col.g, col.b), 2));
    p.drawLine(QPointF(X(a), Y(image_->at(a, c))), QPointF(X(b), Y(image_->at(b, c))));
  }
}

SegmentPanel::SegmentPanel(QWidget* parent) : QWidget(parent) {
  auto* lay = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  method_ = new QComboBox(this);
  ui::fill_method_combo(method_, method_table(SegmentMethod{}));
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setRange(0, 300);  // log scale: 1 mm .. 1 m
  epsilon_ = new QDoubleSpinBox(this);
  epsilon_->setDecimals(4);
  epsilon_->setRange(0.0001, 100);
  epsilon_->setSingleStep(0.01);
  epsilon_->setSuffix(tr(" m"));
  epsilon_->setToolTip(tr("A segment is cut where a point is farther than this from its chord"));
  auto* eps_row = new QHBoxLayout;
  eps_row->addWidget(slider_, 1);
  eps_row->addWidget(epsilon_);
  distance_ = new QComboBox(this);
  distance_->addItem(tr("Vertical (depth error)"), int(SegmentDistance::Vertical));
  distance_->addItem(tr("Perpendicular"), int(SegmentDistance::Perpendicular));
  pitch_ = new QDoubleSpinBox(this);
  pitch_->setDecimals(4);
  pitch_->setRange(0.0001, 10);
  pitch_->setValue(0.01);
  pitch_->setSuffix(tr(" m/row"));
  pitch_->setToolTip(tr("Row spacing for the perpendicular distance"));
  median_ = new QComboBox(this);
  median_->addItem(tr("None"), 0);
  median_->addItem(tr("3"), 3);
  median_->addItem(tr("5"), 5);
  form->addRow(tr("Method"), method_);
  form->addRow(tr("Epsilon"), eps_row);
  form->addRow(tr("Distance"), distance_);
  form->addRow(tr("Row pitch"), pitch_);
  form->addRow(tr("Median filter"), median_);
  lay->addLayout(form);
  controls_ = new RunControls(tr("Run"), {}, this);
  lay->addWidget(controls_);
  status_ = new QLabel(tr("Open a depth image to segment its columns."), this);
  status_->setWordWrap(true);
  lay->addWidget(status_);
  stages_ = new StageTable(120, this);
  lay->addWidget(stages_);
  auto* time_all = new QPushButton(tr("Time all methods"), this);
  time_all->setToolTip(tr("Run every method on this image and compare their cut rows"));
  lay->addWidget(time_all);
  times_ = new QTableWidget(0, 3, this);
  times_->setHorizontalHeaderLabels({tr("Method"), tr("ms"), tr("Agreement")});
  times_->horizontalHeader()->setStretchLastSection(true);
  times_->verticalHeader()->hide();
  times_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  times_->setMaximumHeight(110);
  lay->addWidget(times_);
  connect(time_all, &QPushButton::clicked, this, &SegmentPanel::timeAllRequested);
  plot_ = new ColumnPlot(this);
  lay->addWidget(plot_, 1);
  auto* exports = new QHBoxLayout;
  export_csv_ = new QPushButton(tr("CSV…"), this);
  export_json_ = new QPushButton(tr("JSON…"), this);
  exports->addWidget(new QLabel(tr("Export segments:"), this));
  exports->addWidget(export_csv_);
  exports->addWidget(export_json_);
  lay->addLayout(exports);
  export_csv_->setEnabled(false);
  export_json_->setEnabled(false);
  setEpsilon(0.1);

  auto changed = [this] {
    if (!filling_) emit parametersChanged();
  };
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (filling_) return;
    filling_ = true;
    epsilon_->setValue(std::pow(10.0, -3.0 + v / 100.0));
    filling_ = false;
    emit parametersChanged();
  });
  connect(epsilon_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (filling_) return;
    filling_ = true;
    slider_->setValue(int(std::lround((std::log10(v) + 3.0) * 100.0)));
    filling_ = false;
    emit parametersChanged();
  });
  connect(method_, &QComboBox::currentIndexChanged, this, changed);
  connect(distance_, &QComboBox::currentIndexChanged, this, changed);
  connect(pitch_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(median_, &QComboBox::currentIndexChanged, this, changed);
  connect(controls_, &RunControls::runRequested, this, &SegmentPanel::runRequested);
  connect(controls_, &RunControls::cancelRequested, this, &SegmentPanel::cancelRequested);
  connect(export_csv_, &QPushButton::clicked, this, &SegmentPanel::exportCsvRequested);
  connect(export_json_, &QPushButton::clicked, this, &SegmentPanel::exportJsonRequested);
}

SegmentMethod SegmentPanel::method() const {
  return SegmentMethod(method_->currentData().toInt());
}

SegmentParams SegmentPanel::params() const {
  SegmentParams p;
  p.epsilon = float(epsilon_->value());
  p.distance = SegmentDistance(distance_->currentData().toInt());
  p.row_pitch = float(pitch_->value());
  p.median = median_->currentData().toInt();
  return p;
}

bool SegmentPanel::live() const {
  return controls_->live();
}

void SegmentPanel::setMethod(SegmentMethod m) {
  method_->setCurrentIndex(method_->findData(int(m)));
}

void SegmentPanel::setEpsilon(double metres) {
  filling_ = true;
  epsilon_->setValue(metres);
  slider_->setValue(int(std::lround((std::log10(metres) + 3.0) * 100.0)));
  filling_ = false;
}

void SegmentPanel::setGpuAvailable(bool available, const QString& reason) {
  auto* model = qobject_cast<QStandardItemModel*>(method_->model());
  const int i = method_->findData(int(SegmentMethod::Gpu));
  if (model && i >= 0) {
    model->item(i)->setEnabled(available);
    model->item(i)->setToolTip(available ? QString() : tr("No GPU: %1").arg(reason));
  }
  if (!available && method() == SegmentMethod::Gpu) setMethod(SegmentMethod::CpuMt);
}

void SegmentPanel::setBusy(bool busy) {
  controls_->setBusy(busy);
  if (busy) status_->setText(tr("Segmenting…"));
}

void SegmentPanel::setResult(std::shared_ptr<const DepthImage> image,
                             std::shared_ptr<const SegmentResult> r) {
  image_ = std::move(image);
  result_ = std::move(r);
  int top = 0, columns = 0;
  double sum = 0;
  for (auto l : result_->levels)
    if (l) sum += l, ++columns, top = std::max(top, int(l));
  const double mean = columns ? sum / columns : 0;
  status_->setText(
      tr("<b>%L1 cut points</b>, %L2 per column on average, with %3 in %4 ms<br>"
         "recursion levels: mean %5, max %6")
          .arg(qulonglong(result_->rows.size()))
          .arg(result_->width ? double(result_->rows.size()) / result_->width : 0.0, 0, 'f', 1)
          .arg(QString::fromStdString(result_->method))
          .arg(result_->total_ms, 0, 'f', 3)
          .arg(mean, 0, 'f', 2)
          .arg(top));
  stages_->setStages(result_->stages);
  export_csv_->setEnabled(true);
  export_json_->setEnabled(true);
  controls_->setBusy(false);
  plot_->setColumn(image_, result_,
                   plot_->column() >= 0 ? plot_->column() : int(result_->width / 2));
}

void SegmentPanel::setMethodTimes(const std::vector<MethodTime>& times) {
  times_->setRowCount(int(times.size()));
  for (int i = 0; i < int(times.size()); ++i) {
    const auto& t = times[std::size_t(i)];
    times_->setItem(i, 0, new QTableWidgetItem(t.method));
    times_->setItem(i, 1,
                    new QTableWidgetItem(t.ms >= 0 ? QString::number(t.ms, 'f', 3) : QString("–")));
    auto* a = new QTableWidgetItem(t.agreement);
    if (!t.agreement.startsWith("identical") && !t.agreement.startsWith("reference"))
      a->setForeground(QColor(192, 0, 0));
    times_->setItem(i, 2, a);
  }
}

void SegmentPanel::clearResult() {
  result_.reset();
  stages_->setStages({});
  status_->setText(tr("No segmentation yet."));
  export_csv_->setEnabled(false);
  export_json_->setEnabled(false);
  plot_->setColumn(nullptr, nullptr, -1);
}

void SegmentPanel::setError(const QString& message) {
  controls_->setBusy(false);
  status_->setText(tr("<span style='color:#c0392b'>%1</span>").arg(message.toHtmlEscaped()));
}

void SegmentPanel::inspectColumn(int column) {
  plot_->setColumn(image_, result_, column);
}

}  // namespace cumulus::ui
