#pragma once
// Read-only result tables, and the two-column table of stage times (stage, ms) the algorithm
// panels show.
#include <QTableWidget>

#include <vector>

#include "core/timing.h"

namespace cumulus::ui {

// Makes `table` one that people read and do not edit: `headers` as its columns, no row numbers,
// the last column stretched, at most `max_height` pixels high (0: no limit).
void make_read_only(QTableWidget* table, const QStringList& headers, int max_height = 0);
// A new such table.
QTableWidget* read_only_table(const QStringList& headers, int max_height, QWidget* parent);
// A read-only table whose rows are picked one at a time (clusters, objects).
QTableWidget* row_picker_table(const QStringList& headers, QWidget* parent);

// Sets row `row` of `table` to `cells`, one per column.
void set_row(QTableWidget* table, int row, const QStringList& cells);
// The verdict of a method against the CPU reference: "same (12x faster)" where `difference` is
// empty, else `difference`.
QString verdict_against_cpu(const QString& difference, double cpu_ms, double ms);

// The rows of "Time all methods": `cells(result)` and then the verdict against the result whose
// method is "cpu" ("reference" for that one, and for all where none ran); `differs(cpu, other)`
// says what differs, empty where nothing does.
template <class Result, class Cells, class Differs>
void fill_method_times(QTableWidget* table, const std::vector<Result>& results, Cells cells,
                       Differs differs) {
  table->setRowCount(int(results.size()));
  const Result* cpu = nullptr;
  for (const auto& r : results)
    if (r.method == "cpu") cpu = &r;
  for (int i = 0; i < int(results.size()); ++i) {
    const Result& r = results[std::size_t(i)];
    QStringList row = cells(r);
    row << (!cpu || &r == cpu ? QTableWidget::tr("reference")
                              : verdict_against_cpu(differs(*cpu, r), cpu->total_ms, r.total_ms));
    set_row(table, i, row);
  }
}

class StageTable : public QTableWidget {
  Q_OBJECT
 public:
  StageTable(int max_height, QWidget* parent);
  void setStages(const StageTimes& stages);  // empty clears it
};

}  // namespace cumulus::ui
