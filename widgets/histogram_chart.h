#pragma once
// Bar chart of one or two point feature histograms (PFH 125 bins, FPFH 33), the bins labelled by
// feature group so that the structure of the descriptor is visible: FPFH as its three 11-bin
// sub-histograms, PFH as five groups of 25 (one per f3 bin, f1 + 5 f2 inside).
#include <QString>

#include <utility>
#include <vector>

#include "chart_view.h"

namespace cumulus::ui {

class HistogramChart : public ChartView {
  Q_OBJECT
 public:
  explicit HistogramChart(QWidget* parent = nullptr);
  // `a` (point A) and `b` (optional, same size, point B) as bars side by side per bin. Empty `a`
  // clears the chart. Values are PCL's (percent of the point's pairs per bin).
  void setHistograms(std::vector<float> a, std::vector<float> b = {});
  const std::vector<float>& first() const { return a_; }
  const std::vector<float>& second() const { return b_; }
  // Group boundaries and titles for a descriptor of `bins` bins (125 or 33).
  static std::vector<std::pair<int, QString>> groups(int bins);
  QSize sizeHint() const override { return {420, 200}; }

 private:
  std::vector<float> a_, b_;
};

}  // namespace cumulus::ui
