#pragma once
// The RDP segmentation panel: edits parameters, shows statistics and the column inspector.
// Jobs are run by the main window, which hands results back.
#include <QWidget>

#include <memory>

#include "algorithm_panel.h"
#include "segment/segment.h"

class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QSlider;
class QTableWidget;

namespace cumulus::ui {

// Depth against row for one column, with its segments drawn over it.
class ColumnPlot : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  void setColumn(std::shared_ptr<const DepthImage> image,
                 std::shared_ptr<const SegmentResult> result, int column);
  int column() const { return column_; }
  QSize sizeHint() const override { return {300, 180}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::shared_ptr<const DepthImage> image_;
  std::shared_ptr<const SegmentResult> result_;
  int column_ = -1;
};

class SegmentPanel : public MethodPanel<SegmentMethod> {
  Q_OBJECT

 public:
  explicit SegmentPanel(QWidget* parent = nullptr);
  SegmentParams params() const;
  void setParams(const SegmentParams& p);
  void setEpsilon(double metres);
  void setResult(std::shared_ptr<const DepthImage> image,
                 std::shared_ptr<const SegmentResult> result);
  void clearResult();
  void inspectColumn(int column);
  ColumnPlot* columnPlot() const { return plot_; }
  struct MethodTime {
    QString method;
    double ms;
    QString agreement;
  };
  // CPU and GPU timings side by side (from "Time all methods").
  void setMethodTimes(const std::vector<MethodTime>& times);
  QTableWidget* methodTimes() const { return times_; }

 signals:
  void exportCsvRequested();
  void exportJsonRequested();

 private:
  void enableExports(bool enabled);

  QSlider* slider_ = nullptr;
  QDoubleSpinBox* epsilon_ = nullptr;
  QComboBox* distance_ = nullptr;
  QDoubleSpinBox* pitch_ = nullptr;
  QComboBox* median_ = nullptr;
  class StageTable* stages_ = nullptr;
  QTableWidget* times_ = nullptr;
  ColumnPlot* plot_ = nullptr;
  QPushButton* exports_[2] = {};  // CSV, JSON
  std::shared_ptr<const DepthImage> image_;
  std::shared_ptr<const SegmentResult> result_;
};

}  // namespace cumulus::ui
