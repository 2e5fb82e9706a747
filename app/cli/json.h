#pragma once
// Small helpers for the CLI's JSON output.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <ostream>

#include "core/timing.h"

namespace cumulus::cli {

inline void print_json(std::ostream& out, const QJsonObject& obj) {
  out << QJsonDocument(obj).toJson(QJsonDocument::Indented).toStdString();
}

// Stages as an ordered array of {"stage": name, "ms": time}.
inline QJsonArray stages_json(const StageTimes& stages) {
  QJsonArray a;
  for (const auto& [name, ms] : stages)
    a.append(QJsonObject{{"stage", QString::fromStdString(name)}, {"ms", ms}});
  return a;
}

}  // namespace cumulus::cli
