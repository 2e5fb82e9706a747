#pragma once
// The main window's small modal dialogs: they ask, and return what was chosen (nothing when
// cancelled); the caller decides what to do with it.
#include <QString>
#include <QWidget>

#include <optional>

#include "document.h"

namespace cumulus::app {

struct OdometrySettings;

// Metres per 16-bit unit for depth images, starting from `text` (a preset name or a number),
// which is updated to the choice.
std::optional<double> ask_depth_scale(QWidget* parent, QString& text);

// Width and height of an exported view image, starting from `width` x `height`.
std::optional<std::pair<int, int>> ask_image_size(QWidget* parent, int width, int height);

// A new cloud from a depth image (pinhole) or a range image (LiDAR), parameters asked first.
// Throws what the conversion throws.
std::optional<Dataset> depth_to_cloud_dialog(QWidget* parent, const Dataset& src, bool lidar);

// A range image from a cloud, its size and field of view asked first.
std::optional<Dataset> cloud_to_range_image_dialog(QWidget* parent, const Dataset& src);

// Sequence > Odometry Settings: the registration method and the odometry's parameters.
std::optional<OdometrySettings> odometry_settings_dialog(QWidget* parent,
                                                         const OdometrySettings& current);

}  // namespace cumulus::app
