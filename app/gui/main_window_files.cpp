// The main window's File and Data menus: opening, saving, exporting images, converting between
// depth images and clouds, the recent-files list, the settings kept between runs. Each handler
// asks (dialogs.h), then hands the work to the loader or the backend.
#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QImage>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>

#include "core/error.h"
#include "dataset_loader.h"
#include "depth_view.h"
#include "dialogs.h"
#include "io/io.h"
#include "main_window.h"
#include "save_file.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr int kMaxRecent = 10;

const char* kOpenFilter =
    "All supported (*.pcd *.ply *.bin *.xyz *.txt *.csv *.las *.png *.tif *.tiff);;"
    "Point clouds (*.pcd *.ply *.bin *.xyz *.txt *.csv *.las);;Depth images (*.png *.tif "
    "*.tiff);;All "
    "files (*)";

}  // namespace

double MainWindow::defaultDepthScale() const {
  return parse_depth_scale(depth_scale_text_.toStdString());
}

void MainWindow::openDialog() {
  const QStringList paths =
      QFileDialog::getOpenFileNames(this, tr("Open"), last_dir_, tr(kOpenFilter));
  if (!paths.isEmpty()) openFiles(paths);
}

void MainWindow::openFiles(const QStringList& given, double depth_scale) {
  // A session among the files (dropped, on the command line) opens as a session.
  QStringList paths;
  for (const auto& p : given)
    if (p.endsWith(".cumulus", Qt::CaseInsensitive))
      openSession(p);
    else
      paths << p;
  bool any_depth = false;
  for (const auto& p : paths)
    any_depth = any_depth || is_depth_image_path(p.toStdString());
  if (any_depth && depth_scale <= 0) {
    if (isVisible() && !property("scripted").toBool()) {
      const auto scale = ask_depth_scale(this, depth_scale_text_);
      if (!scale) return;
      depth_scale = *scale;
    } else {
      depth_scale = defaultDepthScale();
    }
  }
  QStringList fresh;
  for (const auto& path : paths) {
    if (const int row = document_->findPath(path); row >= 0)
      setCurrentRow(row);
    else
      fresh << path;
  }
  if (fresh.isEmpty()) return;
  statusBar()->showMessage(tr("Loading %1…").arg(QFileInfo(fresh.back()).fileName()));
  loader_->open(fresh, depth_scale);
}

// Files dropped on the window open as if chosen in the dialog.
void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  QStringList paths;
  for (const auto& url : e->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (!paths.isEmpty()) openFiles(paths);
  e->acceptProposedAction();
}

QStringList MainWindow::openFilesNow(const QStringList& paths, double depth_scale) {
  return loader_->openNow(paths, depth_scale > 0 ? depth_scale : defaultDepthScale());
}

bool MainWindow::loading() const {
  return loader_->loading();
}

void MainWindow::cancelLoading() {
  loader_->cancel();
}

bool MainWindow::exportViewImage(const QString& path, int width, int height, QString* error) {
  QImage img;
  const int row = currentRow();
  if (row >= 0 && !document_->at(row).isCloud()) {
    img = depth_view_->grab().toImage().scaled(width, height, Qt::KeepAspectRatio,
                                               Qt::SmoothTransformation);
  } else {
    img = cloud_view_->renderImage(width, height);
  }
  return writeOrExplain([&] { write_png(path, img); }, error);
}

bool MainWindow::saveWindowScreenshot(const QString& path, QString* error) {
  const QImage img = grab().toImage();
  return writeOrExplain([&] { write_png(path, img); }, error);
}

bool MainWindow::saveCurrentDataset(const QString& path, QString* error) {
  const int row = currentRow();
  if (row < 0) {
    if (error) *error = tr("No dataset is selected");
    return false;
  }
  const Dataset& d = document_->at(row);
  const bool written = writeOrExplain(
      [&] {
        if (d.isCloud())
          save_cloud(path.toStdString(), *d.cloud);
        else
          save_depth_png(path.toStdString(), *d.depth, d.depth->source_scale);
      },
      error);
  if (written) noteExport(path);
  return written;
}

