#pragma once
// Compare mode for RDP segmentation: the reference and other methods on the same depth image,
// with stage timings, speed-ups, the columns whose cut rows differ, and the two polyline
// overlays side by side.
#include <QWidget>

#include <memory>

#include "compare_runs.h"
#include "segment/segment.h"
#include "segment/segment_compare.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {
class DepthView;
class TimingChart;
}  // namespace cumulus::ui

namespace cumulus::app {

using SegmentOutcome = Outcome<SegmentMethod, SegmentResult>;

class SegmentCompareWindow : public QWidget {
  Q_OBJECT

 public:
  SegmentCompareWindow(std::shared_ptr<const DepthImage> image, QString input_name,
                       SegmentParams params, QWidget* parent = nullptr);
  ~SegmentCompareWindow() override;
  void setMethods(const std::vector<SegmentMethod>& methods);
  void setRepeats(int repeats);
  void run();
  void cancel();
  bool busy() const { return runner_->busy(); }
  const std::vector<SegmentOutcome>& outcomes() const { return outcomes_; }
  const std::vector<SegmentAgreement>& agreements() const { return agreements_; }
  QTableWidget* table() const { return table_; }
  ui::TimingChart* chart() const { return chart_; }

 signals:
  void finished(bool completed);

 private:
  void onFinished(std::vector<SegmentOutcome> outcomes, bool completed);
  void showRight();

  std::shared_ptr<const DepthImage> image_;
  QString input_;
  SegmentParams params_;
  QListWidget* methods_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* verdict_ = nullptr;
  ui::DepthView* left_ = nullptr;
  ui::DepthView* right_ = nullptr;
  QComboBox* right_method_ = nullptr;
  QCheckBox* differences_ = nullptr;
  ui::TimingChart* chart_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::unique_ptr<CompareRunner<SegmentMethod, SegmentResult>> runner_;
  std::vector<SegmentOutcome> outcomes_;
  std::vector<SegmentAgreement> agreements_;
  int ref_index_ = -1;
};

}  // namespace cumulus::app
