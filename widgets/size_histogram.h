#pragma once
// Cluster sizes in powers of two (1, 2-3, 4-7, ...) as bars: each bar's range and count in its
// tooltip, the bins' lower bounds under the axis, thinned to what fits. (A log count axis would
// suit thousands of single points beside a few large clusters, but VTK draws bars from zero.)
#include <QString>

#include <cstddef>
#include <vector>

#include "chart_view.h"

namespace cumulus::ui {

class SizeHistogram : public ChartView {
  Q_OBJECT
 public:
  explicit SizeHistogram(QWidget* parent = nullptr);
  void setSizes(const std::vector<std::size_t>& sizes);
  const std::vector<int>& bins() const { return bins_; }
  // Every bin's range and count, one line each (the chart's accessible description).
  const QString& summary() const { return summary_; }
  QSize sizeHint() const override { return {260, 140}; }

 private:
  std::vector<int> bins_;
  QString summary_;
};

}  // namespace cumulus::ui
