#pragma once
// A line over linear x and y axes (odometry's drift along the path) with an optional dashed
// reference line (a target); ticks, tooltips and zoom are VTK's.
#include <QString>

#include <optional>
#include <vector>

#include "chart_view.h"

namespace cumulus::ui {

class LineChart : public ChartView {
  Q_OBJECT
 public:
  explicit LineChart(QWidget* parent = nullptr);
  // x ascending, one y per x; empty clears the chart (showing `empty_text`).
  void setSeries(std::vector<double> x, std::vector<double> y);
  void setLabels(const QString& x_label, const QString& y_label);
  void setReference(std::optional<double> y, const QString& label = {});
  void setEmptyText(const QString& text);
  std::size_t pointCount() const { return x_.size(); }
  // The tick values along x and y of the last frame drawn.
  std::vector<double> xTicks() const;
  std::vector<double> yTicks() const;
  QSize sizeHint() const override { return {520, 260}; }

 private:
  void rebuild();

  std::vector<double> x_, y_;
  QString x_label_, y_label_, empty_text_, reference_label_;
  std::optional<double> reference_;
};

}  // namespace cumulus::ui
