#include "generate/generate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "generate/shapes_impl.h"

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

using namespace generate_detail;

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
    case Shape::Sphere:
    case Shape::Foliage: {  // its outer surface
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
    case Shape::Foliage:
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
