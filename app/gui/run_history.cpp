#include "run_history.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

#include "core/device.h"
#include "core/error.h"
#include "save_file.h"

namespace cumulus::app {

RunHistory& RunHistory::instance() {
  static RunHistory h;
  return h;
}

void RunHistory::add(RunRecord record) {
  records_.push_back(std::move(record));
  emit changed();
}

void RunHistory::clear() {
  records_.clear();
  emit changed();
}

namespace {

QString csv(QString s) {
  if (!s.contains(',') && !s.contains('"') && !s.contains('\n')) return s;
  return '"' + s.replace('"', "\"\"") + '"';
}

QString stages_text(const StageTimes& st) {
  QStringList parts;
  for (const auto& [name, ms] : st)
    parts << QString::fromStdString(name) + "=" + QString::number(ms, 'f', 4);
  return parts.join(';');
}

}  // namespace

void RunHistory::writeCsv(const QString& path) const {
  QByteArray bytes;
  QTextStream out(&bytes);
  const QString host = QString::fromStdString(describe_host());
  out << "time,host,algorithm,method,parameters,input,points,total_ms,stages_ms,verdict\n";
  for (const auto& r : records_)
    out << r.time.toString(Qt::ISODateWithMs) << ',' << csv(host) << ',' << r.algorithm << ','
        << r.method << ',' << csv(r.parameters) << ',' << csv(r.input) << ',' << r.points << ','
        << QString::number(r.total_ms, 'f', 4) << ',' << csv(stages_text(r.stages)) << ','
        << csv(r.verdict) << '\n';
  out.flush();
  write_file(path, bytes);
}

void RunHistory::writeJson(const QString& path) const {
  QJsonArray runs;
  for (const auto& r : records_) {
    QJsonArray stages;
    for (const auto& [name, ms] : r.stages)
      stages.append(QJsonObject{{"stage", QString::fromStdString(name)}, {"ms", ms}});
    runs.append(QJsonObject{{"time", r.time.toString(Qt::ISODateWithMs)},
                            {"algorithm", r.algorithm},
                            {"method", r.method},
                            {"parameters", r.parameters},
                            {"input", r.input},
                            {"points", double(r.points)},
                            {"total_ms", r.total_ms},
                            {"stages_ms", stages},
                            {"verdict", r.verdict}});
  }
  const DeviceInfo d = query_device();
  const QJsonObject doc{{"host", QString::fromStdString(describe_host())},
                        {"gpu", d.available ? QString::fromStdString(d.name) : QString()},
                        {"runs", runs}};
  write_file(path, QJsonDocument(doc).toJson());
}

}  // namespace cumulus::app
