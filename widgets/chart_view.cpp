#include "chart_view.h"

#include <QPalette>

#include <vtkAxis.h>
#include <vtkChartLegend.h>
#include <vtkChartXY.h>
#include <vtkContextActor.h>
#include <vtkContextInteractorStyle.h>
#include <vtkContextScene.h>
#include <vtkDoubleArray.h>
#include <vtkFloatArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkRenderer.h>
#include <vtkStringArray.h>
#include <vtkTable.h>
#include <vtkTextProperty.h>
#include <vtkTextRenderer.h>

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

namespace {

void style_text(vtkTextProperty* t, const QColor& colour, int size, bool bold = false) {
  t->SetColor(colour.redF(), colour.greenF(), colour.blueF());
  t->SetFontSize(size);
  t->SetBold(bold);
}

}  // namespace

ChartView::ChartView(QWidget* parent) : VtkGlWidget(parent) {
  setMinimumSize(160, 100);
  setMouseTracking(true);  // hover tooltips need moves without a button held
  const QColor base = palette().color(QPalette::Base), text = palette().color(QPalette::Text);
  renderer_->SetBackground(base.redF(), base.greenF(), base.blueF());
  renderWindow()->AddRenderer(renderer_);
  renderer_->AddActor(actor_);
  actor_->GetScene()->SetRenderer(renderer_);
  actor_->GetScene()->AddItem(chart_);
  vtkNew<vtkContextInteractorStyle> style;
  style->SetScene(actor_->GetScene());
  interactor()->SetInteractorStyle(style);

  chart_->SetShowLegend(false);
  chart_->SetAutoSize(true);
  // Room for half of the last tick label where no axis is drawn (the bottom axis ends there).
  chart_->SetHiddenAxisBorder(28);
  style_text(chart_->GetTitleProperties(), text, 13, true);
  for (int location : {vtkAxis::BOTTOM, vtkAxis::LEFT, vtkAxis::TOP, vtkAxis::RIGHT}) {
    vtkAxis* a = chart_->GetAxis(location);
    style_text(a->GetLabelProperties(), text, 11);
    style_text(a->GetTitleProperties(), text, 11, true);
    a->SetTitle("");
    // Shortest exact labels: 0.25, 1, 1000 and 1e-05 rather than 0.25, 1.00, 1000.00, 0.00.
    a->SetNotation(vtkAxis::PRINTF_NOTATION);
    a->SetLabelFormat("%g");
  }
  // Beside the plot area, never over the data.
  chart_->GetLegend()->SetInline(false);
  chart_->GetLegend()->SetHorizontalAlignment(vtkChartLegend::RIGHT);
  chart_->GetLegend()->SetVerticalAlignment(vtkChartLegend::TOP);
  style_text(chart_->GetLegend()->GetLabelProperties(), text, 11);
}

ChartView::~ChartView() = default;

vtkAxis* ChartView::axis(int location) const {
  return chart_->GetAxis(location);
}

void ChartView::clearPlots(const QString& text) {
  chart_->ClearPlots();
  tables_.clear();
  categories_.clear();
  for (int location : {vtkAxis::BOTTOM, vtkAxis::LEFT}) {
    vtkAxis* a = chart_->GetAxis(location);
    a->SetCustomTickPositions(nullptr, nullptr);
    a->SetBehavior(vtkAxis::AUTO);
    a->SetLogScale(false);
  }
  chart_->SetTitle(text.toStdString());
  home_known_ = false;
  update();
}

void ChartView::setTitle(const QString& title) {
  chart_->SetTitle(title.toStdString());
  update();
}

void ChartView::setLogRange(int location, double lo, double hi) {
  lo = std::max(lo, 1e-12);
  hi = std::max(hi, lo);
  const double a = std::floor(std::log10(lo)), b = std::max(std::ceil(std::log10(hi)), a + 1);
  vtkAxis* axis = chart_->GetAxis(location);
  axis->SetLogScale(true);
  axis->SetBehavior(vtkAxis::FIXED);
  axis->SetUnscaledRange(std::pow(10.0, a), std::pow(10.0, b));
  // Decades only, as category labels (positions in the axis' log space) thinned to what fits:
  // VTK's own log ticks label 2 and 5 times each decade too, which collide on a short axis.
  std::vector<double> at;
  std::vector<QString> labels;
  for (double k = a; k <= b; ++k) {
    at.push_back(k);
    labels.push_back(QString::number(std::pow(10.0, k), 'g', 6));
  }
  setCategoryTicks(location, at, labels);
}

vtkTable* ChartView::newTable() {
  tables_.push_back(vtkSmartPointer<vtkTable>::New());
  return tables_.back();
}

QSizeF ChartView::labelSize(vtkAxis* axis, const QString& text) const {
  int bbox[4] = {0, 0, 0, 0};
  vtkTextRenderer* tr = vtkTextRenderer::GetInstance();
  if (!tr || !tr->GetBoundingBox(axis->GetLabelProperties(), text.toStdString(), bbox,
                                 renderWindow()->GetDPI()))
    return {};
  return {double(bbox[1] - bbox[0] + 1), double(bbox[3] - bbox[2] + 1)};
}

