#pragma once
// The clustering panel's list of clusters as a model over the result's summary: a new result
// is one reset, and the view asks only for the rows it shows. (As a QTableWidget the list was
// three items a row, up to 6,000 allocated and inserted one at a time on the UI thread: 3-5 ms
// of a KITTI frame's way from a parameter change to the view.)
#include <QAbstractTableModel>

#include <vector>

#include "cluster/cluster_export.h"

namespace cumulus::ui {

class ClusterTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  // Shows the first `max_rows` clusters of `summary` (the largest: thousands of singletons would
  // only make the list longer).
  void setSummary(std::vector<ClusterSummary> summary, int max_rows);
  void clear() { setSummary({}, 0); }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<ClusterSummary> summary_;
  int rows_ = 0;
};

}  // namespace cumulus::ui
