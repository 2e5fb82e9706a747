// The device query: never throws, and explains itself when no GPU can be used. Long-running
// use: every GPU method run many times gives back all device memory.
#include <set>

#include "cumulus/device.h"
#include "cumulus/error.h"
#include "cumulus/soak.h"
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

  void leakVerdictAllowsOnlyHostSlack() {
    cumulus::SoakRow row;
    QVERIFY(!cumulus::leaked(row));
    row.host_growth_bytes = cumulus::kSoakHostSlackBytes;
    QVERIFY(!cumulus::leaked(row));
    row.host_growth_bytes += 1;
    QVERIFY(cumulus::leaked(row));
    row.host_growth_bytes = 0;
    row.device_growth_bytes = 1;
    QVERIFY(cumulus::leaked(row));
    QVERIFY(cumulus::resident_bytes() > 0);
  }

  void soakWithoutGpuSaysWhy() {
    if (cumulus::query_device().available) QSKIP("a GPU is present");
    QVERIFY_THROWS_EXCEPTION(cumulus::GpuError, cumulus::soak_gpu_methods({}));
  }

  // The 1,000-run check is `cumulus-cli soak` on the GPU machine; here fewer runs, every method.
  void gpuRepeatedRunsGiveBackTheirMemory() {
    if (!cumulus::query_device().available)
      QSKIP(qPrintable("GPU test skipped: " +
                       QString::fromStdString(cumulus::describe(cumulus::query_device()))));
    cumulus::SoakParams p;
    p.runs = 20;
    const auto rows = cumulus::soak_gpu_methods(p);
    std::set<std::string> algorithms;
    for (const auto& r : rows) {
      algorithms.insert(r.algorithm);
      QCOMPARE(r.runs, p.runs);
      QVERIFY2(!cumulus::leaked(r), qPrintable(QString("%1 %2: device %3 B, host %4 B")
                                                   .arg(QString::fromStdString(r.algorithm),
                                                        QString::fromStdString(r.method))
                                                   .arg(r.device_growth_bytes)
                                                   .arg(r.host_growth_bytes)));
    }
    QCOMPARE(algorithms, (std::set<std::string>{"cluster", "knn", "radius", "icp", "normals", "pfh",
                                                "fpfh", "segment"}));
  }
};

QTEST_GUILESS_MAIN(TestDevice)
#include "test_device.moc"
