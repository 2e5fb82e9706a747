#pragma once
// What both compare windows share: the outcome of one method's repeated runs, the background
// loop that produces them, and one row of the timings table.
#include <QString>

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

// Method, median, min-max, speed-up (0: none) and verdict (red when it disagrees).
void set_timing_row(QTableWidget* table, int row, const QString& method, bool has_result,
                    const TimingStats& t, double speedup, const QString& verdict, bool agrees);

}  // namespace cumulus::app
