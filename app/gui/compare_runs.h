#pragma once
// The compare window's runs, whatever the algorithm: one method's repeated runs and their
// outcome (the result kept type-erased; each algorithm's CompareSubject knows its type), the
// loop that produces them on a JobRunner, and one row of the timings table.
#include <QProgressBar>
#include <QPushButton>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "core/timing.h"
#include "core/timing_stats.h"
#include "job_runner.h"

class QTableWidget;

namespace cumulus::app {

// One run of one method: its result (any algorithm's) with the time and stages it reported.
struct CompareRun {
  std::shared_ptr<const void> result;
  double total_ms = 0;
  StageTimes stages;
};

template <class Result>
CompareRun compare_run(Result r) {
  auto p = std::make_shared<const Result>(std::move(r));
  const double total = p->total_ms;
  StageTimes stages = p->stages;
  return {std::move(p), total, std::move(stages)};
}

// What a run asks to hear Cancel while it runs: a progress callback for any algorithm (any
// arguments, how far is ignored) that says stop once the job is cancelled, so that a long run
// (PCL's on a large cloud) ends at its next report and not only between runs. It reads one flag,
// and the algorithms' reports are as cheap as without a callback (docs/architecture.md).
class CompareStop {
 public:
  explicit CompareStop(const std::atomic<bool>& cancelled) : cancelled_(&cancelled) {}
  auto progress() const {
    return [c = cancelled_](auto&&...) { return !c->load(std::memory_order_relaxed); };
  }

 private:
  const std::atomic<bool>* cancelled_;
};

// Runs one method once (its enum as an int), listening to `stop`; runs on a worker thread.
using CompareRunOne = std::function<CompareRun(int method, const CompareStop& stop)>;

struct CompareOutcome {
  int method = 0;  // the algorithm's method enum, as an int
  QString name;
  std::vector<double> totals;          // whole-call time of each measured run, ms
  std::vector<StageTimes> stages;      // stage times of each measured run
  std::shared_ptr<const void> result;  // of the last run
  QString error;

  template <class Result>
  const Result& as() const {
    return *static_cast<const Result*>(result.get());
  }
};

// Runs each method `repeats` times after `warmup` unmeasured runs; once `cancelled` is set the
// run in progress ends at its next report (its outcome dropped) and no other starts. `done`
// counts measured runs.
std::vector<CompareOutcome> run_methods(const std::vector<std::pair<int, QString>>& methods,
                                        int repeats, int warmup, const std::atomic<bool>& cancelled,
                                        std::atomic<int>& done, const CompareRunOne& run,
                                        const JobControl& control);

// The compare window's background side: the chosen methods run on a JobRunner, progress counts
// measured runs, Cancel stops the run in progress at its next report (the runs done so far are
// still shown), and the Run and Cancel buttons follow the job.
class CompareRunner {
 public:
  CompareRunner(QWidget* owner, QPushButton* run, QPushButton* cancel, QProgressBar* progress);
  ~CompareRunner();  // asks a running job to stop; nothing is delivered once the owner is gone
  CompareRunner(const CompareRunner&) = delete;
  CompareRunner& operator=(const CompareRunner&) = delete;

  bool busy() const { return runner_->busy(); }
  void cancel();
  // run_one runs on a worker thread, so it captures its input by value.
  // finished(outcomes, completed) runs on the UI thread when the job ends.
  void start(std::vector<std::pair<int, QString>> methods, int repeats, int warmup,
             CompareRunOne run_one,
             std::function<void(std::vector<CompareOutcome>, bool)> finished);

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
