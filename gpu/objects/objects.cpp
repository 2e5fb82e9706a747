// Objects from clusters: sums per label in double (about the cloud's origin, so far-away
// clouds keep their precision), a 2D PCA on the ground plane for the heading, then the extents.
#include "objects/objects.h"
#include "objects/objects_impl.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

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

ObjectFrame object_frame(const std::optional<std::array<double, 4>>& ground) {
  ObjectFrame f;
  f.up = ground ? unit(V{(*ground)[0], (*ground)[1], (*ground)[2]}) : V{0, 0, 1};
  std::tie(f.e1, f.e2) = plane_basis(f.up);
  return f;
}

V object_heading(const ObjectSums& a, const ObjectFrame& f) {
  // The larger eigenvector of the 2x2 covariance of the points projected on the ground.
  const double n = a.n;
  const double c11 = a.s11 / n - (a.s1 / n) * (a.s1 / n);
  const double c12 = a.s12 / n - (a.s1 / n) * (a.s2 / n);
  const double c22 = a.s22 / n - (a.s2 / n) * (a.s2 / n);
  const double angle = 0.5 * std::atan2(2 * c12, c11 - c22);
  return {std::cos(angle) * f.e1[0] + std::sin(angle) * f.e2[0],
          std::cos(angle) * f.e1[1] + std::sin(angle) * f.e2[1],
          std::cos(angle) * f.e1[2] + std::sin(angle) * f.e2[2]};
}

DetectedObject finish_object(int id, const ObjectSums& a, const V& heading,
                             const std::array<double, 6>& e, const ObjectFrame& f,
                             const std::array<double, 3>& origin,
                             const std::optional<std::array<double, 4>>& ground) {
  DetectedObject o;
  o.id = id;
  o.points = std::size_t(a.n);
  if (!a.n) return o;
  const V& up = f.up;
  for (std::size_t k = 0; k < 3; ++k) {
    o.centroid[k] = a.sum[k] / a.n + origin[k];
    o.min[k] = a.lo[k] + origin[k];
    o.max[k] = a.hi[k] + origin[k];
  }
  V h = heading, s = cross(up, heading);
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
    o.box.centre[k] = mid_h * h[k] + mid_s * s[k] + mid_u * up[k] + origin[k];
  o.box.size = {length, width, e[5] - e[4]};
  o.box.heading = h;
  o.box.up = up;
  o.above_ground = std::numeric_limits<double>::quiet_NaN();
  if (ground) {
    // The lowest point along up, in world coordinates, against the plane.
    const double bottom = e[4] + dot(V{origin[0], origin[1], origin[2]}, up);
    o.above_ground =
        bottom + (*ground)[3] / std::sqrt(dot(V{(*ground)[0], (*ground)[1], (*ground)[2]},
                                              V{(*ground)[0], (*ground)[1], (*ground)[2]}));
  }
  return o;
}

std::vector<DetectedObject> describe_objects(const PointCloud& cloud,
                                             std::span<const std::int32_t> labels,
                                             const std::optional<std::array<double, 4>>& ground) {
  if (labels.size() != cloud.size())
    throw InvalidArgument("objects: " + std::to_string(labels.size()) + " labels for " +
                          std::to_string(cloud.size()) + " points");
  std::int32_t count = 0;
  for (const auto l : labels)
    count = std::max(count, l + 1);
  const ObjectFrame f = object_frame(ground);
  const auto local = [&](std::size_t i) {
    const Point3f& p = cloud.points[i];
    return V{p.x, p.y, p.z};
  };
  // First pass: sums, boxes and the in-plane second moments.
  const auto labelled = std::size_t(count);
  std::vector<ObjectSums> acc(labelled);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (labels[i] < 0 || !is_finite(cloud.points[i])) continue;
    ObjectSums& a = acc[std::size_t(labels[i])];
    const V p = local(i);
    a.n += 1;
    const double u = dot(p, f.e1), v = dot(p, f.e2);
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
  std::vector<V> heading(labelled), side(labelled);
  for (std::size_t l = 0; l < labelled; ++l)
    if (acc[l].n) {
      heading[l] = object_heading(acc[l], f);
      side[l] = cross(f.up, heading[l]);
    }
  // Second pass: extents along heading, side and up.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::array<double, 6>> ext(labelled, {inf, -inf, inf, -inf, inf, -inf});
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    if (labels[i] < 0 || !is_finite(cloud.points[i])) continue;
    const auto l = std::size_t(labels[i]);
    const V p = local(i);
    const double c[3] = {dot(p, heading[l]), dot(p, side[l]), dot(p, f.up)};
    for (int k = 0; k < 3; ++k) {
      ext[l][std::size_t(2 * k)] = std::min(ext[l][std::size_t(2 * k)], c[k]);
      ext[l][std::size_t(2 * k + 1)] = std::max(ext[l][std::size_t(2 * k + 1)], c[k]);
    }
  }
  std::vector<DetectedObject> out(labelled);
  for (std::size_t l = 0; l < labelled; ++l)
    out[l] = finish_object(int(l), acc[l], heading[l], ext[l], f, cloud.origin, ground);
  return out;
}

}  // namespace cumulus
