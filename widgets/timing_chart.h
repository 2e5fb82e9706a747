#pragma once
// Charts for comparing methods: per-method times with their spread, where each method's time
// goes, and the timing history.
#include <QString>
#include <QWidget>

#include <vector>

#include "chart_view.h"
#include "core/timing.h"
#include "core/timing_stats.h"

namespace cumulus::ui {

struct TimingBar {
  QString method;
  StageTimes stages;   // median per stage
  TimingStats total;   // whole call: median, min, max over the repeats
  double speedup = 0;  // reference median / this median; 0 for the reference itself
  bool agrees = true;
};

// Two charts side by side: each method's median time as a dot on a log time axis with a
// whisker from the fastest to the slowest repeat (methods differ by decades), and each method's
// stages as shares of its time (stacked bars on a linear 0-100 % axis, where a stacked bar means
// what it shows).
class TimingChart : public QWidget {
  Q_OBJECT
 public:
  explicit TimingChart(QWidget* parent = nullptr);
  void setBars(std::vector<TimingBar> bars);
  const std::vector<TimingBar>& bars() const { return bars_; }
  ChartView* times() const { return times_; }
  ChartView* stages() const { return stages_; }
  QSize sizeHint() const override {
    return {720, 80 + 30 * int(std::max<std::size_t>(bars_.size(), 3))};
  }

 private:
  void fillTimes();
  void fillStages();

  std::vector<TimingBar> bars_;
  ChartView* times_ = nullptr;
  ChartView* stages_ = nullptr;
};

struct HistoryPoint {
  int run = 0;
  QString method;
  double ms = 0;
};

// Total time of every run since the application started, one series per method (log scale).
class HistoryChart : public ChartView {
  Q_OBJECT
 public:
  explicit HistoryChart(QWidget* parent = nullptr);
  void setPoints(std::vector<HistoryPoint> points);
  QSize sizeHint() const override { return {640, 260}; }

 private:
  std::vector<HistoryPoint> points_;
};

}  // namespace cumulus::ui
