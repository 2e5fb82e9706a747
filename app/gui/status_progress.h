#pragma once
// Progress of a backend run in slabs or tiles, as its callback wants it: called on the worker
// thread, it posts "<what>: done of total" to a status bar and asks to stop once `stop` is set.
#include <QApplication>
#include <QPointer>
#include <QStatusBar>

#include <atomic>
#include <functional>
#include <memory>

namespace cumulus::app {

inline std::function<bool(std::size_t, std::size_t)> status_progress(
    QStatusBar* bar, std::shared_ptr<std::atomic<bool>> stop, const QString& what) {
  QPointer<QStatusBar> status = bar;
  return [status, stop = std::move(stop), what](std::size_t done, std::size_t total) {
    QMetaObject::invokeMethod(
        qApp,
        [status, what, done, total] {
          if (status)
            status->showMessage(QObject::tr("%1: %2 of %3 done").arg(what).arg(done).arg(total),
                                3000);
        },
        Qt::QueuedConnection);
    return !*stop;
  };
}

}  // namespace cumulus::app
