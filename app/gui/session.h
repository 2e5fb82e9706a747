#pragma once
// A working session as a small JSON file: the datasets (paths relative to the session file
// where they can be, so a session travels with its data), which of them had results, the
// panels' parameters and methods, the camera, the colouring and the window's layout. Reading
// checks everything and throws cumulus::Error naming the problem; nothing here touches a window.
#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <array>
#include <optional>
#include <vector>

#include "cluster/cluster.h"
#include "filter_panel.h"
#include "odometry_settings.h"
#include "segment/segment.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

struct SessionDataset {
  enum class Kind { Cloud, Depth, Sequence };
  Kind kind = Kind::Cloud;
  QString path;            // absolute (a sequence: its folder, pattern or list)
  double depth_scale = 0;  // metres per unit, for depth images
  std::size_t frame = 0;   // for sequences
  bool clustered = false;  // had a clustering result
  bool segmented = false;  // had a segmentation result
};

struct PanelSettings {
  QString method;  // the method's name; empty keeps the panel's
  bool live = false;
};

struct Session {
  std::vector<SessionDataset> datasets;
  int current = -1;  // index into datasets
  PanelSettings cluster_panel, segment_panel, filter_panel, pipeline_panel;
  ClusterParams cluster;
  bool cluster_remove_ground = false;
  SegmentParams segment;
  ui::FilterSettings filter;
  QJsonObject pipeline;  // the pipeline panel's preset (cumulus-cli pipeline's keys)
  OdometrySettings odometry;
  std::optional<ui::VtkCloudView::CameraState> camera;
  int color_mode = 0;
  double point_size = 2;
  bool axes = true;
  QByteArray window_state, geometry;
  QStringList left_out;  // datasets not written (derived in the session, no file): for a warning
};

constexpr int kSessionVersion = 1;
constexpr const char* kSessionSuffix = "cumulus";

QJsonObject session_to_json(const Session& s, const QString& session_path);
// Throws Error naming `session_path` and what is wrong; dataset paths come back absolute.
Session session_from_json(const QJsonObject& json, const QString& session_path);

// Written whole or not at all (AtomicFile); throws IoError.
void write_session(const QString& path, const Session& s);
Session read_session(const QString& path);

// Where a dataset of the session is: the path relative to the session's folder when that file
// exists, else the absolute path as saved. Empty when neither exists.
QString resolve_dataset_path(const QString& relative, const QString& absolute,
                             const QString& session_path, bool is_sequence);

}  // namespace cumulus::app
