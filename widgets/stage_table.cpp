#include "stage_table.h"

#include <QHeaderView>

#include <algorithm>

namespace cumulus::ui {

void make_read_only(QTableWidget* table, const QStringList& headers, int max_height) {
  table->setColumnCount(int(headers.size()));
  table->setHorizontalHeaderLabels(headers);
  table->horizontalHeader()->setStretchLastSection(true);
  table->verticalHeader()->hide();
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  if (max_height > 0) table->setMaximumHeight(max_height);
}

QTableWidget* read_only_table(const QStringList& headers, int max_height, QWidget* parent) {
  auto* table = new QTableWidget(parent);
  make_read_only(table, headers, max_height);
  return table;
}

QTableWidget* row_picker_table(const QStringList& headers, QWidget* parent) {
  QTableWidget* t = read_only_table(headers, 0, parent);
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  return t;
}

void set_row(QTableWidget* table, int row, const QStringList& cells) {
  for (int c = 0; c < int(cells.size()); ++c)
    table->setItem(row, c, new QTableWidgetItem(cells[c]));
}

QString verdict_against_cpu(const QString& difference, double cpu_ms, double ms) {
  if (!difference.isEmpty()) return difference;
  return QTableWidget::tr("same (%1x faster)").arg(cpu_ms / std::max(ms, 1e-9), 0, 'f', 0);
}

StageTable::StageTable(int max_height, QWidget* parent) : QTableWidget(parent) {
  make_read_only(this, {tr("Stage"), tr("ms")}, max_height);
}

void StageTable::setStages(const StageTimes& stages) {
  setRowCount(int(stages.size()));
  for (int i = 0; i < int(stages.size()); ++i) {
    setItem(i, 0, new QTableWidgetItem(QString::fromStdString(stages[std::size_t(i)].first)));
    auto* ms = new QTableWidgetItem(QString::number(stages[std::size_t(i)].second, 'f', 3));
    ms->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    setItem(i, 1, ms);
  }
}

}  // namespace cumulus::ui
