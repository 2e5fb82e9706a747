#pragma once
// The one way the GUI runs work off the UI thread. A runner holds one kind of job (a panel's
// clustering, a window's comparison, the loading of files): the work runs on Qt's thread pool,
// reports progress and may be asked to stop; its result or its error is delivered on the UI
// thread. Two policies:
// - Latest (a panel's live re-run): at most one job runs; starting another while it runs asks it
//   to stop, drops its result when it ends, and then starts the newest request (requests in
//   between are never queued).
// - Each (loading files): every job runs and delivers; cancel() drops them all.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QtConcurrent>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <utility>

namespace cumulus::app {

// What a running job sees of its runner: whether it should stop, and a progress callback in the
// form the backend's tiled and slab runs take (returns false once the job should stop). A job of
// several stages names the one it is in (what `stage` means is the job's own).
class JobControl {
 public:
  JobControl(std::shared_ptr<std::atomic<bool>> stop,
             std::function<void(qint64, qint64, int)> report)
      : stop_(std::move(stop)), report_(std::move(report)) {}
  bool stopped() const { return *stop_; }
  bool progress(std::size_t done, std::size_t total, int stage = 0) const {
    report_(qint64(done), qint64(total), stage);
    return !*stop_;
  }
  std::function<bool(std::size_t, std::size_t)> callback() const {
    return
        [self = *this](std::size_t done, std::size_t total) { return self.progress(done, total); };
  }

 private:
  std::shared_ptr<std::atomic<bool>> stop_;
  std::function<void(qint64, qint64, int)> report_;
};

class JobRunner : public QObject {
  Q_OBJECT

 public:
  enum class Policy { Latest, Each };
  explicit JobRunner(QObject* parent, Policy policy = Policy::Latest);
  ~JobRunner() override;

  // Runs `work(control)` in the background; on the UI thread then `done(result)`, or `failed`
  // with the exception's message. Under Latest, a job superseded or cancelled delivers nothing.
  template <class Work, class Done>
  void start(Work work, Done done, std::function<void(const QString&)> failed = {}) {
    using Result = decltype(work(std::declval<const JobControl&>()));
    auto stop = std::make_shared<std::atomic<bool>>(false);
    QPointer<JobRunner> self = this;
    const quint64 generation = ++generation_;
    // Called on the worker thread: posted to the application object, which outlives every
    // runner, and the runner is looked at only on the UI thread.
    JobControl control(stop, [self, generation](qint64 d, qint64 t, int stage) {
      QMetaObject::invokeMethod(
          QCoreApplication::instance(),
          [self, generation, d, t, stage] {
            if (self) self->reportProgress(generation, d, t, stage);
          },
          Qt::QueuedConnection);
    });
    // The task hands back a closure that delivers its outcome on the UI thread, and its own
    // time on the worker.
    Task task = [work = std::move(work), done = std::move(done), failed = std::move(failed),
                 control]() mutable -> Outcome {
      QElapsedTimer clock;
      clock.start();
      const auto ms = [&clock] { return double(clock.nsecsElapsed()) * 1e-6; };
      try {
        auto result = std::make_shared<Result>(work(control));
        return {[done = std::move(done), result]() mutable { done(std::move(*result)); }, ms()};
      } catch (const std::exception& e) {
        return {[failed, message = QString::fromStdString(e.what())] {
                  if (failed) failed(message);
                },
                ms()};
      } catch (...) {
        return {[failed] {
                  if (failed) failed(QObject::tr("unknown error"));
                },
                ms()};
      }
    };
    launch(generation, std::move(stop), std::move(task));
  }

  // Asks every running job to stop and drops what they deliver.
  void cancel();
  bool busy() const { return running_ > 0; }

 signals:
  void busyChanged(bool busy);
  void progress(qint64 done, qint64 total, int stage);
  // A job's outcome came back and is about to be handed over (the handling on the UI thread
  // comes after); `job_ms` is the job's own time on its worker, from its start there to its end,
  // whatever kept the UI thread from taking the outcome at once.
  void arrived(double job_ms);
  // After a job's outcome was delivered (or dropped, with delivered false).
  void finished(bool delivered);

 private:
  using Delivery = std::function<void()>;
  struct Outcome {
    Delivery deliver;
    double ms = 0;  // the job's own time on its worker
  };
  using Task = std::function<Outcome()>;
  void launch(quint64 generation, std::shared_ptr<std::atomic<bool>> stop, Task task);
  void run(quint64 generation, std::shared_ptr<std::atomic<bool>> stop, Task task);
  void reportProgress(quint64 generation, qint64 done, qint64 total, int stage);

  Policy policy_;
  quint64 generation_ = 0;    // of the newest start
  quint64 dropped_upto_ = 0;  // jobs of this generation and older deliver nothing (cancel)
  int running_ = 0;
  std::shared_ptr<std::atomic<bool>> latest_stop_;  // the running job's, under Latest
  struct Pending {
    quint64 generation;
    std::shared_ptr<std::atomic<bool>> stop;
    Task task;
  };
  std::unique_ptr<Pending> pending_;  // under Latest: the newest request while a job runs
};

}  // namespace cumulus::app
