#pragma once
// What both compare windows share: the outcome of one method's repeated runs, the background
// loop that produces them, and one row of the timings table.
#include <QFutureWatcher>
#include <QProgressBar>
#include <QPushButton>
#include <QString>
#include <QTimer>
#include <QtConcurrent>

#include <functional>

#include <atomic>
#include <memory>
#include <vector>

#include "cumulus/compare.h"
#include "cumulus/timing.h"

class QTableWidget;

namespace cumulus::app {

template <typename Method, typename Result>
struct Outcome {
  Method method;
  std::vector<double> totals;            // whole-call time of each measured run, ms
  std::vector<StageTimes> stages;        // stage times of each measured run
  std::shared_ptr<const Result> result;  // of the last run
  QString error;
};

// Runs each method `repeats` times after `warmup` unmeasured runs, stopping between runs when
// `cancelled` is set; `done` counts measured runs for the progress bar. run(method) returns a
// Result with total_ms and stages.
template <typename Method, typename Result, typename Run>
std::vector<Outcome<Method, Result>> run_methods(const std::vector<Method>& methods, int repeats,
                                                 int warmup, const std::atomic<bool>& cancelled,
                                                 std::atomic<int>& done, Run run) {
  std::vector<Outcome<Method, Result>> out;
  for (auto m : methods) {
    Outcome<Method, Result> o{m, {}, {}, nullptr, {}};
    try {
      for (int w = 0; w < warmup && !cancelled; ++w)
        run(m);
      for (int r = 0; r < repeats && !cancelled; ++r) {
        auto result = std::make_shared<Result>(run(m));
        o.totals.push_back(result->total_ms);
        o.stages.push_back(result->stages);
        o.result = std::move(result);
        ++done;
      }
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    if (cancelled) break;
    out.push_back(std::move(o));
  }
  return out;
}

// The background side of a compare window: the chosen methods run off the UI thread, progress
// is polled from an atomic counter (the job never touches widgets), Cancel stops between runs,
// and the Run and Cancel buttons follow the job. The owner must outlive nothing it hands in.
template <typename Method, typename Result>
class CompareRunner {
 public:
  using Outcomes = std::vector<Outcome<Method, Result>>;

  CompareRunner(QWidget* owner, QPushButton* run, QPushButton* cancel, QProgressBar* progress)
      : owner_(owner), run_(run), cancel_(cancel), progress_(progress) {}
  // A job still running is cancelled and waited for, so it never outlives the window.
  ~CompareRunner() {
    if (watcher_) {
      *cancelled_ = true;
      watcher_->waitForFinished();
    }
  }
  CompareRunner(const CompareRunner&) = delete;
  CompareRunner& operator=(const CompareRunner&) = delete;

  bool busy() const { return watcher_ != nullptr; }
  void cancel() {
    if (cancelled_) *cancelled_ = true;
  }

  // run_one(method) returns a Result; it runs on a worker thread, so it captures by value.
  // finished(outcomes, completed) runs on the UI thread when the job ends.
  template <typename RunOne>
  void start(std::vector<Method> methods, int repeats, int warmup, RunOne run_one,
             std::function<void(Outcomes, bool)> finished) {
    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    done_ = std::make_shared<std::atomic<int>>(0);
    progress_->setRange(0, int(methods.size()) * repeats);
    progress_->setValue(0);
    run_->setEnabled(false);
    cancel_->setEnabled(true);
    auto* poll = new QTimer(owner_);
    QObject::connect(poll, &QTimer::timeout, owner_, [this, poll] {
      if (!watcher_) return poll->deleteLater();
      progress_->setValue(*done_);
    });
    poll->start(100);
    watcher_ = new QFutureWatcher<Outcomes>(owner_);
    QObject::connect(watcher_, &QFutureWatcher<Outcomes>::finished, owner_,
                     [this, finished = std::move(finished)] {
                       Outcomes out = watcher_->result();
                       const bool completed = !*cancelled_;
                       watcher_->deleteLater();
                       watcher_ = nullptr;
                       run_->setEnabled(true);
                       cancel_->setEnabled(false);
                       progress_->setValue(*done_);
                       finished(std::move(out), completed);
                     });
    watcher_->setFuture(QtConcurrent::run([methods = std::move(methods), repeats, warmup,
                                           cancelled = cancelled_, done = done_, run_one] {
      return run_methods<Method, Result>(methods, repeats, warmup, *cancelled, *done, run_one);
    }));
  }

 private:
  QWidget* owner_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QFutureWatcher<Outcomes>* watcher_ = nullptr;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::shared_ptr<std::atomic<int>> done_;
};

// Method, median, min-max, speed-up (0: none) and verdict (red when it disagrees).
void set_timing_row(QTableWidget* table, int row, const QString& method, bool has_result,
                    const TimingStats& t, double speedup, const QString& verdict, bool agrees);

}  // namespace cumulus::app
