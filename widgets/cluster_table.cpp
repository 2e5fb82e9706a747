#include "cluster_table.h"

#include <QColor>

#include <algorithm>

#include "colormap.h"

namespace cumulus::ui {

void ClusterTableModel::setSummary(std::vector<ClusterSummary> summary, int max_rows) {
  beginResetModel();
  summary_ = std::move(summary);
  rows_ = int(std::min<std::size_t>(summary_.size(), std::size_t(std::max(max_rows, 0))));
  endResetModel();
}

int ClusterTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : rows_;
}

int ClusterTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : 3;
}

QVariant ClusterTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rows_) return {};
  const ClusterSummary& s = summary_[std::size_t(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      if (index.column() == 0) return QString::number(s.id);
      if (index.column() == 1) return QString::number(qulonglong(s.size));
      return QString("%1, %2, %3")
          .arg(s.centroid[0], 0, 'f', 2)
          .arg(s.centroid[1], 0, 'f', 2)
          .arg(s.centroid[2], 0, 'f', 2);
    case Qt::DecorationRole:
      if (index.column() != 0) return {};
      {
        const Rgb8 c = label_color(s.id);
        return QColor(c.r, c.g, c.b);
      }
    case Qt::TextAlignmentRole:
      if (index.column() == 1) return int(Qt::AlignRight | Qt::AlignVCenter);
      return {};
    default:
      return {};
  }
}

QVariant ClusterTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  switch (section) {
    case 0:
      return tr("Cluster");
    case 1:
      return tr("Points");
    case 2:
      return tr("Centroid");
    default:
      return {};
  }
}

}  // namespace cumulus::ui
