// The street scene: a spinning LiDAR cast against a street of boxes, cylinders and spheres.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "generate/generate.h"
#include "generate/shapes_impl.h"

namespace cumulus {

using namespace generate_detail;

namespace {

constexpr double kKerb = 0.14;                            // pavement tops above the road
constexpr double kPavementIn = 7.0, kPavementOut = 12.0;  // |y| of the kerb and the pavement's back

// The street's height above the level street as a piecewise-linear function of x (knots in
// ascending x, constant beyond the ends). Level: no knots, height 0 everywhere.
struct Profile {
  std::vector<std::pair<double, double>> knots;
  double at(double x) const {
    if (knots.empty()) return 0;
    if (x <= knots.front().first) return knots.front().second;
    for (std::size_t i = 1; i < knots.size(); ++i)
      if (x <= knots[i].first) {
        const auto [x0, z0] = knots[i - 1];
        const auto [x1, z1] = knots[i];
        return z0 + (z1 - z0) * (x - x0) / (x1 - x0);
      }
    return knots.back().second;
  }
  double lowest(double x0, double x1) const {
    double z = std::min(at(x0), at(x1));
    for (const auto& k : knots)
      if (k.first > x0 && k.first < x1) z = std::min(z, k.second);
    return z;
  }
};

// Hilly: downhill at 4 % behind the sensor, level around it, a 10 % ramp 6 to 14 m ahead
// (0.8 m up) and a 3 % climb after it.
Profile hilly_profile() {
  return {{{-120, -4.32}, {-12, 0}, {6, 0}, {14, 0.8}, {120, 3.98}}};
}

// The road, pavements and kerbs of a profiled street, cast analytically: each linear piece of
// the profile is a plane within its x range, at the pavements' height between |y| 7 and 12 m;
// the kerbs are vertical faces at |y| 7 and 12 m.
void intersect_terrain(const Profile& prof, double base, V3 org, V3 dir, Hit& best) {
  const auto& k = prof.knots;
  const auto band_offset = [](double y) {
    const double a = std::abs(y);
    return a >= kPavementIn && a <= kPavementOut ? kKerb : 0.0;
  };
  for (std::size_t i = 0; i + 1 < k.size() + 2; ++i) {
    // Pieces: before the first knot, between knots, after the last (the ends are level).
    const double x0 = i == 0 ? -1e9 : k[i - 1].first;
    const double x1 = i == k.size() ? 1e9 : k[i].first;
    const double z0 = i == 0 ? k[0].second : k[i - 1].second;
    const double g = (i == 0 || i == k.size()) ? 0.0 : (k[i].second - z0) / (x1 - x0);
    const double xr = i == 0 ? x1 : x0;  // where the piece's height is z0
    for (const double off : {0.0, kKerb}) {
      // z = base + z0 + g (x - xr) + off
      const double den = dir.z - g * dir.x;
      if (std::abs(den) < 1e-12) continue;
      const double t = (base + z0 - g * xr + off - org.z + g * org.x) / den;
      if (!(t > 1e-6) || t >= best.t) continue;
      const double x = org.x + t * dir.x, y = org.y + t * dir.y;
      if (x < x0 || x > x1 || band_offset(y) != off) continue;
      const double n = std::sqrt(1 + g * g);
      best = {t, {-g / n, 0, 1 / n}, off > 0 ? 0.35 : 0.22, int(StreetClass::Ground)};
    }
  }
  for (const double c : {-kPavementOut, -kPavementIn, kPavementIn, kPavementOut}) {
    if (std::abs(dir.y) < 1e-12) continue;
    const double t = (c - org.y) / dir.y;
    if (!(t > 1e-6) || t >= best.t) continue;
    const double x = org.x + t * dir.x, z = org.z + t * dir.z;
    const double road = base + prof.at(x);
    if (z < road || z > road + kKerb) continue;
    best = {t, {0, dir.y > 0 ? -1.0 : 1.0, 0}, 0.35, int(StreetClass::Ground)};
  }
}

std::vector<Object> build_street(Random& rng, double sensor_height, const Profile& prof) {
  std::vector<Object> scene;
  const double ground = -sensor_height;
  const bool level = prof.knots.empty();
  // A level street is a plane with low boxes for the kerbs and pavements; a profiled one is
  // cast by intersect_terrain.
  if (level) {
    scene.push_back({Shape::Plane, {0, 0, ground}, {}, 0, 0.22});
    for (double side : {-1.0, 1.0})
      scene.push_back({Shape::Box, {0, side * 9.5, ground + 0.06}, {120, 2.5, 0.08}, 0, 0.35});
  }
  // Building facades with gaps for side streets.
  for (double side : {-1.0, 1.0}) {
    double x = -90;
    while (x < 90) {
      const double len = rng.uniform(12, 30);
      const double height = rng.uniform(6, 18);
      const double depth = rng.uniform(0.0, 2.0);
      const double low = level ? ground : ground + prof.lowest(x, x + len) - 0.5;
      const double top = level ? ground + height : ground + prof.at(x + len / 2) + height;
      scene.push_back({Shape::Box,
                       {x + len / 2, side * (13 + depth + 2), (low + top) / 2},
                       {len / 2, 2, (top - low) / 2},
                       0,
                       rng.uniform(0.3, 0.6),
                       StreetClass::Building});
      x += len + (rng.uniform() < 0.3 ? rng.uniform(8, 14) : 0.5);
    }
  }
  // Cars: moving in the lanes beside the sensor's and parked at the kerbs.
  const double lanes[] = {-6.0, -3.4, 3.4, 6.0};
  for (double lane : lanes) {
    double x = rng.uniform(-40, -25);
    while (x < 45) {
      const bool parked = std::abs(lane) > 5;
      const double len = rng.uniform(3.9, 4.8), width = rng.uniform(1.7, 1.95),
                   h = rng.uniform(1.35, 1.7);
      const double yaw = parked ? rng.uniform(-0.05, 0.05) : rng.uniform(-0.03, 0.03);
      scene.push_back({Shape::Box,
                       {x, lane, ground + prof.at(x) + 0.25 + h / 2 - 0.2},
                       {len / 2, width / 2, h / 2 - 0.2},
                       yaw,
                       rng.uniform(0.4, 0.8),
                       StreetClass::Vehicle});
      // Cabin: a narrower box on top of the body.
      scene.push_back({Shape::Box,
                       {x - 0.2, lane, ground + prof.at(x) + 0.25 + h - 0.2 + 0.22},
                       {len * 0.3, width / 2 - 0.1, 0.22},
                       yaw,
                       0.15,
                       StreetClass::Vehicle});
      x += len + rng.uniform(parked ? 1.0 : 8.0, parked ? 6.0 : 25.0);
    }
  }
  // Poles along the pavements.
  for (double side : {-1.0, 1.0})
    for (double x = -60 + rng.uniform(0, 10); x < 60; x += rng.uniform(12, 20))
      scene.push_back({Shape::Cylinder,
                       {x, side * 7.6, ground + prof.at(x)},
                       {0.12, 0, rng.uniform(5, 8)},
                       0,
                       0.7,
                       StreetClass::Pole});
  // Pedestrians: a body cylinder and a head sphere.
  for (int i = 0; i < 14; ++i) {
    const double side = i % 2 ? 1.0 : -1.0;
    const double x = rng.uniform(-35, 35), y = side * rng.uniform(8.3, 10.8);
    const double h = rng.uniform(1.5, 1.8);
    scene.push_back({Shape::Cylinder,
                     {x, y, ground + prof.at(x) + 0.14},
                     {0.2, 0, h - 0.38},
                     0,
                     0.45,
                     StreetClass::Pedestrian});
    scene.push_back({Shape::Sphere,
                     {x, y, ground + prof.at(x) + 0.14 + h - 0.38 + 0.12},
                     {0.12, 0, 0},
                     0,
                     0.3,
                     StreetClass::Pedestrian});
  }
  return scene;
}

// Trees on the pavements' back halves (a trunk, a porous crown) and bushes before the
// buildings, from their own random stream so the rest of the street (and its noise) is the
// same with and without them.
void add_vegetation(std::vector<Object>& scene, std::uint64_t seed, double sensor_height,
                    const Profile& prof) {
  Random rng(seed * 0x2545f4914f6cdd1dull + 0x5eed);
  const double ground = -sensor_height;
  for (double side : {-1.0, 1.0}) {
    // Street trees: crowns from about 1.5 m up, where a roof-mounted sensor's beams reach.
    for (double x = -80 + rng.uniform(0, 8); x < 80; x += rng.uniform(7, 12)) {
      const double y = side * rng.uniform(10.2, 11.2), base = ground + prof.at(x) + kKerb;
      const double trunk = rng.uniform(1.4, 2.2), crown = rng.uniform(1.6, 2.6);
      scene.push_back({Shape::Cylinder,
                       {x, y, base},
                       {rng.uniform(0.15, 0.25), 0, trunk + crown * 0.5},
                       0,
                       0.4,
                       StreetClass::Vegetation});
      scene.push_back({Shape::Foliage,
                       {x, y, base + trunk + crown * 0.6},
                       {crown, 0, 0},
                       0,
                       rng.uniform(0.2, 0.35),
                       StreetClass::Vegetation});
    }
    // Bushes, raised a little off the pavement so none of it lies within a ground threshold.
    for (double x = -70 + rng.uniform(0, 6); x < 70; x += rng.uniform(5, 12)) {
      const double r = rng.uniform(0.6, 1.0);
      scene.push_back({Shape::Foliage,
                       {x, side * rng.uniform(11.3, 11.7), ground + prof.at(x) + kKerb + 0.3 + r},
                       {r, 0, 0},
                       0,
                       rng.uniform(0.2, 0.3),
                       StreetClass::Vegetation});
    }
  }
}

}  // namespace

namespace {

void check(const StreetSceneParams& p) {
  if (p.beams < 1 || p.beams > 512 || p.azimuth_steps < 8 || p.azimuth_steps > 100000)
    throw InvalidArgument("street scene: beams must be 1..512 and azimuth steps 8..100000");
  if (!(p.fov_up_deg > p.fov_down_deg) || !(p.max_range > 0) || !(p.range_noise >= 0))
    throw InvalidArgument("street scene: bad field of view, range or noise");
}

Profile profile_of(const StreetSceneParams& p) {
  return p.terrain == StreetTerrain::Hilly ? hilly_profile() : Profile{};
}

// One revolution from a sensor at `at` (the street's frame: the first scan's sensor at the
// origin) turned by `yaw` about z, in the sensor's frame.
PointCloud cast_scan(const std::vector<Object>& scene, const Profile& prof,
                     const StreetSceneParams& p, V3 at, double yaw, Random& rng) {
  PointCloud cloud;
  ExtraField ring{"ring", 1, {}};
  ExtraField semantic{"semantic", 1, {}};
  const double deg = std::numbers::pi / 180.0;
  const double cy = std::cos(yaw), sy = std::sin(yaw);
  for (int b = 0; b < p.beams; ++b) {
    // Beam elevations sit on range-image row centres, so the scan maps 1:1 onto its image.
    const double el = (p.fov_up_deg - (b + 0.5) * (p.fov_up_deg - p.fov_down_deg) / p.beams) * deg;
    for (int a = 0; a < p.azimuth_steps; ++a) {
      const double az = std::numbers::pi - (a + 0.5) * 2.0 * std::numbers::pi / p.azimuth_steps;
      const V3 dir{std::cos(el) * std::cos(az), std::cos(el) * std::sin(az), std::sin(el)};
      const V3 world{cy * dir.x - sy * dir.y, sy * dir.x + cy * dir.y, dir.z};
      Hit hit;
      for (const auto& o : scene)
        intersect(o, at, world, hit);
      if (!prof.knots.empty()) intersect_terrain(prof, -p.sensor_height, at, world, hit);
      const double noise = rng.normal();
      const double speckle = rng.normal();
      if (!(hit.t < p.max_range)) continue;
      const double r = hit.t + p.range_noise * noise;
      const V3 q = dir * r;
      cloud.points.push_back({float(q.x), float(q.y), float(q.z)});
      const double incidence = std::abs(hit.normal.dot(world) / hit.normal.norm());
      const double falloff = 1.0 - 0.4 * hit.t / p.max_range;
      cloud.intensity.push_back(float(std::clamp(
          hit.reflectivity * (0.3 + 0.7 * incidence) * falloff + 0.02 * speckle, 0.0, 1.0)));
      ring.values.push_back(float(b));
      semantic.values.push_back(float(hit.semantic));
    }
  }
  cloud.extra.push_back(std::move(ring));
  cloud.extra.push_back(std::move(semantic));
  cloud.width = std::uint32_t(cloud.size());
  cloud.height = 1;
  return cloud;
}

}  // namespace

PointCloud generate_street_scene(const StreetSceneParams& p) {
  check(p);
  Random rng(p.seed);
  const Profile prof = profile_of(p);
  auto scene = build_street(rng, p.sensor_height, prof);
  if (p.vegetation) add_vegetation(scene, p.seed, p.sensor_height, prof);
  return cast_scan(scene, prof, p, {0, 0, 0}, 0, rng);
}

PointCloud generate_street_frame(const StreetDriveParams& d, int frame,
                                 std::array<double, 16>* pose) {
  check(d.scene);
  if (d.frames < 1 || d.frames > 100000 || frame < 0 || frame >= d.frames)
    throw InvalidArgument("street drive: frame " + std::to_string(frame) + " of " +
                          std::to_string(d.frames) + " (1 to 100,000 frames)");
  if (!std::isfinite(d.speed) || std::abs(d.speed) > 10 || !std::isfinite(d.start_x) ||
      !std::isfinite(d.weave) || std::abs(d.weave) > 3 || !(d.speed_variation >= 0) ||
      d.speed_variation > 0.9 || !(d.dropout >= 0) || d.dropout > 0.5)
    throw InvalidArgument(
        "street drive: speed up to 10 m a frame varying by up to 90 %, weave up to 3 m, "
        "dropout up to 0.5");
  Random rng(d.scene.seed);
  const Profile prof = profile_of(d.scene);
  auto scene = build_street(rng, d.scene.sensor_height, prof);
  if (d.scene.vegetation) add_vegetation(scene, d.scene.seed, d.scene.sensor_height, prof);
  // The sensor drives along the street weaving across its lane, turned along its path, and
  // keeps its height above the road; poses are relative to the first frame's.
  // The speed varies by +-speed_variation over a 40-frame period.
  const double sv = 2 * std::numbers::pi / 40, w = 2 * std::numbers::pi / 60;
  const auto place = [&](int k, V3& at, double& yaw) {
    const double x = d.start_x + d.speed * (k + d.speed_variation * std::sin(sv * k) / sv);
    const double dx = d.speed * (1 + d.speed_variation * std::cos(sv * k));
    at = {x, d.weave * std::sin(w * k), prof.at(x)};
    yaw = std::atan2(d.weave * w * std::cos(w * k), dx);
  };
  V3 at0, at;
  double yaw0 = 0, yaw = 0;
  place(0, at0, yaw0);
  place(frame, at, yaw);
  if (pose) {
    // T = R(-yaw0) (at - at0) translation, R(yaw - yaw0) rotation: frame in the first's frame.
    const double c0 = std::cos(-yaw0), s0 = std::sin(-yaw0), dy = yaw - yaw0;
    const V3 d0 = at - at0;
    *pose = {std::cos(dy),
             -std::sin(dy),
             0,
             c0 * d0.x - s0 * d0.y,
             std::sin(dy),
             std::cos(dy),
             0,
             s0 * d0.x + c0 * d0.y,
             0,
             0,
             1,
             d0.z,
             0,
             0,
             0,
             1};
  }
  // Frame 0 continues the street's stream (the single scene's noise); later frames draw
  // their own.
  Random noise(frame == 0 ? d.scene.seed : d.scene.seed * 1000003ull + std::uint64_t(frame));
  Random& r = frame == 0 ? rng : noise;
  PointCloud scan = cast_scan(scene, prof, d.scene, at, yaw, r);
  if (d.dropout > 0) {
    // Returns a real sensor loses (dark or specular surfaces), at random.
    std::vector<std::int32_t> keep;
    for (std::size_t i = 0; i < scan.size(); ++i)
      if (!(noise.uniform() < d.dropout)) keep.push_back(std::int32_t(i));
    PointCloud kept;
    kept.points.reserve(keep.size());
    for (const auto i : keep) {
      kept.points.push_back(scan.points[std::size_t(i)]);
      kept.intensity.push_back(scan.intensity[std::size_t(i)]);
    }
    for (const auto& e : scan.extra) {
      ExtraField f{e.name, e.count, {}};
      for (const auto i : keep)
        f.values.push_back(e.values[std::size_t(i)]);
      kept.extra.push_back(std::move(f));
    }
    kept.width = std::uint32_t(kept.size());
    scan = std::move(kept);
  }
  return scan;
}

}  // namespace cumulus
