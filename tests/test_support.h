#pragma once
// Shared helpers for the Qt Test suites: where the real data lives, temporary files.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include <array>
#include <cstddef>
#include <fstream>

#include "core/device.h"
#include "io/io.h"

namespace cumulus::test {

// ../shared/data beside the checkout (or $CUMULUS_DATA); empty when absent.
inline QString sharedDataDir() {
  const QString env = qEnvironmentVariable("CUMULUS_DATA");
  const QString dir = env.isEmpty() ? QStringLiteral(CUMULUS_SHARED_DATA) : env;
  return QFileInfo(dir).isDir() ? QDir(dir).absolutePath() : QString();
}

// The full path of `rel` under the shared real data, or empty where that file is absent: every
// test that reads real data asks here, and skips (CUMULUS_REQUIRE_DATA) or leaves the case out
// when it gets nothing, never failing for want of data.
inline QString sharedDataFile(const QString& rel) {
  const QString data = sharedDataDir();
  return !data.isEmpty() && QFileInfo::exists(data + "/" + rel) ? data + "/" + rel : QString();
}

// QTest::addColumn for each name, with the types in the same order:
// add_columns<QString, int>({"file", "k"}).
template <class... T>
void add_columns(const std::array<const char*, sizeof...(T)>& names) {
  std::size_t i = 0;
  (QTest::addColumn<T>(names[i++]), ...);
}

// The process's resident memory, in bytes (/proc/self/statm): whether sizing a vector wrote it.
inline std::size_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * std::size_t(sysconf(_SC_PAGESIZE));
}

inline QString sampleDir() {
  return QStringLiteral(CUMULUS_SAMPLE_DIR);
}

inline QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline void writeBytes(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
  f.write(bytes);
}

// Every step-th point of a cloud under the shared data (its origin kept); false without it.
inline bool loadSharedEveryNth(const QString& rel, std::size_t step, cumulus::PointCloud& out) {
  const QString path = sharedDataFile(rel);
  if (path.isEmpty()) return false;
  const cumulus::PointCloud in = cumulus::load_cloud(path.toStdString());
  out = cumulus::PointCloud{};
  out.origin = in.origin;
  for (std::size_t i = 0; i < in.size(); i += step)
    out.points.push_back(in.points[i]);
  out.width = std::uint32_t(out.size());
  return true;
}

// Caps the GPU memory (set_gpu_memory_limit) while it lives, and restores the uncapped memory
// however the test ends.
struct MemoryCap {
  explicit MemoryCap(std::size_t bytes) { cumulus::set_gpu_memory_limit(bytes); }
  ~MemoryCap() { cumulus::set_gpu_memory_limit(0); }
  MemoryCap(const MemoryCap&) = delete;
  MemoryCap& operator=(const MemoryCap&) = delete;
};

}  // namespace cumulus::test

// Skips the test, saying why, where no GPU can be used.
#define CUMULUS_REQUIRE_GPU()             \
  if (!cumulus::query_device().available) \
  QSKIP(qPrintable("GPU test skipped: " + \
                   QString::fromStdString(cumulus::describe(cumulus::query_device()))))

// Skips the test with a message when the shared real-data file is not there.
#define CUMULUS_REQUIRE_DATA(var, rel)                                                       \
  const QString var = cumulus::test::sharedDataFile(rel);                                    \
  if (var.isEmpty())                                                                         \
    QSKIP(qPrintable(QStringLiteral("real data %1 not found (expected under ../shared/data " \
                                    "or $CUMULUS_DATA)")                                     \
                         .arg(rel)));
