// The range-image ground: checks, the boundary tables, the serial reference, and the model
// plane fitted to whichever method's ground.
#include "ground/range_ground.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "core/error.h"
#include "ground/ground_impl.h"
#include "ground/range_ground_impl.h"
#include "segment/segment.h"

namespace cumulus {

namespace {

constexpr double kDeg = std::numbers::pi / 180.0;

void require(bool ok, const std::string& what, double value) {
  if (!ok) throw InvalidArgument("range-image ground: " + what + ", got " + std::to_string(value));
}

// The pixel winner's key: its range's bits (positive floats order as integers), then its index,
// so the nearest point wins and ties go to the lowest index, as the GPU's atomic minimum does.
std::uint64_t pixel_key(float range, std::int32_t index) {
  std::uint32_t bits;
  std::memcpy(&bits, &range, sizeof bits);
  return (std::uint64_t(bits) << 32) | std::uint32_t(index);
}

RangeGroundFit range_ground_cpu(const PointCloud& cloud, const RangeGroundParams& p,
                                StageTimes& stages) {
  const RangeTables tables = range_tables(p);
  const range_math::Tables t = tables.view();
  const range_math::Rules rules = range_rules(p);
  const std::size_t n = cloud.size(), w = p.columns, h = p.rows;
  WallTimer timer;
  // Project: every finite point's pixel, the nearest point of each pixel.
  std::vector<std::int32_t> pixel(n, -1);
  std::vector<std::uint64_t> winner(w * h, std::numeric_limits<std::uint64_t>::max());
  for (std::size_t i = 0; i < n; ++i) {
    const Point3f& q = cloud.points[i];
    if (!is_finite(q)) continue;
    float range = 0;
    const int px = range_math::pixel_of(q, t, &range);
    if (px < 0) continue;
    pixel[i] = px;
    winner[std::size_t(px)] = std::min(winner[std::size_t(px)], pixel_key(range, std::int32_t(i)));
  }
  // Compact each column's valid pixels to its top (slot k: the k-th valid row).
  DepthImage compact;
  compact.width = p.columns;
  compact.height = p.rows;
  compact.depth.assign(w * h, 0.0f);
  std::vector<std::int32_t> slot_point(w * h, -1), pixel_slot(w * h, -1);
  std::vector<int> valid(w, 0);
  for (std::size_t r = 0; r < h; ++r)
    for (std::size_t c = 0; c < w; ++c) {
      const std::uint64_t key = winner[r * w + c];
      if (key == std::numeric_limits<std::uint64_t>::max()) continue;
      const std::size_t k = std::size_t(valid[c]++);
      const std::uint32_t bits = std::uint32_t(key >> 32);
      std::memcpy(&compact.depth[k * w + c], &bits, sizeof(float));
      slot_point[k * w + c] = std::int32_t(key & 0xffffffffu);
      pixel_slot[r * w + c] = std::int32_t(k);
    }
  stages.emplace_back("project", timer.ms());
  timer.reset();
  SegmentParams sp;
  sp.epsilon = p.epsilon;
  const SegmentResult cuts = segment_columns(compact, sp, SegmentMethod::Cpu);
  stages.emplace_back("RDP columns", timer.ms());
  timer.reset();
  // Classify each column; chords per slot as point indices.
  std::vector<std::int32_t> chord_a(w * h, -1), chord_b(w * h, -1);
  std::vector<char> is_cut(h);
  for (std::size_t c = 0; c < w; ++c) {
    std::fill(is_cut.begin(), is_cut.end(), 0);
    for (std::size_t k = cuts.offsets[c]; k < cuts.offsets[c + 1]; ++k)
      is_cut[cuts.rows[k]] = 1;
    const auto point_at = [&](int k) {
      return cloud.points[std::size_t(slot_point[std::size_t(k) * w + c])];
    };
    const auto set = [&](int k, int a, int b) {
      chord_a[std::size_t(k) * w + c] = a < 0 ? -1 : slot_point[std::size_t(a) * w + c];
      chord_b[std::size_t(k) * w + c] = b < 0 ? -1 : slot_point[std::size_t(b) * w + c];
    };
    range_math::classify_column(
        valid[c], [&](int k) { return is_cut[std::size_t(k)] != 0; }, point_at, set, rules);
  }
  stages.emplace_back("classify", timer.ms());
  timer.reset();
  RangeGroundFit fit;
  std::vector<std::int32_t>& ground = fit.ground;
  for (std::size_t i = 0; i < n; ++i) {
    if (pixel[i] < 0) continue;
    const std::size_t px = std::size_t(pixel[i]);
    const std::size_t slot = std::size_t(pixel_slot[px]) * w + px % w;
    if (chord_a[slot] < 0) continue;
    if (range_math::near_chord(cloud.points[i], cloud.points[std::size_t(chord_a[slot])],
                               cloud.points[std::size_t(chord_b[slot])], rules))
      ground.push_back(std::int32_t(i));
  }
  stages.emplace_back("label", timer.ms());
  timer.reset();
  // The ground's moments about its first point, for the model plane.
  InlierMoments& m = fit.moments;
  for (const auto i : ground) {
    const Point3f& q = cloud.points[std::size_t(i)];
    const Point3f& r = cloud.points[std::size_t(ground[0])];
    const double d[3] = {double(q.x) - r.x, double(q.y) - r.y, double(q.z) - r.z};
    m.count += 1;
    for (std::size_t k = 0; k < 3; ++k)
      m.sum[k] += d[k];
    m.sq[0] += d[0] * d[0], m.sq[1] += d[0] * d[1], m.sq[2] += d[0] * d[2];
    m.sq[3] += d[1] * d[1], m.sq[4] += d[1] * d[2], m.sq[5] += d[2] * d[2];
  }
  stages.emplace_back("moments", timer.ms());
  return fit;
}

}  // namespace

void validate(const RangeGroundParams& p) {
  require(p.rows >= 1 && p.rows <= 4096, "rows must be 1 to 4096", p.rows);
  require(p.columns >= 1 && p.columns <= 65536, "columns must be 1 to 65536", p.columns);
  require(p.fov_up_deg > p.fov_down_deg && p.fov_up_deg <= 90 && p.fov_down_deg >= -90,
          "the field of view must run down from fov_up to fov_down within +-90 degrees",
          p.fov_up_deg - p.fov_down_deg);
  require(p.epsilon > 0 && std::isfinite(p.epsilon), "epsilon must be a positive number of metres",
          p.epsilon);
  require(p.max_slope_deg > 0 && p.max_slope_deg < 90, "the slope must be above 0 and below 90",
          p.max_slope_deg);
  require(p.max_step > 0 && std::isfinite(p.max_step), "the step must be positive metres",
          p.max_step);
  require(p.threshold > 0 && std::isfinite(p.threshold),
          "the threshold must be a positive number of metres", p.threshold);
  require(p.sensor_height >= 0 && std::isfinite(p.sensor_height),
          "the sensor height must not be negative", p.sensor_height);
}

RangeTables range_tables(const RangeGroundParams& p) {
  RangeTables t;
  const double up = p.fov_up_deg * kDeg, step = (p.fov_up_deg - p.fov_down_deg) * kDeg / p.rows;
  for (std::uint32_t k = p.rows - 1; k >= 1; --k)  // ascending tangents: the lowest boundary first
    t.row_tan.push_back(std::tan(up - k * step));
  for (std::uint32_t c = 1; c < p.columns; ++c) {
    const double a = c * 2.0 * std::numbers::pi / p.columns;
    t.col_pseudo.push_back(range_math::pseudo_angle(std::cos(a), std::sin(a)));
  }
  return t;
}

range_math::Rules range_rules(const RangeGroundParams& p) {
  return {std::tan(p.max_slope_deg * kDeg), p.max_step, p.sensor_height, p.threshold};
}

GroundResult segment_ground_range(const PointCloud& cloud, const RangeGroundParams& params,
                                  RangeGroundMethod method) {
  validate(params);
  WallTimer total;
  GroundResult r;
  r.non_finite = cloud.count_non_finite();
  if (cloud.size() == r.non_finite)
    throw Error("range-image ground: the cloud has no finite point");
  RangeGroundFit fit = method == RangeGroundMethod::Cpu ? range_ground_cpu(cloud, params, r.stages)
                                                        : range_ground_gpu(cloud, params, r.stages);
  r.ground = std::move(fit.ground);
  if (r.ground.size() < 3)
    throw Error("range-image ground: no ground found (" + std::to_string(r.ground.size()) +
                " points); is the cloud a LiDAR scan in its sensor's frame, z up?");
  // The model: the plane through the ground points (moments about the first, so sums keep
  // their precision).
  const Point3f& f = cloud.points[std::size_t(r.ground[0])];
  const LocalPlane p = refit_plane(fit.moments, {f.x, f.y, f.z}, LocalPlane{{0, 0, 1}, 0});
  r.plane = world_plane(p, cloud.origin);
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
