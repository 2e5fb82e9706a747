#pragma once
// PCL's pair features and binning, operation for operation, shared by the host and the device.
// PCL computes in float with Eigen's SSE 4-vectors: a dot product of (x, y, z, 0) vectors sums
// as (x + z) + y, and nothing is fused. The device file is compiled with -fmad=false so the GPU
// rounds exactly as the CPU. The angle functions cannot be matched that way: glibc's float acos
// and atan2 (PCL's) are off by an ulp now and then, the GPU's atan2f by a few. So the device
// marks a pair `unsure` when a few ulps either way could change its bins, and the host decides
// those few pairs with glibc (features_gpu.cu), which makes every bin PCL's.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hd.h"

namespace cumulus::features_math {

struct V3 {
  float x, y, z;
};

CUMULUS_HD inline float dot(V3 a, V3 b) {
  const float xz = a.x * b.x + a.z * b.z;  // two products, one add: no contraction possible here
  return xz + a.y * b.y;
}
CUMULUS_HD inline V3 cross(V3 a, V3 b) {
  return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
CUMULUS_HD inline float norm(V3 a) {
  return sqrtf(dot(a, a));
}

#if defined(__CUDA_ARCH__)
__device__ inline float acos_f(float x) {
  return float(acos(double(x)));
}
__device__ inline float atan2_f(float y, float x) {
  return float(atan2(double(y), double(x)));
}
#else
inline float acos_f(float x) {
  return std::acos(x);
}
inline float atan2_f(float y, float x) {
  return std::atan2(y, x);
}
#endif

// Distance in units in the last place between two floats of the same sign.
CUMULUS_HD inline int ulps_apart(float a, float b) {
  std::int32_t x, y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  return x > y ? x - y : y - x;
}

// PCL's choice of the pair's source point: the second when acos|angle1| > acos|angle2| in float.
// On the device (unsure given), where those two acos would cost more than the rest of the pair
// features together, the order of |angle1| and |angle2| decides instead wherever they lie more
// than 1e-6 apart: acos falls at least as fast as its argument, so the two angles are then more
// than 8.8e-7 (over 4 ulps, below pi/2) apart after rounding and come in the opposite order, as
// the acos below would give. Closer pairs, and arguments above 1 (acos NaN), take the acos.
CUMULUS_HD inline bool source_is_second(float angle1, float angle2, bool* unsure) {
  const float a1 = fabsf(angle1), a2 = fabsf(angle2);
#if defined(__CUDA_ARCH__)
  if (unsure && a1 <= 1.0f && a2 <= 1.0f && fabsf(a1 - a2) > 1e-6f) return a1 < a2;
#endif
  const float c1 = acos_f(a1), c2 = acos_f(a2);
  if (unsure && a1 != a2 && ulps_apart(c1, c2) <= 4) *unsure = true;
  return c1 > c2;
}

// pcl::computePairFeatures(p1, n1, p2, n2): f1 = atan2 angle of n2 in the Darboux frame, f2 =
// v . n2, f3 = cosine of the source normal with the line. The point whose normal makes the
// smaller angle with the line is the source. Zero distance or a normal along the line: all 0.
// `unsure` (device only) is set when glibc's float acos, which is within 1 ulp of the correctly
// rounded value the GPU computes, could order the two angles the other way: then the pair is
// left to the host, which decides it with PCL's own libm.
CUMULUS_HD inline void pair_features(V3 p1, V3 n1, V3 p2, V3 n2, float& f1, float& f2, float& f3,
                                     bool* unsure = nullptr) {
  V3 d{p2.x - p1.x, p2.y - p1.y, p2.z - p1.z};
  const float f4 = norm(d);
  f1 = f2 = f3 = 0.0f;
  if (f4 == 0.0f) return;
  const float angle1 = dot(n1, d) / f4;
  const float angle2 = dot(n2, d) / f4;
  V3 u = n1, t = n2;
  if (source_is_second(angle1, angle2, unsure)) {
    u = n2;
    t = n1;
    d = {-d.x, -d.y, -d.z};
    f3 = -angle2;
  } else {
    f3 = angle1;
  }
  V3 v = cross(d, u);
  const float v_norm = norm(v);
  if (v_norm == 0.0f) {
    f3 = 0.0f;
    return;
  }
  v = {v.x / v_norm, v.y / v_norm, v.z / v_norm};
  const V3 w = cross(u, v);
  f2 = dot(v, t);
#if defined(__CUDA_ARCH__)
  // Only its bin matters, and pfh_bin / spfh_bins defer a pair whose bin a few ulps could
  // change (angle_bin_unsure allows for this function's error beside glibc's), so float will do.
  f1 = atan2f(dot(w, t), dot(u, t));
#else
  f1 = atan2_f(dot(w, t), dot(u, t));
#endif
}

// PCL's binning, in double as PCL promotes it: floor(bins * ((f + pi) * (1 / 2pi as float)))
// for the angle, floor(bins * ((f + 1) * 0.5)) for the cosines, clamped. A NaN feature (a NaN
// normal in the pair) lands in bin 0, as PCL's float-to-int conversion then clamp does on x86.
CUMULUS_HD inline int clamp_bin(double x, int bins) {
  if (!(x >= 0.0)) return 0;  // negative or NaN
  const int b = int(floor(x));
  return b >= bins ? bins - 1 : b;
}
constexpr double kPi = 3.14159265358979323846;
constexpr float kInvTwoPi = 1.0f / (2.0f * float(kPi));
CUMULUS_HD inline int angle_bin_at(double f, int bins) {
  return clamp_bin(double(bins) * ((f + kPi) * double(kInvTwoPi)), bins);
}
CUMULUS_HD inline int angle_bin(float f, int bins) {
  return angle_bin_at(double(f), bins);
}
CUMULUS_HD inline int cosine_bin(float f, int bins) {
  return clamp_bin(double(bins) * ((double(f) + 1.0) * 0.5), bins);
}

// True when an angle within 16 ulps of f falls in another bin: glibc's float atan2 (PCL's) and
// the GPU's atan2f are each within a few ulps of the exact angle. The bin only grows with the
// angle, so the two ends of the interval decide.
CUMULUS_HD inline bool angle_bin_unsure(float f, int bins) {
  const double margin = double(fabsf(f)) * 0x1p-19 + 0x1p-140;  // 16 ulps of f, and a denormal's
  return angle_bin_at(double(f) - margin, bins) != angle_bin_at(double(f) + margin, bins);
}

// PFH: index f1 + 5 f2 + 25 f3.
CUMULUS_HD inline int pfh_bin(V3 p1, V3 n1, V3 p2, V3 n2, bool* unsure = nullptr) {
  float f1, f2, f3;
  pair_features(p1, n1, p2, n2, f1, f2, f3, unsure);
  if (unsure && angle_bin_unsure(f1, 5)) *unsure = true;
  return angle_bin(f1, 5) + 5 * cosine_bin(f2, 5) + 25 * cosine_bin(f3, 5);
}

// FPFH's three bins of a pair, at 0..10, 11..21, 22..32.
CUMULUS_HD inline void spfh_bins(V3 p1, V3 n1, V3 p2, V3 n2, int bins[3], bool* unsure = nullptr) {
  float f1, f2, f3;
  pair_features(p1, n1, p2, n2, f1, f2, f3, unsure);
  if (unsure && angle_bin_unsure(f1, 11)) *unsure = true;
  bins[0] = angle_bin(f1, 11);
  bins[1] = 11 + cosine_bin(f2, 11);
  bins[2] = 22 + cosine_bin(f3, 11);
}

// PCL adds the same float increment once per pair, so a bin's value depends only on its count:
// the float sum of `count` copies of `incr`, added one at a time.
CUMULUS_HD inline float repeated_sum(float incr, std::uint32_t count) {
  float s = 0.0f;
  for (std::uint32_t i = 0; i < count; ++i)
    s += incr;
  return s;
}

// PFH's per-pair increment for a neighbourhood of n points (itself included), in PCL's integer
// then float arithmetic.
CUMULUS_HD inline float pfh_increment(std::uint64_t n) {
  return 100.0f / float(n * (n - 1) / 2);
}
CUMULUS_HD inline float spfh_increment(std::uint64_t n) {
  return 100.0f / float(n - 1);
}

}  // namespace cumulus::features_math
