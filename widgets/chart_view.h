#pragma once
// A chart from VTK's chart classes (vtkChartXY: axes with ticks and titles, legend, tooltips,
// zoom with the wheel and pan with the left button) drawn in a VtkGlWidget. The concrete charts
// (histograms, timings, convergence, drift) fill it with plots; this class owns the scene and
// the one thing VTK does not do for us: category labels on an axis thinned to what fits.
#include <QRectF>
#include <QSizeF>
#include <QString>

#include <array>
#include <vector>

#include <vtkNew.h>
#include <vtkSmartPointer.h>

#include "vtk_gl_widget.h"

class vtkAxis;
class vtkChartXY;
class vtkContextActor;
class vtkRenderer;
class vtkStringArray;
class vtkTable;

namespace cumulus::ui {

class ChartView : public VtkGlWidget {
  Q_OBJECT

 public:
  explicit ChartView(QWidget* parent = nullptr);
  ~ChartView() override;

  vtkChartXY* chart() const { return chart_; }
  vtkAxis* axis(int location) const;  // vtkAxis::BOTTOM, LEFT, ...

  // Removes every plot; with a non-empty `text`, shows it as the chart's title in their place
  // (the axes stay, so an empty chart still says what it will show).
  void clearPlots(const QString& text = {});
  // Titles the chart (empty: none).
  void setTitle(const QString& title);

  // A log axis over the whole decades covering [lo, hi] (positive values), labelled at decades.
  void setLogRange(int location, double lo, double hi);

  // Category labels at fixed positions on `location`'s axis (vtkAxis::BOTTOM or LEFT): every
  // k-th where all would not fit side by side at the axis' drawn length, so none overlap.
  void setCategoryTicks(int location, std::vector<double> positions, std::vector<QString> labels);

  struct TickLabel {
    QRectF box;  // widget coordinates (device-independent pixels)
    QString text;
  };
  // The tick labels the last frame drew on the bottom and left axes, where VTK put them.
  std::vector<TickLabel> tickLabels() const;

  // A table that outlives the plots drawing from it (VTK's plots keep only a reference).
  vtkTable* newTable();

 protected:
  void paintGL() override;
  // Back to the whole chart after zooming or panning.
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  struct Categories {
    int location = -1;
    std::vector<double> positions;
    std::vector<QString> labels;
    int every = 1;
  };
  // Shows every `every`-th category label; true when that changed what the axis shows.
  bool thinCategories(Categories& c);
  // A tick label's width and height as VTK draws it (scene pixels).
  QSizeF labelSize(vtkAxis* axis, const QString& text) const;

  vtkNew<vtkRenderer> renderer_;
  vtkNew<vtkContextActor> actor_;
  vtkNew<vtkChartXY> chart_;
  std::vector<Categories> categories_;
  // Each axis' range as first drawn with the current plots (unscaled), for the double click.
  std::vector<std::array<double, 2>> home_;
  bool home_known_ = false;
  std::vector<vtkSmartPointer<vtkTable>> tables_;
};

}  // namespace cumulus::ui
