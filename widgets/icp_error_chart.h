#pragma once
// ICP's convergence: the mean squared error of each iteration's pairs on a log axis.
#include <vector>

#include "chart_view.h"
#include "registration/icp.h"

namespace cumulus::ui {

class IcpErrorChart : public ChartView {
  Q_OBJECT
 public:
  explicit IcpErrorChart(QWidget* parent = nullptr);
  void setHistory(std::vector<IcpIteration> history);
  const std::vector<IcpIteration>& history() const { return history_; }
  QSize sizeHint() const override { return {320, 180}; }

 private:
  std::vector<IcpIteration> history_;
};

}  // namespace cumulus::ui
