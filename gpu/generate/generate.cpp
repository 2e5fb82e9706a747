#include "generate/generate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/error.h"

namespace cumulus {

// ---- Random -----------------------------------------------------------------------------------

Random::Random(std::uint64_t seed) {
  for (auto& s : s_) {  // splitmix64 spreads any seed, 0 included, over the whole state
    seed += 0x9e3779b97f4a7c15ull;
    std::uint64_t z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    s = z ^ (z >> 31);
  }
}

std::uint64_t Random::next_u64() {
  auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Random::uniform() {
  return double(next_u64() >> 11) * 0x1.0p-53;
}
double Random::uniform(double lo, double hi) {
  return lo + (hi - lo) * uniform();
}

double Random::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u = 0;
  while (u <= 0)
    u = uniform();
  const double v = uniform();
  const double r = std::sqrt(-2.0 * std::log(u));
  spare_ = r * std::sin(2.0 * std::numbers::pi * v);
  has_spare_ = true;
  return r * std::cos(2.0 * std::numbers::pi * v);
}

// ---- Ray casting against simple shapes --------------------------------------------------------

namespace {

struct V3 {
  double x, y, z;
  V3 operator+(V3 o) const { return {x + o.x, y + o.y, z + o.z}; }
  V3 operator-(V3 o) const { return {x - o.x, y - o.y, z - o.z}; }
  V3 operator*(double s) const { return {x * s, y * s, z * s}; }
  double dot(V3 o) const { return x * o.x + y * o.y + z * o.z; }
  double norm() const { return std::sqrt(dot(*this)); }
};

struct Hit {
  double t = std::numeric_limits<double>::infinity();
  V3 normal{0, 0, 1};
  double reflectivity = 0;
  int semantic = 0;
};

enum class Shape { Plane, Box, Cylinder, Sphere };

struct Object {
  Shape shape;
  V3 centre;         // plane: a point on it; box: centre; cylinder: base centre; sphere: centre
  V3 half{0, 0, 0};  // box half extents; cylinder: (radius, -, height)
  double yaw = 0;    // boxes only
  double reflectivity = 0.3;
  StreetClass semantic = StreetClass::Ground;
};

void intersect(const Object& o, V3 org, V3 dir, Hit& best) {
  switch (o.shape) {
    case Shape::Plane: {  // horizontal plane z = centre.z
      if (std::abs(dir.z) < 1e-12) return;
      const double t = (o.centre.z - org.z) / dir.z;
      if (t > 1e-6 && t < best.t) best = {t, {0, 0, 1}, o.reflectivity, int(o.semantic)};
      return;
    }
    case Shape::Box: {
      const double c = std::cos(-o.yaw), s = std::sin(-o.yaw);
      const V3 lo = org - o.centre;
      const V3 p{c * lo.x - s * lo.y, s * lo.x + c * lo.y, lo.z};
      const V3 d{c * dir.x - s * dir.y, s * dir.x + c * dir.y, dir.z};
      double t0 = -1e300, t1 = 1e300;
      int axis = 0;
      double sign = 1;
      const double pv[3] = {p.x, p.y, p.z}, dv[3] = {d.x, d.y, d.z},
                   hv[3] = {o.half.x, o.half.y, o.half.z};
      for (int a = 0; a < 3; ++a) {
        if (std::abs(dv[a]) < 1e-12) {
          if (std::abs(pv[a]) > hv[a]) return;
          continue;
        }
        double ta = (-hv[a] - pv[a]) / dv[a], tb = (hv[a] - pv[a]) / dv[a];
        double sa = -1;
        if (ta > tb) std::swap(ta, tb), sa = 1;
        if (ta > t0) t0 = ta, axis = a, sign = sa;
        t1 = std::min(t1, tb);
      }
      if (t0 > t1 || t0 <= 1e-6 || t0 >= best.t) return;
      V3 nl{0, 0, 0};
      (axis == 0 ? nl.x : axis == 1 ? nl.y : nl.z) = sign;
      const double cb = std::cos(o.yaw), sb = std::sin(o.yaw);
      best = {t0,
              {cb * nl.x - sb * nl.y, sb * nl.x + cb * nl.y, nl.z},
              o.reflectivity,
              int(o.semantic)};
      return;
    }
    case Shape::Cylinder: {  // vertical, radius half.x, from centre.z to centre.z + half.z
      const double ox = org.x - o.centre.x, oy = org.y - o.centre.y;
      const double a = dir.x * dir.x + dir.y * dir.y;
      if (a < 1e-12) return;
      const double b = 2 * (ox * dir.x + oy * dir.y), cc = ox * ox + oy * oy - o.half.x * o.half.x;
      const double disc = b * b - 4 * a * cc;
      if (disc < 0) return;
      const double t = (-b - std::sqrt(disc)) / (2 * a);
      if (t <= 1e-6 || t >= best.t) return;
      const double z = org.z + t * dir.z;
      if (z < o.centre.z || z > o.centre.z + o.half.z) return;
      best = {t, V3{ox + t * dir.x, oy + t * dir.y, 0} * (1.0 / o.half.x), o.reflectivity,
              int(o.semantic)};
      return;
    }
    case Shape::Sphere: {
      const V3 oc = org - o.centre;
      const double b = oc.dot(dir), cc = oc.dot(oc) - o.half.x * o.half.x;
      const double disc = b * b - cc;
      if (disc < 0) return;
      const double t = -b - std::sqrt(disc);
      if (t <= 1e-6 || t >= best.t) return;
      best = {t, (oc + dir * t) * (1.0 / o.half.x), o.reflectivity, int(o.semantic)};
      return;
    }
  }
}

std::vector<Object> build_street(Random& rng, double sensor_height) {
  std::vector<Object> scene;
  const double ground = -sensor_height;
  scene.push_back({Shape::Plane, {0, 0, ground}, {}, 0, 0.22});
  // Kerbs and pavements: low boxes along both sides.
  for (double side : {-1.0, 1.0})
    scene.push_back({Shape::Box, {0, side * 9.5, ground + 0.06}, {120, 2.5, 0.08}, 0, 0.35});
  // Building facades with gaps for side streets.
  for (double side : {-1.0, 1.0}) {
    double x = -90;
    while (x < 90) {
      const double len = rng.uniform(12, 30);
      const double height = rng.uniform(6, 18);
      const double depth = rng.uniform(0.0, 2.0);
      scene.push_back({Shape::Box,
                       {x + len / 2, side * (13 + depth + 2), ground + height / 2},
                       {len / 2, 2, height / 2},
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
                       {x, lane, ground + 0.25 + h / 2 - 0.2},
                       {len / 2, width / 2, h / 2 - 0.2},
                       yaw,
                       rng.uniform(0.4, 0.8),
                       StreetClass::Vehicle});
      // Cabin: a narrower box on top of the body.
      scene.push_back({Shape::Box,
                       {x - 0.2, lane, ground + 0.25 + h - 0.2 + 0.22},
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
                       {x, side * 7.6, ground},
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
                     {x, y, ground + 0.14},
                     {0.2, 0, h - 0.38},
                     0,
                     0.45,
                     StreetClass::Pedestrian});
    scene.push_back({Shape::Sphere,
                     {x, y, ground + 0.14 + h - 0.38 + 0.12},
                     {0.12, 0, 0},
                     0,
                     0.3,
                     StreetClass::Pedestrian});
  }
  return scene;
}

}  // namespace

PointCloud generate_street_scene(const StreetSceneParams& p) {
  if (p.beams < 1 || p.beams > 512 || p.azimuth_steps < 8 || p.azimuth_steps > 100000)
    throw InvalidArgument("street scene: beams must be 1..512 and azimuth steps 8..100000");
  if (!(p.fov_up_deg > p.fov_down_deg) || !(p.max_range > 0) || !(p.range_noise >= 0))
    throw InvalidArgument("street scene: bad field of view, range or noise");
  Random rng(p.seed);
  const auto scene = build_street(rng, p.sensor_height);
  PointCloud cloud;
  ExtraField ring{"ring", 1, {}};
  ExtraField semantic{"semantic", 1, {}};
  const double deg = std::numbers::pi / 180.0;
  for (int b = 0; b < p.beams; ++b) {
    // Beam elevations sit on range-image row centres, so the scan maps 1:1 onto its image.
    const double el = (p.fov_up_deg - (b + 0.5) * (p.fov_up_deg - p.fov_down_deg) / p.beams) * deg;
    for (int a = 0; a < p.azimuth_steps; ++a) {
      const double az = std::numbers::pi - (a + 0.5) * 2.0 * std::numbers::pi / p.azimuth_steps;
      const V3 dir{std::cos(el) * std::cos(az), std::cos(el) * std::sin(az), std::sin(el)};
      Hit hit;
      for (const auto& o : scene)
        intersect(o, {0, 0, 0}, dir, hit);
      const double noise = rng.normal();
      const double speckle = rng.normal();
      if (!(hit.t < p.max_range)) continue;
      const double r = hit.t + p.range_noise * noise;
      const V3 q = dir * r;
      cloud.points.push_back({float(q.x), float(q.y), float(q.z)});
      const double incidence = std::abs(hit.normal.dot(dir) / hit.normal.norm());
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

// ---- A pair of object scans -------------------------------------------------------------------

namespace {

struct Surfel {
  V3 p, n;
};

bool inside_any(const V3& p, const Object* objs, int count, int except) {
  for (int i = 0; i < count; ++i) {
    if (i == except) continue;
    const Object& o = objs[i];
    const V3 d = p - o.centre;
    if (o.shape == Shape::Box && std::abs(d.x) < o.half.x && std::abs(d.y) < o.half.y &&
        std::abs(d.z) < o.half.z)
      return true;
    if (o.shape == Shape::Sphere && d.norm() < o.half.x) return true;
    if (o.shape == Shape::Cylinder && d.x * d.x + d.y * d.y < o.half.x * o.half.x && d.z > 0 &&
        d.z < o.half.z)
      return true;
  }
  return false;
}

Surfel sample_surface(const Object& o, Random& rng) {
  switch (o.shape) {
    case Shape::Box: {
      const double ax = o.half.x, ay = o.half.y, az = o.half.z;
      const double areas[3] = {ay * az, ax * az, ax * ay};
      double pick = rng.uniform(0, areas[0] + areas[1] + areas[2]);
      const int axis = pick < areas[0] ? 0 : pick < areas[0] + areas[1] ? 1 : 2;
      const double sign = rng.uniform() < 0.5 ? -1.0 : 1.0;
      V3 p{rng.uniform(-ax, ax), rng.uniform(-ay, ay), rng.uniform(-az, az)}, n{0, 0, 0};
      if (axis == 0) p.x = sign * ax, n.x = sign;
      if (axis == 1) p.y = sign * ay, n.y = sign;
      if (axis == 2) p.z = sign * az, n.z = sign;
      return {o.centre + p, n};
    }
    case Shape::Sphere: {
      V3 d{rng.normal(), rng.normal(), rng.normal()};
      d = d * (1.0 / d.norm());
      return {o.centre + d * o.half.x, d};
    }
    case Shape::Cylinder: {
      const double side = 2 * std::numbers::pi * o.half.x * o.half.z,
                   cap = std::numbers::pi * o.half.x * o.half.x;
      if (rng.uniform(0, side + cap) < cap) {
        const double r = o.half.x * std::sqrt(rng.uniform()),
                     a = rng.uniform(0, 2 * std::numbers::pi);
        return {o.centre + V3{r * std::cos(a), r * std::sin(a), o.half.z}, {0, 0, 1}};
      }
      const double a = rng.uniform(0, 2 * std::numbers::pi);
      const V3 n{std::cos(a), std::sin(a), 0};
      return {o.centre + V3{n.x * o.half.x, n.y * o.half.x, rng.uniform(0, o.half.z)}, n};
    }
    case Shape::Plane:
      break;
  }
  return {o.centre, {0, 0, 1}};
}

double area(const Object& o) {
  switch (o.shape) {
    case Shape::Box:
      return 8 * (o.half.x * o.half.y + o.half.y * o.half.z + o.half.x * o.half.z);
    case Shape::Sphere:
      return 4 * std::numbers::pi * o.half.x * o.half.x;
    case Shape::Cylinder:
      return 2 * std::numbers::pi * o.half.x * o.half.z + std::numbers::pi * o.half.x * o.half.x;
    case Shape::Plane:
      return 0;
  }
  return 0;
}

PointCloud scan_view(const Object* objs, int count, V3 viewpoint, int samples, double noise,
                     Random& rng) {
  double total = 0;
  for (int i = 0; i < count; ++i)
    total += area(objs[i]);
  PointCloud cloud;
  for (int s = 0; s < samples; ++s) {
    double pick = rng.uniform(0, total);
    int k = 0;
    while (k < count - 1 && pick >= area(objs[k]))
      pick -= area(objs[k]), ++k;
    const Surfel sf = sample_surface(objs[k], rng);
    const double jitter = noise * rng.normal();
    if (inside_any(sf.p, objs, count, k)) continue;
    const V3 to_view = viewpoint - sf.p;
    if (sf.n.dot(to_view) <= 0.15 * to_view.norm()) continue;  // back-facing or grazing
    const V3 q = sf.p + sf.n * jitter;
    cloud.points.push_back({float(q.x), float(q.y), float(q.z)});
  }
  cloud.width = std::uint32_t(cloud.size());
  return cloud;
}

}  // namespace

ScanPair generate_scan_pair(const ScanPairParams& p) {
  if (p.samples < 10 || p.samples > 50'000'000)
    throw InvalidArgument("scan pair: samples must be 10..5e7");
  Random rng(p.seed);
  const Object objs[] = {
      {Shape::Box, {0, 0, 0.05}, {0.12, 0.08, 0.05}, 0, 0.5},
      {Shape::Sphere, {-0.02, 0.0, 0.16}, {0.065, 0, 0}, 0, 0.5},
      {Shape::Cylinder, {0.085, 0.045, 0.1}, {0.025, 0, 0.13}, 0, 0.5},
  };
  const int count = 3;
  const double yaw = p.yaw_deg * std::numbers::pi / 180.0;
  const double c = std::cos(yaw), s = std::sin(yaw);
  const V3 t{p.translation[0], p.translation[1], p.translation[2]};
  const V3 view_a{0.45, -0.35, 0.35};
  // The source sensor sits at the target's viewpoint moved by the true pose.
  const V3 view_b = V3{c * view_a.x - s * view_a.y, s * view_a.x + c * view_a.y, view_a.z} + t;
  ScanPair pair;
  pair.target = scan_view(objs, count, view_a, p.samples, p.noise, rng);
  PointCloud world_b = scan_view(objs, count, view_b, p.samples, p.noise, rng);
  // Express the second view in its own frame: p_s = R^T (p_w - t).
  pair.source = world_b;
  for (auto& q : pair.source.points) {
    const V3 d = V3{q.x, q.y, q.z} - t;
    q = {float(c * d.x + s * d.y), float(-s * d.x + c * d.y), float(d.z)};
  }
  pair.source_to_target = {c, -s, 0, t.x, s, c, 0, t.y, 0, 0, 1, t.z, 0, 0, 0, 1};
  return pair;
}

// ---- The clustering paper's synthetic clouds ----------------------------------------------------

PointCloud generate_cluster_cloud(const ClusterCloudParams& p) {
  if (p.size == 0 || p.clusters == 0 || p.clusters > p.size)
    throw InvalidArgument("cluster cloud: need 1 <= clusters <= size");
  if (p.degree == 0 || p.degree * p.clusters > p.size)
    throw InvalidArgument("cluster cloud: degree x clusters must not exceed size");
  if (p.point_distance == 0 || p.point_distance > p.clusters)
    throw InvalidArgument("cluster cloud: point distance must be 1..clusters");
  if (!(p.tolerance > 0)) throw InvalidArgument("cluster cloud: tolerance must be positive");
  Random rng(p.seed);
  const std::size_t m = p.size / p.clusters;  // members per cluster; the remainder is dropped
  // Members sit on a line at spacing s, so point j has neighbours j +- 1 .. j +- degree/2 (the
  // strict test k s < tolerance holds for k <= degree / 2 + 0.25); lines stand 3 tolerances apart.
  const double tol = p.tolerance;
  const double s = tol / (double(p.degree) / 2.0 + 0.75);
  const std::size_t grid = std::size_t(std::ceil(std::sqrt(double(p.clusters))));
  PointCloud cloud;
  cloud.points.resize(m * p.clusters);
  const std::size_t D = p.point_distance;
  for (std::size_t c = 0; c < p.clusters; ++c) {
    const double cx = double(c % grid) * 3.0 * tol, cy = double(c / grid) * 3.0 * tol;
    const std::size_t chunk = c / D, lane = c % D;
    const std::size_t lanes = std::min(D, p.clusters - chunk * D);  // the last chunk may be short
    for (std::size_t j = 0; j < m; ++j) {
      // Clusters in a chunk of D interleave round-robin: members D (or fewer) indices apart.
      const std::size_t index = chunk * D * m + j * lanes + lane;
      const double jitter = 0.01 * s;
      cloud.points[index] = {float(cx + jitter * rng.uniform(-1, 1)),
                             float(cy + jitter * rng.uniform(-1, 1)), float(double(j) * s)};
    }
  }
  cloud.width = std::uint32_t(cloud.size());
  return cloud;
}

// ---- Depth columns for segmentation ------------------------------------------------------------

DepthImage generate_depth_columns(std::uint32_t width, std::uint32_t height, std::uint64_t seed,
                                  double noise, double invalid) {
  Random rng(seed);
  DepthImage img;
  img.width = width;
  img.height = height;
  img.depth.resize(std::size_t(width) * height);
  for (std::uint32_t c = 0; c < width; ++c) {
    double d = rng.uniform(3, 40), slope = rng.uniform(-0.05, 0.05);
    for (std::uint32_t r = 0; r < height; ++r) {
      if (rng.uniform() < 0.02) slope = rng.uniform(-0.08, 0.08);
      if (rng.uniform() < 0.005) d += rng.uniform(-5, 5);
      d = std::max(0.5, d + slope);
      const bool hole = rng.uniform() < invalid;
      img.depth[std::size_t(r) * width + c] = hole ? 0.0f : float(d + noise * rng.normal());
    }
  }
  return img;
}

}  // namespace cumulus
