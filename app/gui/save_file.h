#pragma once
// Every file the GUI writes goes through here. The bytes reach the disk through the backend's
// AtomicFile (whole or not at all, the old file untouched on failure); the dialogs ask before a
// file is replaced, say why a write failed and offer another place, and ask before a format
// loses part of a cloud. A failed write never touches the document or any window's state.
#include <QByteArray>
#include <QImage>
#include <QString>
#include <QWidget>

#include <functional>

#include "core/error.h"
#include "core/point_cloud.h"
#include "io/io.h"

namespace cumulus::app {

// Throw IoError naming `path` with the system's reason.
void write_file(const QString& path, const QByteArray& bytes);
void write_png(const QString& path, const QImage& image);

struct SaveRequest {
  QString title;      // of the dialogs
  QString suggested;  // the path the file dialog starts from
  QString filter;     // its file types
};

// Asks where to write (the file dialog asks before replacing a file) and calls `write(path)`.
// When `write` throws, shows the reason and offers to choose another place; when it returns
// false (the user declined something it asked), offers the file dialog again. Returns the path
// written, or an empty string when the user gave up.
QString save_with_dialog(QWidget* parent, const SaveRequest& request,
                         const std::function<bool(const QString& path)>& write);

// Writes `cloud` to `path`; where the format would move points (float32 rounding over 1 mm) or
// drop fields, asks first and returns false when the user would rather choose another place.
bool save_cloud_asking(QWidget* parent, const QString& path, const PointCloud& cloud,
                       SaveOptions options = {});

}  // namespace cumulus::app
