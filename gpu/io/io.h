#pragma once
// Reading and writing clouds and depth images. Every function throws IoError naming the file
// and the problem; none of them aborts on malformed input.
#include <string>
#include <vector>

#include "core/depth_image.h"
#include "core/error.h"
#include "core/point_cloud.h"

namespace cumulus {

// Laz and E57 are recognised so that opening one says why it cannot be read (this build has no
// LASzip or libE57Format) and how to convert it.
enum class CloudFormat { Pcd, Ply, KittiBin, Xyz, Las, Laz, E57 };
enum class PcdEncoding { Ascii, Binary, BinaryCompressed };

// Decides the format from the extension (.pcd, .ply, .bin, .xyz/.txt/.csv, .las, .laz, .e57);
// throws IoError for anything else.
CloudFormat cloud_format_for(const std::string& path);
bool is_depth_image_path(const std::string& path);  // .png, .tif, .tiff
bool is_cloud_path(const std::string& path);

PointCloud load_cloud(const std::string& path);
PointCloud load_pcd(const std::string& path);
PointCloud load_ply(const std::string& path);
PointCloud load_kitti_bin(const std::string& path);
PointCloud load_xyz(const std::string& path);
// LAS 1.0-1.4, point formats 0-10, memory-mapped. World coordinates (scale and offset applied,
// in double precision) go to the local origin; intensity and colour to their members (8-bit
// colour for display; 16-bit values that are not scaled 8-bit ones are also kept as red, green
// and blue fields); every other standard field (classification, return_number, gps_time, ...)
// and each extra-bytes field becomes an extra field, except standard ones that are zero at every
// point. Header values and variable-length records (CRS among them) go to the metadata.
PointCloud load_las(const std::string& path);

// How cluster labels go into a LAS file: an extra-bytes field "label" (int32, exact, read back
// as labels), the classification (-1 -> 1 "unclassified", cluster k -> class 64 + k, the
// user-definable classes, so at most 192 clusters) or the user data byte (-1 -> 0, k -> k + 1).
enum class LasLabels { ExtraBytes, Classification, UserData };

struct SaveOptions {
  PcdEncoding pcd = PcdEncoding::Binary;
  bool ply_binary = true;
  // Write even when the format's float32 coordinates move points by more than 1 mm.
  bool allow_precision_loss = false;
  LasLabels las_labels = LasLabels::ExtraBytes;
};

// What writing `cloud` to `path` would lose: how far float32 coordinates move its farthest-moved
// point (0 where the format keeps the world coordinates: PCD and PLY store doubles when the cloud
// has an origin, text keeps every digit), and the fields the format has no place for.
struct SaveLoss {
  double max_rounding_m = 0;
  std::vector<std::string> dropped_fields;
};
SaveLoss save_loss(const std::string& path, const PointCloud& cloud);
constexpr double kMaxSilentRoundingM = 1e-3;

// The refusal to move points: thrown by save_cloud before anything is written.
class PrecisionLossError : public IoError {
 public:
  PrecisionLossError(const std::string& path, double max_rounding_m);
  double max_rounding_m() const { return max_rounding_m_; }

 private:
  double max_rounding_m_;
};

// Writes by extension: .pcd, .ply, .bin (x y z intensity), .xyz/.txt/.csv, .las. Refuses, with
// PrecisionLossError, a cloud whose float32 rounding would exceed kMaxSilentRoundingM unless
// `allow_precision_loss`; dropped fields are the caller's to report (save_loss).
void save_cloud(const std::string& path, const PointCloud& cloud, const SaveOptions& = {});
void save_pcd(const std::string& path, const PointCloud& cloud, PcdEncoding encoding);
void save_ply(const std::string& path, const PointCloud& cloud, bool binary);
void save_kitti_bin(const std::string& path, const PointCloud& cloud);
void save_xyz(const std::string& path, const PointCloud& cloud);
// A cloud read from LAS keeps its version, point format, scale, offset and records; others become
// LAS 1.4 (point format 6, 7 with colour, 8 with near infrared) on a 1 mm grid. Refuses non-finite
// points and values a standard field cannot hold exactly; other fields become extra bytes.
void save_las(const std::string& path, const PointCloud& cloud,
              LasLabels labels = LasLabels::ExtraBytes);

// 16-bit PNG or TIFF; each raw value times `metres_per_unit` gives metres, 0 stays invalid.
DepthImage load_depth_image(const std::string& path, double metres_per_unit);
// Writes a 16-bit PNG with value = round(depth / metres_per_unit), 0 for invalid or
// out-of-range depths.
void save_depth_png(const std::string& path, const DepthImage& image, double metres_per_unit);

}  // namespace cumulus
