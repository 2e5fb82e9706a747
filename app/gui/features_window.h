#pragma once
// Normals and point feature histograms of an open cloud: compute them off the UI thread with any
// method, pick a point to see its neighbourhood and histogram (a second pick overlays another),
// colour the cloud by histogram distance to the first pick, time every method, export.
#include <QMainWindow>

#include <atomic>
#include <memory>

#include "features/features.h"

class QComboBox;

namespace cumulus::ui {
class FeaturePanel;
class VtkCloudView;
}  // namespace cumulus::ui

namespace cumulus::app {

class DocumentModel;

struct FeatureJob {
  std::shared_ptr<const PointCloud> cloud;
  FeatureParams params;
  std::vector<FeatureResult> results;  // one, or every usable method for "time all"
  bool all_methods = false;
};

class FeaturesWindow : public QMainWindow {
  Q_OBJECT
 public:
  FeaturesWindow(DocumentModel* document, QWidget* parent = nullptr);
  ui::FeaturePanel* panel() const { return panel_; }
  ui::VtkCloudView* view() const { return view_; }
  void setCloudRow(int row);
  void run() { start(false); }
  void timeAll() { start(true); }
  bool busy() const;
  const FeatureResult* lastResult() const { return last_.get(); }
  std::shared_ptr<const PointCloud> cloud() const;

  // Picks a point (an index of the shown cloud) into slot 0 (A) or 1 (B); -1 clears the slot.
  void pickPoint(qint64 index, int slot);
  qint64 picked(int slot) const { return slot == 1 ? pick_b_ : pick_a_; }
  // The picked point A's neighbourhood as the features saw it (itself included).
  const std::vector<std::int32_t>& neighbourhood() const { return neighbourhood_; }
  // Histogram distance of every point to A's (empty without A or without features).
  const std::vector<float>& distances() const { return distances_; }
  // PCD (.pcd) or CSV (anything else) of the last result.
  bool exportFeatures(const QString& path, QString* error = nullptr) const;

 signals:
  void finished(bool ok);

 private:
  void refillCombo();
  void cloudChanged();
  void start(bool all_methods);
  void onResult(FeatureJob job);
  void updatePicks();
  void recolor();

  DocumentModel* document_;
  ui::FeaturePanel* panel_ = nullptr;
  ui::VtkCloudView* view_ = nullptr;
  QComboBox* cloud_ = nullptr;
  class PanelJobs* jobs_ = nullptr;
  class JobRunner* runner_ = nullptr;
  std::shared_ptr<const FeatureResult> last_;
  std::shared_ptr<const PointCloud> last_cloud_;
  FeatureParams last_params_;
  qint64 pick_a_ = -1, pick_b_ = -1;
  std::vector<std::int32_t> neighbourhood_;
  std::vector<float> distances_;
};

}  // namespace cumulus::app
