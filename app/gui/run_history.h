#pragma once
// Every timed run since the application started (compare mode and clustering panel alike),
// exportable with the machine, GPU, method, parameters and input.
#include <QDateTime>
#include <QObject>
#include <QString>

#include <vector>

#include "core/timing.h"

namespace cumulus::app {

struct RunRecord {
  QDateTime time;
  QString algorithm;  // "cluster"
  QString method;
  QString parameters;
  QString input;
  qulonglong points = 0;
  double total_ms = 0;
  StageTimes stages;
  QString verdict;  // agreement with the reference, when compared
};

class RunHistory : public QObject {
  Q_OBJECT
 public:
  static RunHistory& instance();
  void add(RunRecord record);
  const std::vector<RunRecord>& records() const { return records_; }
  void clear();
  // Throws cumulus::IoError when the file cannot be written.
  void writeCsv(const QString& path) const;
  void writeJson(const QString& path) const;

 signals:
  void changed();

 private:
  std::vector<RunRecord> records_;
};

}  // namespace cumulus::app
