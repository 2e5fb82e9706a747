#pragma once
// Cluster sizes in powers of two (1, 2-3, 4-7, ...) as bars, each with its count above it and
// the bins' lower bounds under the axis. Labels are laid out from the font's own metrics: a count
// that does not fit over its bar, or an axis label that would touch its neighbour, is left out
// (the tooltip has them all), so nothing overlaps or is cut at the edges.
#include <QRectF>
#include <QString>
#include <QWidget>

#include <cstddef>
#include <vector>

namespace cumulus::ui {

class SizeHistogram : public QWidget {
 public:
  using QWidget::QWidget;
  void setSizes(const std::vector<std::size_t>& sizes);
  const std::vector<int>& bins() const { return bins_; }
  QSize sizeHint() const override { return {260, 120}; }

  struct Label {
    QRectF box;
    QString text;
  };
  struct Layout {
    std::vector<QRectF> bars;
    std::vector<Label> labels;  // counts, then axis labels
  };
  // Where everything goes at the widget's size and font.
  Layout layout() const;

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<int> bins_;
};

}  // namespace cumulus::ui
