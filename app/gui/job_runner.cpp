#include "job_runner.h"

namespace cumulus::app {

JobRunner::JobRunner(QObject* parent, Policy policy) : QObject(parent), policy_(policy) {}

JobRunner::~JobRunner() {
  // Jobs still running finish on the pool; their watchers die with this object, so nothing is
  // delivered. Ask them to stop so that work in tiles or slabs ends early.
  if (latest_stop_) *latest_stop_ = true;
}

void JobRunner::launch(quint64 generation, std::shared_ptr<std::atomic<bool>> stop, Task task) {
  if (policy_ == Policy::Latest && running_ > 0) {
    // Let the running job end unseen, then start this request (replacing any older one).
    if (latest_stop_) *latest_stop_ = true;
    pending_ = std::make_unique<Pending>(Pending{generation, std::move(stop), std::move(task)});
    return;
  }
  run(generation, std::move(stop), std::move(task));
}

void JobRunner::run(quint64 generation, std::shared_ptr<std::atomic<bool>> stop, Task task) {
  if (policy_ == Policy::Latest) latest_stop_ = stop;
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcher<Outcome>::finished, this, [this, watcher, generation] {
    const Outcome outcome = watcher->result();
    watcher->deleteLater();
    --running_;
    const bool current =
        generation > dropped_upto_ && (policy_ == Policy::Each || generation == generation_);
    if (current) {
      emit arrived(outcome.ms);
      outcome.deliver();
    }
    if (pending_) {
      auto next = std::move(pending_);
      run(next->generation, std::move(next->stop), std::move(next->task));
    }
    if (running_ == 0) emit busyChanged(false);
    emit finished(current);
  });
  const bool was_idle = running_ == 0;
  ++running_;
  if (was_idle) emit busyChanged(true);
  watcher->setFuture(QtConcurrent::run(std::move(task)));
}

void JobRunner::cancel() {
  dropped_upto_ = generation_;
  pending_.reset();
  if (latest_stop_) *latest_stop_ = true;
}

void JobRunner::reportProgress(quint64 generation, qint64 done, qint64 total, int stage) {
  if (generation > dropped_upto_ && (policy_ == Policy::Each || generation == generation_))
    emit progress(done, total, stage);
}

}  // namespace cumulus::app
