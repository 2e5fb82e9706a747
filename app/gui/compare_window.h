#pragma once
// Compare mode, for every algorithm: one action runs the chosen methods (the CPU reference and
// GPU methods) on the same input and parameters, then shows stage timings, speed-ups, an
// agreement verdict per method, and the reference and a chosen method side by side, with the
// differences highlighted on demand. What is algorithm-specific is a CompareSubject.
#include <QWidget>

#include <memory>
#include <vector>

#include "compare_runs.h"
#include "compare_subject.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace cumulus::ui {
class TimingChart;
}  // namespace cumulus::ui

namespace cumulus::app {

class CompareWindow : public QWidget {
  Q_OBJECT

 public:
  CompareWindow(CompareSubject subject, QWidget* parent = nullptr);
  ~CompareWindow() override;

  // Checks exactly these methods (those usable here).
  template <class Method>
  void setMethods(const std::vector<Method>& methods) {
    std::vector<int> ids;
    for (auto m : methods)
      ids.push_back(int(m));
    setMethodIds(ids);
  }
  void setMethodIds(const std::vector<int>& ids);
  void setRepeats(int repeats);
  void run();
  void cancel();
  bool busy() const { return runner_->busy(); }
  const std::vector<CompareOutcome>& outcomes() const { return outcomes_; }
  // Agreement of each outcome with the reference.
  const std::vector<CompareJudgement>& agreements() const { return agreements_; }
  ui::TimingChart* chart() const { return chart_; }
  QTableWidget* table() const { return table_; }

 signals:
  void finished(bool completed);

 private:
  void onFinished(std::vector<CompareOutcome> outcomes, bool completed);
  void showSides();

  CompareSubject subject_;
  QListWidget* methods_ = nullptr;
  QSpinBox* repeats_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* verdict_ = nullptr;
  QWidget *left_ = nullptr, *right_ = nullptr;  // the reference's half, the chosen method's
  QComboBox* right_method_ = nullptr;
  QCheckBox* differences_ = nullptr;
  ui::TimingChart* chart_ = nullptr;
  QTableWidget* table_ = nullptr;
  std::unique_ptr<CompareRunner> runner_;
  std::vector<CompareOutcome> outcomes_;
  std::vector<CompareJudgement> agreements_;
  int ref_index_ = -1;
};

}  // namespace cumulus::app
