#include "compare_runs.h"

#include <QTableWidget>

namespace cumulus::app {

std::vector<CompareOutcome> run_methods(const std::vector<std::pair<int, QString>>& methods,
                                        int repeats, int warmup, const std::atomic<bool>& cancelled,
                                        std::atomic<int>& done, const CompareRunOne& run,
                                        const JobControl& control) {
  const CompareStop stop(cancelled);
  std::vector<CompareOutcome> out;
  for (const auto& [m, name] : methods) {
    CompareOutcome o{m, name, {}, {}, nullptr, {}};
    try {
      for (int w = 0; w < warmup && !cancelled; ++w)
        run(m, stop);
      for (int r = 0; r < repeats && !cancelled; ++r) {
        CompareRun one = run(m, stop);
        o.totals.push_back(one.total_ms);
        o.stages.push_back(std::move(one.stages));
        o.result = std::move(one.result);
        control.progress(std::size_t(++done), 0);
      }
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    if (cancelled) break;
    out.push_back(std::move(o));
  }
  return out;
}

CompareRunner::CompareRunner(QWidget* owner, QPushButton* run, QPushButton* cancel,
                             QProgressBar* progress)
    : runner_(new JobRunner(owner)), run_(run), cancel_(cancel), progress_(progress) {
  QObject::connect(runner_, &JobRunner::progress, progress_,
                   [p = progress_](qint64 done, qint64) { p->setValue(int(done)); });
}

CompareRunner::~CompareRunner() {
  cancel();
}

void CompareRunner::cancel() {
  if (cancelled_) *cancelled_ = true;
}

void CompareRunner::start(std::vector<std::pair<int, QString>> methods, int repeats, int warmup,
                          CompareRunOne run_one,
                          std::function<void(std::vector<CompareOutcome>, bool)> finished) {
  cancelled_ = std::make_shared<std::atomic<bool>>(false);
  progress_->setRange(0, int(methods.size()) * repeats);
  progress_->setValue(0);
  run_->setEnabled(false);
  cancel_->setEnabled(true);
  using Done = std::pair<std::vector<CompareOutcome>, int>;
  runner_->start(
      [methods = std::move(methods), repeats, warmup, cancelled = cancelled_,
       run_one = std::move(run_one)](const JobControl& control) {
        std::atomic<int> done{0};
        auto out = run_methods(methods, repeats, warmup, *cancelled, done, run_one, control);
        return Done(std::move(out), int(done));
      },
      [this, finished = std::move(finished), cancelled = cancelled_](Done out) {
        run_->setEnabled(true);
        cancel_->setEnabled(false);
        progress_->setValue(out.second);
        finished(std::move(out.first), !*cancelled);
      },
      [this](const QString&) {
        run_->setEnabled(true);
        cancel_->setEnabled(false);
      });
}

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
