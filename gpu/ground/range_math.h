#pragma once
// The range-image ground's arithmetic, for host and device (private to the ground folder).
// Pixels come from comparisons against boundary tables the host makes once (no trigonometry per
// point, whose last bit differs between libm and CUDA), and every product and sum is rounded
// on its own, so the CPU and the GPU put every point in the same pixel and label it alike.
#include <cmath>

#include "core/point_cloud.h"
#include "core/rounded.h"

#ifdef __CUDACC__
#define CUMULUS_RG __host__ __device__ __forceinline__
#else
#define CUMULUS_RG inline
#endif

namespace cumulus::range_math {

using rounded::add;
using rounded::div;
using rounded::mul;
using rounded::root;
using rounded::sub;

// How many of the n ascending values are below v (strictly, or at most v).
CUMULUS_RG int count_below(const double* a, int n, double v, bool or_equal) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (a[mid] < v || (or_equal && a[mid] == v))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// A monotone stand-in for the angle of (x, y) over [0, 2 pi): [0, 4), divisions and sums only.
CUMULUS_RG double pseudo_angle(double x, double y) {
  if (y >= 0) return x >= 0 ? div(y, add(x, y)) : add(1.0, div(-x, sub(y, x)));
  return x < 0 ? add(2.0, div(-y, sub(-x, y))) : add(3.0, div(x, sub(x, y)));
}

// Row boundaries: the tangents of the elevations between rows, ascending (rows - 1 values);
// column boundaries: pseudo_angle of the azimuths between columns (columns - 1 values).
struct Tables {
  const double* row_tan;
  const double* col_pseudo;
  int rows, columns;
};

CUMULUS_RG double horizontal(const Point3f& p) {
  const double x = p.x, y = p.y;
  return root(add(mul(x, x), mul(y, y)));
}

// The point's pixel (row-major) and range, or -1 for a point at the sensor. Row 0 looks up;
// column 0 looks backwards and azimuth decreases to the right (io/projection.h's model): the
// column's angle is that of (-x, y). Rows outside the field of view clamp to the first or last.
CUMULUS_RG int pixel_of(const Point3f& p, const Tables& t, float* range) {
  const double x = p.x, y = p.y, z = p.z;
  const double s2 = add(mul(x, x), mul(y, y));
  const double r2 = add(s2, mul(z, z));
  if (!(r2 > 0)) return -1;
  const double tangent = div(z, root(s2));  // +-inf straight up or down
  const int row = (t.rows - 1) - count_below(t.row_tan, t.rows - 1, tangent, false);
  const int col = count_below(t.col_pseudo, t.columns - 1, pseudo_angle(-x, y), true);
  *range = float(root(r2));
  return row * t.columns + col;
}

struct Rules {
  double tan_max_slope, max_step, sensor_height, threshold;
};

// A chord from a (nearer) to b that leads away from the sensor no steeper than the rule.
CUMULUS_RG bool is_flat(double sa, double za, double sb, double zb, const Rules& r) {
  const double ds = sub(sb, sa);
  return ds > 0 && fabs(sub(zb, za)) <= mul(r.tan_max_slope, ds);
}

// Whether a segment starting at (s, z) continues the last ground, at (sg, zg).
CUMULUS_RG bool continues(double s, double z, double sg, double zg, const Rules& r) {
  const double gap = s > sg ? sub(s, sg) : 0.0;  // the slope's allowance over the gap
  return fabs(sub(z, zg)) <= add(r.max_step, mul(r.tan_max_slope, gap));
}

// Whether p lies within the threshold (vertically) of the chord from a to b.
CUMULUS_RG bool near_chord(const Point3f& p, const Point3f& a, const Point3f& b, const Rules& r) {
  const double sa = horizontal(a), sb = horizontal(b), sp = horizontal(p);
  const double za = a.z, zb = b.z, zp = p.z;
  double line = za;
  if (sb != sa) line = add(za, mul(sub(zb, za), div(sub(sp, sa), sub(sb, sa))));
  return fabs(sub(zp, line)) <= r.threshold;
}

// One column's m valid pixels (slots 0 .. m-1, far to near) classified near to far: is_cut(k)
// tells the RDP cuts (slots 0 and m-1 always are), point(k) the pixel's point, and
// chord(k, a, b) receives each slot's ground chord from slot a to slot b, or (-1, -1), once or
// twice (the last call counts). A slot shared by two segments takes the nearer one's chord
// when that one is ground.
template <class IsCut, class PointAt, class Chord>
CUMULUS_RG void classify_column(int m, IsCut is_cut, PointAt point, Chord chord, const Rules& r) {
  if (m <= 0) return;
  double sg = 0, zg = -r.sensor_height;  // the last ground: at first the ground under the sensor
  if (m == 1) {
    const Point3f p = point(0);
    const bool ground = continues(horizontal(p), p.z, sg, zg, r);
    chord(0, ground ? 0 : -1, ground ? 0 : -1);
    return;
  }
  int near = m - 1;
  bool nearer_ground = false;
  for (int k = m - 2; k >= 0; --k) {
    if (!is_cut(k)) continue;
    const Point3f a = point(near), b = point(k);
    const double sa = horizontal(a), sb = horizontal(b);
    const bool ground = is_flat(sa, a.z, sb, b.z, r) && continues(sa, a.z, sg, zg, r);
    if (ground) sg = sb, zg = b.z;
    const int ca = ground ? near : -1, cb = ground ? k : -1;
    if (near == m - 1 || !nearer_ground) chord(near, ca, cb);
    for (int j = k; j < near; ++j)  // k: until a farther segment claims it
      chord(j, ca, cb);
    nearer_ground = ground;
    near = k;
  }
}

}  // namespace cumulus::range_math
