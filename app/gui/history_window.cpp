#include "history_window.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "run_history.h"
#include "save_file.h"
#include "stage_table.h"
#include "timing_chart.h"

namespace cumulus::app {

HistoryWindow::HistoryWindow(QWidget* parent) : QWidget(parent, Qt::Window) {
  setWindowTitle(tr("Timing history — Cumulus"));
  resize(900, 640);
  auto* lay = new QVBoxLayout(this);
  chart_ = new ui::HistoryChart(this);
  lay->addWidget(chart_, 2);
  table_ = ui::read_only_table(
      {tr("#"), tr("Time"), tr("Method"), tr("Input"), tr("Parameters"), tr("ms"), tr("Agreement")},
      0, this);
  lay->addWidget(table_, 3);
  auto* buttons = new QHBoxLayout;
  auto* csv = new QPushButton(tr("Export CSV…"), this);
  auto* json = new QPushButton(tr("Export JSON…"), this);
  auto* clear = new QPushButton(tr("Clear"), this);
  buttons->addStretch();
  buttons->addWidget(csv);
  buttons->addWidget(json);
  buttons->addWidget(clear);
  lay->addLayout(buttons);
  connect(csv, &QPushButton::clicked, this, [this] { exportAs(false); });
  connect(json, &QPushButton::clicked, this, [this] { exportAs(true); });
  connect(clear, &QPushButton::clicked, this, [] { RunHistory::instance().clear(); });
  connect(&RunHistory::instance(), &RunHistory::changed, this, &HistoryWindow::refresh);
  refresh();
}

void HistoryWindow::refresh() {
  const auto& records = RunHistory::instance().records();
  std::vector<ui::HistoryPoint> points;
  table_->setRowCount(int(records.size()));
  for (int i = 0; i < int(records.size()); ++i) {
    const auto& r = records[std::size_t(i)];
    points.push_back({i + 1, r.method, r.total_ms});
    const QStringList cells{
        QString::number(i + 1), r.time.toString("hh:mm:ss.zzz"),     r.method, r.input,
        r.parameters,           QString::number(r.total_ms, 'f', 3), r.verdict};
    for (int c = 0; c < cells.size(); ++c)
      table_->setItem(i, c, new QTableWidgetItem(cells[c]));
  }
  chart_->setPoints(std::move(points));
}

void HistoryWindow::exportAs(bool json) {
  save_with_dialog(this,
                   {tr("Export timing history"), json ? "timings.json" : "timings.csv",
                    json ? tr("JSON (*.json)") : tr("CSV (*.csv)")},
                   [json](const QString& path) {
                     if (json)
                       RunHistory::instance().writeJson(path);
                     else
                       RunHistory::instance().writeCsv(path);
                     return true;
                   });
}

}  // namespace cumulus::app
