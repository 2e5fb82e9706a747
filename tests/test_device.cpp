// The device query: never throws, and explains itself when no GPU can be used.
#include "cumulus/device.h"
#include "test_support.h"

class TestDevice : public QObject {
  Q_OBJECT

 private slots:
  void queryExplainsItself() {
    const cumulus::DeviceInfo info = cumulus::query_device();
    const QString line = QString::fromStdString(cumulus::describe(info));
    if (!info.available) {
      QVERIFY(!info.reason.empty());
      QVERIFY(line.startsWith("No GPU: "));
      qInfo("no usable GPU here: %s", info.reason.c_str());
    } else {
      QVERIFY(!info.name.empty());
      QVERIFY(info.total_memory > 0);
      QVERIFY(line.contains(QString::fromStdString(info.name)));
    }
#ifdef CUMULUS_HAS_CUDA
    QVERIFY(info.built_with_cuda);
#else
    QVERIFY(!info.built_with_cuda);
#endif
  }

  void gpuPropertiesAreSane() {
    const cumulus::DeviceInfo info = cumulus::query_device();
    if (!info.available)
      QSKIP(qPrintable("GPU test skipped: " + QString::fromStdString(info.reason)));
    QVERIFY(info.compute_major >= 7);
    QVERIFY(info.multiprocessors > 0);
    QVERIFY(info.free_memory <= info.total_memory);
  }
};

QTEST_GUILESS_MAIN(TestDevice)
#include "test_device.moc"
