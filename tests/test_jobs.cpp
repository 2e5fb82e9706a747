// The GUI's job runner: results arrive on the UI thread, the newest request wins, cancelled and
// superseded jobs deliver nothing, failures arrive as messages.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "job_runner.h"

using namespace cumulus::app;

namespace {

// Blocks a job until the test lets it go, so that tests decide what runs when.
struct Gate {
  std::atomic<bool> open{false};
  void wait() const {
    while (!open)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

}  // namespace

class TestJobs : public QObject {
  Q_OBJECT

 private slots:
  void resultArrivesOnTheUiThread() {
    JobRunner runner(nullptr);
    QThread* ui = QThread::currentThread();
    QThread* worker = nullptr;
    QThread* delivered_on = nullptr;
    int value = 0;
    runner.start(
        [&](const JobControl&) {
          worker = QThread::currentThread();
          return 42;
        },
        [&](int v) {
          value = v;
          delivered_on = QThread::currentThread();
        });
    QVERIFY(runner.busy());
    QTRY_COMPARE(value, 42);
    QCOMPARE(delivered_on, ui);
    QVERIFY(worker != ui);
    QTRY_VERIFY(!runner.busy());
  }

  void newestRequestWinsAndRequestsBetweenNeverRun() {
    JobRunner runner(nullptr);
    auto gate = std::make_shared<Gate>();
    std::atomic<int> runs{0};
    std::vector<int> delivered;
    QSignalSpy finished(&runner, &JobRunner::finished);
    auto start = [&](int id, bool blocking) {
      runner.start(
          [&, id, blocking, gate](const JobControl&) {
            ++runs;
            if (blocking) gate->wait();
            return id;
          },
          [&](int v) { delivered.push_back(v); });
    };
    start(1, true);
    QTest::qWait(20);
    start(2, false);  // superseded by 3 before it starts: never runs
    start(3, false);
    gate->open = true;
    QTRY_VERIFY(!runner.busy());
    QCOMPARE(delivered, std::vector<int>{3});
    QCOMPARE(runs.load(), 2);
    QCOMPARE(finished.count(), 2);
    QCOMPARE(finished.at(0).at(0).toBool(), false);  // job 1, dropped
    QCOMPARE(finished.at(1).at(0).toBool(), true);
  }

  void cancelStopsTheJobAndDropsItsResult() {
    JobRunner runner(nullptr);
    bool delivered = false;
    std::atomic<bool> saw_stop{false};
    runner.start(
        [&](const JobControl& control) {
          while (!control.stopped())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          saw_stop = true;
          return 0;
        },
        [&](int) { delivered = true; });
    QTest::qWait(20);
    runner.cancel();
    QTRY_VERIFY(!runner.busy());
    QVERIFY(saw_stop);
    QVERIFY(!delivered);
  }

  void failureArrivesAsItsMessage() {
    JobRunner runner(nullptr);
    QString message;
    bool delivered = false;
    runner.start([](const JobControl&) -> int { throw std::runtime_error("no GPU here"); },
                 [&](int) { delivered = true; }, [&](const QString& m) { message = m; });
    QTRY_COMPARE(message, QString("no GPU here"));
    QVERIFY(!delivered);
  }

  void progressReachesTheUiThreadAndAsksToStopAfterCancel() {
    JobRunner runner(nullptr);
    QSignalSpy progress(&runner, &JobRunner::progress);
    auto gate = std::make_shared<Gate>();
    std::atomic<bool> told_to_stop{false};
    runner.start(
        [gate, &told_to_stop](const JobControl& control) {
          control.progress(1, 3, 2);
          gate->wait();
          told_to_stop = !control.progress(2, 3);
          return 0;
        },
        [](int) {});
    QTRY_COMPARE(progress.count(), 1);
    QCOMPARE(progress.at(0).at(0).toLongLong(), 1);
    QCOMPARE(progress.at(0).at(1).toLongLong(), 3);
    QCOMPARE(progress.at(0).at(2).toInt(), 2);  // the stage the job named
    runner.cancel();
    gate->open = true;
    QTRY_VERIFY(!runner.busy());
    QVERIFY(told_to_stop);
    QCOMPARE(progress.count(), 1);  // a cancelled job's progress is not shown
  }

  // `arrived` marks the end of a job's own time: it comes before the result is handled, and only
  // for a result that is delivered.
  void arrivedPrecedesTheHandlingOfDeliveredResultsOnly() {
    JobRunner runner(nullptr);
    auto gate = std::make_shared<Gate>();
    std::vector<QString> order;
    connect(&runner, &JobRunner::arrived, [&] { order.push_back("arrived"); });
    runner.start(
        [gate](const JobControl&) {
          gate->wait();
          return 1;
        },
        [&](int) { order.push_back("handled 1"); });
    runner.start([](const JobControl&) { return 2; },
                 [&](int) { order.push_back("handled 2"); });  // supersedes the first
    gate->open = true;
    QTRY_VERIFY(!runner.busy());
    QCOMPARE(order, (std::vector<QString>{"arrived", "handled 2"}));
  }

  // `arrived` gives the job's own time on its worker: a UI thread still busy when the job ends
  // (a frame being drawn) does not lengthen it, nor so the live pause that follows it.
  void arrivedGivesTheJobsOwnTime() {
    JobRunner runner(nullptr);
    QSignalSpy arrived(&runner, &JobRunner::arrived);
    runner.start(
        [](const JobControl&) {
          QThread::msleep(30);
          return 1;
        },
        [](int) {});
    QThread::msleep(300);  // the UI thread busy well past the job's end
    QTRY_COMPARE(arrived.count(), 1);
    const double ms = arrived.at(0).at(0).toDouble();
    QVERIFY2(ms >= 29 && ms < 250, qPrintable(QString::number(ms)));
  }

  void eachPolicyDeliversEveryJob() {
    JobRunner runner(nullptr, JobRunner::Policy::Each);
    std::vector<int> delivered;
    for (int i = 0; i < 5; ++i)
      runner.start([i](const JobControl&) { return i; }, [&](int v) { delivered.push_back(v); });
    QTRY_COMPARE(delivered.size(), std::size_t(5));
    std::sort(delivered.begin(), delivered.end());
    QCOMPARE(delivered, (std::vector<int>{0, 1, 2, 3, 4}));
  }
};

QTEST_GUILESS_MAIN(TestJobs)
#include "test_jobs.moc"
