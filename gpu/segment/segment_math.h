#pragma once
// The one distance formula of RDP segmentation, for host and device. Every product and sum is
// rounded on its own (no fused multiply-add), so CPU and GPU cut at exactly the same rows.
#include <cmath>

#include "core/hd.h"
#include "core/rounded.h"

namespace cumulus::segment_math {

using rounded::add;
using rounded::div;
using rounded::mul;
using rounded::root;
using rounded::sub;

// Vertical: |d_i - chord(i)|. Perpendicular: distance in (row * pitch, depth) coordinates.
CUMULUS_HD inline float distance(float d_first, float d_last, float d_i, int first, int last, int i,
                                 bool perpendicular, float pitch) {
  const float dd = sub(d_last, d_first);
  if (!perpendicular) {
    const float t = div(float(i - first), float(last - first));
    const float chord = add(d_first, mul(dd, t));
    return fabsf(sub(d_i, chord));
  }
  const float dx = mul(float(last - first), pitch);
  const float px = mul(float(i - first), pitch);
  const float cross = sub(mul(dx, sub(d_i, d_first)), mul(dd, px));
  return div(fabsf(cross), root(add(mul(dx, dx), mul(dd, dd))));
}

}  // namespace cumulus::segment_math
