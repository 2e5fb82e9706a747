#pragma once
// The one point-cloud type of Cumulus. Positions are float32 relative to a double-precision
// local origin, so clouds in UTM-like coordinates keep millimetre precision and can be uploaded
// to the GPU as they are.
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cumulus {

struct Point3f {
  float x = 0, y = 0, z = 0;
};
static_assert(sizeof(Point3f) == 12, "Point3f must match float3 for uploads");

// A point with all three coordinates finite (no NaN, no infinity).
inline bool is_finite(const Point3f& p) {
  return std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z);
}

// Whether every point is finite. It tests the coordinates' bits 16 at a time (a 40k-point cloud:
// 7-13 us against 33 for is_finite point by point, on the CI machine): GPU registrations test
// both clouds on every call.
bool all_finite(const Point3f* points, std::size_t count);

struct Rgb8 {
  std::uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(const Rgb8&, const Rgb8&) = default;
};

// A field of the source file that has no dedicated member (ring, curvature, timestamps, ...),
// kept so that a load/save round trip loses nothing. `count` values per point. Doubles, because
// files hold fields float32 cannot: GPS times (a 1e9 s count to the microsecond), 32-bit ids,
// PCD doubles; writers store a field as float32 where every value fits it exactly.
struct ExtraField {
  std::string name;
  int count = 1;
  std::vector<double> values;  // size() == count * point count
};

// What a file says beyond its points, kept so that writing to the same format puts it back:
// LAS keeps its scale and offset, version, point format and every variable-length record (the
// coordinate reference system among them) under "las." keys. Values are bytes.
struct MetadataEntry {
  std::string key;
  std::string value;
  friend bool operator==(const MetadataEntry&, const MetadataEntry&) = default;
};

struct Bounds {
  Point3f min{}, max{};
  bool valid = false;  // false when the cloud has no finite point
};

struct PointCloud {
  std::vector<Point3f> points;            // local coordinates (world = origin + point)
  std::array<double, 3> origin{0, 0, 0};  // local origin in world coordinates
  std::vector<float> intensity;           // empty or one per point
  std::vector<Rgb8> rgb;                  // empty or one per point
  std::vector<Point3f> normals;           // empty or one per point
  std::vector<std::int32_t> labels;       // empty or one per point (-1 = unlabelled)
  std::vector<ExtraField> extra;
  std::vector<MetadataEntry> metadata;  // in file order
  std::uint32_t width = 0;   // organized clouds: width * height == size(); else width == size()
  std::uint32_t height = 1;  // 1 for unorganized clouds

  std::size_t size() const { return points.size(); }
  bool empty() const { return points.empty(); }
  bool organized() const { return height > 1; }
  bool has_intensity() const { return !intensity.empty(); }
  bool has_rgb() const { return !rgb.empty(); }
  bool has_normals() const { return !normals.empty(); }
  bool has_labels() const { return !labels.empty(); }
  const ExtraField* find_extra(const std::string& name) const;
  // The value stored under `key`, or nullptr.
  const std::string* find_metadata(const std::string& key) const;

  // Names of all fields present, in the order a PCD file would list them.
  std::vector<std::string> field_names() const;
  // Number of points with a non-finite coordinate (organized clouds keep them as holes).
  std::size_t count_non_finite() const;
  // Bounds of the finite points, in local coordinates.
  Bounds local_bounds() const;
  // Throws InvalidArgument when an attribute array has the wrong length.
  void validate() const;
};

// Picks a local origin for world coordinates so that float32 offsets stay precise: zero when
// the cloud is already near the world origin, else the centre of its bounds rounded to metres.
std::array<double, 3> choose_local_origin(const double* min_xyz, const double* max_xyz);

// True when |x|, |y| or |z| is large enough that float32 loses sub-millimetre precision.
bool needs_local_origin(double x, double y, double z);

}  // namespace cumulus
