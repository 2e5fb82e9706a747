#include "document.h"

#include <QFileInfo>
#include <QIcon>

#include "io/io.h"

namespace cumulus::app {

QString Dataset::pointHtml(std::size_t index) const {
  const PointCloud& c = *cloud;
  const auto& p = c.points[index];
  QString text = QObject::tr("<b>Point #%L1</b><br>x %2<br>y %3<br>z %4")
                     .arg(qulonglong(index))
                     .arg(c.origin[0] + p.x, 0, 'f', 4)
                     .arg(c.origin[1] + p.y, 0, 'f', 4)
                     .arg(c.origin[2] + p.z, 0, 'f', 4);
  if (c.has_intensity()) text += QObject::tr("<br>intensity %1").arg(c.intensity[index]);
  if (c.has_labels()) text += QObject::tr("<br>label %1").arg(c.labels[index]);
  if (c.has_rgb()) {
    const auto col = c.rgb[index];
    text += QObject::tr("<br>rgb %1 %2 %3").arg(col.r).arg(col.g).arg(col.b);
  }
  return text;
}

QString Dataset::summaryHtml() const {
  QString html = QStringLiteral("<b>%1</b><br>").arg(name.toHtmlEscaped());
  if (!path.isEmpty()) html += QStringLiteral("<small>%1</small><br>").arg(path.toHtmlEscaped());
  if (cloud) {
    const auto& c = *cloud;
    html += QStringLiteral("%L1 points").arg(qulonglong(c.size()));
    if (c.organized())
      html += QStringLiteral(" (organized %1 &times; %2)").arg(c.width).arg(c.height);
    html += QStringLiteral("<br>fields: ");
    QStringList names;
    for (const auto& f : c.field_names())
      names << QString::fromStdString(f);
    html += names.join(' ').toHtmlEscaped();
    html += QStringLiteral("<br>non-finite: %L1").arg(qulonglong(c.count_non_finite()));
    const Bounds b = c.local_bounds();
    if (b.valid)
      html += QStringLiteral("<br>bounds: [%1, %2, %3] .. [%4, %5, %6]")
                  .arg(c.origin[0] + b.min.x, 0, 'f', 3)
                  .arg(c.origin[1] + b.min.y, 0, 'f', 3)
                  .arg(c.origin[2] + b.min.z, 0, 'f', 3)
                  .arg(c.origin[0] + b.max.x, 0, 'f', 3)
                  .arg(c.origin[1] + b.max.y, 0, 'f', 3)
                  .arg(c.origin[2] + b.max.z, 0, 'f', 3);
    if (c.origin[0] != 0 || c.origin[1] != 0 || c.origin[2] != 0)
      html += QStringLiteral("<br>local origin: [%1, %2, %3]")
                  .arg(c.origin[0], 0, 'f', 3)
                  .arg(c.origin[1], 0, 'f', 3)
                  .arg(c.origin[2], 0, 'f', 3);
  } else if (depth) {
    const auto [lo, hi] = depth->valid_range();
    html += QStringLiteral(
                "depth image %1 &times; %2<br>valid pixels: %L3<br>depth: %4 .. %5 m<br>"
                "scale: %6 m per unit")
                .arg(depth->width)
                .arg(depth->height)
                .arg(qulonglong(depth->count_valid()))
                .arg(lo, 0, 'f', 3)
                .arg(hi, 0, 'f', 3)
                .arg(depth->source_scale, 0, 'g', 6);
  }
  return html;
}

int DocumentModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(datasets_.size());
}

