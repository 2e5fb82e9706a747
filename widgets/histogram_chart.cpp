#include "histogram_chart.h"

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkFloatArray.h>
#include <vtkPlot.h>
#include <vtkTable.h>

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

HistogramChart::HistogramChart(QWidget* parent) : ChartView(parent) {
  clearPlots(tr("Pick a point in the view"));
}

std::vector<std::pair<int, QString>> HistogramChart::groups(int bins) {
  std::vector<std::pair<int, QString>> g;
  if (bins == 33) {
    g = {{0, tr("f1 (alpha)")}, {11, tr("f2 (phi)")}, {22, tr("f3 (theta)")}};
  } else if (bins == 125) {
    for (int i = 0; i < 5; ++i)
      g.push_back({25 * i, tr("f3 bin %1").arg(i)});
  } else if (bins > 0) {
    g = {{0, QString()}};
  }
  return g;
}

void HistogramChart::setHistograms(std::vector<float> a, std::vector<float> b) {
  a_ = std::move(a);
  b_ = b.size() == a_.size() ? std::move(b) : std::vector<float>{};
  const int n = int(a_.size());
  const bool any = std::any_of(a_.begin(), a_.end(), [](float v) { return std::isfinite(v); });
  if (!n || !any) {
    clearPlots(n ? tr("No histogram: too few neighbours or not a finite point")
                 : tr("Pick a point in the view"));
    return;
  }
  clearPlots();
  vtkTable* t = newTable();
  const auto column = [t, n](const char* name, const std::vector<float>* v) {
    vtkNew<vtkFloatArray> c;
    c->SetName(name);
    c->SetNumberOfValues(n);
    for (int i = 0; i < n; ++i)
      c->SetValue(
          i, v ? (std::isfinite((*v)[std::size_t(i)]) ? (*v)[std::size_t(i)] : 0.0f) : float(i));
    t->AddColumn(c);
  };
  column("bin", nullptr);
  column("point A", &a_);
  if (!b_.empty()) column("point B", &b_);
  const unsigned char colours[2][3] = {{40, 110, 200}, {230, 120, 20}};
  for (int k = 0; k < (b_.empty() ? 1 : 2); ++k) {
    vtkPlot* bars = chart()->AddPlot(vtkChart::BAR);
    bars->SetInputData(t, 0, k + 1);
    bars->SetColor(colours[k][0], colours[k][1], colours[k][2], 255);
    bars->SetTooltipLabelFormat("%l, bin %x: %y");
  }
  chart()->SetShowLegend(!b_.empty());
  chart()->SetBarWidthFraction(b_.empty() ? 0.8f : 0.9f);
  vtkAxis* x = axis(vtkAxis::BOTTOM);
  x->SetBehavior(vtkAxis::FIXED);
  x->SetRange(-0.5, n - 0.5);
  x->SetTitle("");
  vtkAxis* y = axis(vtkAxis::LEFT);
  y->SetTitle("% of pairs");
  float top = 0;
  for (const auto* h : {&a_, &b_})
    for (float v : *h)
      if (std::isfinite(v)) top = std::max(top, v);
  y->SetBehavior(vtkAxis::FIXED);
  y->SetRange(0, top > 0 ? top * 1.05 : 1.0);
  // Each group's title under its middle.
  std::vector<double> at;
  std::vector<QString> titles;
  const auto g = groups(n);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const int begin = g[i].first, end = i + 1 < g.size() ? g[i + 1].first : n;
    at.push_back(0.5 * (begin + end - 1));
    titles.push_back(g[i].second.isEmpty() ? tr("bins 0-%1").arg(n - 1) : g[i].second);
  }
  setCategoryTicks(vtkAxis::BOTTOM, at, titles);
}

}  // namespace cumulus::ui
