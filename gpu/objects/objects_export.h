#pragma once
// Objects to files, for the CLI and the GUI alike: CSV (one row an object) and JSON (an array
// of objects). Written whole or not at all (io/atomic_file.h); IoError names the file.
#include <string>
#include <vector>

#include "objects/objects.h"

namespace cumulus {

// Columns: id, points, centroid, axis-aligned min and max, the oriented box's centre, size
// (length, width, height) and heading, and the height above the ground (empty without one).
void save_objects_csv(const std::string& path, const std::vector<DetectedObject>& objects);
// Keys: id, points, centroid, min, max, box_centre, box_size, box_heading, box_corners (eight
// corners, bottom face first) and above_ground (null without a ground).
void save_objects_json(const std::string& path, const std::vector<DetectedObject>& objects);

}  // namespace cumulus
