#pragma once
// Charts for comparing methods: per-method stage bars with spread, and the timing history.
#include <QColor>
#include <QString>
#include <QWidget>

#include <vector>

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

// One horizontal bar per method on a log time axis: total median with a min-max whisker; the
// stages are drawn as a split of the bar in proportion to their medians.
class TimingChart : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  void setBars(std::vector<TimingBar> bars);
  const std::vector<TimingBar>& bars() const { return bars_; }
  QSize sizeHint() const override {
    return {640, 60 + 34 * int(std::max<std::size_t>(bars_.size(), 3))};
  }
  static QColor stage_color(const QString& stage);

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<TimingBar> bars_;
};

struct HistoryPoint {
  int run = 0;
  QString method;
  double ms = 0;
};

// Total time of every run since the application started, by method (log scale).
class HistoryChart : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  void setPoints(std::vector<HistoryPoint> points);
  QSize sizeHint() const override { return {640, 260}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<HistoryPoint> points_;
};

}  // namespace cumulus::ui
