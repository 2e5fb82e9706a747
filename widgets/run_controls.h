#pragma once
// The Live / Run / Cancel row of every algorithm panel: with Live on, the owner re-runs
// (debounced) on each parameter edit; Cancel is enabled while a job runs.
#include <QWidget>

class QCheckBox;
class QHBoxLayout;
class QPushButton;

namespace cumulus::ui {

class RunControls : public QWidget {
  Q_OBJECT
 public:
  // `busy_text` replaces the run button's label while a job runs (empty: unchanged).
  explicit RunControls(const QString& run_text, const QString& busy_text = {},
                       QWidget* parent = nullptr);
  bool live() const;
  void setLive(bool on);
  void setBusy(bool busy);
  bool busy() const;  // showing the busy look
  // The row itself, for a panel's extra buttons.
  QHBoxLayout* row() const { return row_; }

 signals:
  void runRequested();
  void cancelRequested();

 private:
  QHBoxLayout* row_ = nullptr;
  QCheckBox* live_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QString run_text_, busy_text_;
};

}  // namespace cumulus::ui
