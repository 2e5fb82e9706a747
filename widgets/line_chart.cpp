#include "line_chart.h"

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkDoubleArray.h>
#include <vtkPen.h>
#include <vtkPlot.h>
#include <vtkTable.h>

#include <algorithm>

namespace cumulus::ui {

namespace {

std::vector<double> ticks_of(vtkAxis* a) {
  std::vector<double> out;
  if (vtkDoubleArray* t = a->GetTickPositions())
    for (vtkIdType i = 0; i < t->GetNumberOfTuples(); ++i)
      out.push_back(t->GetValue(i));
  return out;
}

}  // namespace

LineChart::LineChart(QWidget* parent) : ChartView(parent) {
  rebuild();
}

void LineChart::setSeries(std::vector<double> x, std::vector<double> y) {
  x_ = std::move(x);
  y_ = std::move(y);
  y_.resize(x_.size());
  rebuild();
}

void LineChart::setLabels(const QString& x_label, const QString& y_label) {
  x_label_ = x_label;
  y_label_ = y_label;
  rebuild();
}

void LineChart::setReference(std::optional<double> y, const QString& label) {
  reference_ = y;
  reference_label_ = label;
  rebuild();
}

void LineChart::setEmptyText(const QString& text) {
  empty_text_ = text;
  rebuild();
}

std::vector<double> LineChart::xTicks() const {
  return ticks_of(axis(vtkAxis::BOTTOM));
}

std::vector<double> LineChart::yTicks() const {
  return ticks_of(axis(vtkAxis::LEFT));
}

void LineChart::rebuild() {
  clearPlots(x_.empty() ? empty_text_ : QString());
  axis(vtkAxis::BOTTOM)->SetTitle(x_label_.toStdString());
  axis(vtkAxis::LEFT)->SetTitle(y_label_.toStdString());
  if (x_.empty()) return;
  vtkTable* t = newTable();
  vtkNew<vtkDoubleArray> x, y;
  x->SetName(x_label_.isEmpty() ? "x" : x_label_.toUtf8().constData());
  y->SetName(y_label_.isEmpty() ? "y" : y_label_.toUtf8().constData());
  for (std::size_t i = 0; i < x_.size(); ++i) {
    x->InsertNextValue(x_[i]);
    y->InsertNextValue(y_[i]);
  }
  t->AddColumn(x);
  t->AddColumn(y);
  vtkPlot* line = chart()->AddPlot(vtkChart::LINE);
  line->SetInputData(t, 0, 1);
  line->SetColor(31, 119, 180, 255);
  line->SetWidth(2);
  line->SetTooltipLabelFormat("%x: %y");
  if (reference_) {
    vtkTable* r = newTable();
    vtkNew<vtkDoubleArray> rx, ry;
    rx->SetName("x");
    ry->SetName(reference_label_.isEmpty() ? "reference" : reference_label_.toUtf8().constData());
    for (double v : {x_.front(), x_.back()}) {
      rx->InsertNextValue(v);
      ry->InsertNextValue(*reference_);
    }
    r->AddColumn(rx);
    r->AddColumn(ry);
    vtkPlot* ref = chart()->AddPlot(vtkChart::LINE);
    ref->SetInputData(r, 0, 1);
    ref->SetColor(214, 39, 40, 255);
    ref->GetPen()->SetLineType(vtkPen::DASH_LINE);
    ref->SetTooltipLabelFormat("%l: %y");
    chart()->SetShowLegend(true);
  }
  // From zero (drift and errors are judged from there) to a little above the series and the
  // reference, so neither runs along the frame.
  double lo = 0, hi = 0;
  for (double v : y_)
    lo = std::min(lo, v), hi = std::max(hi, v);
  if (reference_) lo = std::min(lo, *reference_), hi = std::max(hi, *reference_);
  vtkAxis* ya = axis(vtkAxis::LEFT);
  ya->SetBehavior(vtkAxis::FIXED);
  ya->SetRange(lo, hi > lo ? hi + 0.1 * (hi - lo) : lo + 1);
}

}  // namespace cumulus::ui
