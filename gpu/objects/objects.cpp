// Objects from clusters: sums per label in double (about the cloud's origin, so far-away
// clouds keep their precision), a 2D PCA on the ground plane for the heading, then the extents.
#include "objects/objects.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace cumulus {

namespace {

using V = std::array<double, 3>;

double dot(const V& a, const V& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
V cross(const V& a, const V& b) {
  return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]};
}
V unit(const V& a) {
  const double n = std::sqrt(dot(a, a));
  return {a[0] / n, a[1] / n, a[2] / n};
}

// Two unit vectors spanning the plane normal to `up`.
std::pair<V, V> plane_basis(const V& up) {
  const V seed = std::abs(up[0]) < 0.9 ? V{1, 0, 0} : V{0, 1, 0};
  const V e1 = unit(cross(up, seed));
  return {e1, cross(up, e1)};
}

struct Accumulator {
  std::size_t n = 0;
  V sum{0, 0, 0};
  double s11 = 0, s12 = 0, s22 = 0, s1 = 0, s2 = 0;  // in-plane coordinates
  V lo{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
       std::numeric_limits<double>::infinity()};
  V hi{-lo[0], -lo[1], -lo[2]};
};

}  // namespace

std::array<std::array<double, 3>, 8> OrientedBox::corners() const {
  const V side = cross(up, heading);
  std::array<V, 8> c{};
  const double sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
  for (int level = 0; level < 2; ++level)
    for (int k = 0; k < 4; ++k)
      for (std::size_t a = 0; a < 3; ++a)
        c[std::size_t(level * 4 + k)][a] = centre[a] + sx[k] * size[0] / 2 * heading[a] +
                                           sy[k] * size[1] / 2 * side[a] +
                                           (level ? 1 : -1) * size[2] / 2 * up[a];
  return c;
}

std::vector<DetectedObject> describe_objects(const PointCloud& cloud,
                                             const std::vector<std::int32_t>& labels,
                                             const std::optional<std::array<double, 4>>& ground) {
  if (labels.size() != cloud.size())
    throw InvalidArgument("objects: " + std::to_string(labels.size()) + " labels for " +
                          std::to_string(cloud.size()) + " points");
  std::int32_t count = 0;
  for (const auto l : labels)
    count = std::max(count, l + 1);
  const V up = ground ? unit(V{(*ground)[0], (*ground)[1], (*ground)[2]}) : V{0, 0, 1};
  const auto [e1, e2] = plane_basis(up);
  const auto local = [&](std::size_t i) {
    const Point3f& p = cloud.points[i];
    return V{p.x, p.y, p.z};
  };
  // First pass: sums, boxes and the in-plane second moments.
  const auto labelled = std::size_t(count);
  std::vector<Accumulator> acc(labelled);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (labels[i] < 0 || !is_finite(cloud.points[i])) continue;
    Accumulator& a = acc[std::size_t(labels[i])];
    const V p = local(i);
    ++a.n;
    const double u = dot(p, e1), v = dot(p, e2);
    a.s1 += u;
    a.s2 += v;
    a.s11 += u * u;
    a.s12 += u * v;
    a.s22 += v * v;
    for (std::size_t k = 0; k < 3; ++k) {
      a.sum[k] += p[k];
      a.lo[k] = std::min(a.lo[k], p[k]);
      a.hi[k] = std::max(a.hi[k], p[k]);
    }
  }
  std::vector<DetectedObject> out(labelled);
  std::vector<V> heading(labelled), side(labelled);
  for (std::int32_t l = 0; l < count; ++l) {
    const Accumulator& a = acc[std::size_t(l)];
    DetectedObject& o = out[std::size_t(l)];
    o.id = l;
    o.points = a.n;
    if (!a.n) continue;
    const double n = double(a.n);
    for (std::size_t k = 0; k < 3; ++k) {
      o.centroid[k] = a.sum[k] / n + cloud.origin[k];
      o.min[k] = a.lo[k] + cloud.origin[k];
      o.max[k] = a.hi[k] + cloud.origin[k];
    }
    // The principal in-plane direction: the larger eigenvector of the 2x2 covariance.
    const double c11 = a.s11 / n - (a.s1 / n) * (a.s1 / n);
    const double c12 = a.s12 / n - (a.s1 / n) * (a.s2 / n);
    const double c22 = a.s22 / n - (a.s2 / n) * (a.s2 / n);
    const double angle = 0.5 * std::atan2(2 * c12, c11 - c22);
    const V h{std::cos(angle) * e1[0] + std::sin(angle) * e2[0],
              std::cos(angle) * e1[1] + std::sin(angle) * e2[1],
              std::cos(angle) * e1[2] + std::sin(angle) * e2[2]};
    heading[std::size_t(l)] = h;
    side[std::size_t(l)] = cross(up, h);
  }
  // Second pass: extents along heading, side and up.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::array<double, 6>> ext(labelled, {inf, -inf, inf, -inf, inf, -inf});
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (labels[i] < 0 || !is_finite(cloud.points[i])) continue;
    const auto l = std::size_t(labels[i]);
    const V p = local(i);
    const double c[3] = {dot(p, heading[l]), dot(p, side[l]), dot(p, up)};
    for (int k = 0; k < 3; ++k) {
      ext[l][std::size_t(2 * k)] = std::min(ext[l][std::size_t(2 * k)], c[k]);
      ext[l][std::size_t(2 * k + 1)] = std::max(ext[l][std::size_t(2 * k + 1)], c[k]);
    }
  }
  for (std::int32_t l = 0; l < count; ++l) {
    DetectedObject& o = out[std::size_t(l)];
    if (!o.points) continue;
    const auto& e = ext[std::size_t(l)];
    V h = heading[std::size_t(l)], s = side[std::size_t(l)];
    double length = e[1] - e[0], width = e[3] - e[2];
    double mid_h = (e[0] + e[1]) / 2, mid_s = (e[2] + e[3]) / 2;
    if (width > length) {  // the heading runs along the longer side
      std::swap(length, width);
      const V turned = s;
      s = V{-h[0], -h[1], -h[2]};
      h = turned;
      const double m = mid_h;
      mid_h = mid_s;
      mid_s = -m;
    }
    const double mid_u = (e[4] + e[5]) / 2;
    for (std::size_t k = 0; k < 3; ++k)
      o.box.centre[k] = mid_h * h[k] + mid_s * s[k] + mid_u * up[k] + cloud.origin[k];
    o.box.size = {length, width, e[5] - e[4]};
    o.box.heading = h;
    o.box.up = up;
    o.above_ground = std::numeric_limits<double>::quiet_NaN();
    if (ground) {
      // The lowest point along up, in world coordinates, against the plane.
      const double bottom = e[4] + dot(V{cloud.origin[0], cloud.origin[1], cloud.origin[2]}, up);
      o.above_ground =
          bottom + (*ground)[3] / std::sqrt(dot(V{(*ground)[0], (*ground)[1], (*ground)[2]},
                                                V{(*ground)[0], (*ground)[1], (*ground)[2]}));
    }
  }
  return out;
}

}  // namespace cumulus
