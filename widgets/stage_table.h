#pragma once
// A two-column table of stage times (stage, ms), read-only, as the algorithm panels show them.
#include <QTableWidget>

#include "core/timing.h"

namespace cumulus::ui {

class StageTable : public QTableWidget {
  Q_OBJECT
 public:
  StageTable(int max_height, QWidget* parent);
  void setStages(const StageTimes& stages);  // empty clears it
};

}  // namespace cumulus::ui
