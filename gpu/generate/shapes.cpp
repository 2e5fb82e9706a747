// Ray intersections with the generators' shapes.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "generate/shapes_impl.h"

namespace cumulus::generate_detail {

namespace {

// A number in [0, 1) from a ray's direction and an object's position (splitmix64's finaliser
// over their bits): the same ray always gets the same number.
double ray_hash(V3 dir, V3 at) {
  std::uint64_t z = 0;
  for (const double v : {dir.x, dir.y, dir.z, at.x, at.y})
    z = (z ^ std::bit_cast<std::uint64_t>(v)) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

}  // namespace

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
    case Shape::Sphere:
    case Shape::Foliage: {
      const V3 oc = org - o.centre;
      const double b = oc.dot(dir), cc = oc.dot(oc) - o.half.x * o.half.x;
      const double disc = b * b - cc;
      if (disc < 0) return;
      double t = -b - std::sqrt(disc);
      if (o.shape == Shape::Foliage) {
        // A quarter of the rays find a gap; the others stop within the first 60 % of the chord.
        const double u = ray_hash(dir, o.centre);
        if (u >= 0.75) return;
        t += 2 * std::sqrt(disc) * 0.6 * (u / 0.75);
      }
      if (t <= 1e-6 || t >= best.t) return;
      best = {t, (oc + dir * t) * (1.0 / o.half.x), o.reflectivity, int(o.semantic)};
      return;
    }
  }
}

}  // namespace cumulus::generate_detail
