#pragma once
// The wiring every algorithm's controller shares between its panel and its JobRunner: an edit
// re-runs after a short pause when Live is on (dragging a spin box does not queue a job per
// step), Run runs, Cancel drops the running job's result (a job that reports progress stops
// early) and says so, and the panel leaves its busy state once the runner has nothing left.
#include <QElapsedTimer>
#include <QObject>

#include <functional>

class QTimer;

namespace cumulus::ui {
class AlgorithmPanel;
}

namespace cumulus::app {

class JobRunner;

// A cloud larger than this (default 10 million points) does not start a Live run by being
// opened or shown: on that scale a run takes long and much memory, so it waits for Run (or a
// parameter change). Settable for tests.
std::size_t live_open_limit();
void set_live_open_limit(std::size_t points);

class PanelJobs : public QObject {
  Q_OBJECT
 public:
  PanelJobs(ui::AlgorithmPanel* panel, JobRunner* runner, int pause_ms, std::function<void()> run,
            QObject* parent);
  // Called by `run` as it starts: a re-run still waiting for its pause is no longer needed.
  void started();
  // Re-runs after the pause if Live is on (new input, such as another cloud).
  void rerunSoon();
  // Runs at once if Live is on (a sequence's next frame: no pause, the player waits instead).
  void runNowIfLive();
  // Drops a re-run still waiting for its pause: what it would run on is now a cloud that waits
  // for Run (over the live-open limit).
  void holdRerun();
  void cancel();

  // Milliseconds from the last parameter change to its job's start (0: not started by a
  // change), and since that job started.
  double waitedMs() const { return waited_ms_; }
  double sinceStartMs() const;
  // The live pause now in force: twice the last delivered job's own time (on its worker, not
  // counting the UI's handling of its result), at most the pause given at construction. A slider
  // dragged over a fast job then re-runs at once; over a slow one it still waits, so that no job is
  // started per step of the drag.
  int pauseMs() const;

 signals:
  // The runner finished with nothing left, and its last job's result was not delivered (it
  // failed, was cancelled or superseded).
  void dropped();

 private:
  ui::AlgorithmPanel* panel_;
  JobRunner* runner_;
  QTimer* pause_;
  std::function<void()> run_;
  int max_pause_ms_;
  QElapsedTimer since_change_, since_start_;
  double waited_ms_ = 0;

  void jobDelivered(double ms);  // a job that took `ms` delivered: the pause follows it
};

}  // namespace cumulus::app
