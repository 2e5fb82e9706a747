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
#include "segment_lines.h"
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
  for_each_drawn_segment(*image_, *result_, c, [&](std::uint32_t a, std::uint32_t b, Rgb8 col) {
    p.setPen(QPen(QColor(col.r, col.g, col.b), 2));
    p.drawLine(QPointF(X(a), Y(image_->at(a, c))), QPointF(X(b), Y(image_->at(b, c))));
  });
}

SegmentPanel::SegmentPanel(QWidget* parent) : MethodPanel(parent) {
  slider_ = new QSlider(Qt::Horizontal, this);
  slider_->setRange(0, 300);  // log scale: 1 mm .. 1 m
  epsilon_ = doubleSpin({.decimals = 4,
                         .low = 0.0001,
                         .high = 100,
                         .step = 0.01,
                         .value = 0.1,
                         .suffix = tr(" m"),
                         .tip = tr("A segment is cut where a point is farther than this from its "
                                   "chord")});
  auto* eps_row = new QHBoxLayout;
  eps_row->addWidget(slider_, 1);
  eps_row->addWidget(epsilon_);
  distance_ = new QComboBox(this);
  distance_->addItem(tr("Vertical (depth error)"), int(SegmentDistance::Vertical));
  distance_->addItem(tr("Perpendicular"), int(SegmentDistance::Perpendicular));
  pitch_ = doubleSpin({.decimals = 4,
                       .low = 0.0001,
                       .high = 10,
                       .step = 0.1,
                       .value = 0.01,
                       .suffix = tr(" m/row"),
                       .tip = tr("Row spacing for the perpendicular distance")});
  median_ = new QComboBox(this);
  median_->addItem(tr("None"), 0);
  median_->addItem(tr("3"), 3);
  median_->addItem(tr("5"), 5);
  watch(distance_, median_);
  form()->addRow(tr("Epsilon"), eps_row);
  form()->addRow(tr("Distance"), distance_);
  form()->addRow(tr("Row pitch"), pitch_);
  form()->addRow(tr("Median filter"), median_);
  addRunRow(tr("Run"), {}, tr("Segmenting…"), true,
            tr("Open a depth image to segment its columns."));
  stages_ = new StageTable(120, this);
  column()->addWidget(stages_);
  times_ = read_only_table({tr("Method"), tr("ms"), tr("Agreement")}, 110, this);
  column()->addWidget(times_);
  plot_ = new ColumnPlot(this);
  column()->addWidget(plot_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Export segments:"), this));
  exports_[0] = addButton(row, tr("CSV…"), {}, &SegmentPanel::exportCsvRequested);
  exports_[1] = addButton(row, tr("JSON…"), {}, &SegmentPanel::exportJsonRequested);
  column()->addLayout(row);
  enableExports(false);
  setEpsilon(0.1);

  // The slider and the box show one value: each follows the other without a second report.
  connect(slider_, &QSlider::valueChanged, this, [this](int v) {
    if (filling()) return;
    {
      Filling guard(this);
      epsilon_->setValue(std::pow(10.0, -3.0 + v / 100.0));
    }
    emit parametersChanged();
  });
  connect(epsilon_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    if (filling()) return;
    Filling guard(this);
    slider_->setValue(int(std::lround((std::log10(v) + 3.0) * 100.0)));
  });
}

void SegmentPanel::enableExports(bool enabled) {
  for (auto* b : exports_)
    b->setEnabled(enabled);
}

SegmentParams SegmentPanel::params() const {
  SegmentParams p;
  p.epsilon = float(epsilon_->value());
  p.distance = SegmentDistance(distance_->currentData().toInt());
  p.row_pitch = float(pitch_->value());
  p.median = median_->currentData().toInt();
  return p;
}

void SegmentPanel::setParams(const SegmentParams& p) {
  Filling guard(this);
  setEpsilon(p.epsilon);
  if (const int i = distance_->findData(int(p.distance)); i >= 0) distance_->setCurrentIndex(i);
  pitch_->setValue(p.row_pitch);
  if (const int i = median_->findData(p.median); i >= 0) median_->setCurrentIndex(i);
}

void SegmentPanel::setEpsilon(double metres) {
  Filling guard(this);
  epsilon_->setValue(metres);
  slider_->setValue(int(std::lround((std::log10(metres) + 3.0) * 100.0)));
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
  setStatus(
      tr("<b>%L1 cut points</b>, %L2 per column on average, with %3 in %4 ms<br>"
         "recursion levels: mean %5, max %6")
          .arg(qulonglong(result_->rows.size()))
          .arg(result_->width ? double(result_->rows.size()) / result_->width : 0.0, 0, 'f', 1)
          .arg(QString::fromStdString(result_->method))
          .arg(result_->total_ms, 0, 'f', 3)
          .arg(mean, 0, 'f', 2)
          .arg(top));
  stages_->setStages(result_->stages);
  enableExports(true);
  setBusy(false);
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
  setStatus(tr("No segmentation yet."));
  enableExports(false);
  plot_->setColumn(nullptr, nullptr, -1);
}

void SegmentPanel::inspectColumn(int column) {
  plot_->setColumn(image_, result_, column);
}

}  // namespace cumulus::ui
