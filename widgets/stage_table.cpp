#include "stage_table.h"

#include <QHeaderView>

namespace cumulus::ui {

StageTable::StageTable(int max_height, QWidget* parent) : QTableWidget(0, 2, parent) {
  setHorizontalHeaderLabels({tr("Stage"), tr("ms")});
  horizontalHeader()->setStretchLastSection(true);
  verticalHeader()->hide();
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setMaximumHeight(max_height);
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