void ChartView::setCategoryTicks(int location, std::vector<double> positions,
                                 std::vector<QString> labels) {
  categories_.erase(std::remove_if(categories_.begin(), categories_.end(),
                                   [&](const Categories& c) { return c.location == location; }),
                    categories_.end());
  Categories c{location, std::move(positions), std::move(labels), 0};
  thinCategories(c);
  categories_.push_back(std::move(c));
  update();
}

bool ChartView::thinCategories(Categories& c) {
  vtkAxis* a = chart_->GetAxis(c.location);
  const bool along_x = c.location == vtkAxis::BOTTOM || c.location == vtkAxis::TOP;
  const std::size_t n = c.positions.size();
  // The axis' drawn length (scene pixels) and data range, from the last layout; before the first
  // frame the widget's size stands in.
  const vtkVector2f p1 = a->GetPosition1(), p2 = a->GetPosition2();
  double length = along_x ? p2.GetX() - p1.GetX() : p2.GetY() - p1.GetY();
  if (!(length > 1)) length = (along_x ? width() - 80 : height() - 60) * devicePixelRatioF();
  const double span = a->GetMaximum() - a->GetMinimum();
  double step = 0;  // the closest two categories
  for (std::size_t i = 1; i < n; ++i) {
    const double d = std::abs(c.positions[i] - c.positions[i - 1]);
    step = i == 1 ? d : std::min(step, d);
  }
  const double pixels_per_step = n > 1 && span > 0 ? length * step / span : length;
  double widest = 0;
  for (const auto& l : c.labels)
    widest = std::max(widest, along_x ? labelSize(a, l).width() : labelSize(a, l).height());
  int every = 1;
  while (every < int(n) && every * pixels_per_step < widest + 6)
    ++every;
  if (every == c.every) return false;
  c.every = every;
  vtkNew<vtkDoubleArray> pos;
  vtkNew<vtkStringArray> text;
  for (std::size_t i = 0; i < n; i += std::size_t(every)) {
    pos->InsertNextValue(c.positions[i]);
    text->InsertNextValue(i < c.labels.size() ? c.labels[i].toStdString() : std::string());
  }
  a->SetCustomTickPositions(pos, text);
  return true;
}

void ChartView::paintGL() {
  VtkGlWidget::paintGL();
  // The axes' lengths are known only once the chart has been laid out: thin the category labels
  // for them and draw again if that changed anything.
  bool changed = false;
  for (auto& c : categories_)
    changed = thinCategories(c) || changed;
  if (changed) VtkGlWidget::paintGL();
  if (!home_known_ && vtkReady()) {
    home_.clear();
    for (int location = 0; location < 4; ++location) {
      vtkAxis* a = chart_->GetAxis(location);
      home_.push_back({a->GetUnscaledMinimum(), a->GetUnscaledMaximum()});
    }
    home_known_ = true;
  }
}

void ChartView::mouseDoubleClickEvent(QMouseEvent*) {
  if (!home_known_) return;
  for (int location = 0; location < 4; ++location)
    chart_->GetAxis(location)->SetUnscaledRange(home_[std::size_t(location)][0],
                                                home_[std::size_t(location)][1]);
  update();
}

std::vector<ChartView::TickLabel> ChartView::tickLabels() const {
  std::vector<TickLabel> out;
  const double dpr = devicePixelRatioF();
  for (int location : {vtkAxis::BOTTOM, vtkAxis::LEFT}) {
    vtkAxis* a = chart_->GetAxis(location);
    if (!a->GetVisible() || !a->GetLabelsVisible()) continue;
    vtkFloatArray* at = a->GetTickScenePositions();
    vtkStringArray* text = a->GetTickLabels();
    const bool along_x = location == vtkAxis::BOTTOM;
    const vtkVector2f p1 = a->GetPosition1();
    for (vtkIdType i = 0;
         at && text && i < at->GetNumberOfTuples() && i < text->GetNumberOfValues(); ++i) {
      const QString s = QString::fromStdString(text->GetValue(i));
      const QSizeF size = labelSize(a, s);
      const double w = size.width(), h = size.height();
      const double offset = a->GetLabelOffset();
      QRectF box;  // scene coordinates: origin at the bottom left
      if (along_x)
        box = QRectF(at->GetValue(i) - w / 2, p1.GetY() - offset - h, w, h);
      else
        box = QRectF(p1.GetX() - offset - w, at->GetValue(i) - h / 2, w, h);
      const double H = height() * dpr;
      out.push_back({QRectF(box.left() / dpr, (H - box.bottom()) / dpr, box.width() / dpr,
                            box.height() / dpr),
                     s});
    }
  }
  return out;
}

}  // namespace cumulus::ui
