#include "size_histogram.h"

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkFloatArray.h>
#include <vtkPlot.h>
#include <vtkStringArray.h>
#include <vtkTable.h>

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

SizeHistogram::SizeHistogram(QWidget* parent) : ChartView(parent) {
  clearPlots(tr("No clusters yet"));
}

void SizeHistogram::setSizes(const std::vector<std::size_t>& sizes) {
  bins_.clear();
  for (auto s : sizes) {
    const auto b = std::size_t(std::floor(std::log2(double(std::max<std::size_t>(s, 1)))));
    if (bins_.size() <= b) bins_.resize(b + 1, 0);
    ++bins_[b];
  }
  summary_ = tr("Number of clusters by size (powers of two)");
  for (std::size_t b = 0; b < bins_.size(); ++b)
    if (bins_[b])
      summary_ += tr("\n%L1 to %L2 points: %L3").arg(1ull << b).arg((2ull << b) - 1).arg(bins_[b]);
  setAccessibleDescription(summary_);
  if (bins_.empty()) {
    clearPlots(tr("No clusters"));
    return;
  }
  clearPlots();
  const int n = int(bins_.size());
  vtkTable* t = newTable();
  vtkNew<vtkFloatArray> x, count;
  x->SetName("bin");
  count->SetName("clusters");
  vtkNew<vtkStringArray> ranges;
  std::vector<double> at;
  std::vector<QString> lower;
  for (int b = 0; b < n; ++b) {
    x->InsertNextValue(float(b));
    count->InsertNextValue(float(bins_[std::size_t(b)]));
    ranges->InsertNextValue(tr("%L1-%L2 points").arg(1ull << b).arg((2ull << b) - 1).toStdString());
    at.push_back(b);
    const unsigned long long v = 1ull << b;
    lower.push_back(v >= 1000000 ? QString("%1M").arg(v / 1000000.0, 0, 'g', 3)
                    : v >= 1000  ? QString("%1k").arg(v / 1000.0, 0, 'g', 3)
                                 : QString::number(v));
  }
  t->AddColumn(x);
  t->AddColumn(count);
  vtkPlot* bars = chart()->AddPlot(vtkChart::BAR);
  bars->SetInputData(t, 0, 1);
  bars->SetColor(70, 130, 180, 255);
  bars->SetIndexedLabels(ranges);
  bars->SetTooltipLabelFormat("%i: %y clusters");
  vtkAxis* xa = axis(vtkAxis::BOTTOM);
  xa->SetBehavior(vtkAxis::FIXED);
  xa->SetRange(-0.5, n - 0.5);
  xa->SetTitle(tr("cluster size (points)").toStdString());
  vtkAxis* ya = axis(vtkAxis::LEFT);
  ya->SetTitle(tr("clusters").toStdString());
  setCategoryTicks(vtkAxis::BOTTOM, at, lower);
}

}  // namespace cumulus::ui
