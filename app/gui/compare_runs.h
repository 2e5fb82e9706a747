#pragma once
// What both compare windows share: the outcome of one method's repeated runs, the background
// loop that produces them, and one row of the timings table.
#include <QProgressBar>
#include <QPushButton>
#include <QString>

#include <functional>

#include <atomic>
#include <memory>
#include <vector>

#include "core/timing.h"
#include "core/timing_stats.h"
#include "job_runner.h"

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

// The background side of a compare window: the chosen methods run on a JobRunner, progress
// counts measured runs, Cancel stops between runs (the runs done so far are still shown), and
// the Run and Cancel buttons follow the job.
template <typename Method, typename Result>
class CompareRunner {
 public:
  using Outcomes = std::vector<Outcome<Method, Result>>;

  CompareRunner(QWidget* owner, QPushButton* run, QPushButton* cancel, QProgressBar* progress)
      : runner_(new JobRunner(owner)), run_(run), cancel_(cancel), progress_(progress) {
    QObject::connect(runner_, &JobRunner::progress, progress_,
                     [p = progress_](qint64 done, qint64) { p->setValue(int(done)); });
  }
  // A job still running is asked to stop; the runner, a child of the owner, delivers nothing
  // once the owner is gone.
  ~CompareRunner() {
    if (cancelled_) *cancelled_ = true;
  }
  CompareRunner(const CompareRunner&) = delete;
  CompareRunner& operator=(const CompareRunner&) = delete;

  bool busy() const { return runner_->busy(); }
  void cancel() {
    if (cancelled_) *cancelled_ = true;
  }

  // run_one(method) returns a Result; it runs on a worker thread, so it captures by value.
  // finished(outcomes, completed) runs on the UI thread when the job ends.
  template <typename RunOne>
  void start(std::vector<Method> methods, int repeats, int warmup, RunOne run_one,
             std::function<void(Outcomes, bool)> finished) {
    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    progress_->setRange(0, int(methods.size()) * repeats);
    progress_->setValue(0);
    run_->setEnabled(false);
    cancel_->setEnabled(true);
    auto done_runs = [this, finished = std::move(finished),
                      cancelled = cancelled_](std::pair<Outcomes, int> out) {
      run_->setEnabled(true);
      cancel_->setEnabled(false);
      progress_->setValue(out.second);
      finished(std::move(out.first), !*cancelled);
    };
    runner_->start(
        [methods = std::move(methods), repeats, warmup, cancelled = cancelled_,
         run_one](const JobControl& control) {
          std::atomic<int> done{0};
          // Reports the measured runs finished so far as each run starts.
          auto counted = [&](Method m) {
            control.progress(std::size_t(done.load()), 0);
            return run_one(m);
          };
          auto out =
              run_methods<Method, Result>(methods, repeats, warmup, *cancelled, done, counted);
          return std::pair<Outcomes, int>(std::move(out), int(done));
        },
        std::move(done_runs),
        [this](const QString&) {
          run_->setEnabled(true);
          cancel_->setEnabled(false);
        });
  }

 private:
  JobRunner* runner_;
  QPushButton* run_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

// Method, median, min-max, speed-up (0: none) and verdict (red when it disagrees).
void set_timing_row(QTableWidget* table, int row, const QString& method, bool has_result,
                    const TimingStats& t, double speedup, const QString& verdict, bool agrees);

}  // namespace cumulus::app
