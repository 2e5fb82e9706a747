#pragma once
#include <QMainWindow>
#include <QStringList>
#include <functional>

#include "document.h"
#include "save_file.h"

class QAction;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListView;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QToolButton;

namespace cumulus::ui {
class VtkCloudView;
class DepthView;
class ClusterPanel;
class SegmentPanel;
class FilterPanel;
class PipelinePanel;
class TimelineBar;
class LineChart;
}  // namespace cumulus::ui

namespace cumulus::app {

class ClusterController;
class SegmentController;
class FilterController;
class PipelineController;
class SequencePlayer;
class OdometryController;
class DatasetLoader;
class JobRunner;
struct Session;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  DocumentModel* document() const { return document_; }
  ui::VtkCloudView* cloudView() const { return cloud_view_; }
  ui::DepthView* depthView() const { return depth_view_; }
  ui::ClusterPanel* clusterPanel() const { return cluster_panel_; }
  ClusterController* clusterController() const { return clustering_; }
  ui::SegmentPanel* segmentPanel() const { return segment_panel_; }
  ui::FilterPanel* filterPanel() const { return filter_panel_; }
  FilterController* filters() const { return filters_; }
  ui::PipelinePanel* pipelinePanel() const { return pipeline_panel_; }
  PipelineController* pipeline() const { return pipeline_; }
  // Segments the current depth image with the segment panel's parameters, off the UI thread.
  void runSegmentation();
  // Runs every segmentation method on the current image and shows their times side by side.
  void timeAllSegmentMethods();
  bool segmentationBusy() const;
  // Starts clustering the current cloud with the panel's parameters (a running job is
  // superseded: its result is dropped and the new one starts when it ends).
  void runClustering();
  void cancelClustering();
  // A compare window for the current cloud with the panel's parameters (not shown yet), or
  // nullptr with an error reported when no cloud is selected.
  class CompareWindow* openCompare();
  // The same for the current depth image and the segmentation panel's parameters.
  class CompareWindow* openSegmentCompare();
  // The same for ICP on the registration window's pair and parameters, and for features on the
  // features window's cloud and parameters (each window opened first if needed).
  class CompareWindow* openIcpCompare();
  class CompareWindow* openFeaturesCompare();
  // The Objects panel's pipeline on the current cloud, every method.
  class CompareWindow* openPipelineCompare();
  // The ICP window (one per main window), with the current cloud as target when it has one.
  class RegistrationWindow* openRegistration();
  // The features window on the current cloud.
  class FeaturesWindow* openFeatures();
  bool clusteringBusy() const;
  // Frees the GPU buffers that methods keep between runs (off the UI thread: a GPU run in
  // progress finishes first); reports the device's free memory before and after in the status
  // bar and emits gpuMemoryReleased with that message.
  void releaseGpuMemory();
  int currentRow() const;
  void setCurrentRow(int row);

  // Loads in the background; depth images use `depth_scale` metres per unit (0: the remembered
  // default). Errors are reported without touching what is already open.
  void openFiles(const QStringList& paths, double depth_scale = 0);
  // Loads on the calling thread (scripted runs, tests); returns the error messages.
  QStringList openFilesNow(const QStringList& paths, double depth_scale = 0);
  // Opens a folder, pattern or list of frames as a sequence (its first frame read now); an
  // empty string, or the reason it could not.
  QString openSequence(const QString& spec);
  SequencePlayer* player() const { return player_; }
  OdometryController* odometry() const { return odometry_; }
  // Sequence > Drift Plot: the last odometry run's drift along the path.
  QWidget* driftWindow() const { return drift_window_; }
  ui::LineChart* driftChart() const { return drift_chart_; }
  ui::TimelineBar* timeline() const { return timeline_; }
  bool loading() const;
  void cancelLoading();

  // Writes the 3D view (or the depth view, for a depth image) at width x height.
  bool exportViewImage(const QString& path, int width, int height, QString* error = nullptr);
  bool saveWindowScreenshot(const QString& path, QString* error = nullptr);
  bool saveCurrentDataset(const QString& path, QString* error = nullptr);
  // Where save and export dialogs start: the folder last written to (opening data elsewhere
  // does not move it), or the data folder before anything was written.
  QString exportDirectory() const;
  void noteExport(const QString& written);
  QStringList recentFiles() const;

