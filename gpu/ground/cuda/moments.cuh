#pragma once
// The moments of points about a reference point, summed in double on the device (for the least-
// squares planes of both ground methods), and their conversion for ground_impl.h's refit.
#include "ground/ground_impl.h"

namespace cumulus {

struct Moments {
  double m[10];  // count, sum x y z, xx xy xz yy yz zz (about the reference point)

  // One point's terms, at (x, y, z) from the reference.
  __device__ static Moments of(double x, double y, double z) {
    return {{1, x, y, z, x * x, x * y, x * z, y * y, y * z, z * z}};
  }
  InlierMoments inlier_moments() const {
    return {m[0], {m[1], m[2], m[3]}, {m[4], m[5], m[6], m[7], m[8], m[9]}};
  }
};

struct AddMoments {
  __device__ Moments operator()(const Moments& a, const Moments& b) const {
    Moments r;
    for (int k = 0; k < 10; ++k)
      r.m[k] = a.m[k] + b.m[k];
    return r;
  }
};

}  // namespace cumulus
