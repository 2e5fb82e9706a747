#include "timing_chart.h"

#include <QHBoxLayout>

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkColorSeries.h>
#include <vtkDoubleArray.h>
#include <vtkPlotBar.h>
#include <vtkPlotLine.h>
#include <vtkPlotPoints.h>
#include <vtkStringArray.h>
#include <vtkTable.h>

#include <algorithm>
#include <cmath>

#include "colormap.h"

namespace cumulus::ui {

namespace {

Rgb8 method_colour(const QString& m) {
  if (m == "cpu") return {60, 60, 60};
  return label_color(int(qHash(m) % 97));
}

Rgb8 stage_colour(const std::string& stage) {
  static const std::pair<const char*, Rgb8> known[] = {
      {"upload", {91, 155, 213}},    {"download", {68, 114, 196}},
      {"grid", {112, 173, 71}},      {"graph", {255, 192, 0}},
      {"labelling", {237, 125, 49}}, {"canonicalize", {165, 165, 165}},
      {"initial-ec", {158, 72, 14}}, {"build-matrix", {255, 230, 153}},
      {"merge", {153, 115, 0}},      {"kd-tree", {112, 48, 160}},
      {"extract", {192, 0, 0}},      {"convert", {191, 191, 191}}};
  for (const auto& [name, c] : known)
    if (stage == name) return c;
  return label_color(int(qHash(QString::fromStdString(stage)) % 89));
}

vtkSmartPointer<vtkDoubleArray> column(const char* name) {
  auto c = vtkSmartPointer<vtkDoubleArray>::New();
  c->SetName(name);
  return c;
}

QString method_label(const TimingBar& b) {
  QString s = b.method;
  if (b.speedup > 0) s += QString(" %1x").arg(b.speedup, 0, 'f', b.speedup < 10 ? 1 : 0);
  if (!b.agrees) s += QObject::tr(" DIFFERS");
  return s;
}

}  // namespace

TimingChart::TimingChart(QWidget* parent) : QWidget(parent) {
  auto* lay = new QHBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  times_ = new ChartView(this);
  stages_ = new ChartView(this);
  lay->addWidget(times_, 3);
  lay->addWidget(stages_, 2);
  setBars({});
}

void TimingChart::setBars(std::vector<TimingBar> bars) {
  bars_ = std::move(bars);
  fillTimes();
  fillStages();
  updateGeometry();
}

void TimingChart::fillTimes() {
  times_->clearPlots(bars_.empty() ? tr("Run a comparison to see the timings") : QString());
  if (bars_.empty()) return;
  std::vector<double> rows;
  std::vector<QString> names;
  // One whisker and one dot per method, each method its own colour; the first method on top.
  const int n = int(bars_.size());
  for (int i = 0; i < n; ++i) {
    const auto& b = bars_[std::size_t(i)];
    const double row = n - 1 - i;
    rows.push_back(row);
    names.push_back(method_label(b));
    const Rgb8 c = b.agrees ? method_colour(b.method) : Rgb8{192, 0, 0};
    vtkTable* t = times_->newTable();
    auto ms = column("ms"), y = column(b.method.toUtf8().constData());
    const double lo = b.total.min > 0 ? b.total.min : b.total.median;
    const double hi = b.total.max > 0 ? b.total.max : b.total.median;
    for (double v : {lo, hi}) {
      ms->InsertNextValue(std::max(v, 1e-6));
      y->InsertNextValue(row);
    }
    t->AddColumn(ms);
    t->AddColumn(y);
    auto* whisker = vtkPlotLine::SafeDownCast(times_->chart()->AddPlot(vtkChart::LINE));
    whisker->SetInputData(t, 0, 1);
    whisker->SetColor(c.r, c.g, c.b, 255);
    whisker->SetWidth(2);
    whisker->SetMarkerStyle(vtkPlotPoints::PLUS);
    whisker->SetTooltipLabelFormat("%l: %x ms (fastest / slowest)");
    vtkTable* m = times_->newTable();
    auto med = column("ms"), my = column(b.method.toUtf8().constData());
    med->InsertNextValue(std::max(b.total.median, 1e-6));
    my->InsertNextValue(row);
    m->AddColumn(med);
    m->AddColumn(my);
    auto* dot = vtkPlotPoints::SafeDownCast(times_->chart()->AddPlot(vtkChart::POINTS));
    dot->SetInputData(m, 0, 1);
    dot->SetColor(c.r, c.g, c.b, 255);
    dot->SetMarkerStyle(vtkPlotPoints::CIRCLE);
    dot->SetMarkerSize(9);
    dot->SetTooltipLabelFormat("%l: median %x ms");
  }
  // Room around the fastest and slowest repeats so no dot sits on the frame.
  double lo = 1e300, hi = 0;
  for (const auto& b : bars_)
    lo = std::min(lo, b.total.min > 0 ? b.total.min : b.total.median),
    hi = std::max(hi, std::max(b.total.max, b.total.median));
  times_->setLogRange(vtkAxis::BOTTOM, lo / 1.5, hi * 1.5);
  vtkAxis* x = times_->axis(vtkAxis::BOTTOM);
  x->SetTitle(tr("ms (log scale)").toStdString());
  vtkAxis* y = times_->axis(vtkAxis::LEFT);
  y->SetBehavior(vtkAxis::FIXED);
  y->SetRange(-0.6, n - 0.4);
  y->SetTitle("");
  times_->setCategoryTicks(vtkAxis::LEFT, rows, names);
}

void TimingChart::fillStages() {
  std::vector<std::string> names;
  for (const auto& b : bars_)
    for (const auto& [name, ms] : b.stages)
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  stages_->clearPlots(bars_.empty()   ? tr("Where each method's time goes")
                      : names.empty() ? tr("No stage times")
                                      : QString());
  if (bars_.empty() || names.empty()) return;
  const int n = int(bars_.size());
  vtkTable* t = stages_->newTable();
  auto row = column("method");
  std::vector<vtkSmartPointer<vtkDoubleArray>> share;
  for (const auto& s : names)
    share.push_back(column(s.c_str()));
  std::vector<double> rows;
  std::vector<QString> labels;
  for (int i = 0; i < n; ++i) {
    const auto& b = bars_[std::size_t(i)];
    row->InsertNextValue(n - 1 - i);
    rows.push_back(n - 1 - i);
    labels.push_back(b.method);
    double sum = 0;
    for (const auto& [name, ms] : b.stages)
      sum += ms;
    for (std::size_t s = 0; s < names.size(); ++s) {
      double ms = 0;
      for (const auto& [name, v] : b.stages)
        if (name == names[s]) ms += v;
      share[s]->InsertNextValue(sum > 0 ? 100.0 * ms / sum : 0.0);
    }
  }
  t->AddColumn(row);
  for (auto& s : share)
    t->AddColumn(s);
  auto* bars = vtkPlotBar::SafeDownCast(stages_->chart()->AddPlot(vtkChart::BAR));
  bars->SetOrientation(vtkPlotBar::HORIZONTAL);
  bars->SetInputData(t, "method", names.front());
  for (std::size_t s = 1; s < names.size(); ++s)
    bars->SetInputArray(int(s + 1), names[s]);
  vtkNew<vtkColorSeries> colours;
  colours->ClearColors();
  for (const auto& s : names) {
    const Rgb8 c = stage_colour(s);
    colours->AddColor(vtkColor3ub(c.r, c.g, c.b));
  }
  bars->SetColorSeries(colours);
  vtkNew<vtkStringArray> legend;
  for (const auto& s : names)
    legend->InsertNextValue(s);
  bars->SetLabels(legend);
  bars->SetTooltipLabelFormat("%l: %y %");
  stages_->chart()->SetShowLegend(true);
  vtkAxis* x = stages_->axis(vtkAxis::BOTTOM);
  x->SetBehavior(vtkAxis::FIXED);
  x->SetRange(0, 100);
  x->SetTitle(tr("% of the method's time").toStdString());
  vtkAxis* y = stages_->axis(vtkAxis::LEFT);
  y->SetBehavior(vtkAxis::FIXED);
  y->SetRange(-0.6, n - 0.4);
  stages_->setCategoryTicks(vtkAxis::LEFT, rows, labels);
}

HistoryChart::HistoryChart(QWidget* parent) : ChartView(parent) {
  setPoints({});
}

void HistoryChart::setPoints(std::vector<HistoryPoint> points) {
  points_ = std::move(points);
  clearPlots(points_.empty() ? tr("No runs yet") : QString());
  if (points_.empty()) return;
  std::vector<QString> methods;
  for (const auto& q : points_)
    if (std::find(methods.begin(), methods.end(), q.method) == methods.end())
      methods.push_back(q.method);
  for (const auto& m : methods) {
    vtkTable* t = newTable();
    auto run = column("run"), ms = column(m.toUtf8().constData());
    for (const auto& q : points_)
      if (q.method == m) {
        run->InsertNextValue(q.run);
        ms->InsertNextValue(std::max(q.ms, 1e-6));
      }
    t->AddColumn(run);
    t->AddColumn(ms);
    auto* p = vtkPlotPoints::SafeDownCast(chart()->AddPlot(vtkChart::POINTS));
    p->SetInputData(t, 0, 1);
    const Rgb8 c = method_colour(m);
    p->SetColor(c.r, c.g, c.b, 255);
    p->SetMarkerStyle(vtkPlotPoints::CIRCLE);
    p->SetMarkerSize(7);
    p->SetTooltipLabelFormat("%l, run %x: %y ms");
  }
  chart()->SetShowLegend(true);
  double lo = 1e300, hi = 0;
  for (const auto& q : points_)
    lo = std::min(lo, q.ms), hi = std::max(hi, q.ms);
  setLogRange(vtkAxis::LEFT, lo, hi);
  axis(vtkAxis::BOTTOM)->SetTitle(tr("run").toStdString());
  axis(vtkAxis::LEFT)->SetTitle(tr("ms (log scale)").toStdString());
}

}  // namespace cumulus::ui
