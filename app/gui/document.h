#pragma once
// The document: every open dataset, as a list model that views observe.
#include <QAbstractListModel>
#include <QString>

#include <memory>
#include <vector>

#include "cluster/cluster.h"
#include "core/depth_image.h"
#include "core/point_cloud.h"
#include "segment/segment.h"

namespace cumulus::app {

// A sequence's frames (a folder, pattern or list: sequence/sequence.h) and what lies beside
// them: times.txt (seconds a frame) and poses.txt (KITTI ground truth), where present.
struct SequenceInfo {
  QString spec;  // as opened
  std::vector<std::string> frames;
  std::vector<double> times;  // empty or one a frame
};

struct Dataset {
  QString name;                             // shown in the list; unique within the document
  QString path;                             // file it came from; empty for derived datasets
  std::shared_ptr<const PointCloud> cloud;  // exactly one of cloud and depth is set
  std::shared_ptr<const DepthImage> depth;
  std::shared_ptr<const ClusterResult> clusters;  // latest clustering of `cloud`, if any
  std::shared_ptr<const SegmentResult> segments;  // latest RDP segmentation of `depth`, if any
  std::shared_ptr<const SequenceInfo> sequence;   // set for a sequence: `cloud` is its frame
  std::size_t frame = 0;                          // which

  bool isCloud() const { return cloud != nullptr; }
  // A few lines describing the dataset (size, fields, bounds or depth range), as HTML.
  QString summaryHtml() const;
  // A cloud point's coordinates (world) and fields, for the pick readout.
  QString pointHtml(std::size_t index) const;
};

class DocumentModel : public QAbstractListModel {
  Q_OBJECT

 public:
  using QAbstractListModel::QAbstractListModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

  // Adds a dataset, making its name unique; returns its row.
  int add(Dataset dataset);
  void remove(int row);
  void setClusters(int row, std::shared_ptr<const ClusterResult> result);
  void setSegments(int row, std::shared_ptr<const SegmentResult> result);
  // A sequence's frame `frame` becomes its cloud (results of the last frame are dropped).
  void setFrame(int row, std::size_t frame, std::shared_ptr<const PointCloud> cloud);
  // A cloud dataset's points replaced (e.g. moved by a registration; its clustering is dropped).
  void replaceCloud(int row, std::shared_ptr<const PointCloud> cloud);
  int findDepth(const DepthImage* image) const;
  // Row of the dataset holding this cloud, or -1 (it may have been closed meanwhile).
  int findCloud(const PointCloud* cloud) const;
  const Dataset& at(int row) const { return datasets_.at(std::size_t(row)); }
  int count() const { return int(datasets_.size()); }
  // Row of the dataset loaded from `path`, or -1.
  int findPath(const QString& path) const;

 signals:
  void clustersChanged(int row);
  void frameChanged(int row);
  void cloudReplaced(int row);

 private:
  std::vector<Dataset> datasets_;
};

// Reads a file into a dataset; throws cumulus::Error with a clear message on failure.
Dataset loadDataset(const QString& path, double depth_metres_per_unit);

}  // namespace cumulus::app
