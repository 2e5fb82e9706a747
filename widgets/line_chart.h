#pragma once
// A line over a linear x axis and a linear y axis (odometry's drift along the path): "nice"
// ticks whose labels are spaced by their widths, an optional dashed reference line (a target),
// and the value under the mouse in a tooltip.
#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

namespace cumulus::ui {

class LineChart : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  // x ascending, one y per x; empty clears the chart (showing `empty_text`).
  void setSeries(std::vector<double> x, std::vector<double> y);
  void setLabels(const QString& x_label, const QString& y_label);
  void setReference(std::optional<double> y, const QString& label = {});
  void setEmptyText(const QString& text);
  std::size_t pointCount() const { return x_.size(); }
  // The tick values along x and y of the last layout (for tests).
  const std::vector<double>& xTicks() const { return x_ticks_; }
  const std::vector<double>& yTicks() const { return y_ticks_; }
  QSize sizeHint() const override { return {520, 260}; }

  // About `target` round values (1, 2 or 5 times a power of ten apart) covering [lo, hi].
  static std::vector<double> niceTicks(double lo, double hi, int target);

 protected:
  void paintEvent(QPaintEvent*) override;
  bool event(QEvent* e) override;

 private:
  std::vector<double> x_, y_, x_ticks_, y_ticks_;
  QString x_label_, y_label_, empty_text_, reference_label_;
  std::optional<double> reference_;
  QRectF area_;  // the plot area of the last paint
};

}  // namespace cumulus::ui