QVariant DocumentModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= count()) return {};
  const Dataset& d = at(index.row());
  switch (role) {
    case Qt::DisplayRole:
      if (d.sequence)
        return QStringLiteral("%1  (frame %L2 of %L3)")
            .arg(d.name)
            .arg(qulonglong(d.frame + 1))
            .arg(qulonglong(d.sequence->frames.size()));
      return d.isCloud()
                 ? QStringLiteral("%1  (%L2 pts)").arg(d.name).arg(qulonglong(d.cloud->size()))
                 : QStringLiteral("%1  (%2×%3)")
                       .arg(d.name)
                       .arg(d.depth->width)
                       .arg(d.depth->height);
    case Qt::ToolTipRole:
      return d.path.isEmpty() ? d.name : d.path;
    case Qt::DecorationRole:
      return QIcon::fromTheme(d.isCloud() ? QStringLiteral("applications-graphics")
                                          : QStringLiteral("image-x-generic"));
    default:
      return {};
  }
}

int DocumentModel::add(Dataset dataset) {
  QString base = dataset.name, name = base;
  for (int k = 2;; ++k) {
    bool taken = false;
    for (const auto& d : datasets_)
      taken = taken || d.name == name;
    if (!taken) break;
    name = QStringLiteral("%1 (%2)").arg(base).arg(k);
  }
  dataset.name = name;
  const int row = count();
  beginInsertRows({}, row, row);
  datasets_.push_back(std::move(dataset));
  endInsertRows();
  return row;
}

void DocumentModel::remove(int row) {
  if (row < 0 || row >= count()) return;
  beginRemoveRows({}, row, row);
  datasets_.erase(datasets_.begin() + row);
  endRemoveRows();
}

void DocumentModel::setClusters(int row, std::shared_ptr<const ClusterResult> result) {
  if (row < 0 || row >= count()) return;
  datasets_[std::size_t(row)].clusters = std::move(result);
  emit dataChanged(index(row), index(row));
  emit clustersChanged(row);
}

void DocumentModel::setSegments(int row, std::shared_ptr<const SegmentResult> result) {
  if (row < 0 || row >= count()) return;
  datasets_[std::size_t(row)].segments = std::move(result);
  emit dataChanged(index(row), index(row));
}

void DocumentModel::setFrame(int row, std::size_t frame, std::shared_ptr<const PointCloud> cloud) {
  if (row < 0 || row >= count() || !at(row).sequence) return;
  Dataset& d = datasets_[std::size_t(row)];
  d.frame = frame;
  d.cloud = std::move(cloud);
  d.clusters.reset();
  emit dataChanged(index(row), index(row));
  emit frameChanged(row);
}

void DocumentModel::replaceCloud(int row, std::shared_ptr<const PointCloud> cloud) {
  if (row < 0 || row >= count() || !at(row).isCloud() || !cloud) return;
  Dataset& d = datasets_[std::size_t(row)];
  d.cloud = std::move(cloud);
  d.clusters.reset();
  emit dataChanged(index(row), index(row));
  emit cloudReplaced(row);
}

int DocumentModel::findDepth(const DepthImage* image) const {
  for (int i = 0; i < count(); ++i)
    if (at(i).depth.get() == image) return i;
  return -1;
}

int DocumentModel::findCloud(const PointCloud* cloud) const {
  for (int i = 0; i < count(); ++i)
    if (at(i).cloud.get() == cloud) return i;
  return -1;
}

int DocumentModel::findPath(const QString& path) const {
  const QString canonical = QFileInfo(path).absoluteFilePath();
  for (int i = 0; i < count(); ++i)
    if (!at(i).path.isEmpty() && QFileInfo(at(i).path).absoluteFilePath() == canonical) return i;
  return -1;
}

Dataset loadDataset(const QString& path, double depth_metres_per_unit) {
  Dataset d;
  d.path = QFileInfo(path).absoluteFilePath();
  d.name = QFileInfo(path).fileName();
  const std::string p = path.toStdString();
  if (is_depth_image_path(p))
    d.depth = std::make_shared<DepthImage>(load_depth_image(p, depth_metres_per_unit));
  else
    d.cloud = std::make_shared<PointCloud>(load_cloud(p));
  return d;
}

}  // namespace cumulus::app
