#pragma once
// What a controller needs of the main window: the document, the views, where messages and
// dialogs go, and which dataset is current. MainWindow builds one and hands it to each
// controller; controllers never reach into MainWindow itself.
#include <QStatusBar>
#include <QString>
#include <QWidget>

#include <functional>

#include "document.h"

namespace cumulus::ui {
class VtkCloudView;
class DepthView;
}  // namespace cumulus::ui

namespace cumulus::app {

struct Workbench {
  DocumentModel* document = nullptr;
  ui::VtkCloudView* cloud_view = nullptr;
  ui::DepthView* depth_view = nullptr;
  QWidget* window = nullptr;  // parent of dialogs
  QStatusBar* status = nullptr;
  std::function<int()> current_row;
  std::function<void(const QString&)> report_error;
  std::function<QString()> last_dir;  // where file dialogs start
};

}  // namespace cumulus::app
