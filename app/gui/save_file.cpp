#include "save_file.h"

#include <QBuffer>
#include <QFileDialog>
#include <QMessageBox>
#include <QPushButton>

#include "core/error.h"
#include "io/atomic_file.h"

namespace cumulus::app {

void write_file(const QString& path, const QByteArray& bytes) {
  AtomicFile out(path.toStdString());
  out.write(bytes.constData(), std::size_t(bytes.size()));
  out.commit();
}

void write_png(const QString& path, const QImage& image) {
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (image.isNull() || !image.save(&buffer, "PNG"))
    throw IoError(path.toStdString(), "not written: the image could not be encoded as PNG (" +
                                          std::to_string(image.width()) + " x " +
                                          std::to_string(image.height()) + ")");
  write_file(path, bytes);
}

QString save_with_dialog(QWidget* parent, const SaveRequest& request,
                         const std::function<bool(const QString& path)>& write) {
  QString start = request.suggested;
  for (;;) {
    const QString path = QFileDialog::getSaveFileName(parent, request.title, start, request.filter);
    if (path.isEmpty()) return {};
    start = path;
    QString why;
    try {
      if (write(path)) return path;
      continue;
    } catch (const std::exception& e) {
      why = QString::fromUtf8(e.what());
    }
    QMessageBox box(QMessageBox::Warning, request.title,
                    QObject::tr("%1 was not written.").arg(path), QMessageBox::NoButton, parent);
    box.setInformativeText(why);
    QPushButton* again =
        box.addButton(QObject::tr("Choose Another Place…"), QMessageBox::AcceptRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(again);
    box.exec();
    if (box.clickedButton() != again) return {};
  }
}

bool save_cloud_asking(QWidget* parent, const QString& path, const PointCloud& cloud,
                       SaveOptions options) {
  const std::string file = path.toStdString();
  const SaveLoss loss = save_loss(file, cloud);
  QStringList lost;
  if (loss.max_rounding_m > kMaxSilentRoundingM && !options.allow_precision_loss)
    lost << QObject::tr("its coordinates (float32, or LAS's grid) move points by up to %1 m")
                .arg(loss.max_rounding_m, 0, 'g', 4);
  if (!loss.dropped_fields.empty()) {
    QStringList names;
    for (const auto& f : loss.dropped_fields)
      names << QString::fromStdString(f);
    lost << QObject::tr("it has no place for %1").arg(names.join(", "));
  }
  if (!lost.isEmpty()) {
    QMessageBox box(QMessageBox::Warning, QObject::tr("Save cloud"),
                    QObject::tr("This format cannot hold all of the cloud."), QMessageBox::NoButton,
                    parent);
    box.setInformativeText(
        lost.join(";\n") +
        QObject::tr(".\n\nPCD and PLY keep every field and the full precision."));
    QPushButton* anyway = box.addButton(QObject::tr("Write Anyway"), QMessageBox::DestructiveRole);
    QPushButton* elsewhere =
        box.addButton(QObject::tr("Choose Another Format…"), QMessageBox::RejectRole);
    box.setDefaultButton(elsewhere);
    box.exec();
    if (box.clickedButton() != anyway) return false;
    options.allow_precision_loss = true;
  }
  save_cloud(file, cloud, options);
  return true;
}

}  // namespace cumulus::app
