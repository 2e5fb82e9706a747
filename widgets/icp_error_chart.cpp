#include "icp_error_chart.h"

#include <vtkAxis.h>
#include <vtkChartXY.h>
#include <vtkDoubleArray.h>
#include <vtkPlotPoints.h>
#include <vtkTable.h>

namespace cumulus::ui {

IcpErrorChart::IcpErrorChart(QWidget* parent) : ChartView(parent) {
  setHistory({});
}

void IcpErrorChart::setHistory(std::vector<IcpIteration> history) {
  history_ = std::move(history);
  vtkNew<vtkDoubleArray> iteration, mse;
  iteration->SetName("iteration");
  mse->SetName("mean squared error");
  for (std::size_t i = 0; i < history_.size(); ++i)
    if (history_[i].mse > 0) {  // a log axis has no room for an exact zero
      iteration->InsertNextValue(double(i + 1));
      mse->InsertNextValue(history_[i].mse);
    }
  clearPlots(iteration->GetNumberOfTuples() ? QString() : tr("No run yet"));
  axis(vtkAxis::BOTTOM)->SetTitle(tr("iteration").toStdString());
  axis(vtkAxis::LEFT)->SetTitle(tr("mean squared error").toStdString());
  if (!iteration->GetNumberOfTuples()) return;
  vtkTable* t = newTable();
  t->AddColumn(iteration);
  t->AddColumn(mse);
  auto* line = vtkPlotPoints::SafeDownCast(chart()->AddPlot(vtkChart::LINE));
  line->SetInputData(t, 0, 1);
  line->SetColor(31, 119, 180, 255);
  line->SetWidth(2);
  line->SetMarkerStyle(vtkPlotPoints::CIRCLE);
  line->SetMarkerSize(5);
  line->SetTooltipLabelFormat("iteration %x: %y");
  setLogRange(vtkAxis::LEFT, mse->GetRange()[0], mse->GetRange()[1]);
}

}  // namespace cumulus::ui