  // Sessions (main_window_session.cpp): what is open, the panels' parameters and methods, the
  // camera, the colouring and the layout, as a small JSON file (session.h). Saving leaves out
  // datasets with no file (derived in the session) and says so.
  bool saveSession(const QString& path, QString* error = nullptr);
  // Closes what is open, then opens the session's datasets in the background and restores the
  // rest; sessionOpened follows with the files that were not there. False, with the reason
  // reported, when the file is not a session.
  bool openSession(const QString& path);
  QStringList recentSessions() const;
  // Metres per unit for depth images opened without asking (the last choice, "mm" at first).
  double defaultDepthScale() const;

 signals:
  void datasetOpened(int row);
  void errorReported(const QString& message);
  void loadingFinished();
  void sessionOpened(const QStringList& missing);
  void clusteringFinished(bool ok);
  void segmentationFinished(bool ok);
  void segmentTimingFinished();
  void gpuMemoryReleased(const QString& message);

 protected:
  bool event(QEvent* e) override;
  void closeEvent(QCloseEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void buildActions();
  void buildDocks();
  void showDataset(int row);
  // Sequences (main_window_sequence.cpp): the timeline and its player; a new frame refreshes
  // the view without moving the camera and re-runs the live panel in front.
  void buildTimeline();
  void openSequenceDialog();
  void frameChanged(int row);
  void updateTimeline();
  bool keep_camera_ = false;
  void reportError(const QString& message);
  // Runs `write`; false with what it threw in `error`.
  static bool writeOrExplain(const std::function<void()>& write, QString* error);
  // save_with_dialog, then "Wrote PATH" in the status bar.
  void saveDialog(const SaveRequest& request,
                  const std::function<bool(const QString& path)>& write);
  static constexpr int kWindowStateVersion = 2;  // docks and toolbars: Objects panel, timeline
  void buildSessionActions(QMenu* file);
  void rebuildRecentSessions();
  void addRecentSession(const QString& path);
  void finishSession();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void onPointPicked(qint64 index);
  void updateLoadingUi();
  void openDialog();
  void exportViewDialog();
  void screenshotDialog();
  void saveAsDialog();
  void closeCurrent();
  void depthToCloudDialog(bool lidar);
  void cloudToRangeImageDialog();
  void showClusterColours();
  void restoreSettings();
  void saveSettings() const;

  DocumentModel* document_ = nullptr;
  class RegistrationWindow* registration_ = nullptr;
  class FeaturesWindow* features_ = nullptr;
  ui::VtkCloudView* cloud_view_ = nullptr;
  ui::DepthView* depth_view_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QListView* list_ = nullptr;
  QLabel* info_label_ = nullptr;
  QLabel* pick_label_ = nullptr;
  QLabel* device_label_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QToolButton* cancel_button_ = nullptr;
  QComboBox* color_combo_ = nullptr;
  QDoubleSpinBox* point_size_ = nullptr;
  QAction* ortho_action_ = nullptr;
  QAction* axes_action_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  QMenu* recent_sessions_menu_ = nullptr;
  std::shared_ptr<Session> pending_session_;  // opened, its datasets still loading
  QStringList session_missing_;
  QMetaObject::Connection session_loaded_;
  ui::ClusterPanel* cluster_panel_ = nullptr;
  ui::SegmentPanel* segment_panel_ = nullptr;
  ui::FilterPanel* filter_panel_ = nullptr;
  class HistoryWindow* history_ = nullptr;
  DatasetLoader* loader_ = nullptr;
  ClusterController* clustering_ = nullptr;
  SegmentController* segmentation_ = nullptr;
  FilterController* filters_ = nullptr;
  ui::PipelinePanel* pipeline_panel_ = nullptr;
  PipelineController* pipeline_ = nullptr;
  SequencePlayer* player_ = nullptr;
  OdometryController* odometry_ = nullptr;
  QWidget* drift_window_ = nullptr;
  ui::LineChart* drift_chart_ = nullptr;
  ui::TimelineBar* timeline_ = nullptr;
  JobRunner* release_runner_ = nullptr;
  QString last_dir_;
  QString last_export_dir_;
  QString depth_scale_text_ = QStringLiteral("mm");
};

// The sample scene shipped with Cumulus, or an empty string when it cannot be found.
QString sampleScenePath();

}  // namespace cumulus::app
