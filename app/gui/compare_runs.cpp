#include "compare_runs.h"

#include <QTableWidget>

namespace cumulus::app {

void set_timing_row(QTableWidget* table, int row, const QString& method, bool has_result,
                    const TimingStats& t, double speedup, const QString& verdict, bool agrees) {
  table->setItem(row, 0, new QTableWidgetItem(method));
  table->setItem(row, 1,
                 new QTableWidgetItem(has_result ? QString::number(t.median, 'f', 3) : "–"));
  table->setItem(
      row, 2,
      new QTableWidgetItem(
          has_result ? QString("%1 – %2").arg(t.min, 0, 'f', 3).arg(t.max, 0, 'f', 3) : "–"));
  table->setItem(row, 3,
                 new QTableWidgetItem(speedup > 0 ? QString("%1x").arg(speedup, 0, 'f', 1) : "–"));
  auto* v = new QTableWidgetItem(verdict);
  if (!agrees) v->setForeground(QColor(192, 0, 0));
  table->setItem(row, 4, v);
}

}  // namespace cumulus::app
