#pragma once
// The timing history of every run since the application started: a chart, a table, and
// CSV/JSON export with the machine, GPU, method, parameters and input.
#include <QWidget>

class QTableWidget;

namespace cumulus::ui {
class HistoryChart;
}

namespace cumulus::app {

class HistoryWindow : public QWidget {
  Q_OBJECT
 public:
  explicit HistoryWindow(QWidget* parent = nullptr);
  QTableWidget* table() const { return table_; }

 private:
  void refresh();
  void exportAs(bool json);

  ui::HistoryChart* chart_ = nullptr;
  QTableWidget* table_ = nullptr;
};

}  // namespace cumulus::app
