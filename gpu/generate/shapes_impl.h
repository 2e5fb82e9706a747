#pragma once
// The ray caster's shapes, shared by the street scan and the object scans; private to the
// generate folder.
#include <cmath>
#include <limits>

#include "generate/generate.h"

namespace cumulus::generate_detail {

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

// Foliage: a sphere that a ray enters and, unless it finds a gap, stops in at a depth drawn
// from a hash of its direction (so each ray, not each call, decides).
enum class Shape { Plane, Box, Cylinder, Sphere, Foliage };

struct Object {
  Shape shape;
  V3 centre;         // plane: a point on it; box: centre; cylinder: base centre; sphere: centre
  V3 half{0, 0, 0};  // box half extents; cylinder: (radius, -, height)
  double yaw = 0;    // boxes only
  double reflectivity = 0.3;
  StreetClass semantic = StreetClass::Ground;
};

// The nearest hit of a ray from org along dir (unit) with o, if nearer than best.
void intersect(const Object& o, V3 org, V3 dir, Hit& best);

}  // namespace cumulus::generate_detail
