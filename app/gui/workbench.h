#pragma once
// What a controller needs of the main window: the document, the views, where messages and
// dialogs go, and which dataset is current. MainWindow builds one and hands it to each
// controller; controllers never reach into MainWindow itself.
#include <QStatusBar>
#include <QString>
#include <QWidget>

#include <functional>

#include "document.h"
#include "save_file.h"

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
  std::function<QString()> last_dir;    // where open dialogs start: the last data folder
  std::function<QString()> export_dir;  // where save dialogs start: the last folder written to
  std::function<void(const QString& written)> wrote;  // a file or folder was written

  // save_with_dialog over the window, then "Wrote PATH" in the status bar.
  void save(const SaveRequest& request,
            const std::function<bool(const QString& path)>& write) const {
    const QString written = save_with_dialog(window, request, write);
    if (written.isEmpty()) return;
    wrote(written);
    status->showMessage(QObject::tr("Wrote %1").arg(written), 5000);
  }
};

}  // namespace cumulus::app