bool MainWindow::writeOrExplain(const std::function<void()>& write, QString* error) {
  try {
    write();
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
}

QString MainWindow::exportDirectory() const {
  return last_export_dir_.isEmpty() ? last_dir_ : last_export_dir_;
}

void MainWindow::noteExport(const QString& written) {
  const QFileInfo info(written);
  last_export_dir_ = info.isDir() ? info.absoluteFilePath() : info.absolutePath();
}

void MainWindow::saveDialog(const SaveRequest& request,
                            const std::function<bool(const QString& path)>& write) {
  const QString written = save_with_dialog(this, request, write);
  if (written.isEmpty()) return;
  noteExport(written);
  statusBar()->showMessage(tr("Wrote %1").arg(written), 5000);
}

void MainWindow::exportViewDialog() {
  const auto size =
      ask_image_size(this, std::max(16, stack_->width() * 2), std::max(16, stack_->height() * 2));
  if (!size) return;
  saveDialog({tr("Export view image"), exportDirectory() + "/view.png", tr("PNG (*.png)")},
             [&](const QString& path) {
               QString err;
               if (!exportViewImage(path, size->first, size->second, &err))
                 throw Error(err.toStdString());
               return true;
             });
}

void MainWindow::screenshotDialog() {
  // Grabbed before the dialogs open, so that they are not in the picture.
  const QImage img = grab().toImage();
  saveDialog({tr("Save window screenshot"), exportDirectory() + "/cumulus.png", tr("PNG (*.png)")},
             [&](const QString& path) {
               write_png(path, img);
               return true;
             });
}

void MainWindow::saveAsDialog() {
  const int row = currentRow();
  if (row < 0) return reportError(tr("No dataset is selected"));
  const Dataset& d = document_->at(row);
  const QString filter =
      d.isCloud()
          ? tr("PCD (*.pcd);;PLY (*.ply);;LAS (*.las);;KITTI bin (*.bin);;Text (*.xyz *.txt *.csv)")
          : tr("16-bit PNG (*.png)");
  // The dataset is held for the whole dialog: closing it meanwhile cannot pull it away.
  const auto cloud = d.cloud;
  const auto depth = d.depth;
  saveDialog({tr("Save dataset as"), exportDirectory(), filter}, [&](const QString& path) {
    if (cloud) return save_cloud_asking(this, path, *cloud);
    save_depth_png(path.toStdString(), *depth, depth->source_scale);
    return true;
  });
}

void MainWindow::closeCurrent() {
  const int row = currentRow();
  if (row >= 0) document_->remove(row);
  if (document_->count() > 0)
    setCurrentRow(std::min(row, document_->count() - 1));
  else
    showDataset(-1);
}

void MainWindow::depthToCloudDialog(bool lidar) {
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) return reportError(tr("Select a depth image first"));
  try {
    if (auto out = depth_to_cloud_dialog(this, document_->at(row), lidar))
      setCurrentRow(document_->add(std::move(*out)));
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::cloudToRangeImageDialog() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud())
    return reportError(tr("Select a point cloud first"));
  try {
    if (auto out = cloud_to_range_image_dialog(this, document_->at(row)))
      setCurrentRow(document_->add(std::move(*out)));
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::addRecent(const QString& path) {
  if (path.isEmpty()) return;
  QSettings s;
  QStringList list = s.value("recentFiles").toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent)
    list.removeLast();
  s.setValue("recentFiles", list);
  rebuildRecentMenu();
}

QStringList MainWindow::recentFiles() const {
  return QSettings().value("recentFiles").toStringList();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  for (const auto& path : recentFiles())
    recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openFiles({path}); })
        ->setToolTip(path);
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::restoreSettings() {
  QSettings s;
  restoreGeometry(s.value("geometry").toByteArray());
  // A layout saved before the Objects panel and the timeline existed would leave them out of
  // place: such a layout is not restored.
  if (s.value("windowStateVersion").toInt() == kWindowStateVersion)
    restoreState(s.value("windowState").toByteArray(), kWindowStateVersion);
  last_dir_ = s.value("lastDir", QDir::homePath()).toString();
  last_export_dir_ = s.value("lastExportDir").toString();
  depth_scale_text_ = s.value("depthScale", "mm").toString();
  point_size_->setValue(s.value("pointSize", 2.0).toDouble());
  const int mode = s.value("colorMode", int(ui::ColorMode::Height)).toInt();
  if (const int i = color_combo_->findData(mode); i >= 0) color_combo_->setCurrentIndex(i);
  axes_action_->setChecked(s.value("axes", true).toBool());
  rebuildRecentMenu();
  if (!s.contains("geometry")) resize(1280, 800);
}

void MainWindow::saveSettings() const {
  QSettings s;
  s.setValue("geometry", saveGeometry());
  s.setValue("windowState", saveState(kWindowStateVersion));
  s.setValue("windowStateVersion", kWindowStateVersion);
  s.setValue("lastDir", last_dir_);
  s.setValue("lastExportDir", last_export_dir_);
  s.setValue("depthScale", depth_scale_text_);
  s.setValue("pointSize", point_size_->value());
  s.setValue("colorMode", color_combo_->currentData());
  s.setValue("axes", axes_action_->isChecked());
}

}  // namespace cumulus::app
