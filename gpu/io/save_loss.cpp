// What a format cannot hold. KITTI .bin is lossy: float32 world coordinates and one value
// (reflectance) per point. A UTM easting near 500 km has a float32 step of 3 cm, so points move
// by up to half that without anyone noticing unless the writer says so. LAS rounds coordinates
// to its scale (a cloud read from LAS and not moved goes back exactly) and has no rows.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "io/io.h"
#include "io/io_detail.h"

namespace cumulus {

PrecisionLossError::PrecisionLossError(const std::string& path, double max_rounding_m)
    : IoError(path,
              [&] {
                char text[400];
                std::snprintf(text, sizeof text,
                              "not written: %s, which would move points of this cloud by up to "
                              "%.4g m (more than %g mm); write .pcd, .ply or .xyz, which keep "
                              "them, or allow the precision loss (cumulus-cli: "
                              "--allow-precision-loss)",
                              cloud_format_for(path) == CloudFormat::Las
                                  ? "LAS stores coordinates on the grid of its scale"
                                  : "KITTI .bin stores float32 coordinates",
                              max_rounding_m, kMaxSilentRoundingM * 1e3);
                return std::string(text);
              }()),
      max_rounding_m_(max_rounding_m) {}

SaveLoss save_loss(const std::string& path, const PointCloud& cloud) {
  SaveLoss loss;
  const CloudFormat format = cloud_format_for(path);
  const auto drop_layout = [&] {
    if (cloud.organized())
      loss.dropped_fields.push_back("organized layout (" + std::to_string(cloud.width) + " x " +
                                    std::to_string(cloud.height) + ")");
  };
  if (format == CloudFormat::Xyz) drop_layout();  // text rows have no width and height
  // A LAS file's records (its coordinate reference system among them) go back only into LAS.
  if (format != CloudFormat::Las &&
      std::any_of(cloud.metadata.begin(), cloud.metadata.end(), [](const MetadataEntry& m) {
        return m.key.rfind("las.vlr.", 0) == 0 || m.key.rfind("las.evlr.", 0) == 0;
      }))
    loss.dropped_fields.push_back("the LAS file's records (coordinate reference system)");
  if (format == CloudFormat::Las) {
    drop_layout();
    double scale = 0;
    loss.max_rounding_m = detail::las_rounding(path, cloud, scale);
    return loss;
  }
  if (format != CloudFormat::KittiBin) return loss;
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    const Point3f& p = cloud.points[i];
    const double world[3] = {cloud.origin[0] + double(p.x), cloud.origin[1] + double(p.y),
                             cloud.origin[2] + double(p.z)};
    for (const double w : world)
      if (std::isfinite(w))
        loss.max_rounding_m = std::max(loss.max_rounding_m, std::abs(double(float(w)) - w));
  }
  if (cloud.has_rgb()) loss.dropped_fields.push_back("rgb");
  if (cloud.has_normals()) loss.dropped_fields.push_back("normals");
  if (cloud.has_labels()) loss.dropped_fields.push_back("label");
  for (const auto& f : cloud.extra)
    loss.dropped_fields.push_back(f.name);
  drop_layout();
  return loss;
}

}  // namespace cumulus
